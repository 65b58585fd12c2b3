/* The shared-memory bulk lane (client and proxy on one host): the bytes sit
 * in a slot of the segment, the bulk endpoint carries only descriptors.
 * See bulk.h for the layout and the flow control.
 *
 * Not the node lane's ring (src/p2p/lane.c), on purpose.  Here each slot
 * has its own 32-bit state word, because a sender out of slots sleeps on
 * it with futex (a 32-bit wait), and the receiver learns of a full slot
 * from the descriptor on the stream, in order with the other bulk
 * messages, not by polling the segment.  The node lane is polled by the
 * p2p progress engine, never sleeps, and keeps two 64-bit counters plus a
 * table of entries (message, offset, length) in shared memory.  One ring
 * for both would need both wake-ups and both kinds of entries. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bulk.h"

int mgtr_shm_create(char name[MGTR_SHM_NAME], unsigned char **base)
{
    unsigned char r[16];
    int fd;
    void *p;
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return -1;
    int k = snprintf(name, MGTR_SHM_NAME, "/mpigpu-");
    for (size_t i = 0; i < sizeof r; i++)
        k += snprintf(name + k, MGTR_SHM_NAME - (size_t)k, "%02x", r[i]);
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (fchmod(fd, 0600) || ftruncate(fd, (off_t)MGTR_SHM_SIZE) ||
        (p = mmap(NULL, MGTR_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)) ==
            MAP_FAILED) {
        close(fd);
        shm_unlink(name);
        return -1;
    }
    close(fd);
    mgtr_shm_hdr_t *h = p;
    h->magic = MGTR_SHM_MAGIC;
    h->nslots = MGTR_SHM_SLOTS;
    h->slot_size = MGTR_SHM_SLOT;
    *base = p;
    return 0;
}

int mgtr_shm_attach(const char *name, unsigned char **base)
{
    struct stat st;
    void *p;
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    shm_unlink(name); /* both sides have it now: nothing can leak */
    if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 077) ||
        (size_t)st.st_size != MGTR_SHM_SIZE ||
        (p = mmap(NULL, MGTR_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)) ==
            MAP_FAILED) {
        close(fd);
        return -1;
    }
    close(fd);
    mgtr_shm_hdr_t *h = p;
    if (h->magic != MGTR_SHM_MAGIC || h->nslots != MGTR_SHM_SLOTS ||
        h->slot_size != MGTR_SHM_SLOT) {
        munmap(p, MGTR_SHM_SIZE);
        return -1;
    }
    *base = p;
    return 0;
}

void mgtr_bulk_use_shm(mgtr_bulk_t *b, unsigned char *base, int proxy)
{
    b->ops = &mgtr_bulk_shm;
    b->base = base;
    b->hdr = (mgtr_shm_hdr_t *)base;
    b->tx_ring = proxy ? MGTR_RING_P2C : MGTR_RING_C2P;
    b->rx_ring = proxy ? MGTR_RING_C2P : MGTR_RING_P2C;
    b->tx_acq = b->tx_next = b->rx_next = 0;
}

void mgtr_bulk_fini(mgtr_bulk_t *b)
{
    if (b->base)
        munmap(b->base, MGTR_SHM_SIZE);
    b->base = NULL;
    b->hdr = NULL;
    b->ops = &mgtr_bulk_stream;
}

int mgtr_shm_desc_decode(const uint8_t *p, size_t n, uint32_t nslots, uint32_t slot_size,
                         uint32_t *slot, uint32_t *off, uint32_t *len)
{
    mgw_cur_t c;
    mgw_shm_desc_t d;
    mgw_cur_init(&c, p, n);
    mgw_shm_desc_get(&c, &d);
    *slot = d.slot;
    *off = d.off;
    *len = d.len;
    if (mgw_cur_done(&c) || *slot >= nslots || *off > slot_size || *len > slot_size - *off)
        return -1;
    return 0;
}

static unsigned char *slot_ptr(mgtr_bulk_t *b, int ring, unsigned slot)
{
    return b->base + MGTR_SHM_HDR + ((size_t)ring * MGTR_SHM_SLOTS + slot) * MGTR_SHM_SLOT;
}

static int shm_acquire(mgtr_bulk_t *b, mgtr_chunk_t *ch)
{
    unsigned k = b->tx_acq;
    _Atomic uint32_t *w = &b->hdr->state[b->tx_ring][k];
    /* the receiver frees slots in order; wait for this one's credit */
    while (atomic_load_explicit(w, memory_order_acquire) != 0) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        if (b->stopped && b->stopped(b->arg))
            return -1;
        syscall(SYS_futex, w, FUTEX_WAIT, 1, &ts, NULL, 0);
    }
    ch->slot = (int)k;
    ch->p = slot_ptr(b, b->tx_ring, k);
    b->tx_acq = (k + 1) % MGTR_SHM_SLOTS;
    return 0;
}

static int shm_send(mgtr_bulk_t *b, const mgtr_chunk_t *ch, const void *src)
{
    mgw_shm_desc_t d = {.slot = ch->slot < 0 ? 0 : (uint32_t)ch->slot, .len = (uint32_t)ch->n};
    if (ch->n) {
        if (ch->slot < 0 || (unsigned)ch->slot != b->tx_next || ch->n > MGTR_SHM_SLOT)
            return -1;
        if (src && src != ch->p)
            memcpy(ch->p, src, ch->n);
        atomic_store_explicit(&b->hdr->state[b->tx_ring][ch->slot], 1, memory_order_release);
        b->tx_next = (b->tx_next + 1) % MGTR_SHM_SLOTS;
    } else {
        b->tx_acq = b->tx_next;
    }
    return mgtr_bulk_hdr_send(b, ch, &d, 0);
}

static int shm_recv_hdr(mgtr_bulk_t *b, mgtr_chunk_t *ch)
{
    uint8_t d[MGTR_SHM_DESC];
    uint32_t slot, off, len;
    size_t extra;
    if (mgtr_bulk_hdr_recv(b, ch, &extra, MGTR_SHM_DESC) || extra != MGTR_SHM_DESC ||
        b->t->recv(b->ep, d, sizeof d) ||
        mgtr_shm_desc_decode(d, sizeof d, MGTR_SHM_SLOTS, MGTR_SHM_SLOT, &slot, &off, &len))
        return -1;
    ch->n = len;
    if (!len)
        return 0; /* an empty chunk (status only) takes no slot */
    if (slot != b->rx_next ||
        atomic_load_explicit(&b->hdr->state[b->rx_ring][slot], memory_order_acquire) != 1)
        return -1; /* out of step, or a slot the sender did not fill */
    ch->slot = (int)slot;
    ch->p = slot_ptr(b, b->rx_ring, slot) + off;
    b->rx_next = (b->rx_next + 1) % MGTR_SHM_SLOTS;
    return 0;
}

static int shm_recv_data(mgtr_bulk_t *b, mgtr_chunk_t *ch, void *dst)
{
    return 0; /* the bytes are in the slot */
}

static void shm_release(mgtr_bulk_t *b, mgtr_chunk_t *ch)
{
    if (ch->slot < 0)
        return;
    _Atomic uint32_t *w = &b->hdr->state[b->rx_ring][ch->slot];
    atomic_store_explicit(w, 0, memory_order_release);
    syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
    ch->slot = -1;
}

const mgtr_bulk_ops_t mgtr_bulk_shm = {
    .name = "shm",
    .acquire = shm_acquire,
    .send = shm_send,
    .recv_hdr = shm_recv_hdr,
    .recv_data = shm_recv_data,
    .release = shm_release,
};
