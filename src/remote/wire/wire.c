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

void mgrm_hdr_write(uint8_t raw[MGRM_HDR_SIZE], const mgrm_hdr_t *h)
{
    put_le(raw, h->magic, 4);
    put_le(raw + 4, h->op, 2);
    put_le(raw + 6, h->flags, 2);
    put_le(raw + 8, h->length, 4);
    put_le(raw + 12, h->seq, 4);
}

int mgrm_hdr_parse(const uint8_t raw[MGRM_HDR_SIZE], mgrm_hdr_t *h, uint32_t max)
{
    h->magic = (uint32_t)get_le(raw, 4);
    h->op = (uint16_t)get_le(raw + 4, 2);
    h->flags = (uint16_t)get_le(raw + 6, 2);
    h->length = (uint32_t)get_le(raw + 8, 4);
    h->seq = (uint32_t)get_le(raw + 12, 4);
    if (h->magic != MGRM_MAGIC || h->length > max)
        return -1;
    return 0;
}

void mgrm_buf_init(mgrm_buf_t *b, uint16_t op, uint16_t flags, uint32_t seq)
{
    b->cap = 256;
    b->p = malloc(b->cap);
    b->len = MGRM_HDR_SIZE;
    b->err = b->p == NULL;
    if (b->p) {
        mgrm_hdr_t h = {MGRM_MAGIC, op, flags, 0, seq};
        mgrm_hdr_write(b->p, &h);
    }
}

void mgrm_buf_free(mgrm_buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static uint8_t *buf_grow(mgrm_buf_t *b, size_t n)
{
    if (b->err)
        return NULL;
    if (n > MGRM_MSG_MAX || b->len + n > (size_t)MGRM_MSG_MAX + MGRM_HDR_SIZE) {
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

void mgrm_buf_u8(mgrm_buf_t *b, uint8_t v)
{
    uint8_t *p = buf_grow(b, 1);
    if (p)
        *p = v;
}

void mgrm_buf_u32(mgrm_buf_t *b, uint32_t v)
{
    uint8_t *p = buf_grow(b, 4);
    if (p)
        put_le(p, v, 4);
}

void mgrm_buf_i32(mgrm_buf_t *b, int32_t v)
{
    mgrm_buf_u32(b, (uint32_t)v);
}

void mgrm_buf_u64(mgrm_buf_t *b, uint64_t v)
{
    uint8_t *p = buf_grow(b, 8);
    if (p)
        put_le(p, v, 8);
}

void mgrm_buf_raw(mgrm_buf_t *b, const void *src, size_t n)
{
    uint8_t *p = buf_grow(b, n);
    if (p && n)
        memcpy(p, src, n);
}

void mgrm_buf_bytes(mgrm_buf_t *b, const void *src, size_t n)
{
    if (n > UINT32_MAX) {
        b->err = 1;
        return;
    }
    mgrm_buf_u32(b, (uint32_t)n);
    mgrm_buf_raw(b, src, n);
}

void mgrm_buf_str(mgrm_buf_t *b, const char *s)
{
    mgrm_buf_bytes(b, s, s ? strlen(s) : 0);
}

int mgrm_buf_finish(mgrm_buf_t *b)
{
    if (b->err || b->len - MGRM_HDR_SIZE > MGRM_MSG_MAX)
        return -1;
    put_le(b->p + 8, b->len - MGRM_HDR_SIZE, 4);
    return 0;
}

void mgrm_cur_init(mgrm_cur_t *c, const void *p, size_t n)
{
    c->p = p;
    c->len = p ? n : 0;
    c->off = 0;
    c->err = 0;
}

const void *mgrm_cur_raw(mgrm_cur_t *c, size_t n)
{
    if (c->err || n > c->len - c->off) {
        c->err = 1;
        return NULL;
    }
    const void *at = c->p + c->off;
    c->off += n;
    return at;
}

uint8_t mgrm_cur_u8(mgrm_cur_t *c)
{
    const uint8_t *p = mgrm_cur_raw(c, 1);
    return p ? *p : 0;
}

uint32_t mgrm_cur_u32(mgrm_cur_t *c)
{
    const uint8_t *p = mgrm_cur_raw(c, 4);
    return p ? (uint32_t)get_le(p, 4) : 0;
}

int32_t mgrm_cur_i32(mgrm_cur_t *c)
{
    return (int32_t)mgrm_cur_u32(c);
}

uint64_t mgrm_cur_u64(mgrm_cur_t *c)
{
    const uint8_t *p = mgrm_cur_raw(c, 8);
    return p ? get_le(p, 8) : 0;
}

size_t mgrm_cur_size(mgrm_cur_t *c, size_t max)
{
    uint64_t v = mgrm_cur_u64(c);
    if (v > max || v > SIZE_MAX) {
        c->err = 1;
        return 0;
    }
    return (size_t)v;
}

const void *mgrm_cur_bytes(mgrm_cur_t *c, size_t *n)
{
    uint32_t len = mgrm_cur_u32(c);
    const void *p = mgrm_cur_raw(c, len);
    *n = p ? len : 0;
    return p;
}

char *mgrm_cur_strdup(mgrm_cur_t *c)
{
    size_t n;
    const char *p = mgrm_cur_bytes(c, &n);
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

uint32_t mgrm_cur_ids(mgrm_cur_t *c, uint64_t *out, uint32_t max)
{
    uint32_t n = mgrm_cur_u32(c);
    if (n > max) {
        c->err = 1;
        return 0;
    }
    for (uint32_t i = 0; i < n; i++)
        out[i] = mgrm_cur_u64(c);
    return c->err ? 0 : n;
}

int mgrm_cur_done(const mgrm_cur_t *c)
{
    return c->err || c->off != c->len ? -1 : 0;
}

int mgrm_join_decode(const uint8_t *p, size_t n, uint8_t token[MGRM_TOKEN], uint32_t *stripe)
{
    mgrm_cur_t c;
    mgrm_cur_init(&c, p, n);
    const void *tok = mgrm_cur_raw(&c, MGRM_TOKEN);
    *stripe = mgrm_cur_u32(&c);
    if (mgrm_cur_done(&c) || !tok || *stripe >= MGRM_STREAMS_MAX)
        return -1;
    memcpy(token, tok, MGRM_TOKEN);
    return 0;
}
