/*
 * One-sided calls (windows) refuse device addresses: API.md lets them, and
 * MPI would fault on the reserved range.  Every window call that takes a user
 * buffer checks it, and returns MPI_ERR_BUFFER with a message naming the call
 * and the argument, raised on the window's error handler (the
 * communicator's for the constructors), before anything moves: the origin,
 * result and compare buffers of Put, Get, Accumulate, Get_accumulate,
 * Fetch_and_op, Compare_and_swap and their R and _c forms, the base of
 * Win_create and Win_attach, and the word Win_allocate, Win_allocate_shared
 * and Win_shared_query write the base address to.  A datatype whose
 * instances span more bytes than an address holds may reach the device range
 * and gets MPI_ERR_TYPE, as in the other calls.  Host buffers go to PMPI
 * unchanged.
 */
#include "config.h"

#include "mgerr.h"
#include "mglog.h"
#include "mgmpi.h"
#include "p2p.h"

#define DEV(buf_, count_, dt_) mgdev_buf_is_device((buf_), (count_), (dt_))

/* The refusal of what (an argument's name) for fn; k: what mgdev_buf_is_device
   said. */
static int win_refusal(const char *fn, const char *what, int k)
{
    if (k == MGDEV_BUF_SPAN)
        return mgerr_set(MPI_ERR_TYPE,
                         "mpigpu: %s: the %s's datatype instances span more bytes than an int64 or "
                         "an address holds, and may reach device addresses; nothing was moved",
                         fn, what);
    return mgerr_set(MPI_ERR_BUFFER,
                     "mpigpu: %s: the %s is a device address, and one-sided calls do not take "
                     "device addresses; nothing was moved",
                     fn, what);
}

/* Raise rc on win's error handler (MPI_COMM_WORLD's when win is
   MPI_WIN_NULL); with MPI_ERRORS_ARE_FATAL the message is logged first. */
static int win_raise(MPI_Win win, int rc)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (win == MPI_WIN_NULL)
        return mgmpi_error(MPI_COMM_WORLD, rc);
    if (PMPI_Win_get_errhandler(win, &eh) == MPI_SUCCESS) {
        if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT) {
            const char *msg = mgerr_get(rc);
            if (msg)
                MGLOG_ERROR(MGLOG_MPI, "%s", msg);
        }
        PMPI_Errhandler_free(&eh);
    }
    PMPI_Win_call_errhandler(win, rc);
    return rc;
}

static int win_refuse(MPI_Win win, const char *fn, const char *what, int k)
{
    return win_raise(win, win_refusal(fn, what, k));
}

/* MPI_SUCCESS when neither the origin nor the result buffer of fn is a
   device buffer; else the refusal of the first, raised on win. */
static int win_bufs(MPI_Win win, const char *fn, const void *origin, MPI_Count ocount,
                    MPI_Datatype odt, const void *result, MPI_Count rcount, MPI_Datatype rdt)
{
    int k = DEV(origin, ocount, odt);
    if (k)
        return win_refuse(win, fn, "origin buffer", k);
    k = DEV(result, rcount, rdt);
    return k ? win_refuse(win, fn, "result buffer", k) : MPI_SUCCESS;
}

/* Whether the len bytes at p (one at least) touch the device range. */
static int win_span(const void *p, MPI_Aint len)
{
    return mgdev_reg_in_range(p, len > 0 ? (size_t)len : 1) ? MGDEV_BUF_DEVICE : MGDEV_BUF_HOST;
}

/* MPI_SUCCESS when the word at baseptr, where MPI writes a window's address
   for the constructor fn on comm, is host memory; else its refusal. */
static int win_baseptr(MPI_Comm comm, const char *fn, void *baseptr)
{
    int k = win_span(baseptr, sizeof(void *));
    return k ? mgmpi_error(comm, win_refusal(fn, "base pointer's location", k)) : MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
            MPI_Win win)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Put", "origin buffer", k);
    return PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                    target_count, target_datatype, win);
}

MPIGPU_EXPORT
int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Get", "origin buffer", k);
    return PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                    target_count, target_datatype, win);
}

MPIGPU_EXPORT
int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Accumulate", "origin buffer", k);
    return PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                           target_count, target_datatype, op, win);
}

MPIGPU_EXPORT
int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       void *result_addr, int result_count, MPI_Datatype result_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    int rc = win_bufs(win, "MPI_Get_accumulate", origin_addr, origin_count, origin_datatype,
                      result_addr, result_count, result_datatype);
    if (rc)
        return rc;
    return PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr,
                               result_count, result_datatype, target_rank, target_disp,
                               target_count, target_datatype, op, win);
}

MPIGPU_EXPORT
int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
             MPI_Win win, MPI_Request *request)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Rput", "origin buffer", k);
    return PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                     target_count, target_datatype, win, request);
}

MPIGPU_EXPORT
int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
             MPI_Request *request)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Rget", "origin buffer", k);
    return PMPI_Rget(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                     target_count, target_datatype, win, request);
}

MPIGPU_EXPORT
int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Raccumulate", "origin buffer", k);
    return PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                            target_count, target_datatype, op, win, request);
}

MPIGPU_EXPORT
int MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        void *result_addr, int result_count, MPI_Datatype result_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    int rc = win_bufs(win, "MPI_Rget_accumulate", origin_addr, origin_count, origin_datatype,
                      result_addr, result_count, result_datatype);
    if (rc)
        return rc;
    return PMPI_Rget_accumulate(origin_addr, origin_count, origin_datatype, result_addr,
                                result_count, result_datatype, target_rank, target_disp,
                                target_count, target_datatype, op, win, request);
}

MPIGPU_EXPORT
int MPI_Put_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win win)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Put_c", "origin buffer", k);
    return PMPI_Put_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                      target_count, target_datatype, win);
}

MPIGPU_EXPORT
int MPI_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win win)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Get_c", "origin buffer", k);
    return PMPI_Get_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                      target_count, target_datatype, win);
}

MPIGPU_EXPORT
int MPI_Accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Accumulate_c", "origin buffer", k);
    return PMPI_Accumulate_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                             target_count, target_datatype, op, win);
}

MPIGPU_EXPORT
int MPI_Get_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                         MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count,
                         MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                         MPI_Win win)
{
    int rc = win_bufs(win, "MPI_Get_accumulate_c", origin_addr, origin_count, origin_datatype,
                      result_addr, result_count, result_datatype);
    if (rc)
        return rc;
    return PMPI_Get_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr,
                                 result_count, result_datatype, target_rank, target_disp,
                                 target_count, target_datatype, op, win);
}

MPIGPU_EXPORT
int MPI_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Rput_c", "origin buffer", k);
    return PMPI_Rput_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                       target_count, target_datatype, win, request);
}

MPIGPU_EXPORT
int MPI_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Rget_c", "origin buffer", k);
    return PMPI_Rget_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                       target_count, target_datatype, win, request);
}

MPIGPU_EXPORT
int MPI_Raccumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                      int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                      MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k)
        return win_refuse(win, "MPI_Raccumulate_c", "origin buffer", k);
    return PMPI_Raccumulate_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                              target_count, target_datatype, op, win, request);
}

MPIGPU_EXPORT
int MPI_Rget_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                          MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count,
                          MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                          MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                          MPI_Win win, MPI_Request *request)
{
    int rc = win_bufs(win, "MPI_Rget_accumulate_c", origin_addr, origin_count, origin_datatype,
                      result_addr, result_count, result_datatype);
    if (rc)
        return rc;
    return PMPI_Rget_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr,
                                  result_count, result_datatype, target_rank, target_disp,
                                  target_count, target_datatype, op, win, request);
}

MPIGPU_EXPORT
int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    int rc = win_bufs(win, "MPI_Fetch_and_op", origin_addr, 1, datatype, result_addr, 1, datatype);
    if (rc)
        return rc;
    return PMPI_Fetch_and_op(origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
}

MPIGPU_EXPORT
int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                         MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win)
{
    int k = DEV(origin_addr, 1, datatype);
    if (k)
        return win_refuse(win, "MPI_Compare_and_swap", "origin buffer", k);
    k = DEV(compare_addr, 1, datatype);
    if (k)
        return win_refuse(win, "MPI_Compare_and_swap", "compare buffer", k);
    k = DEV(result_addr, 1, datatype);
    if (k)
        return win_refuse(win, "MPI_Compare_and_swap", "result buffer", k);
    return PMPI_Compare_and_swap(origin_addr, compare_addr, result_addr, datatype, target_rank,
                                 target_disp, win);
}

MPIGPU_EXPORT
int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   MPI_Win *win)
{
    int k = win_span(base, size);
    if (k)
        return mgmpi_error(comm, win_refusal("MPI_Win_create", "window's base", k));
    return PMPI_Win_create(base, size, disp_unit, info, comm, win);
}

MPIGPU_EXPORT
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win)
{
    /* No user buffer: MPI writes the window's address to *baseptr. */
    int rc = win_baseptr(comm, "MPI_Win_allocate", baseptr);
    if (rc)
        return rc;
    return PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win);
}

MPIGPU_EXPORT
int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win)
{
    /* No user buffer: MPI writes the window's address to *baseptr. */
    int rc = win_baseptr(comm, "MPI_Win_allocate_shared", baseptr);
    if (rc)
        return rc;
    return PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
}

MPIGPU_EXPORT
int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    int k = win_span(baseptr, sizeof(void *));
    if (k)
        return win_refuse(win, "MPI_Win_shared_query", "base pointer's location", k);
    return PMPI_Win_shared_query(win, rank, size, disp_unit, baseptr);
}

MPIGPU_EXPORT
int MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                     MPI_Win *win)
{
    int k = win_span(base, size);
    if (k)
        return mgmpi_error(comm, win_refusal("MPI_Win_create_c", "window's base", k));
    return PMPI_Win_create_c(base, size, disp_unit, info, comm, win);
}

MPIGPU_EXPORT
int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                       void *baseptr, MPI_Win *win)
{
    /* No user buffer: MPI writes the window's address to *baseptr. */
    int rc = win_baseptr(comm, "MPI_Win_allocate_c", baseptr);
    if (rc)
        return rc;
    return PMPI_Win_allocate_c(size, disp_unit, info, comm, baseptr, win);
}

MPIGPU_EXPORT
int MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                              void *baseptr, MPI_Win *win)
{
    /* No user buffer: MPI writes the window's address to *baseptr. */
    int rc = win_baseptr(comm, "MPI_Win_allocate_shared_c", baseptr);
    if (rc)
        return rc;
    return PMPI_Win_allocate_shared_c(size, disp_unit, info, comm, baseptr, win);
}

MPIGPU_EXPORT
int MPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                           void *baseptr)
{
    int k = win_span(baseptr, sizeof(void *));
    if (k)
        return win_refuse(win, "MPI_Win_shared_query_c", "base pointer's location", k);
    return PMPI_Win_shared_query_c(win, rank, size, disp_unit, baseptr);
}

MPIGPU_EXPORT
int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    int k = win_span(base, size);
    if (k)
        return win_refuse(win, "MPI_Win_attach", "base", k);
    return PMPI_Win_attach(win, base, size);
}
