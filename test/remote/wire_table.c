/*
 * The message table of src/remote/wire/messages.h, checked from the table
 * itself: every message encodes and decodes back to the same fields, its
 * header carries its op, and a payload one byte short or one byte long is
 * refused by its decoder.  A message added to the table is covered here
 * without a line of this file changing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

static const uint64_t ids[3] = {1, 0x8000000000000000ull, 0x0102030405060708ull};

/* Sample values, different for every field of a message (k counts them). */
#define SET_u32(f) m->f = 0x01020304u * (uint32_t)++k;
#define SET_i32(f) m->f = -(int32_t)++k;
#define SET_u64(f) m->f = 0x0102030405060708ull * (uint64_t)++k;
#define SET_size(f) m->f = (size_t)1 << (++k % 40);
#define SET_str(f) m->f = "kernel_name";
#define SET_bytes(f) m->f = (mgw_bytes_t){"\0by\0tes", 7};
#define SET_devs(f) m->f = (mgw_ids_t){.n = 3, .v = ids};
#define SET_events(f) m->f = (mgw_ids_t){.n = 3, .v = ids};

#define EQ_u32(f) ok &= d->f == m->f;
#define EQ_i32(f) ok &= d->f == m->f;
#define EQ_u64(f) ok &= d->f == m->f;
#define EQ_size(f) ok &= d->f == m->f;
#define EQ_str(f) ok &= d->f && !strcmp(d->f, m->f);
#define EQ_bytes(f) ok &= d->f.n == m->f.n && !memcmp(d->f.p, m->f.p, m->f.n);
#define EQ_ids(f)                                                                                  \
    ok &= d->f.n == m->f.n;                                                                        \
    for (uint32_t i = 0; ok && i < m->f.n; i++)                                                    \
        ok &= mgw_ids_get(&d->f, i) == m->f.v[i];
#define EQ_devs(f) EQ_ids(f)
#define EQ_events(f) EQ_ids(f)

#define FREE_str(f) free((char *)d->f);
#define FREE_u32(f)
#define FREE_i32(f)
#define FREE_u64(f)
#define FREE_size(f)
#define FREE_bytes(f)
#define FREE_devs(f)
#define FREE_events(f)

#define F_SET(type, f) SET_##type(f)
#define F_EQ(type, f) EQ_##type(f)
#define F_FREE(type, f) FREE_##type(f)

#define DEF_SET(OP, name, fields)                                                                  \
    static void set_##name(mgw_##name##_t *m)                                                      \
    {                                                                                              \
        int k = 0;                                                                                 \
        fields(void) k;                                                                            \
    }
#define DEF_EQ(OP, name, fields)                                                                   \
    static int eq_##name(const mgw_##name##_t *m, const mgw_##name##_t *d)                         \
    {                                                                                              \
        int ok = 1;                                                                                \
        fields return ok;                                                                          \
    }
#define DEF_FREE(OP, name, fields)                                                                 \
    static void free_##name(mgw_##name##_t *d)                                                     \
    {                                                                                              \
        fields(void) d;                                                                            \
    }
MGW_MESSAGES(DEF_SET, F_SET)
MGW_MESSAGES(DEF_EQ, F_EQ)
MGW_MESSAGES(DEF_FREE, F_FREE)

static int fails;

static void fail(const char *name, const char *what)
{
    printf("wire_table: %s: %s\n", name, what);
    fails++;
}

/* Encodes the sample of a message, then decodes the payload whole, one byte
 * short and one byte long. */
#define ROUND_TRIP(OP, name, fields)                                                               \
    do {                                                                                           \
        mgw_##name##_t m, d;                                                                       \
        mgw_buf_t b;                                                                               \
        mgw_cur_t c;                                                                               \
        mgw_hdr_t h;                                                                               \
        memset(&m, 0, sizeof m);                                                                   \
        set_##name(&m);                                                                            \
        mgw_##name##_encode(&b, 7, &m);                                                            \
        if (mgw_buf_finish(&b) || mgw_hdr_parse(b.p, &h, MGW_MSG_MAX) || h.op != MGW_OP_##OP ||    \
            h.seq != 7 || h.length != b.len - MGW_HDR_SIZE) {                                      \
            fail(#name, "header");                                                                 \
            mgw_buf_free(&b);                                                                      \
            break;                                                                                 \
        }                                                                                          \
        const uint8_t *pl = b.p + MGW_HDR_SIZE;                                                    \
        memset(&d, 0, sizeof d);                                                                   \
        mgw_cur_init(&c, pl, h.length);                                                            \
        if (mgw_##name##_decode(&c, &d) || !eq_##name(&m, &d))                                     \
            fail(#name, "decoded fields differ");                                                  \
        free_##name(&d);                                                                           \
        if (h.length > 0) {                                                                        \
            memset(&d, 0, sizeof d);                                                               \
            mgw_cur_init(&c, pl, h.length - 1);                                                    \
            if (!mgw_##name##_decode(&c, &d))                                                      \
                fail(#name, "a payload one byte short decoded");                                   \
            free_##name(&d);                                                                       \
        }                                                                                          \
        uint8_t *longer = malloc(h.length + 1);                                                    \
        memcpy(longer, pl, h.length);                                                              \
        longer[h.length] = 0;                                                                      \
        memset(&d, 0, sizeof d);                                                                   \
        mgw_cur_init(&c, longer, h.length + 1);                                                    \
        if (!mgw_##name##_decode(&c, &d))                                                          \
            fail(#name, "a payload one byte long decoded");                                        \
        free_##name(&d);                                                                           \
        free(longer);                                                                              \
        mgw_buf_free(&b);                                                                          \
        n++;                                                                                       \
    } while (0);
#define F_NONE(type, f)

int main(void)
{
    int n = 0;
    MGW_MESSAGES(ROUND_TRIP, F_NONE)
    /* an ID list longer than its bound is refused */
    mgw_buf_t b;
    mgw_cur_t c;
    mgw_release_events_t d;
    mgw_buf_init(&b, MGW_OP_RELEASE_EVENTS, 0, 0);
    mgw_buf_u32(&b, MGW_MAX_WAIT + 1);
    for (int i = 0; i <= MGW_MAX_WAIT; i++)
        mgw_buf_u64(&b, (uint64_t)i);
    mgw_cur_init(&c, b.p + MGW_HDR_SIZE, b.len - MGW_HDR_SIZE);
    if (!mgw_release_events_decode(&c, &d) || d.events.n != 0)
        fail("release_events", "a list over MGW_MAX_WAIT decoded");
    mgw_buf_free(&b);
    printf("wire_table: %d messages, %d failures\n", n, fails);
    return fails != 0;
}
