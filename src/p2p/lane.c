/*
 * Node lanes: the pieces of a chunked message between two processes of one
 * node move through shared memory instead of MPI (doc/design.md, "Node
 * lanes").
 *
 * A lane belongs to one ordered pair of processes (sender, receiver).  The
 * sender creates it at its first offer to that receiver: a POSIX shared
 * memory object "/mpigpu.PID.S.R" (PID the sender's process id, S and R the
 * world ranks) holding a control page and a ring of slots of
 * MPIGPU_P2P_SHM_PIECE bytes each.  The receiver opens it by that name the
 * first time a header offers it, and unlinks the name at once, so that
 * nothing is left in /dev/shm once both sides mapped it (the sender unlinks
 * it at MPI_Finalize where no receiver ever came).
 *
 * The ring is single-producer, single-consumer: the sender fills slot
 * produced % nslots and publishes it by a release store of produced + 1; the
 * receiver reads entry consumed % nslots after an acquire load of produced,
 * and frees it by a release store of consumed + 1.  Entries carry the
 * message's sequence number, so that the pieces of several messages of the
 * pair may share the ring; the sender writes pieces of a message only after
 * its receiver matched it (the accept of the offer), so that a slot never
 * waits for a receive that is not posted.
 *
 * On a device both sides register the slots with the OpenCL runtime (a
 * CL_MEM_USE_HOST_PTR buffer kept for the lane's life, which page-locks them
 * on NVIDIA's driver) and in the pinned registry, so the pack engine moves
 * bytes between device memory and a slot by DMA.
 *
 * Not the remote shm bulk lane's ring (src/remote/bulk_shm.c), on purpose:
 * that one sleeps on per-slot 32-bit futex words and announces each slot by
 * a descriptor on its TCP stream; this one is polled by the progress engine,
 * needs no wake-up, and carries its entries (sequence, offset, length) in
 * the shared control page.
 *
 * Thread safety: called under the p2p lock only.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "locality.h"
#include "mgerr.h"
#include "mglog.h"
#include "p2p_impl.h"

#define LANE_MAGIC 0x6d70696c616e6531ULL /* "mpilane1" */
#define LANE_CTL 4096                    /* the control page */

typedef struct lane_entry {
    int64_t seq;   /* the message's sequence number */
    int64_t first; /* payload bytes [first, first + len) of the message */
    int64_t len;   /* -1: the sender failed, the message ends here */
} lane_entry_t;

/* The control page, in shared memory.  produced and consumed sit on cache
   lines of their own. */
typedef struct lane_ctl {
    _Atomic uint64_t magic; /* last written by the sender's setup */
    uint64_t nslots, slot;
    int64_t sender, receiver; /* world ranks */
    char pad0[64 - 5 * sizeof(uint64_t)];
    _Atomic uint64_t produced; /* written by the sender only */
    char pad1[64 - sizeof(uint64_t)];
    _Atomic uint64_t consumed; /* written by the receiver only */
    char pad2[64 - sizeof(uint64_t)];
    lane_entry_t ent[MGDEV_P2P_SHM_SLOTS_MAX];
} lane_ctl_t;

_Static_assert(sizeof(lane_ctl_t) <= LANE_CTL, "lane control page");
/* Two processes share these counters: they must be plain 64-bit words that
   need no lock (a lock-based atomic would not be shared). */
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2 &&
                   sizeof(_Atomic uint64_t) == sizeof(uint64_t),
               "lane counters are lock-free 64-bit atomics");

struct mgp2p_lane {
    int tx;   /* 1: this process sends on it */
    int peer; /* world rank of the other side */
    char name[64];
    lane_ctl_t *ctl;
    char *slots;
    size_t map_len, nslots, slot;
    cl_mem reg;         /* the slots registered with OpenCL, or NULL */
    uint64_t head;      /* receiver: entries consumed; sender: entries produced */
    int64_t drain_seq;  /* receiver: a failed message's later pieces to drop, or -1 */
    int64_t drain_left; /* its payload bytes still to come */
};

static mgp2p_lane_t **tx_lanes, **rx_lanes; /* per world rank, NULL until opened */
static char *tx_refused;                    /* per world rank: do not offer again */
static int nworld, myrank;

int mgp2p_lane_init(void)
{
    PMPI_Comm_size(MPI_COMM_WORLD, &nworld);
    PMPI_Comm_rank(MPI_COMM_WORLD, &myrank);
    tx_lanes = calloc((size_t)nworld, sizeof(*tx_lanes));
    rx_lanes = calloc((size_t)nworld, sizeof(*rx_lanes));
    tx_refused = calloc((size_t)nworld, 1);
    if (!tx_lanes || !rx_lanes || !tx_refused)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory for node lanes");
    return MPI_SUCCESS;
}

static void lane_close(mgp2p_lane_t *l)
{
    if (!l)
        return;
    if (l->reg) {
        mgdev_pinned_remove(l->slots);
        clReleaseMemObject(l->reg);
    }
    munmap(l->ctl, l->map_len);
    if (l->tx)
        shm_unlink(l->name); /* ENOENT once the receiver unlinked it */
    free(l);
}

void mgp2p_lane_finalize(void)
{
    for (int i = 0; i < nworld; i++) {
        if (tx_lanes)
            lane_close(tx_lanes[i]);
        if (rx_lanes)
            lane_close(rx_lanes[i]);
    }
    free(tx_lanes);
    free(rx_lanes);
    free(tx_refused);
    tx_lanes = rx_lanes = NULL;
    tx_refused = NULL;
    nworld = 0;
}

/* Register the slots for DMA; without it the lane still works, through the
   pack engine's own staging. */
static void lane_register(mgp2p_lane_t *l)
{
    cl_int err = CL_SUCCESS;
    cl_context ctx = NULL;
    mgdev_default_get(&ctx, NULL, NULL, NULL);
    if (!mgdev_state.has_device || !ctx)
        return;
    size_t len = l->nslots * l->slot;
    l->reg = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, len, l->slots, &err);
    if (err != CL_SUCCESS) {
        l->reg = NULL;
        return;
    }
    if (mgdev_pinned_add(l->slots, len) != MPI_SUCCESS) {
        clReleaseMemObject(l->reg);
        l->reg = NULL;
    }
}

static void lane_name(char *name, size_t len, long pid, int sender, int receiver)
{
    snprintf(name, len, "/mpigpu.%ld.%d.%d", pid, sender, receiver);
}

static mgp2p_lane_t *lane_map(int fd, size_t map_len, const char *name, int tx, int peer)
{
    mgp2p_lane_t *l = calloc(1, sizeof(*l));
    void *p = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!l || p == MAP_FAILED) {
        free(l);
        if (p != MAP_FAILED)
            munmap(p, map_len);
        return NULL;
    }
    l->tx = tx;
    l->peer = peer;
    snprintf(l->name, sizeof(l->name), "%s", name);
    l->ctl = p;
    l->slots = (char *)p + LANE_CTL;
    l->map_len = map_len;
    l->drain_seq = -1;
    return l;
}

static void lane_verbose(const mgp2p_lane_t *l)
{
    MGLOG_INFO(MGLOG_P2P, "rank %d: node lane %s rank %d: %zu slots of %zu bytes%s", myrank,
               l->tx ? "to" : "from", l->peer, l->nslots, l->slot,
               l->reg ? ", registered for DMA" : "");
}

mgp2p_lane_t *mgp2p_lane_tx(int w)
{
    char name[64];
    if (!mgdev_state.settings.p2p_shm || !tx_lanes || w < 0 || w >= nworld || w == myrank ||
        tx_refused[w])
        return NULL;
    if (tx_lanes[w])
        return tx_lanes[w];
    if (!mgdev_loc_on_node(w)) {
        tx_refused[w] = 1;
        return NULL;
    }
    size_t nslots = (size_t)mgdev_state.settings.p2p_shm_slots,
           slot = mgdev_state.settings.p2p_shm_piece, map_len = LANE_CTL + nslots * slot;
    lane_name(name, sizeof(name), (long)getpid(), myrank, w);
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        /* Left by a process of this id that is gone (its id is ours now). */
        shm_unlink(name);
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    mgp2p_lane_t *l = NULL;
    if (fd >= 0 && ftruncate(fd, (off_t)map_len) == 0)
        l = lane_map(fd, map_len, name, 1, w);
    if (fd >= 0)
        close(fd);
    if (!l) {
        if (fd >= 0)
            shm_unlink(name);
        MGLOG_INFO(MGLOG_P2P, "rank %d: no node lane to rank %d (%s): pieces go by MPI", myrank, w,
                   strerror(errno));
        tx_refused[w] = 1;
        return NULL;
    }
    l->nslots = nslots;
    l->slot = slot;
    lane_ctl_t *c = l->ctl;
    c->nslots = nslots;
    c->slot = slot;
    c->sender = myrank;
    c->receiver = w;
    atomic_store_explicit(&c->magic, LANE_MAGIC, memory_order_release);
    lane_register(l);
    lane_verbose(l);
    tx_lanes[w] = l;
    return l;
}

mgp2p_lane_t *mgp2p_lane_rx(int w, long pid)
{
    char name[64];
    struct stat st;
    if (!mgdev_state.settings.p2p_shm || !rx_lanes || w < 0 || w >= nworld || w == myrank)
        return NULL;
    if (rx_lanes[w])
        return rx_lanes[w];
    if (!mgdev_loc_on_node(w))
        return NULL;
    lane_name(name, sizeof(name), pid, w, myrank);
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0)
        return NULL;
    mgp2p_lane_t *l = NULL;
    if (fstat(fd, &st) == 0 && st.st_size > LANE_CTL)
        l = lane_map(fd, (size_t)st.st_size, name, 0, w);
    close(fd);
    if (!l)
        return NULL;
    lane_ctl_t *c = l->ctl;
    if (atomic_load_explicit(&c->magic, memory_order_acquire) != LANE_MAGIC || c->sender != w ||
        c->receiver != myrank || c->nslots < 2 || c->nslots > MGDEV_P2P_SHM_SLOTS_MAX ||
        c->slot == 0 || LANE_CTL + c->nslots * c->slot > l->map_len) {
        lane_close(l);
        return NULL;
    }
    shm_unlink(name);
    l->nslots = c->nslots;
    l->slot = c->slot;
    l->head = atomic_load_explicit(&c->consumed, memory_order_acquire);
    lane_register(l);
    lane_verbose(l);
    rx_lanes[w] = l;
    return l;
}

size_t mgp2p_lane_piece(const mgp2p_lane_t *l)
{
    return l->slot;
}

char *mgp2p_lane_slot(mgp2p_lane_t *l)
{
    uint64_t consumed = atomic_load_explicit(&l->ctl->consumed, memory_order_acquire);
    if (l->head - consumed >= l->nslots)
        return NULL;
    return l->slots + (l->head % l->nslots) * l->slot;
}

void mgp2p_lane_publish(mgp2p_lane_t *l, int seq, int64_t first, int64_t len)
{
    l->ctl->ent[l->head % l->nslots] = (lane_entry_t){.seq = seq, .first = first, .len = len};
    l->head++;
    atomic_store_explicit(&l->ctl->produced, l->head, memory_order_release);
}

/* The head entry, if the sender published one. */
static char *lane_head(mgp2p_lane_t *l, lane_entry_t *e)
{
    uint64_t produced = atomic_load_explicit(&l->ctl->produced, memory_order_acquire);
    if (produced == l->head)
        return NULL;
    *e = l->ctl->ent[l->head % l->nslots];
    return l->slots + (l->head % l->nslots) * l->slot;
}

/* Drop the head entries of a message whose receive failed here. */
static void lane_drain(mgp2p_lane_t *l)
{
    lane_entry_t e;
    while (l->drain_seq >= 0 && lane_head(l, &e) && e.seq == l->drain_seq) {
        mgp2p_lane_consume(l);
        l->drain_left -= e.len > 0 ? e.len : 0;
        if (e.len < 0 || l->drain_left <= 0)
            l->drain_seq = -1;
    }
}

char *mgp2p_lane_peek(mgp2p_lane_t *l, int64_t *seq, int64_t *first, int64_t *len)
{
    lane_entry_t e;
    lane_drain(l);
    char *p = lane_head(l, &e);
    if (p) {
        *seq = e.seq;
        *first = e.first;
        *len = e.len;
    }
    return p;
}

void mgp2p_lane_consume(mgp2p_lane_t *l)
{
    l->head++;
    atomic_store_explicit(&l->ctl->consumed, l->head, memory_order_release);
}

void mgp2p_lane_drop(mgp2p_lane_t *l, int seq, int64_t left)
{
    if (left <= 0)
        return;
    l->drain_seq = seq;
    l->drain_left = left;
    lane_drain(l);
}
