/*
 * MPI-IO reads and writes on device buffers: explicit offsets, individual
 * and shared file pointers, the collective (_all, _ordered), split
 * (_begin/_end) and nonblocking (I) forms, and their large-count (_c) forms.
 * A call on a host buffer goes to PMPI unchanged.
 *
 * A device buffer (buf, count, datatype) is staged through host memory, and
 * MPI does the I/O on the staged bytes: a write packs the data into a host
 * buffer (the pack engine, any datatype) and hands MPI the packed bytes; a
 * read lets MPI read them into the host buffer and unpacks the bytes it read
 * into the device buffer, leaving the rest of it as it was.  The packed bytes
 * go as MPI_BYTE under the "native" representation, else as count instances
 * of the datatype's packed twin (mgdt_type_twin: the same type signature, no
 * gaps), whose signature drives MPI's conversion.  Either way the file view,
 * the representation and the file pointers (which advance in etypes) are
 * MPI's business as for a host buffer, and MPI's status (bytes, in MPICH)
 * gives MPI_Get_count and MPI_Get_elements in the user's datatype.
 *
 * A nonblocking call posts MPI's nonblocking call on the staged bytes at once
 * (so calls on one file keep their order) and becomes an operation of the
 * point-to-point engine driven from here (mgp2p_driver_t): its request is the
 * engine's generalized request, and each progress pass tests MPI's request;
 * a read unpacks when it completes.  A split collective's staging waits, per
 * file, in a list from _begin to _end (MPI allows one split collective per
 * file at a time).  Errors are raised on the file's error handler.
 */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "mglog.h"
#include "mgmpi.h"
#include "p2p.h"

#define DEV(buf_, count_, dt_) mgdev_buf_is_device((buf_), (count_), (dt_))

/* How MPI is called: access, and blocking, nonblocking or split _begin. */
typedef enum file_how {
    FILE_AT,      /* explicit offset */
    FILE_AT_ALL,  /* explicit offset, collective */
    FILE_IND,     /* individual file pointer */
    FILE_ALL,     /* individual file pointer, collective */
    FILE_SHARED,  /* shared file pointer */
    FILE_ORDERED, /* shared file pointer, collective */
    FILE_I_AT,
    FILE_I_AT_ALL,
    FILE_I_IND,
    FILE_I_ALL,
    FILE_I_SHARED,
    FILE_B_AT_ALL, /* split collectives: _begin */
    FILE_B_ALL,
    FILE_B_ORDERED
} file_how_t;

typedef struct file_call {
    const char *fn;
    MPI_File fh;
    MPI_Offset off; /* explicit-offset forms */
    file_how_t how;
    int write;
} file_call_t;

#define FILE_CALL(fn_, fh_, off_, how_, write_)                                                    \
    {                                                                                              \
        .fn = (fn_), .fh = (fh_), .off = (off_), .how = (how_), .write = (write_)                  \
    }

/* A pack or unpack on the piece worker: a piece's while MPI moves the piece
   before (a write) or after (a read) it, or a nonblocking read's while the
   engine progresses other operations. */
typedef struct file_job {
    mgp2p_job_t job;
    struct file_op *f;
    char *host;
    int64_t first, len;
    int here; /* not queued: it ran in the caller */
} file_job_t;

/* A device call's staging: the engine's operation first, so that
   mgp2p_op_free frees the whole.  The host bytes are op.big (op.big_size),
   which the engine returns when the operation fails. */
typedef struct file_op {
    mgp2p_op_t op;
    MPI_File fh;
    int write;
    MPI_Datatype twin; /* what MPI reads or writes: MPI_BYTE, or count twins (owned by op.type) */
    MPI_Request inner; /* MPI's request of a nonblocking call */
    int direct;        /* MPI works in the buffer's own storage (zero copy, contiguous) */
    int unpacking;     /* a nonblocking read's unpack is on the worker (job) */
    file_job_t job;
    struct file_op *snext; /* split collectives waiting for _end */
} file_op_t;

/* Split collectives begun on device buffers, until their _end. */
static struct {
    pthread_mutex_t lock;
    file_op_t *head;
    atomic_int n; /* entries: 0 lets every _end go straight to PMPI */
} splits = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Raise rc on fh's error handler (MPI_FILE_NULL's is the default one for
   files) and return it; with MPI_ERRORS_ARE_FATAL the message is logged
   first, so that the abort says why. */
static int file_raise(MPI_File fh, int rc)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (rc == MPI_SUCCESS)
        return rc;
    if (PMPI_File_get_errhandler(fh, &eh) == MPI_SUCCESS) {
        if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT) {
            const char *msg = mgerr_get(rc);
            if (msg)
                MGLOG_ERROR(MGLOG_MPI, "%s", msg);
        }
        PMPI_Errhandler_free(&eh);
    }
    PMPI_File_call_errhandler(fh, rc);
    return rc;
}

/* MPI's call of c on count instances of t at p (the large-count forms: the
   packed bytes of an int count may exceed INT_MAX). */
static int file_pmpi(const file_call_t *c, void *p, MPI_Count count, MPI_Datatype t, MPI_Status *st,
                     MPI_Request *req)
{
    MPI_File fh = c->fh;
    MPI_Offset o = c->off;
    int w = c->write;
    switch (c->how) {
    case FILE_AT:
        return w ? PMPI_File_write_at_c(fh, o, p, count, t, st)
                 : PMPI_File_read_at_c(fh, o, p, count, t, st);
    case FILE_AT_ALL:
        return w ? PMPI_File_write_at_all_c(fh, o, p, count, t, st)
                 : PMPI_File_read_at_all_c(fh, o, p, count, t, st);
    case FILE_IND:
        return w ? PMPI_File_write_c(fh, p, count, t, st) : PMPI_File_read_c(fh, p, count, t, st);
    case FILE_ALL:
        return w ? PMPI_File_write_all_c(fh, p, count, t, st)
                 : PMPI_File_read_all_c(fh, p, count, t, st);
    case FILE_SHARED:
        return w ? PMPI_File_write_shared_c(fh, p, count, t, st)
                 : PMPI_File_read_shared_c(fh, p, count, t, st);
    case FILE_ORDERED:
        return w ? PMPI_File_write_ordered_c(fh, p, count, t, st)
                 : PMPI_File_read_ordered_c(fh, p, count, t, st);
    case FILE_I_AT:
        return w ? PMPI_File_iwrite_at_c(fh, o, p, count, t, req)
                 : PMPI_File_iread_at_c(fh, o, p, count, t, req);
    case FILE_I_AT_ALL:
        return w ? PMPI_File_iwrite_at_all_c(fh, o, p, count, t, req)
                 : PMPI_File_iread_at_all_c(fh, o, p, count, t, req);
    case FILE_I_IND:
        return w ? PMPI_File_iwrite_c(fh, p, count, t, req)
                 : PMPI_File_iread_c(fh, p, count, t, req);
    case FILE_I_ALL:
        return w ? PMPI_File_iwrite_all_c(fh, p, count, t, req)
                 : PMPI_File_iread_all_c(fh, p, count, t, req);
    case FILE_I_SHARED:
        return w ? PMPI_File_iwrite_shared_c(fh, p, count, t, req)
                 : PMPI_File_iread_shared_c(fh, p, count, t, req);
    case FILE_B_AT_ALL:
        return w ? PMPI_File_write_at_all_begin_c(fh, o, p, count, t)
                 : PMPI_File_read_at_all_begin_c(fh, o, p, count, t);
    case FILE_B_ALL:
        return w ? PMPI_File_write_all_begin_c(fh, p, count, t)
                 : PMPI_File_read_all_begin_c(fh, p, count, t);
    case FILE_B_ORDERED:
        return w ? PMPI_File_write_ordered_begin_c(fh, p, count, t)
                 : PMPI_File_read_ordered_begin_c(fh, p, count, t);
    }
    return mgerr_set(MPI_ERR_INTERN, "mpigpu: %s: unknown file access %d", c->fn, (int)c->how);
}

static int file_nonblocking(file_how_t how)
{
    return how >= FILE_I_AT && how <= FILE_I_SHARED;
}

static int file_split(file_how_t how)
{
    return how >= FILE_B_AT_ALL;
}

static void file_op_free(file_op_t *f)
{
    mgp2p_lock();
    mgdev_big_put(f->op.big, f->op.big_size);
    f->op.big = NULL;
    mgp2p_unlock();
    mgp2p_op_free(&f->op);
}

/* The bytes MPI moved, by its status. */
static int64_t file_got(const MPI_Status *st)
{
    MPI_Count n = 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0)
        return 0;
    return n;
}

/* The end of a read: the len bytes MPI read go to the device buffer. */
static int file_read_end(file_op_t *f, int64_t len)
{
    if (len > f->op.n)
        len = f->op.n;
    int rc = mgp2p_op_unpack_all(&f->op, f->op.big, len);
    return rc == MPI_SUCCESS ? rc : mgerr_prepend(rc, f->op.fn);
}

static int file_job_run(mgp2p_job_t *job)
{
    file_job_t *j = (file_job_t *)job;
    return j->f->write ? mgp2p_op_pack(&j->f->op, j->host, j->first, j->len)
                       : mgp2p_op_unpack(&j->f->op, j->host, j->first, j->len);
}

static void file_job_start(file_job_t *j, file_op_t *f, char *host, int64_t first, int64_t len)
{
    memset(j, 0, sizeof(*j));
    j->job.run = file_job_run;
    j->f = f;
    j->host = host;
    j->first = first;
    j->len = len;
    if (mgp2p_job_submit(&j->job) != MPI_SUCCESS) {
        j->here = 1;
        j->job.rc = file_job_run(&j->job);
    }
}

static int file_job_wait(file_job_t *j)
{
    return j->here ? j->job.rc : mgp2p_job_end(&j->job);
}

/* ---- nonblocking calls: an operation the engine tracks ---- */

static void file_step(mgp2p_op_t *op)
{
    file_op_t *f = (file_op_t *)op;
    MPI_Status st;
    int flag = 0, rc = MPI_SUCCESS;
    if (f->unpacking) {
        if (!mgp2p_job_done(&f->job.job))
            return;
        f->unpacking = 0;
        rc = file_job_wait(&f->job);
        goto fn_unpacked;
    }
    rc = PMPI_Test(&f->inner, &flag, &st);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0, cls = MPI_ERR_OTHER;
        PMPI_Error_class(rc, &cls);
        PMPI_Error_string(rc, msg, &len);
        mgp2p_op_fail(op,
                      mgerr_set(cls, "mpigpu: %s: %s of the staged bytes failed: %s", op->fn,
                                f->write ? "the write" : "the read", msg),
                      0);
        return;
    }
    if (!flag)
        return;
    op->done = file_got(&st);
    if (f->write || f->direct || op->n == 0 || op->done == 0)
        goto fn_done;
    if (mgp2p_op_host_method(op)) {
        /* The host method's view is opened under this lock. */
        rc = mgp2p_op_unpack_all(op, op->big, op->done < op->n ? op->done : op->n);
        goto fn_unpacked;
    }
    /* The unpack on the worker, so that this lock is not held meanwhile. */
    file_job_start(&f->job, f, op->big, 0, op->done < op->n ? op->done : op->n);
    if (!f->job.here) {
        f->unpacking = 1;
        return;
    }
    rc = f->job.job.rc;
fn_unpacked:
    if (rc != MPI_SUCCESS) {
        op->done = 0;
        mgp2p_op_fail(op, mgerr_prepend(rc, op->fn), 0);
        return;
    }
fn_done:
    mgdev_big_put(op->big, op->big_size);
    op->big = NULL;
    op->state = MGP2P_OP_DONE;
}

static int file_op_raise(const mgp2p_op_t *op, int err)
{
    return file_raise(((const file_op_t *)op)->fh, err);
}

static const mgp2p_driver_t file_driver = {
    .name = "file",
    .step = file_step,
    .raise = file_op_raise,
};

/* ---- split collectives ---- */

static void split_add(file_op_t *f)
{
    pthread_mutex_lock(&splits.lock);
    f->snext = splits.head;
    splits.head = f;
    atomic_fetch_add_explicit(&splits.n, 1, memory_order_release);
    pthread_mutex_unlock(&splits.lock);
}

static file_op_t *split_take(MPI_File fh)
{
    file_op_t *f = NULL;
    pthread_mutex_lock(&splits.lock);
    for (file_op_t **p = &splits.head; *p; p = &(*p)->snext) {
        if ((*p)->fh == fh) {
            f = *p;
            *p = f->snext;
            atomic_fetch_sub_explicit(&splits.n, 1, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&splits.lock);
    return f;
}

/* ---- a call on a device buffer ---- */

static void view_type_drop(MPI_Datatype *t)
{
    int ni, na, nt, comb = MPI_COMBINER_NAMED;
    if (*t != MPI_DATATYPE_NULL &&
        PMPI_Type_get_envelope(*t, &ni, &na, &nt, &comb) == MPI_SUCCESS &&
        comb != MPI_COMBINER_NAMED)
        PMPI_Type_free(t);
}

/* Whether fh's view has the "native" representation: MPI then converts
   nothing, and the staged bytes go as MPI_BYTE, a contiguous type whose
   status counts the bytes MPI moved.  Under another representation they go
   as the twin, whose signature drives MPI's conversion; ROMIO then counts,
   for a twin it does not see as contiguous (a struct's), the bytes asked for
   even where the file ends first, as it does for such a type on a host
   buffer. */
static int file_native(MPI_File fh, MPI_Count *etsize)
{
    MPI_Offset disp = 0;
    MPI_Datatype et = MPI_DATATYPE_NULL, ft = MPI_DATATYPE_NULL;
    char rep[MPI_MAX_DATAREP_STRING + 1] = "";
    *etsize = 0;
    if (PMPI_File_get_view(fh, &disp, &et, &ft, rep) != MPI_SUCCESS)
        return 0; /* MPI reports the handle at the call itself */
    PMPI_Type_size_c(et, etsize);
    view_type_drop(&et);
    view_type_drop(&ft);
    return !strcmp(rep, "native");
}

static int file_check(const file_call_t *c, void *req)
{
    if (c->fh == MPI_FILE_NULL)
        return mgerr_set(MPI_ERR_FILE, "mpigpu: %s: the file handle is MPI_FILE_NULL", c->fn);
    if ((c->how == FILE_AT || c->how == FILE_AT_ALL || c->how == FILE_I_AT ||
         c->how == FILE_I_AT_ALL || c->how == FILE_B_AT_ALL) &&
        c->off < 0)
        return mgerr_set(MPI_ERR_ARG, "mpigpu: %s: negative offset %lld", c->fn, (long long)c->off);
    if (file_nonblocking(c->how))
        return mgmpi_check_request(c->fn, req);
    return MPI_SUCCESS;
}

/* ---- pieces: explicit offsets, independent access ---- */

/* A host buffer of a piece: a pinned one of the pool while one is free, else
   kept host memory. */
typedef struct file_buf {
    mgdev_stage_t *stage;
    char *big;
    size_t cap;
    char *p;
} file_buf_t;

static int file_buf_get(file_buf_t *b, size_t len)
{
    int rc = MPI_SUCCESS;
    mgp2p_lock();
    if (len <= mgdev_stage_chunk())
        rc = mgdev_stage_get(len, &b->stage);
    if (rc == MPI_SUCCESS && b->stage)
        b->p = b->stage->ptr;
    else if ((rc = mgdev_big_get(len, &b->big, &b->cap)) == MPI_SUCCESS)
        b->p = b->big;
    mgp2p_unlock();
    return rc;
}

static void file_buf_put(file_buf_t *b)
{
    mgp2p_lock();
    mgdev_stage_put(b->stage);
    mgdev_big_put(b->big, b->cap);
    mgp2p_unlock();
    memset(b, 0, sizeof(*b));
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The packed bytes of a piece: about one staging chunk of whole instances
   whose bytes are whole etypes (etsize), so that the offset of each piece
   is the call's plus its first byte in etypes; 0 when the call is too short
   for two pieces. */
static int64_t file_piece_len(const file_op_t *f, MPI_Count etsize)
{
    int64_t tsize = f->op.type->size, chunk = (int64_t)mgdev_stage_chunk();
    if (etsize <= 0 || tsize <= 0)
        return 0;
    int64_t unit = etsize / gcd64(tsize, etsize); /* instances per whole etypes */
    int64_t per = chunk / tsize / unit * unit;
    if (per < unit)
        per = unit;
    int64_t len = per * tsize;
    return len * 2 <= f->op.n ? len : 0;
}

/* MPI_File_write_at and MPI_File_read_at of a long device buffer in pieces
   of plen bytes at offset off (etypes of etsize bytes), two host buffers in
   turn: the worker packs piece k + 1 while MPI writes piece k, or unpacks
   piece k while MPI reads piece k + 1.  A read that meets the end of the
   file stops there.  *st: the last piece's status, counting every byte
   moved; *raised when MPI raised an error. */
static int file_pieces(const file_call_t *c, file_op_t *f, MPI_Count etsize, int64_t plen,
                       MPI_Status *st, int *raised)
{
    int rc = MPI_SUCCESS, rc2 = MPI_SUCCESS;
    file_buf_t b[2] = {{0}, {0}};
    file_job_t job;
    int64_t n = f->op.n, done = 0, first = 0;

    for (int i = 0; i < 2; i++) {
        rc = file_buf_get(&b[i], (size_t)plen);
        if (rc != MPI_SUCCESS)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM,
                    "mpigpu: %s: out of host memory for a piece of %lld bytes", c->fn,
                    (long long)plen);
    }
    if (c->write) {
        rc = mgp2p_op_pack(&f->op, b[0].p, 0, plen);
        MG_CHECK(rc, fn_fail);
    } else {
        rc = PMPI_File_read_at_c(c->fh, c->off, b[0].p, plen, MPI_BYTE, st);
        *raised = rc != MPI_SUCCESS;
        MG_CHECK(rc, fn_fail);
    }
    for (int k = 0; first < n; k++) {
        int64_t len = n - first < plen ? n - first : plen, next = first + len;
        int64_t nlen = n - next < plen ? n - next : plen;
        char *cur = b[k & 1].p, *other = b[(k + 1) & 1].p;
        if (c->write) {
            if (nlen > 0)
                file_job_start(&job, f, other, next, nlen);
            rc = PMPI_File_write_at_c(c->fh, c->off + first / etsize, cur, len, MPI_BYTE, st);
            if (nlen > 0)
                rc2 = file_job_wait(&job);
            *raised = rc != MPI_SUCCESS;
            MG_CHECK(rc, fn_fail);
            rc = rc2;
            MG_CHECK(rc, fn_fail);
            int64_t got = file_got(st);
            done += got;
            if (got < len)
                break;
        } else {
            int64_t got = file_got(st); /* piece k, in cur */
            if (got < len)
                nlen = 0; /* the file ends in piece k */
            if (nlen > 0)
                file_job_start(&job, f, cur, first, got);
            else
                rc2 = mgp2p_op_unpack(&f->op, cur, first, got);
            done += got;
            if (nlen > 0) {
                rc = PMPI_File_read_at_c(c->fh, c->off + next / etsize, other, nlen, MPI_BYTE, st);
                rc2 = file_job_wait(&job);
                *raised = rc != MPI_SUCCESS;
                MG_CHECK(rc, fn_fail);
            }
            rc = rc2;
            MG_CHECK(rc, fn_fail);
            if (nlen == 0)
                break;
        }
        first = next;
    }
    PMPI_Status_set_elements_x(st, MPI_BYTE, done);
fn_exit:
    file_buf_put(&b[0]);
    file_buf_put(&b[1]);
    return rc;
fn_fail:
    if (!*raised)
        rc = mgerr_prepend(rc, c->fn);
    goto fn_exit;
}

static int file_dev(const file_call_t *c, void *buf, int count, MPI_Datatype dt, MPI_Status *status,
                    MPI_Request *req)
{
    static char none[1]; /* what MPI is given when nothing moves */
    int rc = MPI_SUCCESS, raised = 0;
    MPI_Status st;
    file_op_t *f = NULL;

    rc = file_check(c, req);
    MG_CHECK(rc, fn_fail);
    f = calloc(1, sizeof(*f));
    if (!f)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", c->fn);
    f->fh = c->fh;
    f->write = c->write;
    f->twin = dt;
    f->inner = MPI_REQUEST_NULL;
    rc = mgp2p_op_init(&f->op, c->write ? MGP2P_OP_SEND : MGP2P_OP_RECV, c->fn, buf, count, dt, 0,
                       0, MPI_COMM_SELF);
    MG_CHECK(rc, fn_fail);
    void *p = none;
    MPI_Count n = count, etsize = 0;
    if (f->op.n > 0 && f->op.zc && mgpk_contig(f->op.type, count)) {
        /* Contiguous data of a buffer whose storage is host memory (zero
           copy): MPI reads or writes it in place, once the engine's commands
           are done, as it would a host buffer. */
        rc = mgpk_finish(f->op.pk);
        MG_CHECK(rc, fn_fail);
        f->direct = 1;
        p = f->op.zc;
    } else if (f->op.n > 0) {
        if (file_native(c->fh, &etsize)) {
            f->twin = MPI_BYTE;
            n = f->op.n;
            int64_t plen = file_piece_len(f, etsize);
            if (c->how == FILE_AT && plen > 0 && !mgp2p_op_host_method(&f->op)) {
                rc = file_pieces(c, f, etsize, plen, &st, &raised);
                MG_CHECK(rc, fn_fail);
                mgp2p_status_copy(status, &st);
                goto fn_exit;
            }
        } else {
            rc = mgdt_type_twin(f->op.type, dt, &f->twin);
            if (rc != MPI_SUCCESS) {
                rc = mgerr_prepend(rc, c->fn);
                goto fn_fail;
            }
        }
        mgp2p_lock();
        rc = mgdev_big_get((size_t)f->op.n, &f->op.big, &f->op.big_size);
        mgp2p_unlock();
        if (rc != MPI_SUCCESS)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM,
                    "mpigpu: %s: out of host memory for %lld staged bytes", c->fn,
                    (long long)f->op.n);
        p = f->op.big;
        if (c->write) {
            rc = mgp2p_op_pack_all(&f->op, f->op.big);
            if (rc != MPI_SUCCESS) {
                rc = mgerr_prepend(rc, c->fn);
                goto fn_fail;
            }
        }
    }
    /* Nothing moves (count 0, a type of size 0): MPI still does the call,
       on count instances of the user's type at a host address. */
    rc = file_pmpi(c, p, n, f->twin, &st, &f->inner);
    raised = rc != MPI_SUCCESS; /* on the file's handler, by MPI */
    MG_CHECK(rc, fn_fail);
    if (file_nonblocking(c->how)) {
        f->op.driver = &file_driver;
        rc = mgp2p_op_start(&f->op, 1);
        if (rc != MPI_SUCCESS) {
            PMPI_Wait(&f->inner, MPI_STATUS_IGNORE);
            raised = 1;
            goto fn_fail;
        }
        *req = f->op.greq;
        return MPI_SUCCESS; /* the engine owns f */
    }
    if (file_split(c->how)) {
        split_add(f);
        return MPI_SUCCESS;
    }
    if (!c->write && f->op.n > 0 && !f->direct) {
        rc = file_read_end(f, file_got(&st));
        MG_CHECK(rc, fn_fail);
    }
    mgp2p_status_copy(status, &st);
fn_exit:
    if (f)
        file_op_free(f);
    return rc;
fn_fail:
    if (!raised)
        rc = file_raise(c->fh, rc);
    goto fn_exit;
}

/* The large-count forms: the int form's path under the _c name while the
   count fits an int. */
static int file_dev_c(const file_call_t *c, void *buf, MPI_Count count, MPI_Datatype dt,
                      MPI_Status *status, MPI_Request *req)
{
    if (count <= INT_MAX) /* a negative count fails there, as MPI's */
        return file_dev(c, buf, count < 0 ? -1 : (int)count, dt, status, req);
    int rc = file_check(c, req);
    if (rc == MPI_SUCCESS)
        rc = mgmpi_check_type(c->fn, dt);
    if (rc == MPI_SUCCESS)
        rc = mgerr_set(MPI_ERR_COUNT,
                       "mpigpu: %s: count %lld of a device buffer is larger than an int; nothing "
                       "was read or written",
                       c->fn, (long long)count);
    return file_raise(c->fh, rc);
}

/* A split collective's _end: MPI's _end on the staged bytes of the _begin
   on fh, then a read's unpack.  Without one, the call is MPI's. */
typedef int (*file_end_fn)(MPI_File fh, void *buf, MPI_Status *status);

static int file_end(MPI_File fh, void *buf, MPI_Status *status, file_end_fn end)
{
    if (atomic_load_explicit(&splits.n, memory_order_acquire) == 0)
        return end(fh, buf, status);
    file_op_t *f = split_take(fh);
    if (!f)
        return end(fh, buf, status);
    MPI_Status st;
    int rc = end(fh, f->direct ? f->op.zc : f->op.n > 0 ? f->op.big : buf, &st);
    if (rc == MPI_SUCCESS && !f->write && f->op.n > 0 && !f->direct) {
        rc = file_read_end(f, file_got(&st));
        if (rc != MPI_SUCCESS)
            file_raise(fh, rc);
    }
    if (rc == MPI_SUCCESS)
        mgp2p_status_copy(status, &st);
    file_op_free(f);
    return rc;
}

static int end_write_all(MPI_File fh, void *buf, MPI_Status *st)
{
    return PMPI_File_write_all_end(fh, buf, st);
}

static int end_read_all(MPI_File fh, void *buf, MPI_Status *st)
{
    return PMPI_File_read_all_end(fh, buf, st);
}

static int end_write_at_all(MPI_File fh, void *buf, MPI_Status *st)
{
    return PMPI_File_write_at_all_end(fh, buf, st);
}

static int end_read_at_all(MPI_File fh, void *buf, MPI_Status *st)
{
    return PMPI_File_read_at_all_end(fh, buf, st);
}

static int end_write_ordered(MPI_File fh, void *buf, MPI_Status *st)
{
    return PMPI_File_write_ordered_end(fh, buf, st);
}

static int end_read_ordered(MPI_File fh, void *buf, MPI_Status *st)
{
    return PMPI_File_read_ordered_end(fh, buf, st);
}

/* ---- the entry points ---- */

/* Explicit offsets, individual and shared file pointers, blocking and
   nonblocking, and the split collectives' _begin (which stages), in their int
   and _c forms: generated from src/mpi/file.def (build-aux/gen-file.awk). */
#include "file_entry.c"

/* The split collectives' _end: completes what _begin staged. */

MPIGPU_EXPORT
int MPI_File_write_at_all_end(MPI_File fh, const void *buf, MPI_Status *status)
{
    return file_end(fh, (void *)buf, status, end_write_at_all);
}

MPIGPU_EXPORT
int MPI_File_read_at_all_end(MPI_File fh, void *buf, MPI_Status *status)
{
    return file_end(fh, (void *)buf, status, end_read_at_all);
}

MPIGPU_EXPORT
int MPI_File_write_all_end(MPI_File fh, const void *buf, MPI_Status *status)
{
    return file_end(fh, (void *)buf, status, end_write_all);
}

MPIGPU_EXPORT
int MPI_File_read_all_end(MPI_File fh, void *buf, MPI_Status *status)
{
    return file_end(fh, (void *)buf, status, end_read_all);
}

MPIGPU_EXPORT
int MPI_File_write_ordered_end(MPI_File fh, const void *buf, MPI_Status *status)
{
    return file_end(fh, (void *)buf, status, end_write_ordered);
}

MPIGPU_EXPORT
int MPI_File_read_ordered_end(MPI_File fh, void *buf, MPI_Status *status)
{
    return file_end(fh, (void *)buf, status, end_read_ordered);
}
