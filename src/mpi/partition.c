/*
 * Calls that take a buffer outside point-to-point, collectives and files:
 * MPI 4.0's partitioned communication (MPI_Psend_init, MPI_Precv_init,
 * MPI_Pready*, MPI_Parrived) and the buffer of buffered sends
 * (MPI_Buffer_attach/_detach).  A host buffer goes to PMPI unchanged.
 *
 * A partitioned request on a device buffer is MPI's own partitioned request
 * on a host mirror of the buffer's span, wrapped in a persistent operation
 * of the engine (hook protocol), whose stand-in the caller gets: MPI_Pready
 * copies the partition's bytes from the device to the mirror before MPI may
 * send them; a receive's partition goes to the device, typed (only its data
 * bytes), when MPI_Parrived first reports it or when the request completes.
 * doc/design.md, "Partitioned communication".
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "mgmpi.h"
#include "p2p.h"

/* ---- partitioned communication ---- */

typedef struct part {
    int recv;
    char *dev;       /* the caller's buffer (device addresses) */
    char *mirror;    /* host bytes of [dev + lo, dev + hi) */
    int64_t lo, hi;  /* the span of all partitions, from dev */
    int partitions;  /* as given */
    int count;       /* elements per partition */
    MPI_Datatype dt; /* a duplicate, so that the caller may free theirs */
    MPI_Aint extent; /* of dt */
    MPI_Comm comm;
    MPI_Request inner; /* MPI's partitioned request on the mirror */
    MPI_Status st;     /* its status at completion */
    char *packed;      /* one partition packed (a receive's typed copy) */
    int psize;         /* its size */
    char *moved;       /* per partition: on the device already (receive) */
} part_t;

static char *mirror_at(const part_t *p, int k)
{
    return p->mirror - p->lo + (int64_t)k * p->count * p->extent;
}

static char *dev_at(const part_t *p, int k)
{
    return p->dev + (int64_t)k * p->count * p->extent;
}

/* The span of count elements of dt from byte 0: [*lo, *hi). */
static int elems_span(MPI_Count count, MPI_Datatype dt, int64_t *lo, int64_t *hi)
{
    MPI_Count lb = 0, ext = 0, tlb = 0, text = 0;
    int rc = PMPI_Type_get_extent_x(dt, &lb, &ext);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_get_true_extent_x(dt, &tlb, &text);
    if (rc != MPI_SUCCESS)
        return rc;
    *lo = *hi = 0;
    if (count <= 0 || text <= 0)
        return MPI_SUCCESS;
    int64_t a = tlb, b = tlb + (count - 1) * ext;
    *lo = a < b ? a : b;
    *hi = (a > b ? a : b) + text;
    return MPI_SUCCESS;
}

/* Partition k of a send: its bytes (gaps included: MPI reads only the data)
   from the device to the mirror. */
static int part_in(part_t *p, int k, const char *fn)
{
    int64_t lo = 0, hi = 0;
    int rc = elems_span(p->count, p->dt, &lo, &hi);
    if (rc != MPI_SUCCESS || hi <= lo)
        return rc;
    rc = MPIX_Gpu_memcpy(mirror_at(p, k) + lo, dev_at(p, k) + lo, (size_t)(hi - lo));
    return rc == MPI_SUCCESS ? rc : mgerr_prepend(rc, fn);
}

/* Partition k of a receive: its data bytes from the mirror to the device
   (packed on the host, unpacked onto the device), once. */
static int part_out(part_t *p, int k, const char *fn)
{
    if (p->moved[k] || p->count == 0)
        return MPI_SUCCESS;
    int pos = 0;
    int rc = PMPI_Pack(mirror_at(p, k), p->count, p->dt, p->packed, p->psize, &pos, p->comm);
    if (rc == MPI_SUCCESS) {
        int at = 0;
        rc = MPI_Unpack(p->packed, pos, &at, dev_at(p, k), p->count, p->dt, p->comm);
    }
    if (rc != MPI_SUCCESS)
        return mgerr_set(MPI_ERR_OTHER, "mpigpu: %s: partition %d could not reach the device", fn,
                         k);
    p->moved[k] = 1;
    return MPI_SUCCESS;
}

static int part_start(mgp2p_op_t *op)
{
    part_t *p = op->hook_arg;
    if (p->recv)
        memset(p->moved, 0, (size_t)p->partitions);
    return PMPI_Start(&p->inner);
}

static int part_step(mgp2p_op_t *op, int *done)
{
    part_t *p = op->hook_arg;
    int flag = 0;
    int rc = PMPI_Test(&p->inner, &flag, &p->st);
    if (rc != MPI_SUCCESS || !flag)
        return rc;
    *done = 1;
    for (int k = 0; p->recv && k < p->partitions && rc == MPI_SUCCESS; k++)
        rc = part_out(p, k, op->fn);
    return rc;
}

static void part_status(const mgp2p_op_t *op, MPI_Status *status)
{
    const part_t *p = op->hook_arg;
    mgp2p_status_copy(status, &p->st);
}

static void part_release(mgp2p_op_t *op)
{
    part_t *p = op->hook_arg;
    if (!p)
        return;
    if (p->inner != MPI_REQUEST_NULL)
        PMPI_Request_free(&p->inner);
    if (p->dt != MPI_DATATYPE_NULL)
        PMPI_Type_free(&p->dt);
    free(p->mirror);
    free(p->packed);
    free(p->moved);
    free(p);
}

static const mgp2p_hook_t part_hook = {
    .start = part_start,
    .step = part_step,
    .status = part_status,
    .release = part_release,
};

/* A device partitioned request, or PMPI's on a host buffer. */
static int part_init(const char *fn, int recv, void *buf, int partitions, MPI_Count count,
                     MPI_Datatype dt, int peer, int tag, MPI_Comm comm, MPI_Info info,
                     MPI_Request *req)
{
    int rc = MPI_SUCCESS;
    MPI_Count total = partitions > 0 && count > 0 ? (MPI_Count)partitions * count : 0;
    if (!mgdev_buf_is_device(buf, total, dt))
        return recv ? PMPI_Precv_init(buf, partitions, count, dt, peer, tag, comm, info, req)
                    : PMPI_Psend_init(buf, partitions, count, dt, peer, tag, comm, info, req);
    if (!req)
        return mgmpi_error(comm, mgmpi_check_request(fn, req));
    if (count > INT_MAX)
        return mgmpi_error(comm, mgerr_set(MPI_ERR_COUNT,
                                           "mpigpu: %s: a count of %lld elements per partition "
                                           "on a device buffer is above INT_MAX",
                                           fn, (long long)count));
    rc = mgmpi_check_type(fn, dt);
    if (rc != MPI_SUCCESS)
        return mgmpi_error(comm, rc);
    part_t *p = calloc(1, sizeof(*p));
    if (!p)
        return mgmpi_error(comm, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
    p->recv = recv;
    p->dev = buf;
    p->partitions = partitions;
    p->count = (int)count;
    p->comm = comm;
    p->inner = MPI_REQUEST_NULL;
    p->dt = MPI_DATATYPE_NULL;
    MPI_Aint lb = 0;
    PMPI_Type_get_extent(dt, &lb, &p->extent);
    rc = elems_span(total, dt, &p->lo, &p->hi);
    if (rc != MPI_SUCCESS)
        goto fn_fail_mpi;
    /* The whole span lies in one live allocation. */
    mgdev_reg_entry_t e;
    size_t off = 0;
    if (p->hi > p->lo &&
        (!mgdev_reg_lookup(p->dev + p->lo, &e, &off) || (size_t)(p->hi - p->lo) > e.size - off)) {
        rc = mgerr_set(MPI_ERR_BUFFER,
                       "mpigpu: %s: the %d partitions of %lld elements at %p (bytes [%lld, %lld)) "
                       "are not inside one live device allocation",
                       fn, partitions, (long long)count, buf, (long long)p->lo, (long long)p->hi);
        goto fn_fail;
    }
    size_t span = (size_t)(p->hi - p->lo);
    p->mirror = malloc(span ? span : 1);
    p->moved = calloc((size_t)(partitions > 0 ? partitions : 1), 1);
    rc = PMPI_Pack_size(p->count, dt, comm, &p->psize);
    if (rc != MPI_SUCCESS)
        goto fn_fail_mpi;
    p->packed = malloc(p->psize > 0 ? (size_t)p->psize : 1);
    if (!p->mirror || !p->moved || !p->packed) {
        rc = mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory for a mirror of %zu bytes",
                       fn, span);
        goto fn_fail;
    }
    rc = PMPI_Type_dup(dt, &p->dt);
    if (rc != MPI_SUCCESS)
        goto fn_fail_mpi;
    char *hbuf = p->mirror - p->lo;
    rc = recv ? PMPI_Precv_init(hbuf, partitions, count, dt, peer, tag, comm, info, &p->inner)
              : PMPI_Psend_init(hbuf, partitions, count, dt, peer, tag, comm, info, &p->inner);
    if (rc != MPI_SUCCESS)
        goto fn_fail_mpi; /* raised by MPI */
    mgp2p_op_t *op = calloc(1, sizeof(*op));
    if (!op) {
        rc = mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn);
        goto fn_fail;
    }
    mgp2p_op_init_hook(op, fn, comm, &part_hook, p);
    mgp2p_lock();
    rc = mgp2p_op_persist(op, req);
    mgp2p_unlock();
    if (rc != MPI_SUCCESS) {
        mgp2p_op_free(op); /* its release frees p */
        return mgmpi_error(comm, rc);
    }
    return MPI_SUCCESS;
fn_fail:
    part_release(&(mgp2p_op_t){.hook_arg = p});
    return mgmpi_error(comm, rc);
fn_fail_mpi:
    part_release(&(mgp2p_op_t){.hook_arg = p});
    return rc;
}

/* The device partitioned request behind req, or NULL (lock held). */
static part_t *part_of(MPI_Request req)
{
    if (!mgp2p_req_any())
        return NULL;
    mgp2p_op_t *op = mgp2p_req_lookup(req);
    return op && op->hook == &part_hook ? op->hook_arg : NULL;
}

MPIGPU_EXPORT
int MPI_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                   int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return part_init("MPI_Psend_init", 0, (void *)(uintptr_t)buf, partitions, count, datatype, dest,
                     tag, comm, info, request);
}

MPIGPU_EXPORT
int MPI_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source,
                   int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return part_init("MPI_Precv_init", 1, buf, partitions, count, datatype, source, tag, comm, info,
                     request);
}

/* MPI_Pready of partitions list[0..n) (or lo..hi when list is NULL). */
static int pready(const char *fn, int lo, int hi, int *list, int n, MPI_Request req)
{
    mgp2p_lock();
    part_t *p = part_of(req);
    mgp2p_unlock();
    if (!p)
        return list       ? PMPI_Pready_list(n, list, req)
               : lo == hi ? PMPI_Pready(lo, req)
                          : PMPI_Pready_range(lo, hi, req);
    int m = list ? n : hi - lo + 1;
    for (int i = 0; i < m; i++) {
        int k = list ? list[i] : lo + i;
        if (p->recv || k < 0 || k >= p->partitions)
            return mgmpi_error(p->comm,
                               mgerr_set(MPI_ERR_ARG,
                                         "mpigpu: %s: partition %d of a %s request of "
                                         "%d partitions",
                                         fn, k, p->recv ? "receive" : "send", p->partitions));
        int rc = part_in(p, k, fn);
        if (rc != MPI_SUCCESS)
            return mgmpi_error(p->comm, rc);
        rc = PMPI_Pready(k, p->inner);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_Pready(int partition, MPI_Request request)
{
    return pready("MPI_Pready", partition, partition, NULL, 0, request);
}

MPIGPU_EXPORT
int MPI_Pready_range(int partition_low, int partition_high, MPI_Request request)
{
    return pready("MPI_Pready_range", partition_low, partition_high, NULL, 0, request);
}

MPIGPU_EXPORT
int MPI_Pready_list(int length, int array_of_partitions[], MPI_Request request)
{
    return pready("MPI_Pready_list", 0, 0, array_of_partitions, length, request);
}

MPIGPU_EXPORT
int MPI_Parrived(MPI_Request request, int partition, int *flag)
{
    mgp2p_lock();
    part_t *p = part_of(request);
    mgp2p_unlock();
    if (!p)
        return PMPI_Parrived(request, partition, flag);
    if (!p->recv || partition < 0 || partition >= p->partitions)
        return mgmpi_error(p->comm,
                           mgerr_set(MPI_ERR_ARG,
                                     "mpigpu: MPI_Parrived: partition %d of a %s request of %d "
                                     "partitions",
                                     partition, p->recv ? "receive" : "send", p->partitions));
    int rc = PMPI_Parrived(p->inner, partition, flag);
    if (rc != MPI_SUCCESS || !*flag)
        return rc;
    rc = part_out(p, partition, "MPI_Parrived");
    return rc == MPI_SUCCESS ? rc : mgmpi_error(p->comm, rc);
}

/* ---- the buffer of buffered sends ---- */

/* A device buffer attached: MPI gets host memory of its size instead (its
   contents are MPI's business), and MPI_Buffer_detach hands back the
   caller's address. */
static struct {
    void *dev, *host;
} attached;

static int attach(const char *fn, void *buffer, MPI_Count size)
{
    if (size <= 0 || !mgdev_reg_in_range(buffer, (size_t)size))
        return size <= INT_MAX ? PMPI_Buffer_attach(buffer, (int)size)
                               : PMPI_Buffer_attach_c(buffer, size);
    void *h = malloc((size_t)size);
    if (!h)
        return mgmpi_error(MPI_COMM_WORLD,
                           mgerr_set(MPI_ERR_NO_MEM,
                                     "mpigpu: %s: out of host memory for a buffer of %lld bytes",
                                     fn, (long long)size));
    int rc = size <= INT_MAX ? PMPI_Buffer_attach(h, (int)size) : PMPI_Buffer_attach_c(h, size);
    if (rc != MPI_SUCCESS) {
        free(h);
        return rc;
    }
    attached.dev = buffer;
    attached.host = h;
    return MPI_SUCCESS;
}

static void detached(void *buffer_addr)
{
    void **p = buffer_addr;
    if (attached.host && *p == attached.host) {
        free(attached.host);
        *p = attached.dev;
        attached.host = attached.dev = NULL;
    }
}

MPIGPU_EXPORT
int MPI_Buffer_attach(void *buffer, int size)
{
    return attach("MPI_Buffer_attach", buffer, size);
}

MPIGPU_EXPORT
int MPI_Buffer_attach_c(void *buffer, MPI_Count size)
{
    return attach("MPI_Buffer_attach_c", buffer, size);
}

MPIGPU_EXPORT
int MPI_Buffer_detach(void *buffer_addr, int *size)
{
    int rc = PMPI_Buffer_detach(buffer_addr, size);
    if (rc == MPI_SUCCESS)
        detached(buffer_addr);
    return rc;
}

MPIGPU_EXPORT
int MPI_Buffer_detach_c(void *buffer_addr, MPI_Count *size)
{
    int rc = PMPI_Buffer_detach_c(buffer_addr, size);
    if (rc == MPI_SUCCESS)
        detached(buffer_addr);
    return rc;
}
