/*
 * Packed staging of the all-to-all sides (doc/design.md, "Collectives"):
 * MPI_Alltoallv, MPI_Alltoallw, MPI_Neighbor_alltoallv and
 * MPI_Neighbor_alltoallw, and their I, _init and _c forms, on a device
 * that is not zero copy.  A side's blocks (one per peer, each a count of a
 * datatype at a displacement) become one datatype, a struct of the blocks
 * in peer order, so that the pack engine packs every block of the side
 * into one contiguous host buffer in one call (one kernel launch where
 * the kernel method runs), and unpacks every block it receives from one
 * in one call.  MPI moves the packed bytes: MPI_PACKED counts of the
 * blocks' sizes, at their offsets in the buffer.  A message sent as
 * MPI_PACKED matches any receive type and the reverse, so the other
 * processes may stage otherwise or not at all.  Only the blocks' bytes
 * cross between device and host, never the span between them (a halo's
 * faces of a cube, not the cube).
 *
 * A neighborhood block whose peer is MPI_PROC_NULL (a Cartesian topology
 * without periods) moves nothing: it is left out of the type and gets a
 * count of 0, so that its receive bytes stay as they are on the device.
 *
 * A side of two or more blocks packs fused (one call of the pack engine,
 * one launch of the multi kernel) or one engine call per block, each with
 * the engine's own method choice (copies where auto prefers them):
 * MPIGPU_COLL_PACKED.  Under model, whichever the engine's model predicts
 * faster (mgpk_method_cost, which counts a kernel's switch on a shared GPU
 * as auto's comparison does).  A kernel launch on a GPU that several
 * processes use waits for a context switch, which per-block copies do not.
 * Under auto (the default) the model's choice runs first, and the calls of
 * a side of the same blocks (its signature) then run each way twice,
 * timed, and keep the faster: on an H100 shared by two processes the model
 * kept the fused call for a halo's 6 faces of side 64 and 128, which
 * measured 2.1x and 1.3x slower than block by block (doc/performance.md,
 * S22-5).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mgclock.h"
#include "mgerr.h"
#include "mglog.h"
#include "mgparam.h"
#include "coll_impl.h"

/* MPIGPU_COLL_PACKED, in the table's order of its values */
enum { PACKED_AUTO, PACKED_FUSED, PACKED_BLOCKS, PACKED_MODEL };
static int packed_mode = PACKED_AUTO; /* the table's default */
static pthread_once_t packed_once = PTHREAD_ONCE_INIT;
static atomic_ulong packed_nfused, packed_nblocks;

static void packed_read_settings(void)
{
    mgparam_value_t v;
    char err[256];
    if (mgparam_read(MGPARAM_COLL_PACKED, &v, err, sizeof err) == 0)
        packed_mode = (int)v.num;
}

unsigned long mgcoll_packed_fused(void)
{
    return atomic_load(&packed_nfused);
}

unsigned long mgcoll_packed_blocks(void)
{
    return atomic_load(&packed_nblocks);
}

static int packed_kind(mgcoll_kind_t k)
{
    return k == MGCOLL_ALLTOALLV || k == MGCOLL_ALLTOALLW || k == MGCOLL_NEIGHBOR_ALLTOALLV ||
           k == MGCOLL_NEIGHBOR_ALLTOALLW;
}

/* The peers of a neighborhood side, in MPI's order: the sources (in) or
   the destinations, n of them, into p.  Returns 0, or -1 where the
   topology does not say (p is then left alone). */
static int side_peers(MPI_Comm comm, int in, int n, int *p)
{
    int topo = MPI_UNDEFINED, rc = 0;
    if (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS)
        return -1;
    if (topo == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        if (2 * nd != n)
            return -1;
        /* per dimension: the neighbor below, then the one above, both ways */
        for (int d = 0; d < nd; d++)
            if (PMPI_Cart_shift(comm, d, 1, &p[2 * d], &p[2 * d + 1]) != MPI_SUCCESS)
                return -1;
        return 0;
    }
    if (topo == MPI_GRAPH) {
        int rank = 0, k = 0;
        PMPI_Comm_rank(comm, &rank);
        PMPI_Graph_neighbors_count(comm, rank, &k);
        if (k != n)
            return -1;
        return PMPI_Graph_neighbors(comm, rank, n, p) == MPI_SUCCESS ? 0 : -1;
    }
    if (topo != MPI_DIST_GRAPH)
        return -1;
    int indeg = 0, outdeg = 0, weighted = 0;
    PMPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
    if ((in ? indeg : outdeg) != n)
        return -1;
    size_t m = (size_t)(indeg + outdeg + 1);
    int *a = malloc(2 * m * sizeof(int));
    if (!a)
        return -1;
    int *src = a, *dst = a + indeg, *w = a + m;
    if (PMPI_Dist_graph_neighbors(comm, indeg, src, weighted ? w : MPI_UNWEIGHTED, outdeg, dst,
                                  weighted ? w + indeg : MPI_UNWEIGHTED) != MPI_SUCCESS)
        rc = -1;
    else
        memcpy(p, in ? src : dst, (size_t)n * sizeof(int));
    free(a);
    return rc;
}

int coll_packed_choose(const mgcoll_call_t *c, coll_side_t *sd)
{
    const coll_spec_t *s = &sd->spec;
    sd->packed = 0;
    if (!packed_kind(c->kind) || s->form == COLL_SINGLE || !s->dir || sd->hostm)
        return MPI_SUCCESS;
    int *peers = NULL;
    if (c->kind == MGCOLL_NEIGHBOR_ALLTOALLV || c->kind == MGCOLL_NEIGHBOR_ALLTOALLW) {
        peers = malloc((size_t)(s->n > 0 ? s->n : 1) * sizeof(int));
        if (!peers)
            return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", c->fn);
        if (side_peers(c->comm, s->dir == COLL_OUT, s->n, peers) != 0) {
            free(peers);
            peers = NULL;
        }
    }
    int64_t total = 0;
    int live = 0, fits = 1;
    for (int i = 0; i < sd->nblk; i++) {
        coll_blk_t *b = &sd->blk[i];
        int64_t n = 0;
        b->skip = b->type->size == 0 || (peers && peers[b->idx] == MPI_PROC_NULL);
        if (b->skip)
            continue;
        live++;
        fits &= b->count <= INT32_MAX; /* a struct's block length is an int */
        if (__builtin_mul_overflow(b->count, b->type->size, &n) ||
            __builtin_add_overflow(total, n, &total))
            fits = 0;
    }
    free(peers);
    if (live > 1 && !fits)
        return MPI_SUCCESS; /* the span staging, block by block */
    sd->pbytes = total;
    sd->packed = 1;
    return MPI_SUCCESS;
}

/* The blocks that move as one type: count instances at buf + disp, with
   the pack flags to use; NULL where none moves. */
static const mgdt_type_t *packed_type(const coll_side_t *sd, int64_t *count, int64_t *disp,
                                      int *flags)
{
    *count = 1;
    *disp = 0;
    *flags = 0;
    if (sd->ftype)
        return sd->ftype;
    for (int i = 0; i < sd->nblk; i++) {
        const coll_blk_t *b = &sd->blk[i];
        if (!b->skip) {
            *count = b->count;
            *disp = b->disp;
            *flags = b->flags;
            return b->type;
        }
    }
    return NULL;
}

static const char *const side_name[2] = {"send", "receive"};

/* ---- auto: the measured choice ---- */

/* Samples each way before the faster one is kept: the first call of a way
   may pay what later ones do not (a kernel's build, a copy queue's start),
   so each way's time is the least of PACKED_SAMPLES. */
#define PACKED_SAMPLES 2
/* Signatures remembered per process (the oldest entry goes first). */
#define PACKED_TRIALS 64

typedef struct packed_trial {
    uint64_t key;   /* 0: free */
    uint64_t ns[2]; /* least time seen, fused [0] and block by block [1] */
    int n[2];       /* samples */
    int model;      /* the model's choice (1: block by block) */
} packed_trial_t;

static pthread_mutex_t trial_lock = PTHREAD_MUTEX_INITIALIZER;
static packed_trial_t trials[PACKED_TRIALS];
static int trial_next;

/* FNV-1a over the bytes of w. */
static uint64_t key_mix(uint64_t h, uint64_t w)
{
    for (int i = 0; i < 8; i++, w >>= 8)
        h = (h ^ (w & 0xff)) * 0x100000001b3ull;
    return h;
}

/* The signature of side sd's move in direction unpack: the engine, the
   host buffer's kind and every block that moves (its serialized type,
   count and displacement); never 0. */
static uint64_t side_key(const coll_side_t *sd, int unpack)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = key_mix(h, (uint64_t)(uintptr_t)sd->pk);
    h = key_mix(h, (uint64_t)(unpack * 2 + (sd->pstage != NULL)));
    for (int i = 0; i < sd->npblk; i++) {
        h = key_mix(h, (uint64_t)(uintptr_t)sd->pblk[i].type);
        h = key_mix(h, (uint64_t)sd->pblk[i].count);
        h = key_mix(h, (uint64_t)sd->pblk[i].disp);
    }
    return h ? h : 1;
}

/* Which way the next move of signature key runs (1: block by block): the
   way with fewer samples (the model's on a tie), then the faster. */
static int trial_pick(uint64_t key, int model)
{
    pthread_mutex_lock(&trial_lock);
    packed_trial_t *t = NULL;
    for (int i = 0; i < PACKED_TRIALS && !t; i++)
        if (trials[i].key == key)
            t = &trials[i];
    if (!t) {
        t = &trials[trial_next];
        trial_next = (trial_next + 1) % PACKED_TRIALS;
        *t = (packed_trial_t){.key = key, .model = model};
    }
    int way;
    if (t->n[0] >= PACKED_SAMPLES && t->n[1] >= PACKED_SAMPLES)
        way = t->ns[1] < t->ns[0];
    else if (t->n[0] == t->n[1])
        way = t->model;
    else
        way = t->n[1] < t->n[0];
    pthread_mutex_unlock(&trial_lock);
    return way;
}

/* Record that a move of signature key took ns that way. */
static void trial_note(uint64_t key, int way, uint64_t ns, const char *fn, int unpack)
{
    int decided = 0;
    uint64_t f = 0, b = 0;
    pthread_mutex_lock(&trial_lock);
    for (int i = 0; i < PACKED_TRIALS; i++) {
        packed_trial_t *t = &trials[i];
        if (t->key != key)
            continue;
        if (t->n[way] < PACKED_SAMPLES) {
            if (!t->n[way] || ns < t->ns[way])
                t->ns[way] = ns;
            t->n[way]++;
            decided = t->n[0] == PACKED_SAMPLES && t->n[1] == PACKED_SAMPLES;
            f = t->ns[0];
            b = t->ns[1];
        }
        break;
    }
    pthread_mutex_unlock(&trial_lock);
    if (decided)
        MGLOG_INFO(MGLOG_COLL, "%s: %s side: %s (measured: %.1f us fused, %.1f us block by block)",
                   fn, side_name[unpack], b < f ? "block by block" : "fused", f * 1e-3, b * 1e-3);
}

/* Whether side k of st (two or more blocks that move, fused type made)
   packs one engine call per block rather than fused: MPIGPU_COLL_PACKED,
   under auto the pack engine's estimates of both ways (the fused call's
   method on the struct of the blocks; each block's own), kernel switches
   included.  Fused where the model cannot say, and without asking it where
   every call would launch a kernel (the kernel method forced, a block
   that is not one run): one launch then beats several, and no table need
   be measured. */
static int packed_blocks_choose(const coll_state_t *st, coll_side_t *sd, int k)
{
    pthread_once(&packed_once, packed_read_settings);
    sd->pkey = 0;
    if (packed_mode == PACKED_FUSED || packed_mode == PACKED_BLOCKS)
        return packed_mode == PACKED_BLOCKS;
    mgpk_method_t fm = mgdev_type_method(MPI_DATATYPE_NULL), m;
    int kernels = fm == MGPK_METHOD_KERNEL, noncontig = 0;
    for (int i = 0; i < sd->npblk; i++) {
        const mgpk_block_t *b = &sd->pblk[i];
        noncontig |= !mgpk_contig(b->type, b->count);
    }
    for (int i = 0; i < sd->nblk; i++)
        if (!sd->blk[i].skip)
            kernels &= MGPK_F_METHOD_OF(sd->blk[i].flags) == MGPK_METHOD_KERNEL;
    if (kernels && noncontig)
        return 0;
    double fused = mgpk_method_cost(sd->pk, sd->ftype, 1, 1, 0, &fm), blocks = 0;
    for (int i = 0; i < sd->nblk && fused >= 0 && blocks >= 0; i++) {
        const coll_blk_t *b = &sd->blk[i];
        if (!b->skip) {
            double t = mgpk_method_cost(sd->pk, b->type, b->count, 1, b->flags, &m);
            blocks = t < 0 ? -1 : blocks + t;
        }
    }
    int per = fused >= 0 && blocks >= 0 && blocks < fused;
    if (fused < 0 || blocks < 0)
        MGLOG_INFO(MGLOG_COLL,
                   "%s: %s side, %d blocks, %lld packed bytes: fused (the pack engine's model "
                   "has no estimate)",
                   st->hc.fn, side_name[k], sd->npblk, (long long)sd->pbytes);
    else
        MGLOG_INFO(MGLOG_COLL,
                   "%s: %s side, %d blocks, %lld packed bytes: %s (the pack engine's model: "
                   "%.1f us fused, as %s; %.1f us block by block)",
                   st->hc.fn, side_name[k], sd->npblk, (long long)sd->pbytes,
                   per ? "block by block" : "fused", fused * 1e6, mgdev_method_name(fm),
                   blocks * 1e6);
    if (packed_mode == PACKED_AUTO && fused >= 0 && blocks >= 0) {
        sd->pkey = side_key(sd, k);
        sd->pfn = st->hc.fn;
    }
    return per;
}

int coll_packed_setup(coll_state_t *st, int k)
{
    coll_side_t *sd = &st->side[k];
    const coll_spec_t *s = &sd->spec;
    int rc = MPI_SUCCESS, live = 0;
    size_t want = (size_t)(sd->pbytes > 0 ? sd->pbytes : 1);
    mgp2p_lock();
    /* Pinned staging where the pool has room, as point-to-point messages
       take it (the pack engine then reads and writes it straight from the
       device); not for a persistent call, which would hold it until freed. */
    if (st->hc.mode != MGCOLL_PERSISTENT)
        rc = want <= mgdev_stage_chunk() ? mgdev_stage_get(want, &sd->pstage)
                                         : mgdev_stage_get_big(want, &sd->pstage);
    if (rc == MPI_SUCCESS && sd->pstage)
        sd->pbuf = sd->pstage->ptr;
    else if (rc == MPI_SUCCESS)
        rc = mgdev_big_get(want, &sd->pbuf, &sd->pcap);
    mgp2p_unlock();
    if (rc != MPI_SUCCESS)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory for %lld packed bytes",
                         st->hc.fn, (long long)sd->pbytes);
    for (int i = 0; i < sd->nblk; i++)
        live += !sd->blk[i].skip;
    if (live > 1) {
        rc = coll_side_fuse(sd, 1); /* their counts fit an int (coll_packed_choose) */
        if (rc != MPI_SUCCESS)
            return rc;
        sd->pblk = malloc((size_t)live * sizeof(*sd->pblk));
        if (!sd->pblk)
            return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", st->hc.fn);
        for (int i = 0; i < sd->nblk; i++) {
            const coll_blk_t *b = &sd->blk[i];
            if (!b->skip)
                sd->pblk[sd->npblk++] =
                    (mgpk_block_t){.type = b->type, .count = b->count, .disp = b->disp};
        }
        /* decided once per state: a persistent call keeps its choice */
        sd->pblocks = packed_blocks_choose(st, sd, k);
    }
    /* MPI's arrays: the blocks' packed bytes one after the other, in peer
       order (the struct's order); a block that moves nothing gets 0 */
    int64_t off = 0;
    int j = 0;
    for (int i = 0; i < s->n; i++) {
        while (j < sd->nblk && sd->blk[j].idx < i)
            j++;
        sd->counts[i] = 0;
        sd->displs[i] = (MPI_Aint)off;
        if (j < sd->nblk && sd->blk[j].idx == i && !sd->blk[j].skip) {
            sd->counts[i] = sd->blk[j].count * sd->blk[j].type->size;
            off += sd->counts[i];
        }
    }
    if (s->form == COLL_W) {
        sd->ptypes = malloc((size_t)(s->n > 0 ? s->n : 1) * sizeof(MPI_Datatype));
        if (!sd->ptypes)
            return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", st->hc.fn);
        for (int i = 0; i < s->n; i++)
            sd->ptypes[i] = MPI_PACKED;
        if (k == 0)
            st->hc.stypes = sd->ptypes;
        else
            st->hc.rtypes = sd->ptypes;
    } else if (k == 0) {
        st->hc.stype = MPI_PACKED;
    } else {
        st->hc.rtype = MPI_PACKED;
    }
    sd->hbuf = sd->pbuf;
    return MPI_SUCCESS;
}

/* One engine call per block that moves, in peer order, each at its
   offset in pbuf (the fused type's packed order) with its own method
   flags; stops at the first error. */
static int packed_each(coll_side_t *sd, int unpack)
{
    int rc = MPI_SUCCESS;
    int64_t off = 0;
    for (int i = 0; i < sd->nblk && rc == MPI_SUCCESS; i++) {
        const coll_blk_t *b = &sd->blk[i];
        if (b->skip)
            continue;
        int64_t n = b->count * b->type->size;
        mgpk_buf_t d = {.mem = sd->mem, .offset = sd->eoff - sd->lo + b->disp};
        mgpk_buf_t h = {.host = sd->pbuf + off, .pinned = sd->pstage != NULL};
        rc = unpack ? mgpk_unpack(sd->pk, b->type, b->count, h, d, 0, n, b->flags)
                    : mgpk_pack(sd->pk, b->type, b->count, d, h, 0, n, b->flags);
        off += n;
    }
    return rc;
}

/* Every block in one engine call of the multi kernel (fused type t, whose
   displacement the blocks carry). */
static int packed_fused(coll_side_t *sd, int unpack, const mgdt_type_t *t, int flags)
{
    mgpk_buf_t d = {.mem = sd->mem, .offset = sd->eoff - sd->lo};
    mgpk_buf_t h = {.host = sd->pbuf, .pinned = sd->pstage != NULL};
    return unpack ? mgpk_unpack_multi(sd->pk, t, sd->pblk, sd->npblk, h, d, flags)
                  : mgpk_pack_multi(sd->pk, t, sd->pblk, sd->npblk, d, h, flags);
}

/* Pack (unpack) the side's blocks between the device and pbuf, fused or
   block by block (sd->pblocks; under auto as measured, trial_pick). */
static int packed_move(coll_side_t *sd, int unpack)
{
    int64_t count = 0, disp = 0;
    int flags = 0;
    const mgdt_type_t *t = packed_type(sd, &count, &disp, &flags);
    if (!t || !sd->pbytes)
        return MPI_SUCCESS;
    if (sd->pblk) {
        /* 1: block by block; timed where auto measures the side's signature */
        int way = sd->pkey ? trial_pick(sd->pkey, sd->pblocks) : sd->pblocks;
        uint64_t t0 = sd->pkey ? mg_clock_ns() : 0;
        atomic_fetch_add(way ? &packed_nblocks : &packed_nfused, 1);
        int rc = way ? packed_each(sd, unpack) : packed_fused(sd, unpack, t, flags);
        if (sd->pkey && rc == MPI_SUCCESS)
            trial_note(sd->pkey, way, mg_clock_ns() - t0, sd->pfn, unpack);
        return rc;
    }
    mgpk_buf_t d = {.mem = sd->mem, .offset = sd->eoff - sd->lo + disp};
    mgpk_buf_t h = {.host = sd->pbuf, .pinned = sd->pstage != NULL};
    return unpack ? mgpk_unpack(sd->pk, t, count, h, d, 0, sd->pbytes, flags)
                  : mgpk_pack(sd->pk, t, count, d, h, 0, sd->pbytes, flags);
}

int coll_packed_in(coll_side_t *sd)
{
    return packed_move(sd, 0);
}

int coll_packed_out(coll_side_t *sd)
{
    return packed_move(sd, 1);
}

void coll_packed_free(coll_side_t *sd)
{
    if (sd->pstage || sd->pbuf) {
        mgp2p_lock();
        if (sd->pstage)
            mgdev_stage_put(sd->pstage);
        else
            mgdev_big_put(sd->pbuf, sd->pcap);
        mgp2p_unlock();
        sd->pstage = NULL;
        sd->pbuf = NULL;
    }
    free(sd->ptypes);
    sd->ptypes = NULL;
    free(sd->pblk);
    sd->pblk = NULL;
    sd->npblk = 0;
    sd->pblocks = 0;
    sd->pkey = 0;
}
