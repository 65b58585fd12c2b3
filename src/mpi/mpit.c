/*
 * The library's performance variables, its settings as control variables,
 * and its category in MPI's tool interface: the MPI_T_* calls are interposed
 * so that the variables below follow MPI's own, with indices from MPI's
 * count up, and any tool that reads MPI_T (TAU, Score-P, a listing program)
 * sees them.  Calls about MPI's own variables go to PMPI unchanged.
 *
 * Every performance variable here is continuous (always active, never started or
 * stopped), of type MPI_UNSIGNED_LONG_LONG, bound to no object.  A counter
 * may be reset or written through its handle (the handle keeps its own
 * base); levels and high-water marks are read-only.
 *
 * Thread safety: mpit_lock guards the one list of handles.  Reading a variable
 * takes the owning layer's lock (the device state's, the point-to-point
 * engine's counters are atomic or read under its lock).
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpigpu.h"
#include "mgdev.h"
#include "mgparam.h"
#include "mgmpi.h"
#include "p2p.h"
#include "coll.h"

typedef unsigned long long mpit_value_t;

/* What a variable reads: one field of one layer's counters. */
typedef enum mpit_source {
    SRC_PACK_BYTES,
    SRC_UNPACK_BYTES,
    SRC_CALLS_KERNEL,
    SRC_CALLS_COPY,
    SRC_CALLS_HOST,
    SRC_LAUNCHES,
    SRC_CHOICES,
    SRC_HOST_SPLITS,
    SRC_PROGRAMS_BUILT,
    SRC_PROGRAMS_LOADED,
    SRC_STAGING_ALLOCATED,
    SRC_STAGING_HIGH,
    SRC_BIG_KEPT,
    SRC_BIG_ALLOCS,
    SRC_REG_IN_USE,
    SRC_REG_HIGH,
    SRC_PIPE_HIGH,
    SRC_WORKER_JOBS,
    SRC_LANE_SENT,
    SRC_LANE_RECEIVED,
    SRC_HOST_RECV_INPLACE,
    SRC_HOST_RECV_LANDED,
    SRC_HOST_RECV_SUPERSEDED,
    SRC_HOST_RECV_BARE,
    SRC_GRANTS_ASKED,
    SRC_GRANTS_SENT,
    SRC_GRANTS_RECEIVED,
    SRC_REST_SENT,
    SRC_REST_RECEIVED,
    SRC_OPS_PLAIN,
    SRC_OPS_CHUNKED,
    SRC_OPS_LANE,
    SRC_OPS_REST,
    SRC_COLL_DEVICE_REDUCE,
    SRC_COLL_PIPELINED,
    SRC_COLL_PIPELINED_CHUNKS,
    SRC_COLL_PACKED_FUSED,
    SRC_COLL_PACKED_BLOCKS
} mpit_source_t;

typedef struct mpit_pvar {
    const char *name;
    int var_class; /* MPI_T_PVAR_CLASS_COUNTER, _LEVEL or _HIGHWATERMARK */
    mpit_source_t source;
    const char *desc;
} mpit_pvar_t;

static const mpit_pvar_t pvars[] = {
    {"mpigpu_pack_bytes", MPI_T_PVAR_CLASS_COUNTER, SRC_PACK_BYTES,
     "Bytes packed from device buffers by the pack engine (MPI_Pack, sends, pieces)"},
    {"mpigpu_unpack_bytes", MPI_T_PVAR_CLASS_COUNTER, SRC_UNPACK_BYTES,
     "Bytes unpacked into device buffers by the pack engine"},
    {"mpigpu_pack_calls_kernel", MPI_T_PVAR_CLASS_COUNTER, SRC_CALLS_KERNEL,
     "Pack and unpack calls that ran the kernel method"},
    {"mpigpu_pack_calls_copy", MPI_T_PVAR_CLASS_COUNTER, SRC_CALLS_COPY,
     "Pack and unpack calls that ran the copy method (OpenCL buffer or rectangle copies)"},
    {"mpigpu_pack_calls_host", MPI_T_PVAR_CLASS_COUNTER, SRC_CALLS_HOST,
     "Pack and unpack calls that ran the host method (the CPU walks a host copy)"},
    {"mpigpu_kernel_launches", MPI_T_PVAR_CLASS_COUNTER, SRC_LAUNCHES,
     "OpenCL kernels enqueued by the pack engine"},
    {"mpigpu_auto_choices", MPI_T_PVAR_CLASS_COUNTER, SRC_CHOICES,
     "MPIGPU_PACK=auto decisions computed from the calibration table"},
    {"mpigpu_host_splits", MPI_T_PVAR_CLASS_COUNTER, SRC_HOST_SPLITS,
     "Host walks split over the copy threads"},
    {"mpigpu_programs_built", MPI_T_PVAR_CLASS_COUNTER, SRC_PROGRAMS_BUILT,
     "OpenCL programs compiled from source"},
    {"mpigpu_programs_loaded", MPI_T_PVAR_CLASS_COUNTER, SRC_PROGRAMS_LOADED,
     "OpenCL programs loaded from the disk cache (MPIGPU_CACHE_DIR)"},
    {"mpigpu_staging_bytes", MPI_T_PVAR_CLASS_LEVEL, SRC_STAGING_ALLOCATED,
     "Bytes of pinned staging buffers allocated now (at most MPIGPU_STAGING_MAX)"},
    {"mpigpu_staging_bytes_high", MPI_T_PVAR_CLASS_HIGHWATERMARK, SRC_STAGING_HIGH,
     "Most bytes of pinned staging buffers allocated at once"},
    {"mpigpu_long_buffer_bytes", MPI_T_PVAR_CLASS_LEVEL, SRC_BIG_KEPT,
     "Bytes of host buffers kept for long plain messages (at most MPIGPU_STAGING_KEEP)"},
    {"mpigpu_long_buffer_allocs", MPI_T_PVAR_CLASS_COUNTER, SRC_BIG_ALLOCS,
     "Host buffers allocated for long plain messages"},
    {"mpigpu_device_address_bytes", MPI_T_PVAR_CLASS_LEVEL, SRC_REG_IN_USE,
     "Bytes of the device address range in use by live allocations"},
    {"mpigpu_device_address_high", MPI_T_PVAR_CLASS_HIGHWATERMARK, SRC_REG_HIGH,
     "Highest offset of the device address range handed out"},
    {"mpigpu_p2p_pipeline_depth_high", MPI_T_PVAR_CLASS_HIGHWATERMARK, SRC_PIPE_HIGH,
     "Most pieces of one chunked message in flight at once"},
    {"mpigpu_p2p_worker_jobs", MPI_T_PVAR_CLASS_COUNTER, SRC_WORKER_JOBS,
     "Piece packs and unpacks run on the point-to-point worker thread"},
    {"mpigpu_p2p_lane_pieces_sent", MPI_T_PVAR_CLASS_COUNTER, SRC_LANE_SENT,
     "Pieces of chunked messages sent through node lanes (shared memory)"},
    {"mpigpu_p2p_lane_pieces_received", MPI_T_PVAR_CLASS_COUNTER, SRC_LANE_RECEIVED,
     "Pieces of chunked messages received through node lanes (shared memory)"},
    {"mpigpu_p2p_host_recv_inplace", MPI_T_PVAR_CLASS_COUNTER, SRC_HOST_RECV_INPLACE,
     "Host receives of device messages that took the message in place"},
    {"mpigpu_p2p_host_recv_landed", MPI_T_PVAR_CLASS_COUNTER, SRC_HOST_RECV_LANDED,
     "Host receives of device messages that landed it in host memory of their own first"},
    {"mpigpu_p2p_host_recv_superseded", MPI_T_PVAR_CLASS_COUNTER, SRC_HOST_RECV_SUPERSEDED,
     "Landed host receives that skipped their copy: another receive pending on the same bytes "
     "wrote over them"},
    {"mpigpu_p2p_host_recv_bare", MPI_T_PVAR_CLASS_COUNTER, SRC_HOST_RECV_BARE,
     "Host receives that took their message in place reading no header: no device sender "
     "had asked this process for a grant"},
    {"mpigpu_p2p_grants_asked", MPI_T_PVAR_CLASS_COUNTER, SRC_GRANTS_ASKED,
     "Peers this process asked for a grant to send them device messages in pieces"},
    {"mpigpu_p2p_grants_sent", MPI_T_PVAR_CLASS_COUNTER, SRC_GRANTS_SENT,
     "Grants this process sent: peers that may send it device messages in pieces"},
    {"mpigpu_p2p_grants_received", MPI_T_PVAR_CLASS_COUNTER, SRC_GRANTS_RECEIVED,
     "Grants this process received: peers it may send device messages in pieces"},
    {"mpigpu_p2p_rest_sent", MPI_T_PVAR_CLASS_COUNTER, SRC_REST_SENT,
     "Rests of chunked messages sent as one MPI message (MPIGPU_P2P_HOST_RECV=message)"},
    {"mpigpu_p2p_rest_received", MPI_T_PVAR_CLASS_COUNTER, SRC_REST_RECEIVED,
     "Rests of chunked messages received as one MPI message"},
    {"mpigpu_p2p_ops_plain", MPI_T_PVAR_CLASS_COUNTER, SRC_OPS_PLAIN,
     "Device sends and receives completed as one MPI message (the plain protocol)"},
    {"mpigpu_p2p_ops_chunked", MPI_T_PVAR_CLASS_COUNTER, SRC_OPS_CHUNKED,
     "Device sends and receives completed in pieces by MPI (the chunked protocol)"},
    {"mpigpu_p2p_ops_lane", MPI_T_PVAR_CLASS_COUNTER, SRC_OPS_LANE,
     "Device sends and receives completed through a node lane after their first piece"},
    {"mpigpu_p2p_ops_rest", MPI_T_PVAR_CLASS_COUNTER, SRC_OPS_REST,
     "Sends and receives whose rest after the first piece moved as one MPI message"},
    {"mpigpu_coll_device_reductions", MPI_T_PVAR_CLASS_COUNTER, SRC_COLL_DEVICE_REDUCE,
     "Reductions combined on the device, without staging around MPI's collective"},
    {"mpigpu_coll_pipelined", MPI_T_PVAR_CLASS_COUNTER, SRC_COLL_PIPELINED,
     "Blocking collectives run in pipelined chunks (MPIGPU_COLL_PIPELINE), host buffers "
     "included"},
    {"mpigpu_coll_pipelined_chunks", MPI_T_PVAR_CLASS_COUNTER, SRC_COLL_PIPELINED_CHUNKS,
     "Chunks of the pipelined collectives: one nonblocking collective of MPI each"},
    {"mpigpu_coll_packed_fused", MPI_T_PVAR_CLASS_COUNTER, SRC_COLL_PACKED_FUSED,
     "Packs and unpacks of an all-to-all side's blocks (two or more) in one call of the pack "
     "engine (MPIGPU_COLL_PACKED)"},
    {"mpigpu_coll_packed_blocks", MPI_T_PVAR_CLASS_COUNTER, SRC_COLL_PACKED_BLOCKS,
     "Packs and unpacks of an all-to-all side's blocks (two or more) one pack engine call per "
     "block (MPIGPU_COLL_PACKED)"},
};
#define NPVARS ((int)(sizeof(pvars) / sizeof(pvars[0])))

#define CATEGORY_NAME "mpigpu"
#define CATEGORY_DESC "mpigpu: MPI on OpenCL device buffers (pack engine, staging, point-to-point)"

static mpit_value_t pvar_value(mpit_source_t src)
{
    mgpk_stats_t pk;
    size_t a = 0, b = 0, c = 0;
    unsigned long x = 0, y = 0;

    switch (src) {
    case SRC_COLL_DEVICE_REDUCE:
        return mgcoll_device_reductions();
    case SRC_COLL_PIPELINED:
        return mgcoll_pipelined();
    case SRC_COLL_PIPELINED_CHUNKS:
        return mgcoll_pipelined_chunks();
    case SRC_COLL_PACKED_FUSED:
        return mgcoll_packed_fused();
    case SRC_COLL_PACKED_BLOCKS:
        return mgcoll_packed_blocks();
    case SRC_PACK_BYTES:
    case SRC_UNPACK_BYTES:
    case SRC_CALLS_KERNEL:
    case SRC_CALLS_COPY:
    case SRC_CALLS_HOST:
    case SRC_LAUNCHES:
    case SRC_CHOICES:
    case SRC_HOST_SPLITS:
    case SRC_PROGRAMS_BUILT:
    case SRC_PROGRAMS_LOADED:
        mgdev_pack_stats(&pk);
        switch (src) {
        case SRC_PACK_BYTES:
            return (mpit_value_t)pk.bytes[0];
        case SRC_UNPACK_BYTES:
            return (mpit_value_t)pk.bytes[1];
        case SRC_CALLS_KERNEL:
            return (mpit_value_t)pk.calls[MGPK_METHOD_KERNEL];
        case SRC_CALLS_COPY:
            return (mpit_value_t)pk.calls[MGPK_METHOD_COPY];
        case SRC_CALLS_HOST:
            return (mpit_value_t)pk.calls[MGPK_METHOD_HOST];
        case SRC_LAUNCHES:
            return (mpit_value_t)pk.launches;
        case SRC_CHOICES:
            return (mpit_value_t)pk.choices;
        case SRC_HOST_SPLITS:
            return (mpit_value_t)pk.host_splits;
        case SRC_PROGRAMS_BUILT:
            return (mpit_value_t)pk.programs_built;
        default:
            return (mpit_value_t)pk.programs_loaded;
        }
    case SRC_STAGING_ALLOCATED:
    case SRC_STAGING_HIGH:
        /* The pool is serialized by the point-to-point lock (staging.h). */
        mgp2p_lock();
        mgdev_staging_usage(&a, &b, &c);
        mgp2p_unlock();
        return src == SRC_STAGING_ALLOCATED ? a : b;
    case SRC_BIG_KEPT:
    case SRC_BIG_ALLOCS:
        mgp2p_lock();
        mgdev_big_usage(&a, &x);
        mgp2p_unlock();
        return src == SRC_BIG_KEPT ? a : x;
    case SRC_REG_IN_USE:
    case SRC_REG_HIGH:
        mgdev_reg_usage(&a, &b, &c);
        return src == SRC_REG_IN_USE ? a : b;
    case SRC_WORKER_JOBS:
        return mgp2p_worker_jobs();
    case SRC_PIPE_HIGH:
    case SRC_LANE_SENT:
    case SRC_LANE_RECEIVED:
    case SRC_HOST_RECV_INPLACE:
    case SRC_HOST_RECV_LANDED:
    case SRC_HOST_RECV_SUPERSEDED:
    case SRC_HOST_RECV_BARE:
    case SRC_GRANTS_ASKED:
    case SRC_GRANTS_SENT:
    case SRC_GRANTS_RECEIVED:
    case SRC_REST_SENT:
    case SRC_REST_RECEIVED:
    case SRC_OPS_PLAIN:
    case SRC_OPS_CHUNKED:
    case SRC_OPS_LANE:
    case SRC_OPS_REST:
        /* The engine updates these under its lock. */
        mgp2p_lock();
        if (src >= SRC_OPS_PLAIN)
            x = mgp2p_proto_ops((mgp2p_proto_id_t)(MGP2P_PROTO_PLAIN + (src - SRC_OPS_PLAIN)));
        else if (src == SRC_PIPE_HIGH)
            x = (unsigned long)mgp2p_pipe_high();
        else if (src == SRC_LANE_SENT || src == SRC_LANE_RECEIVED)
            mgp2p_lane_pieces(&x, &y);
        else if (src == SRC_HOST_RECV_SUPERSEDED)
            x = mgp2p_host_superseded_count();
        else if (src == SRC_HOST_RECV_BARE)
            x = mgp2p_host_bare_count();
        else if (src >= SRC_GRANTS_ASKED && src <= SRC_GRANTS_RECEIVED) {
            unsigned long v[3];
            mgp2p_grants(&v[0], &v[1], &v[2]);
            x = v[src - SRC_GRANTS_ASKED];
        } else if (src == SRC_HOST_RECV_INPLACE || src == SRC_HOST_RECV_LANDED)
            mgp2p_host_receives(&x, &y);
        else
            mgp2p_rest_messages(&x, &y);
        mgp2p_unlock();
        return src == SRC_LANE_RECEIVED || src == SRC_HOST_RECV_LANDED || src == SRC_REST_RECEIVED
                   ? y
                   : x;
    }
    return 0;
}

/* A handle of one of our variables, performance or control: MPI_T's handle
   types are opaque pointers; ours point at these, and MPI's never do (the
   list tells). */
typedef enum { HANDLE_PVAR, HANDLE_CVAR } mpit_kind_t;

typedef struct mpit_handle {
    struct mpit_handle *next;
    mpit_kind_t kind;
    int var;                    /* index into pvars[], or a control variable's mgparam id */
    MPI_T_pvar_session session; /* a performance variable's session */
    mpit_value_t base;          /* a counter's value at the handle's last reset */
} mpit_handle_t;

static pthread_mutex_t mpit_lock = PTHREAD_MUTEX_INITIALIZER;
static mpit_handle_t *handles;

/* A new handle in the list, or NULL when out of memory. */
static mpit_handle_t *handle_new(mpit_kind_t kind, int var, MPI_T_pvar_session session)
{
    mpit_handle_t *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->kind = kind;
    h->var = var;
    h->session = session;
    pthread_mutex_lock(&mpit_lock);
    h->next = handles;
    handles = h;
    pthread_mutex_unlock(&mpit_lock);
    return h;
}

/* Ours, or NULL for a handle of MPI's (mpit_lock held). */
static mpit_handle_t *handle_find(mpit_kind_t kind, const void *p)
{
    for (mpit_handle_t *h = handles; h; h = h->next)
        if (h->kind == kind && (const void *)h == p)
            return h;
    return NULL;
}

/* Take ours out of the list (mpit_lock held); NULL for MPI's. */
static mpit_handle_t *handle_unlink(mpit_kind_t kind, const void *p)
{
    for (mpit_handle_t **pp = &handles; *pp; pp = &(*pp)->next) {
        mpit_handle_t *h = *pp;
        if (h->kind == kind && (const void *)h == p) {
            *pp = h->next;
            return h;
        }
    }
    return NULL;
}

/* MPI_T's string convention: copy up to *len - 1 characters and a NUL when
   buf is given and *len > 0; *len becomes the full length plus one. */
static void str_out(const char *s, char *buf, int *len)
{
    if (!len)
        return;
    size_t n = strlen(s);
    if (buf && *len > 0) {
        size_t k = n < (size_t)*len - 1 ? n : (size_t)*len - 1;
        memcpy(buf, s, k);
        buf[k] = '\0';
    }
    *len = (int)n + 1;
}

/* MPI's own count of variables: ours follow.  Fails as MPI does before
   MPI_T_init_thread. */
static int mpi_pvars(int *n)
{
    return PMPI_T_pvar_get_num(n);
}

MPIGPU_EXPORT
int MPI_T_pvar_get_num(int *num_pvar)
{
    int rc = mpi_pvars(num_pvar);
    if (rc == MPI_SUCCESS)
        *num_pvar += NPVARS;
    return rc;
}

MPIGPU_EXPORT
int MPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class,
                        MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                        int *bind, int *readonly, int *continuous, int *atomic)
{
    int base = 0, rc = mpi_pvars(&base);
    if (rc != MPI_SUCCESS || pvar_index < base)
        return PMPI_T_pvar_get_info(pvar_index, name, name_len, verbosity, var_class, datatype,
                                    enumtype, desc, desc_len, bind, readonly, continuous, atomic);
    if (pvar_index - base >= NPVARS)
        return MPI_T_ERR_INVALID_INDEX;
    const mpit_pvar_t *v = &pvars[pvar_index - base];
    str_out(v->name, name, name_len);
    str_out(v->desc, desc, desc_len);
    if (verbosity)
        *verbosity = MPI_T_VERBOSITY_USER_BASIC;
    if (var_class)
        *var_class = v->var_class;
    if (datatype)
        *datatype = MPI_UNSIGNED_LONG_LONG;
    if (enumtype)
        *enumtype = MPI_T_ENUM_NULL;
    if (bind)
        *bind = MPI_T_BIND_NO_OBJECT;
    if (readonly)
        *readonly = v->var_class != MPI_T_PVAR_CLASS_COUNTER;
    if (continuous)
        *continuous = 1;
    if (atomic)
        *atomic = 0;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index)
{
    int base = 0, rc = mpi_pvars(&base);
    if (rc != MPI_SUCCESS || !name)
        return PMPI_T_pvar_get_index(name, var_class, pvar_index);
    for (int i = 0; i < NPVARS; i++) {
        if (pvars[i].var_class == var_class && !strcmp(pvars[i].name, name)) {
            *pvar_index = base + i;
            return MPI_SUCCESS;
        }
    }
    return PMPI_T_pvar_get_index(name, var_class, pvar_index);
}

MPIGPU_EXPORT
int MPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                            MPI_T_pvar_handle *handle, int *count)
{
    int base = 0, rc = mpi_pvars(&base);
    if (rc != MPI_SUCCESS || pvar_index < base)
        return PMPI_T_pvar_handle_alloc(session, pvar_index, obj_handle, handle, count);
    if (pvar_index - base >= NPVARS)
        return MPI_T_ERR_INVALID_INDEX;
    if (session == MPI_T_PVAR_SESSION_NULL)
        return MPI_T_ERR_INVALID_SESSION;
    mpit_handle_t *h = handle_new(HANDLE_PVAR, pvar_index - base, session);
    if (!h)
        return MPI_T_ERR_OUT_OF_HANDLES;
    *handle = (MPI_T_pvar_handle)h;
    *count = 1;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)
{
    pthread_mutex_lock(&mpit_lock);
    mpit_handle_t *h = handle_find(HANDLE_PVAR, *handle);
    int rc = MPI_SUCCESS;
    if (h && h->session != session)
        rc = MPI_T_ERR_INVALID_HANDLE;
    else if (h)
        handle_unlink(HANDLE_PVAR, h);
    pthread_mutex_unlock(&mpit_lock);
    if (!h)
        return PMPI_T_pvar_handle_free(session, handle);
    if (rc == MPI_SUCCESS) {
        free(h);
        *handle = MPI_T_PVAR_HANDLE_NULL;
    }
    return rc;
}

MPIGPU_EXPORT
int MPI_T_pvar_session_free(MPI_T_pvar_session *session)
{
    pthread_mutex_lock(&mpit_lock);
    for (mpit_handle_t **pp = &handles; *pp;) {
        mpit_handle_t *h = *pp;
        if (h->kind == HANDLE_PVAR && h->session == *session) {
            *pp = h->next;
            free(h);
        } else {
            pp = &h->next;
        }
    }
    pthread_mutex_unlock(&mpit_lock);
    return PMPI_T_pvar_session_free(session);
}

/* Ours are continuous: starting or stopping one is an error, and
   MPI_T_PVAR_ALL_HANDLES leaves them alone, as the standard asks. */
MPIGPU_EXPORT
int MPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    pthread_mutex_lock(&mpit_lock);
    mpit_handle_t *h = handle_find(HANDLE_PVAR, handle);
    pthread_mutex_unlock(&mpit_lock);
    return h ? MPI_T_ERR_PVAR_NO_STARTSTOP : PMPI_T_pvar_start(session, handle);
}

MPIGPU_EXPORT
int MPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    pthread_mutex_lock(&mpit_lock);
    mpit_handle_t *h = handle_find(HANDLE_PVAR, handle);
    pthread_mutex_unlock(&mpit_lock);
    return h ? MPI_T_ERR_PVAR_NO_STARTSTOP : PMPI_T_pvar_stop(session, handle);
}

/* Read, and with reset set, make the value read a counter's new base. */
static int handle_read(MPI_T_pvar_session session, mpit_handle_t *h, void *buf, int reset)
{
    if (h->session != session)
        return MPI_T_ERR_INVALID_HANDLE;
    const mpit_pvar_t *v = &pvars[h->var];
    if (reset && v->var_class != MPI_T_PVAR_CLASS_COUNTER)
        return MPI_T_ERR_PVAR_NO_WRITE;
    mpit_value_t now = pvar_value(v->source);
    if (buf)
        *(mpit_value_t *)buf = v->var_class == MPI_T_PVAR_CLASS_COUNTER ? now - h->base : now;
    if (reset)
        h->base = now;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    pthread_mutex_lock(&mpit_lock);
    mpit_handle_t *h = handle_find(HANDLE_PVAR, handle);
    int rc = h ? handle_read(session, h, buf, 0) : MPI_SUCCESS;
    pthread_mutex_unlock(&mpit_lock);
    return h ? rc : PMPI_T_pvar_read(session, handle, buf);
}

MPIGPU_EXPORT
int MPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    pthread_mutex_lock(&mpit_lock);
    mpit_handle_t *h = handle_find(HANDLE_PVAR, handle);
    int rc = h ? handle_read(session, h, buf, 1) : MPI_SUCCESS;
    pthread_mutex_unlock(&mpit_lock);
    return h ? rc : PMPI_T_pvar_readreset(session, handle, buf);
}

MPIGPU_EXPORT
int MPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    if (handle == MPI_T_PVAR_ALL_HANDLES) {
        /* Every counter of the session, then MPI's own. */
        pthread_mutex_lock(&mpit_lock);
        for (mpit_handle_t *h = handles; h; h = h->next)
            if (h->kind == HANDLE_PVAR && h->session == session &&
                pvars[h->var].var_class == MPI_T_PVAR_CLASS_COUNTER)
                handle_read(session, h, NULL, 1);
        pthread_mutex_unlock(&mpit_lock);
        return PMPI_T_pvar_reset(session, handle);
    }
    pthread_mutex_lock(&mpit_lock);
    mpit_handle_t *h = handle_find(HANDLE_PVAR, handle);
    int rc = h ? handle_read(session, h, NULL, 1) : MPI_SUCCESS;
    pthread_mutex_unlock(&mpit_lock);
    return h ? rc : PMPI_T_pvar_reset(session, handle);
}

/* Writing a counter sets the value its handle reads now. */
MPIGPU_EXPORT
int MPI_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf)
{
    pthread_mutex_lock(&mpit_lock);
    mpit_handle_t *h = handle_find(HANDLE_PVAR, handle);
    int rc = MPI_SUCCESS;
    if (h) {
        const mpit_pvar_t *v = &pvars[h->var];
        if (h->session != session)
            rc = MPI_T_ERR_INVALID_HANDLE;
        else if (v->var_class != MPI_T_PVAR_CLASS_COUNTER)
            rc = MPI_T_ERR_PVAR_NO_WRITE;
        else
            h->base = pvar_value(v->source) - *(const mpit_value_t *)buf;
    }
    pthread_mutex_unlock(&mpit_lock);
    return h ? rc : PMPI_T_pvar_write(session, handle, buf);
}

/* ---- control variables: the library's settings ---- */

/* Every user setting libmpigpu reads is a control variable after MPI's
   own: read-only text (MPI_CHAR, CVAR_LEN characters with the terminating
   NUL), the value the environment gives, which is what MPI_Init read, or
   the default.  Settings are read once at MPI_Init, so none can be written
   through MPI_T. */
#define CVAR_LEN 256

/* The table's ids of our control variables, in index order. */
static int cvar_ids[MGPARAM_COUNT];
static int ncvars = -1;
static pthread_once_t cvars_once = PTHREAD_ONCE_INIT;

static void cvars_list(void)
{
    int n = 0;
    for (int id = 0; id < MGPARAM_COUNT; id++)
        if (mgparam_table[id].reader == MGPARAM_LIB && !(mgparam_table[id].flags & MGPARAM_F_TEST))
            cvar_ids[n++] = id;
    ncvars = n;
}

static int cvars_count(void)
{
    pthread_once(&cvars_once, cvars_list);
    return ncvars;
}

static void cvar_text(int id, char *buf)
{
    mgparam_value_t v;
    const mgparam_t *p = &mgparam_table[id];
    const char *t = NULL;
    if (id == MGPARAM_COLL_REDUCE) {
        /* the one setting a tool may write */
        snprintf(buf, CVAR_LEN, "%s", p->values[mgcoll_reduce_mode()]);
        return;
    }
    if (mgparam_read((mgparam_id_t)id, &v, NULL, 0) == 0 && v.set && v.text)
        t = v.text;
    else
        t = mgparam_default_text(p);
    snprintf(buf, CVAR_LEN, "%s", t ? t : "");
}

static int mpi_cvars(int *n)
{
    return PMPI_T_cvar_get_num(n);
}

MPIGPU_EXPORT
int MPI_T_cvar_get_num(int *num_cvar)
{
    int rc = mpi_cvars(num_cvar);
    if (rc == MPI_SUCCESS)
        *num_cvar += cvars_count();
    return rc;
}

MPIGPU_EXPORT
int MPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity,
                        MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                        int *bind, int *scope)
{
    int base = 0, rc = mpi_cvars(&base);
    if (rc != MPI_SUCCESS || cvar_index < base)
        return PMPI_T_cvar_get_info(cvar_index, name, name_len, verbosity, datatype, enumtype, desc,
                                    desc_len, bind, scope);
    if (cvar_index - base >= cvars_count())
        return MPI_T_ERR_INVALID_INDEX;
    const mgparam_t *p = &mgparam_table[cvar_ids[cvar_index - base]];
    str_out(p->name, name, name_len);
    str_out(p->help, desc, desc_len);
    if (verbosity)
        *verbosity = MPI_T_VERBOSITY_USER_BASIC;
    if (datatype)
        *datatype = MPI_CHAR;
    if (enumtype)
        *enumtype = MPI_T_ENUM_NULL;
    if (bind)
        *bind = MPI_T_BIND_NO_OBJECT;
    if (scope)
        *scope =
            p == &mgparam_table[MGPARAM_COLL_REDUCE] ? MPI_T_SCOPE_ALL_EQ : MPI_T_SCOPE_CONSTANT;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_T_cvar_get_index(const char *name, int *cvar_index)
{
    int base = 0, rc = mpi_cvars(&base);
    if (rc == MPI_SUCCESS && name) {
        for (int i = 0; i < cvars_count(); i++) {
            if (!strcmp(mgparam_table[cvar_ids[i]].name, name)) {
                *cvar_index = base + i;
                return MPI_SUCCESS;
            }
        }
    }
    return PMPI_T_cvar_get_index(name, cvar_index);
}

MPIGPU_EXPORT
int MPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle, int *count)
{
    int base = 0, rc = mpi_cvars(&base);
    if (rc != MPI_SUCCESS || cvar_index < base)
        return PMPI_T_cvar_handle_alloc(cvar_index, obj_handle, handle, count);
    if (cvar_index - base >= cvars_count())
        return MPI_T_ERR_INVALID_INDEX;
    mpit_handle_t *h = handle_new(HANDLE_CVAR, cvar_ids[cvar_index - base], NULL);
    if (!h)
        return MPI_T_ERR_OUT_OF_HANDLES;
    *handle = (MPI_T_cvar_handle)h;
    *count = CVAR_LEN;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_T_cvar_handle_free(MPI_T_cvar_handle *handle)
{
    pthread_mutex_lock(&mpit_lock);
    mpit_handle_t *h = handle_unlink(HANDLE_CVAR, *handle);
    pthread_mutex_unlock(&mpit_lock);
    if (!h)
        return PMPI_T_cvar_handle_free(handle);
    free(h);
    *handle = MPI_T_CVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf)
{
    pthread_mutex_lock(&mpit_lock);
    mpit_handle_t *h = handle_find(HANDLE_CVAR, handle);
    int id = h ? h->var : -1;
    pthread_mutex_unlock(&mpit_lock);
    if (id < 0)
        return PMPI_T_cvar_read(handle, buf);
    cvar_text(id, buf);
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)
{
    pthread_mutex_lock(&mpit_lock);
    mpit_handle_t *h = handle_find(HANDLE_CVAR, handle);
    pthread_mutex_unlock(&mpit_lock);
    if (!h)
        return PMPI_T_cvar_write(handle, buf);
    if (h->var != MGPARAM_COLL_REDUCE)
        return MPI_T_ERR_CVAR_SET_NEVER;
    /* MPIGPU_COLL_REDUCE: a word of its values; the caller writes the same
       on every process between collectives (MPI_T_SCOPE_ALL_EQ) */
    mgparam_value_t v;
    if (!buf || mgparam_parse(&mgparam_table[h->var], buf, &v, NULL, 0) != 0)
        return MPI_T_ERR_INVALID;
    mgcoll_reduce_mode_set((int)v.num);
    return MPI_SUCCESS;
}

/* ---- the category ---- */

static int mpi_categories(int *n)
{
    return PMPI_T_category_get_num(n);
}

MPIGPU_EXPORT
int MPI_T_category_get_num(int *num_cat)
{
    int rc = mpi_categories(num_cat);
    if (rc == MPI_SUCCESS)
        *num_cat += 1;
    return rc;
}

MPIGPU_EXPORT
int MPI_T_category_get_info(int cat_index, char *name, int *name_len, char *desc, int *desc_len,
                            int *num_cvars, int *num_pvars, int *num_categories)
{
    int base = 0, rc = mpi_categories(&base);
    if (rc != MPI_SUCCESS || cat_index != base)
        return PMPI_T_category_get_info(cat_index, name, name_len, desc, desc_len, num_cvars,
                                        num_pvars, num_categories);
    str_out(CATEGORY_NAME, name, name_len);
    str_out(CATEGORY_DESC, desc, desc_len);
    if (num_cvars)
        *num_cvars = cvars_count();
    if (num_pvars)
        *num_pvars = NPVARS;
    if (num_categories)
        *num_categories = 0;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_T_category_get_index(const char *name, int *cat_index)
{
    int base = 0, rc = mpi_categories(&base);
    if (rc == MPI_SUCCESS && name && !strcmp(name, CATEGORY_NAME)) {
        *cat_index = base;
        return MPI_SUCCESS;
    }
    return PMPI_T_category_get_index(name, cat_index);
}

MPIGPU_EXPORT
int MPI_T_category_get_pvars(int cat_index, int len, int indices[])
{
    int base = 0, rc = mpi_categories(&base);
    if (rc != MPI_SUCCESS || cat_index != base)
        return PMPI_T_category_get_pvars(cat_index, len, indices);
    int first = 0;
    rc = mpi_pvars(&first);
    for (int i = 0; rc == MPI_SUCCESS && i < len && i < NPVARS; i++)
        indices[i] = first + i;
    return rc;
}

MPIGPU_EXPORT
int MPI_T_category_get_cvars(int cat_index, int len, int indices[])
{
    int base = 0, rc = mpi_categories(&base);
    if (rc != MPI_SUCCESS || cat_index != base)
        return PMPI_T_category_get_cvars(cat_index, len, indices);
    int first = 0;
    rc = mpi_cvars(&first);
    for (int i = 0; rc == MPI_SUCCESS && i < len && i < cvars_count(); i++)
        indices[i] = first + i;
    return rc;
}

MPIGPU_EXPORT
int MPI_T_category_get_categories(int cat_index, int len, int indices[])
{
    int base = 0, rc = mpi_categories(&base);
    if (rc != MPI_SUCCESS || cat_index != base)
        return PMPI_T_category_get_categories(cat_index, len, indices);
    (void)len;
    (void)indices;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_T_category_get_num_events(int cat_index, int *num_events)
{
    int base = 0, rc = mpi_categories(&base);
    if (rc != MPI_SUCCESS || cat_index != base)
        return PMPI_T_category_get_num_events(cat_index, num_events);
    *num_events = 0;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_T_category_get_events(int cat_index, int len, int indices[])
{
    int base = 0, rc = mpi_categories(&base);
    if (rc != MPI_SUCCESS || cat_index != base)
        return PMPI_T_category_get_events(cat_index, len, indices);
    (void)len;
    (void)indices;
    return MPI_SUCCESS;
}
