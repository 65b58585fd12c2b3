/* Bounds-checked encoder and decoder of the remote protocol (wire.h). */
#include "wire.h"

#include <stdlib.h>
#include <string.h>

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void mgw_hdr_write(uint8_t raw[MGW_HDR_SIZE], const mgw_hdr_t *h)
{
    put_le(raw, h->magic, 4);
    put_le(raw + 4, h->op, 2);
    put_le(raw + 6, h->flags, 2);
    put_le(raw + 8, h->length, 4);
    put_le(raw + 12, h->seq, 4);
}

int mgw_hdr_parse(const uint8_t raw[MGW_HDR_SIZE], mgw_hdr_t *h, uint32_t max)
{
    h->magic = (uint32_t)get_le(raw, 4);
    h->op = (uint16_t)get_le(raw + 4, 2);
    h->flags = (uint16_t)get_le(raw + 6, 2);
    h->length = (uint32_t)get_le(raw + 8, 4);
    h->seq = (uint32_t)get_le(raw + 12, 4);
    if (h->magic != MGW_MAGIC || h->length > max)
        return -1;
    return 0;
}

void mgw_buf_init(mgw_buf_t *b, uint16_t op, uint16_t flags, uint32_t seq)
{
    b->cap = 256;
    b->p = malloc(b->cap);
    b->len = MGW_HDR_SIZE;
    b->err = b->p == NULL;
    if (b->p) {
        mgw_hdr_t h = {MGW_MAGIC, op, flags, 0, seq};
        mgw_hdr_write(b->p, &h);
    }
}

void mgw_buf_flags(mgw_buf_t *b, uint16_t flags)
{
    if (b->p)
        put_le(b->p + 6, flags, 2);
}

void mgw_reply_init(mgw_buf_t *b, uint32_t seq, int32_t rc)
{
    mgw_buf_init(b, MGW_OP_REPLY, 0, seq);
    mgw_buf_i32(b, rc);
}

void mgw_buf_free(mgw_buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static uint8_t *buf_grow(mgw_buf_t *b, size_t n)
{
    if (b->err)
        return NULL;
    if (n > MGW_MSG_MAX || b->len + n > (size_t)MGW_MSG_MAX + MGW_HDR_SIZE) {
        b->err = 1;
        return NULL;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap * 2;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->err = 1;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

void mgw_buf_u8(mgw_buf_t *b, uint8_t v)
{
    uint8_t *p = buf_grow(b, 1);
    if (p)
        *p = v;
}

void mgw_buf_u32(mgw_buf_t *b, uint32_t v)
{
    uint8_t *p = buf_grow(b, 4);
    if (p)
        put_le(p, v, 4);
}

void mgw_buf_i32(mgw_buf_t *b, int32_t v)
{
    mgw_buf_u32(b, (uint32_t)v);
}

void mgw_buf_u64(mgw_buf_t *b, uint64_t v)
{
    uint8_t *p = buf_grow(b, 8);
    if (p)
        put_le(p, v, 8);
}

void mgw_buf_raw(mgw_buf_t *b, const void *src, size_t n)
{
    uint8_t *p = buf_grow(b, n);
    if (p && n)
        memcpy(p, src, n);
}

void mgw_buf_bytes(mgw_buf_t *b, const void *src, size_t n)
{
    if (n > UINT32_MAX) {
        b->err = 1;
        return;
    }
    mgw_buf_u32(b, (uint32_t)n);
    mgw_buf_raw(b, src, n);
}

void mgw_buf_str(mgw_buf_t *b, const char *s)
{
    mgw_buf_bytes(b, s, s ? strlen(s) : 0);
}

int mgw_buf_finish(mgw_buf_t *b)
{
    if (b->err || b->len - MGW_HDR_SIZE > MGW_MSG_MAX)
        return -1;
    put_le(b->p + 8, b->len - MGW_HDR_SIZE, 4);
    return 0;
}

void mgw_cur_init(mgw_cur_t *c, const void *p, size_t n)
{
    c->p = p;
    c->len = p ? n : 0;
    c->off = 0;
    c->err = 0;
}

const void *mgw_cur_raw(mgw_cur_t *c, size_t n)
{
    if (c->err || n > c->len - c->off) {
        c->err = 1;
        return NULL;
    }
    const void *at = c->p + c->off;
    c->off += n;
    return at;
}

uint8_t mgw_cur_u8(mgw_cur_t *c)
{
    const uint8_t *p = mgw_cur_raw(c, 1);
    return p ? *p : 0;
}

uint32_t mgw_cur_u32(mgw_cur_t *c)
{
    const uint8_t *p = mgw_cur_raw(c, 4);
    return p ? (uint32_t)get_le(p, 4) : 0;
}

int32_t mgw_cur_i32(mgw_cur_t *c)
{
    return (int32_t)mgw_cur_u32(c);
}

uint64_t mgw_cur_u64(mgw_cur_t *c)
{
    const uint8_t *p = mgw_cur_raw(c, 8);
    return p ? get_le(p, 8) : 0;
}

size_t mgw_cur_size(mgw_cur_t *c, size_t max)
{
    uint64_t v = mgw_cur_u64(c);
    if (v > max || v > SIZE_MAX) {
        c->err = 1;
        return 0;
    }
    return (size_t)v;
}

void mgw_cur_copy(mgw_cur_t *c, void *out, size_t n)
{
    const void *p = mgw_cur_raw(c, n);
    if (p)
        memcpy(out, p, n);
    else
        memset(out, 0, n);
}

const void *mgw_cur_bytes(mgw_cur_t *c, size_t *n)
{
    uint32_t len = mgw_cur_u32(c);
    const void *p = mgw_cur_raw(c, len);
    *n = p ? len : 0;
    return p;
}

char *mgw_cur_strdup(mgw_cur_t *c)
{
    size_t n;
    const char *p = mgw_cur_bytes(c, &n);
    if (!p)
        return NULL;
    if (memchr(p, 0, n)) {
        c->err = 1;
        return NULL;
    }
    char *s = malloc(n + 1);
    if (!s) {
        c->err = 1;
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

void mgw_buf_ids(mgw_buf_t *b, const mgw_ids_t *ids)
{
    mgw_buf_u32(b, ids->n);
    if (!ids->v) { /* a decoded list */
        mgw_buf_raw(b, ids->raw, (size_t)ids->n * 8);
        return;
    }
    for (uint32_t i = 0; i < ids->n; i++)
        mgw_buf_u64(b, ids->v[i]);
}

void mgw_cur_idview(mgw_cur_t *c, mgw_ids_t *ids, uint32_t max)
{
    uint32_t n = mgw_cur_u32(c);
    if (n > max)
        c->err = 1;
    ids->v = NULL;
    ids->raw = c->err ? NULL : mgw_cur_raw(c, (size_t)n * 8);
    ids->n = ids->raw ? n : 0;
}

int mgw_cur_done(const mgw_cur_t *c)
{
    return c->err || c->off != c->len ? -1 : 0;
}
