/*
 * The engine's core (doc/design.md, "Point-to-point"; README.md has the
 * protocol table): its state, the choice of an operation's protocol, one
 * step of an operation, and what every protocol shares: staging, packing to
 * and from the device, failure.
 *
 * A message of n packed bytes is one MPI message of n MPI_BYTEs (the plain
 * protocol): the bytes MPI itself would send for the user's datatype, so
 * either side may be plain MPI, a host buffer or another library.  Under
 * MPIGPU_P2P_PROTOCOL=chunked a message of at least MPIGPU_P2P_FIRST bytes
 * goes in pieces instead (the chunked protocol), so it never needs more than
 * a few pool buffers; under auto (the default) only one of
 * MPIGPU_P2P_AUTO_MIN bytes to a process of the same node does, whose pieces
 * then skip MPI through the node lane.  Every process must use the same
 * settings (checked at MPI_Init).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "mgerr.h"
#include "p2p_impl.h"

mgp2p_engine_t mgp2p_engine = {.shadow = MPI_COMM_NULL, .ctrl = MPI_COMM_NULL};
mgp2p_hot_t mgp2p_hot = {.first = 0, .watch_min = INT64_MAX};

static const char *const protocol_names[] = {"plain", "chunked", "auto"};

/* mgp2p_hot from what it depends on: the protocol, MPIGPU_P2P_FIRST, the
   staging pool's chunk and whether the engine runs (its shadow
   communicator).  Called wherever one of them changes: mgp2p_init and
   mgp2p_finalize. */
static void hot_refresh(void)
{
    size_t f = mgdev_state.settings.p2p_first, chunk = mgdev_stage_chunk();
    int64_t first = 0;
    if (mgdev_state.settings.p2p_protocol != MGDEV_P2P_PLAIN &&
        mgp2p_engine.shadow != MPI_COMM_NULL)
        first = (int64_t)(f < chunk ? f : chunk);
    mgp2p_hot.first = first;
    mgp2p_hot.watch_min = first > 0 ? first : INT64_MAX;
}

static void op_host_release(mgp2p_op_t *op, int keep);

/* The candidates for a send, most specific first: the first that applies
   carries the operation. */
static const mgp2p_proto_t *const send_protos[] = {&mgp2p_proto_chunked_send,
                                                   &mgp2p_proto_plain_send};

/* A random number the job's processes agree on: a plain message of one first
   piece's length is taken for a chunked message's first piece only if it
   starts with the magic and this. */
static int nonce_agree(void)
{
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && getrandom(&mgp2p_engine.nonce, sizeof(mgp2p_engine.nonce), GRND_NONBLOCK) !=
                         (ssize_t)sizeof(mgp2p_engine.nonce)) {
        struct timespec ts; /* no entropy yet: time and process id */
        clock_gettime(CLOCK_REALTIME, &ts);
        mgp2p_engine.nonce =
            ((uint64_t)ts.tv_sec << 32 ^ (uint64_t)ts.tv_nsec) * 0x9e3779b97f4a7c15ULL ^
            (uint64_t)getpid();
    }
    return PMPI_Bcast(&mgp2p_engine.nonce, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
}

/* Every process must split messages alike: one that expects no pieces would
   take a first piece for a whole message. */
static int settings_agree(void)
{
    int64_t f = mgp2p_first_len();
    long v[6] = {mgdev_state.settings.p2p_protocol, (long)f, f ? (long)mgdev_stage_chunk() : 0};
    for (int i = 0; i < 3; i++)
        v[3 + i] = -v[i];
    int rc = PMPI_Allreduce(MPI_IN_PLACE, v, 6, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        return rc;
    if (v[0] != -v[3] || v[1] != -v[4] || v[2] != -v[5])
        return mgerr_set(MPI_ERR_OTHER,
                         "mpigpu: MPIGPU_P2P_PROTOCOL, MPIGPU_P2P_FIRST or MPIGPU_STAGING_MAX "
                         "differs between processes (this one: protocol %s, first pieces of "
                         "%lld bytes, pieces of %lld bytes); set them alike on every process",
                         protocol_names[mgdev_state.settings.p2p_protocol], (long long)f,
                         (long long)(f ? mgdev_stage_chunk() : 0));
    return MPI_SUCCESS;
}

int mgp2p_init(void)
{
    mgp2p_engine_t *g = &mgp2p_engine;
    int size = 0, flag = 0, *ub = NULL;
    mgdev_stage_init(mgdev_state.settings.staging_max, mgdev_state.settings.staging_keep);
    int rc = PMPI_Comm_dup(MPI_COMM_WORLD, &g->shadow);
    hot_refresh();
    MG_CHECK(rc, fn_fail);
    rc = PMPI_Comm_dup(MPI_COMM_WORLD, &g->ctrl);
    MG_CHECK(rc, fn_fail);
    rc = mgp2p_progress_init();
    MG_CHECK(rc, fn_fail);
    rc = mgp2p_lane_init();
    MG_CHECK(rc, fn_fail);
    PMPI_Comm_set_errhandler(g->shadow, MPI_ERRORS_RETURN);
    PMPI_Comm_set_errhandler(g->ctrl, MPI_ERRORS_RETURN);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    /* The two largest tags are the grant protocol's (grant.c); sequence
       numbers stay below them. */
    g->tag_ask = flag && ub ? *ub : 32767;
    g->tag_grant = g->tag_ask - 1;
    g->seq_limit = g->tag_grant;
    rc = nonce_agree();
    MG_CHECK(rc, fn_fail);
    rc = settings_agree();
    MG_CHECK(rc, fn_fail);
    g->send_seq = calloc((size_t)size, sizeof(int));
    if (!g->send_seq)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: out of host memory for p2p state");
    rc = mgp2p_grant_init(size);
    MG_CHECK(rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

void mgp2p_finalize(void)
{
    mgp2p_engine_t *g = &mgp2p_engine;
    mgp2p_progress_finalize();
    mgp2p_grant_finalize();
    mgp2p_worker_finalize();
    mgp2p_early_finalize(); /* its buffers go back to the kept list, freed next */
    mgdev_stage_finalize();
    mgp2p_lane_finalize();
    if (g->shadow != MPI_COMM_NULL)
        PMPI_Comm_free(&g->shadow);
    g->shadow = MPI_COMM_NULL;
    hot_refresh();
    if (g->ctrl != MPI_COMM_NULL)
        PMPI_Comm_free(&g->ctrl);
    free(g->send_seq);
    g->send_seq = NULL;
}

int mgp2p_may_chunk(int64_t n)
{
    int64_t f = mgp2p_first_len(), min = (int64_t)mgdev_state.settings.p2p_auto_min;
    if (!f || n < f)
        return 0;
    return mgdev_state.settings.p2p_protocol == MGDEV_P2P_CHUNKED || n >= min;
}

unsigned long mgp2p_proto_ops(mgp2p_proto_id_t id)
{
    return (unsigned)id < MGP2P_PROTO_COUNT ? mgp2p_engine.stats.ops[id] : 0;
}

int mgp2p_pipe_high(void)
{
    return mgp2p_engine.stats.pipe_high;
}

void mgp2p_lane_pieces(unsigned long *sent, unsigned long *received)
{
    *sent = mgp2p_engine.stats.lane_sent;
    *received = mgp2p_engine.stats.lane_received;
}

void mgp2p_host_receives(unsigned long *inplace, unsigned long *landed)
{
    *inplace = mgp2p_engine.stats.host_inplace;
    *landed = mgp2p_engine.stats.host_landed;
}

unsigned long mgp2p_host_superseded_count(void)
{
    return mgp2p_engine.stats.host_superseded;
}

unsigned long mgp2p_host_bare_count(void)
{
    return mgp2p_engine.stats.host_bare;
}

void mgp2p_grants(unsigned long *asked, unsigned long *sent, unsigned long *received)
{
    *asked = mgp2p_engine.stats.grants_asked;
    *sent = mgp2p_engine.stats.grants_sent;
    *received = mgp2p_engine.stats.grants_received;
}

void mgp2p_rest_messages(unsigned long *sent, unsigned long *received)
{
    *sent = mgp2p_engine.stats.rest_sent;
    *received = mgp2p_engine.stats.rest_received;
}

int mgp2p_world_rank(MPI_Comm comm, int rank, int *w)
{
    MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    int rc = inter ? PMPI_Comm_remote_group(comm, &g) : PMPI_Comm_group(comm, &g);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Group_translate_ranks(g, 1, &rank, wg, w);
    if (g != MPI_GROUP_NULL)
        PMPI_Group_free(&g);
    if (wg != MPI_GROUP_NULL)
        PMPI_Group_free(&wg);
    if (rc == MPI_SUCCESS && *w == MPI_UNDEFINED)
        rc = mgerr_set(MPI_ERR_RANK,
                       "mpigpu: rank %d of a communicator is outside MPI_COMM_WORLD (spawned "
                       "processes cannot take messages of more than one staging chunk)",
                       rank);
    return rc;
}

/* ---- choosing the protocol, and one step ---- */

int mgp2p_proto_set(mgp2p_op_t *op, const mgp2p_proto_t *proto, const mgp2p_sel_t *sel)
{
    memset(&op->u, 0, sizeof(op->u));
    op->proto = proto;
    return proto->start ? proto->start(op, sel) : MPI_SUCCESS;
}

/* A send's protocol: the first of send_protos that applies.  The peer's
   world rank and lane are looked up only for a length that may go in
   pieces. */
static int send_select(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    mgp2p_sel_t sel = {.may_chunk = mgp2p_may_chunk(op->n), .wpeer = MPI_UNDEFINED};
    if (sel.may_chunk) {
        rc = mgp2p_world_rank(op->comm, op->peer, &sel.wpeer);
        MG_CHECK(rc, fn_fail);
        sel.lane = mgp2p_lane_tx(sel.wpeer);
        /* Pieces only to a peer that granted them (grant.c); a message that
           would have gone in pieces asks for the grant and goes plain. */
        if (mgp2p_proto_chunked_send.applies(op, &sel) && !mgp2p_granted(sel.wpeer)) {
            sel.may_chunk = 0;
            sel.lane = NULL;
        }
    }
    size_t i = 0;
    while (!send_protos[i]->applies(op, &sel))
        i++; /* the last, plain, always applies */
    rc = mgp2p_proto_set(op, send_protos[i], &sel);
    MG_CHECK(rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    mgp2p_op_fail(op, rc, 0);
    goto fn_exit;
}

int mgp2p_op_step(mgp2p_op_t *op)
{
    if (op->state == MGP2P_OP_DONE)
        return op->err;
    if (op->driver) {
        op->driver->step(op);
        return op->err;
    }
    if (!op->proto && op->kind == MGP2P_OP_HOOK) {
        mgp2p_proto_set(op, &mgp2p_proto_hook, NULL);
    } else if (!op->proto) {
        int rc = mgp2p_op_host_prepare(op);
        if (rc != MPI_SUCCESS) {
            mgp2p_op_fail(op, rc, 0);
            return op->err;
        }
        /* A receive learns what the message is from its first piece: it
           starts plain, and the header hands it on. */
        if (op->kind == MGP2P_OP_SEND)
            send_select(op);
        else
            mgp2p_proto_set(op, &mgp2p_proto_plain_recv, NULL);
    }
    if (op->state != MGP2P_OP_DONE)
        op->proto->progress(op);
    return op->err;
}

void mgp2p_op_cancel(mgp2p_op_t *op)
{
    if (op->proto && op->proto->cancel && op->state != MGP2P_OP_DONE)
        op->proto->cancel(op);
}

/* ---- staging ---- */

void mgp2p_op_unstage(mgp2p_op_t *op)
{
    op_host_release(op, op->persistent);
    if (op->persistent)
        return;
    mgdev_stage_put(op->stage);
    op->stage = NULL;
    mgdev_big_put(op->big, op->big_size);
    op->big = NULL;
}

void mgp2p_op_unstage_all(mgp2p_op_t *op)
{
    op_host_release(op, 0);
    mgdev_stage_unpark(&op->stage);
    mgdev_stage_put(op->stage);
    op->stage = NULL;
    mgdev_big_put(op->big, op->big_size);
    op->big = NULL;
}

/* The one it holds when large enough: a persistent op keeps it for the next
   start. */
int mgp2p_op_big(mgp2p_op_t *op, size_t want, const char *what, int64_t len)
{
    if (op->big && op->big_size >= want)
        return MPI_SUCCESS;
    mgdev_big_put(op->big, op->big_size);
    op->big = NULL;
    if (mgdev_big_get(want, &op->big, &op->big_size) != MPI_SUCCESS)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory for %s of %lld bytes",
                         op->fn, what, (long long)len);
    return MPI_SUCCESS;
}

/* A pool buffer (pinned, reused) when the pool has one now, else op's own
   (kept by a persistent op for its next start), so that every operation
   posts its message as soon as it starts. */
int mgp2p_op_buffer(mgp2p_op_t *op, int64_t len, char **buf)
{
    int rc = MPI_SUCCESS;
    *buf = NULL;
    if (op->big && op->big_size >= (size_t)len) {
        *buf = op->big;
        return MPI_SUCCESS;
    }
    if (op->stage && op->stage->size >= (size_t)len) {
        *buf = op->stage->ptr;
        return MPI_SUCCESS;
    }
    if (len <= (int64_t)mgdev_stage_chunk()) {
        rc = mgdev_stage_get((size_t)len, &op->stage);
        if (rc != MPI_SUCCESS || op->stage) {
            *buf = op->stage ? op->stage->ptr : NULL;
            return rc;
        }
        /* The pool is at its cap: host memory of op's own.  Waiting for a
           pool buffer would let a later operation post its message first,
           and MPI's order between two processes is the order of the calls. */
    } else {
        mgdev_stage_put(op->stage); /* a persistent op's parked buffer, too small now */
        op->stage = NULL;
        rc = mgdev_stage_get_big((size_t)len, &op->stage);
        if (rc != MPI_SUCCESS || op->stage) {
            *buf = op->stage ? op->stage->ptr : NULL;
            return rc;
        }
    }
    rc = mgp2p_op_big(op, (size_t)len, "a message", len);
    *buf = rc == MPI_SUCCESS ? op->big : NULL;
    return rc;
}

/* ---- failure ---- */

void mgp2p_op_fail(mgp2p_op_t *op, int err, int raised)
{
    if (op->err == MPI_SUCCESS) {
        /* The message lives in this thread's slots, which later errors
           reuse; the completion call may run in another thread. */
        const char *msg = mgerr_get(err);
        op->err = err;
        op->raised = raised;
        free(op->msg);
        op->msg = msg ? strdup(msg) : NULL;
    }
    if (op->proto && op->proto->abort)
        op->proto->abort(op);
    mgp2p_op_unstage(op);
    op->state = MGP2P_OP_DONE;
}

void mgp2p_op_truncated(mgp2p_op_t *op, int64_t len, int raised)
{
    char of[48] = "";
    if (len >= 0)
        snprintf(of, sizeof(of), " of %lld bytes", (long long)len);
    mgerr_set(MPI_ERR_TRUNCATE,
              "mpigpu: %s: message%s longer than the receive buffer (%lld bytes of the datatype "
              "at %s address %p); nothing was received",
              op->fn, of, (long long)op->n, op->host ? "host" : "device", op->buf);
    /* MPICH 4.0.2 (ch4:ucx) leaves the count of a truncated host receive as
       it finds it in the request it recycles; nothing reached the buffer. */
    op->done = 0;
    mgp2p_op_fail(op, MPI_ERR_TRUNCATE, raised);
}

void mgp2p_op_fail_mpi(mgp2p_op_t *op, int code, const char *what)
{
    int cls = MPI_ERR_OTHER;
    PMPI_Error_class(code, &cls);
    /* MPI's text would name the engine's call (MPI_Test) and buffer. */
    if (cls == MPI_ERR_TRUNCATE && op->kind == MGP2P_OP_RECV) {
        mgp2p_op_truncated(op, -1, 1);
        return;
    }
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    PMPI_Error_string(code, msg, &len);
    mgerr_set(cls, "mpigpu: %s: %s of a %s buffer failed: %s", op->fn, what,
              op->host ? "host" : "device", msg);
    mgp2p_op_fail(op, cls, 1);
}

/* ---- moving bytes ---- */

/* The host method (MPIGPU_PACK=host, or the datatype's attribute): the CPU
   packs with the engine's host walk (mgpk_host_pack, MPI_Pack's bytes) from
   a host view of the typed extent [lo, hi), and unpacks into it.  The view
   is the buffer's own storage where it is zero copy, a map of the extent on
   a device that shares the host's memory, else a copy in host memory taken
   under the lock at the operation's first step (mgp2p_op_host_prepare), read in at
   the first piece (a receive too, so that the gaps go back unchanged) and,
   for a receive, written back after the last.  A message in pieces opens
   the view once: the pieces of a long message do not read the extent again
   each.  Contiguous data goes to the engine instead, which moves it as one
   transfer under every method. */
static int op_hostm(const mgp2p_op_t *op)
{
    return op->hostm && !mgpk_contig(op->type, op->count);
}

int mgp2p_op_host_method(const mgp2p_op_t *op)
{
    return op_hostm(op);
}

int mgp2p_op_host_prepare(mgp2p_op_t *op)
{
    int64_t lo = 0, hi = 0;
    if (!op_hostm(op) || op->zc || op->xbuf || mgp2p_op_trivial(op) || mgpk_maps(op->pk))
        return MPI_SUCCESS;
    (void)mgp2p_type_span(op->type, op->count, &lo, &hi); /* checked at init */
    if (mgdev_big_get((size_t)(hi - lo), &op->xbuf, &op->xcap) != MPI_SUCCESS)
        return mgerr_set(MPI_ERR_NO_MEM,
                         "mpigpu: %s: out of host memory for the host method's copy of %lld bytes",
                         op->fn, (long long)(hi - lo));
    return MPI_SUCCESS;
}

static int view_open(mgp2p_op_t *op, int64_t lo, int64_t hi)
{
    int rc = MPI_SUCCESS;
    size_t len = (size_t)(hi - lo);
    op->xmoved = 0;
    if (op->zc) {
        /* The buffer's own storage, once the engine's commands are done. */
        rc = mgpk_finish(op->pk);
        MG_CHECK(rc, fn_fail);
        op->xview = op->zc + lo;
        goto fn_exit;
    }
    rc = mgpk_map(op->pk, op->mem, (size_t)(op->origin + lo), len, op->kind == MGP2P_OP_RECV,
                  &op->xmap);
    MG_CHECK(rc, fn_fail);
    if (op->xmap) {
        op->xview = op->xmap;
        goto fn_exit;
    }
    if (!op->xbuf || op->xcap < len)
        MG_FAIL(rc, fn_fail, MPI_ERR_INTERN,
                "mpigpu: %s: no host copy was prepared for the host method", op->fn);
    mgpk_buf_t h = {.host = op->xbuf}, d = {.mem = op->mem, .offset = op->origin + lo};
    rc = mgpk_copy(op->pk, h, d, len);
    MG_CHECK(rc, fn_fail);
    op->xview = op->xbuf;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Ends the view: unmaps it, or writes the copy back when write_back. */
static int view_close(mgp2p_op_t *op, int write_back)
{
    int rc = MPI_SUCCESS;
    if (op->xmap) {
        rc = mgpk_unmap(op->pk, op->mem, op->xmap);
    } else if (write_back && op->xview && op->xview == op->xbuf) {
        int64_t lo = 0, hi = 0;
        (void)mgp2p_type_span(op->type, op->count, &lo, &hi); /* checked at init */
        mgpk_buf_t h = {.host = op->xbuf}, d = {.mem = op->mem, .offset = op->origin + lo};
        rc = mgpk_copy(op->pk, d, h, (size_t)(hi - lo));
    }
    op->xmap = NULL;
    op->xview = NULL;
    return rc;
}

static int host_move(mgp2p_op_t *op, char *host, int64_t first, int64_t len)
{
    int rc = MPI_SUCCESS, recv = op->kind == MGP2P_OP_RECV;
    int64_t lo = 0, hi = 0;
    (void)mgp2p_type_span(op->type, op->count, &lo, &hi); /* checked at init */
    if (!op->xview) {
        rc = view_open(op, lo, hi);
        MG_CHECK(rc, fn_fail);
    }
    rc = mgpk_host_pack(op->pk, op->type, op->xview - lo, host, first, len, recv);
    MG_CHECK(rc, fn_fail);
    op->xmoved += len;
    if (op->xmoved >= (recv ? op->total : op->n))
        rc = view_close(op, recv);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* After an error, or at the end of an operation whose view is still open (a
   receive that got fewer bytes than it expected): nothing is written back. */
static void op_host_release(mgp2p_op_t *op, int keep)
{
    if (op->xview)
        view_close(op, 0);
    if (keep)
        return;
    mgdev_big_put(op->xbuf, op->xcap);
    op->xbuf = NULL;
    op->xcap = 0;
}

int mgp2p_op_pack(mgp2p_op_t *op, char *host, int64_t first, int64_t len)
{
    if (op_hostm(op))
        return host_move(op, host, first, len);
    mgpk_buf_t h = {.host = host, .pinned = mgdev_pinned(host, (size_t)len)},
               d = {.mem = op->mem, .offset = op->origin};
    return mgpk_pack(op->pk, op->type, op->count, d, h, first, len, op->pk_flags);
}

int mgp2p_op_unpack(mgp2p_op_t *op, char *host, int64_t first, int64_t len)
{
    if (op_hostm(op))
        return host_move(op, host, first, len);
    mgpk_buf_t h = {.host = host, .pinned = mgdev_pinned(host, (size_t)len)},
               d = {.mem = op->mem, .offset = op->origin};
    return mgpk_unpack(op->pk, op->type, op->count, h, d, first, len, op->pk_flags);
}

int mgp2p_op_pack_all(mgp2p_op_t *op, char *host)
{
    mgp2p_lock();
    int rc = mgp2p_op_host_prepare(op);
    mgp2p_unlock();
    if (rc == MPI_SUCCESS)
        rc = mgp2p_op_pack(op, host, 0, op->n);
    mgp2p_lock();
    op_host_release(op, 0);
    mgp2p_unlock();
    return rc;
}

int mgp2p_op_unpack_all(mgp2p_op_t *op, const char *host, int64_t len)
{
    mgp2p_lock();
    int rc = mgp2p_op_host_prepare(op);
    mgp2p_unlock();
    op->total = len; /* the host method's view is written back after len bytes */
    if (rc == MPI_SUCCESS && len > 0)
        rc = mgp2p_op_unpack(op, (char *)host, 0, len);
    mgp2p_lock();
    op_host_release(op, 0);
    mgp2p_unlock();
    return rc;
}

/* A plain message goes as count instances of the type's packed twin, whose
   type signature matches the user's datatype (mgdt_type_twin): MPICH 4.0.2
   over UCX truncates a
   message of bytes received into a padded struct type (17 KiB and more of
   a {double, int, int, char} in 24 bytes).  But MPICH sends a struct twin
   element by element: 512 KiB of that struct took 17 ms against 0.25 ms as
   bytes (2 ranks, the VM).  So a plain message that only receives landing
   in bytes can match goes as bytes too: one of at least the length from
   which every host receive runs as an operation (mgp2p_host_watch_bytes),
   since a receive with less room truncates it anyway. */
MPI_Datatype mgp2p_plain_type(const mgp2p_op_t *op, int64_t len, MPI_Count *n)
{
    if (mgp2p_host_watch_bytes(len, op->peer)) {
        *n = (MPI_Count)len;
        return MPI_BYTE;
    }
    *n = op->count;
    return op->twin;
}

/* The pieces of a chunked message go as bytes, a plain one as
   mgp2p_plain_type says. */
int mgp2p_send_post(mgp2p_op_t *op, char *buf, int64_t len, int first, MPI_Request *req)
{
    int chunked = op->proto != &mgp2p_proto_plain_send;
    MPI_Comm comm = first ? op->comm : mgp2p_engine.shadow;
    int dest = first ? op->peer : op->u.ck.wpeer, tag = first ? op->tag : op->u.ck.seq;
    MPI_Count n = (MPI_Count)len;
    MPI_Datatype t = chunked ? MPI_BYTE : mgp2p_plain_type(op, len, &n);
    if (op->mode == MGP2P_MODE_BUFFERED) {
        *req = MPI_REQUEST_NULL;
        return PMPI_Bsend_c(buf, n, t, dest, tag, comm);
    }
    if (first && op->mode == MGP2P_MODE_SYNC)
        return PMPI_Issend_c(buf, n, t, dest, tag, comm, req);
    if (first && op->mode == MGP2P_MODE_READY)
        return PMPI_Irsend_c(buf, n, t, dest, tag, comm, req);
    return PMPI_Isend_c(buf, n, t, dest, tag, comm, req);
}
