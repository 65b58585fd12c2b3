/* The stream bulk lane: a chunk's bytes follow its BULK message on the bulk
 * endpoint.  Also the BULK header code that both lanes share. */
#include <string.h>

#include "bulk.h"

void mgtr_bulk_init(mgtr_bulk_t *b, const mgtr_transport_t *t, mgtr_ep_t *ep)
{
    memset(b, 0, sizeof *b);
    b->ops = &mgtr_bulk_stream;
    b->t = t;
    b->ep = ep;
}

int mgtr_bulk_hdr_send(mgtr_bulk_t *b, const mgtr_chunk_t *ch, const mgw_shm_desc_t *desc,
                       size_t data)
{
    mgw_buf_t m;
    int rc;
    mgw_bulk_encode(&m, 0, &(mgw_bulk_t){.xfer = ch->xfer, .off = ch->off, .status = ch->status});
    mgw_buf_flags(&m, ch->last ? MGW_F_LAST : 0);
    if (desc)
        mgw_shm_desc_put(&m, desc);
    if (mgw_buf_finish(&m)) {
        mgw_buf_free(&m);
        return -1;
    }
    uint32_t len = (uint32_t)(m.len - MGW_HDR_SIZE + data); /* the data follows */
    for (int i = 0; i < 4; i++)
        m.p[8 + i] = (uint8_t)(len >> (8 * i));
    rc = b->t->send(b->ep, m.p, m.len);
    mgw_buf_free(&m);
    return rc;
}

int mgtr_bulk_hdr_recv(mgtr_bulk_t *b, mgtr_chunk_t *ch, size_t *extra, size_t max_extra)
{
    uint8_t raw[MGW_HDR_SIZE], pre[MGTR_BULK_PREFIX];
    mgw_hdr_t h;
    mgw_cur_t c;
    mgw_bulk_t m;
    if (b->t->recv(b->ep, raw, sizeof raw) ||
        mgw_hdr_parse(raw, &h, (uint32_t)(max_extra + MGTR_BULK_PREFIX)) || h.op != MGW_OP_BULK ||
        h.length < MGTR_BULK_PREFIX || b->t->recv(b->ep, pre, sizeof pre))
        return -1;
    mgw_cur_init(&c, pre, sizeof pre);
    if (mgw_bulk_decode(&c, &m))
        return -1;
    ch->xfer = m.xfer;
    ch->off = m.off;
    ch->status = m.status;
    ch->last = (h.flags & MGW_F_LAST) != 0;
    ch->slot = -1;
    ch->p = NULL;
    *extra = h.length - MGTR_BULK_PREFIX;
    return 0;
}

static int stream_acquire(mgtr_bulk_t *b, mgtr_chunk_t *ch)
{
    ch->p = NULL;
    ch->slot = -1;
    return 0;
}

static int stream_send(mgtr_bulk_t *b, const mgtr_chunk_t *ch, const void *src)
{
    if (mgtr_bulk_hdr_send(b, ch, NULL, ch->n))
        return -1;
    return ch->n ? b->t->send(b->ep, src, ch->n) : 0;
}

static int stream_recv_hdr(mgtr_bulk_t *b, mgtr_chunk_t *ch)
{
    return mgtr_bulk_hdr_recv(b, ch, &ch->n, MGW_CHUNK);
}

static int stream_recv_data(mgtr_bulk_t *b, mgtr_chunk_t *ch, void *dst)
{
    ch->p = dst;
    if (!ch->n)
        return 0;
    return dst ? b->t->recv(b->ep, dst, ch->n) : -1;
}

static void stream_release(mgtr_bulk_t *b, mgtr_chunk_t *ch) {}

const mgtr_bulk_ops_t mgtr_bulk_stream = {
    .name = "stream",
    .acquire = stream_acquire,
    .send = stream_send,
    .recv_hdr = stream_recv_hdr,
    .recv_data = stream_recv_data,
    .release = stream_release,
};
