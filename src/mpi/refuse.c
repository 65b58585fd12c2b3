/*
 * Calls that do not accept device addresses yet (one-sided, file I/O) refuse
 * them with MPI_ERR_BUFFER instead of letting MPI fault on the reserved
 * range.  Host buffers go to PMPI unchanged.  The collectives are coll.c's.
 */
#include "config.h"

#include "mgerr.h"
#include "mgmpi.h"
#include "p2p.h"

#define DEV(buf_, count_, dt_) mgdev_buf_is_device((buf_), (count_), (dt_))

/* k: what the call's buffers hold (mgdev_buf_is_device), the first not
   MGDEV_BUF_HOST. */
static int refuse(const char *fn, int k)
{
    if (k == MGDEV_BUF_SPAN)
        return mgerr_set(MPI_ERR_TYPE,
                         "mpigpu: %s: the datatype's instances span more bytes than an int64 or "
                         "an address holds, and may reach device addresses; nothing was moved",
                         fn);
    return mgerr_set(MPI_ERR_BUFFER, "device buffers are not supported by %s", fn);
}

MPIGPU_EXPORT
int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
            MPI_Win win)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k) {
        int rc = refuse("MPI_Put", k);
        PMPI_Win_call_errhandler(win, rc);
        return rc;
    }
    return PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                    target_count, target_datatype, win);
}

MPIGPU_EXPORT
int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    int k = DEV(origin_addr, origin_count, origin_datatype);
    if (k) {
        int rc = refuse("MPI_Get", k);
        PMPI_Win_call_errhandler(win, rc);
        return rc;
    }
    return PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                    target_count, target_datatype, win);
}

MPIGPU_EXPORT
int MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype datatype,
                   MPI_Status *status)
{
    int k = DEV(buf, count, datatype);
    if (k) {
        int rc = refuse("MPI_File_write", k);
        PMPI_File_call_errhandler(fh, rc);
        return rc;
    }
    return PMPI_File_write(fh, buf, count, datatype, status);
}

MPIGPU_EXPORT
int MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
{
    int k = DEV(buf, count, datatype);
    if (k) {
        int rc = refuse("MPI_File_read", k);
        PMPI_File_call_errhandler(fh, rc);
        return rc;
    }
    return PMPI_File_read(fh, buf, count, datatype, status);
}
