/* The stream bulk lane: a chunk's bytes follow its BULK message on the bulk
 * endpoint.  Also the BULK header code that both lanes share. */
#include <string.h>

#include "bulk.h"

void mgrm_bulk_init(mgrm_bulk_t *b, const mgrm_transport_t *t, mgrm_ep_t *ep)
{
    memset(b, 0, sizeof *b);
    b->ops = &mgrm_bulk_stream;
    b->t = t;
    b->ep = ep;
}

int mgrm_bulk_hdr_send(mgrm_bulk_t *b, const mgrm_chunk_t *ch, size_t extra)
{
    mgrm_buf_t m;
    int rc;
    mgrm_buf_init(&m, MGRM_OP_BULK, ch->last ? MGRM_F_LAST : 0, 0);
    mgrm_buf_u64(&m, ch->xfer);
    mgrm_buf_u64(&m, ch->off);
    mgrm_buf_i32(&m, ch->status);
    if (mgrm_buf_finish(&m)) {
        mgrm_buf_free(&m);
        return -1;
    }
    uint32_t len = (uint32_t)(MGRM_BULK_PREFIX + extra);
    for (int i = 0; i < 4; i++)
        m.p[8 + i] = (uint8_t)(len >> (8 * i));
    rc = b->t->send(b->ep, m.p, m.len);
    mgrm_buf_free(&m);
    return rc;
}

int mgrm_bulk_hdr_recv(mgrm_bulk_t *b, mgrm_chunk_t *ch, size_t *extra, size_t max_extra)
{
    uint8_t raw[MGRM_HDR_SIZE], pre[MGRM_BULK_PREFIX];
    mgrm_hdr_t h;
    mgrm_cur_t c;
    if (b->t->recv(b->ep, raw, sizeof raw) ||
        mgrm_hdr_parse(raw, &h, (uint32_t)(max_extra + MGRM_BULK_PREFIX)) || h.op != MGRM_OP_BULK ||
        h.length < MGRM_BULK_PREFIX || b->t->recv(b->ep, pre, sizeof pre))
        return -1;
    mgrm_cur_init(&c, pre, sizeof pre);
    ch->xfer = mgrm_cur_u64(&c);
    ch->off = mgrm_cur_u64(&c);
    ch->status = mgrm_cur_i32(&c);
    ch->last = (h.flags & MGRM_F_LAST) != 0;
    ch->slot = -1;
    ch->p = NULL;
    *extra = h.length - MGRM_BULK_PREFIX;
    return 0;
}

static int stream_acquire(mgrm_bulk_t *b, mgrm_chunk_t *ch)
{
    ch->p = NULL;
    ch->slot = -1;
    return 0;
}

static int stream_send(mgrm_bulk_t *b, const mgrm_chunk_t *ch, const void *src)
{
    if (mgrm_bulk_hdr_send(b, ch, ch->n))
        return -1;
    return ch->n ? b->t->send(b->ep, src, ch->n) : 0;
}

static int stream_recv_hdr(mgrm_bulk_t *b, mgrm_chunk_t *ch)
{
    return mgrm_bulk_hdr_recv(b, ch, &ch->n, MGRM_CHUNK);
}

static int stream_recv_data(mgrm_bulk_t *b, mgrm_chunk_t *ch, void *dst)
{
    ch->p = dst;
    if (!ch->n)
        return 0;
    return dst ? b->t->recv(b->ep, dst, ch->n) : -1;
}

static void stream_release(mgrm_bulk_t *b, mgrm_chunk_t *ch) {}

const mgrm_bulk_ops_t mgrm_bulk_stream = {
    .name = "stream",
    .acquire = stream_acquire,
    .send = stream_send,
    .recv_hdr = stream_recv_hdr,
    .recv_data = stream_recv_data,
    .release = stream_release,
};
