/*
 * The tables of src/remote/wire/messages.h, checked from the tables
 * themselves:
 *   - every op but REPLY has exactly one MGW_MESSAGES entry, and the ops
 *     MGW_REPLIES answers are command-lane requests;
 *   - every message and every reply, filled with random field values
 *     (lists, ID lists, strings and bytes of random lengths), encodes and
 *     decodes back to the same fields, its header carries its op (REPLY for
 *     replies, with rc), and the decoded message encodes to the same bytes;
 *   - every proper prefix of the payload, and the payload one byte long, is
 *     refused by the decoder;
 *   - a list or an ID list over its bound is refused.
 * A message added to a table is covered here without a line of this file
 * changing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

static int fails;

static void fail(const char *name, const char *what)
{
    printf("wire_table: %s: %s\n", name, what);
    fails++;
}

/* xorshift64*, seeded: the same values every run */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

/* What the sample values point to, freed after each message. */
static void *arena[1 << 16];
static int narena;
static void *alloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p || narena == (int)(sizeof arena / sizeof arena[0])) {
        printf("wire_table: out of memory\n");
        exit(1);
    }
    return arena[narena++] = p;
}
static void arena_free(void)
{
    while (narena)
        free(arena[--narena]);
}

/* Random sample values, per field kind. */
#define SET_u8(x_, ...) (x_) = (uint8_t)rnd();
#define SET_u32(x_, ...) (x_) = (uint32_t)rnd();
#define SET_i32(x_, ...) (x_) = (int32_t)rnd();
#define SET_u64(x_, ...) (x_) = rnd();
#define SET_size(x_, ...) (x_) = (size_t)rnd();
#define SET_sizes(x_, n)                                                                           \
    for (int i = 0; i < (n); i++)                                                                  \
        (x_)[i] = (size_t)rnd();
#define SET_fixed(x_, n)                                                                           \
    for (int i = 0; i < (n); i++)                                                                  \
        (x_)[i] = (uint8_t)rnd();
#define SET_str(x_, ...)                                                                           \
    {                                                                                              \
        size_t n_ = rnd() % 13;                                                                    \
        char *s_ = alloc(n_ + 1);                                                                  \
        for (size_t i = 0; i < n_; i++)                                                            \
            s_[i] = (char)('a' + rnd() % 26);                                                      \
        (x_) = s_;                                                                                 \
    }
#define SET_bytes(x_, ...)                                                                         \
    {                                                                                              \
        size_t n_ = rnd() % 25;                                                                    \
        uint8_t *p_ = alloc(n_);                                                                   \
        for (size_t i = 0; i < n_; i++)                                                            \
            p_[i] = (uint8_t)(rnd() % 3 ? rnd() : 0);                                              \
        (x_) = (mgw_bytes_t){p_, n_};                                                              \
    }
#define SET_ids(x_, max)                                                                           \
    {                                                                                              \
        uint32_t n_ = (uint32_t)(rnd() % 5);                                                       \
        uint64_t *p_ = alloc(n_ * sizeof *p_);                                                     \
        for (uint32_t i = 0; i < n_; i++)                                                          \
            p_[i] = rnd();                                                                         \
        (x_) = (mgw_ids_t){.n = n_, .v = p_};                                                      \
    }
#define SET_rec(x_, r) set_##r(&(x_));
#define SET_list(x_, r, max)                                                                       \
    {                                                                                              \
        uint32_t n_ = (uint32_t)(rnd() % 4);                                                       \
        mgw_##r##_t *p_ = alloc(n_ * sizeof *p_);                                                  \
        for (uint32_t i = 0; i < n_; i++)                                                          \
            set_##r(&p_[i]);                                                                       \
        memset(&(x_), 0, sizeof(x_));                                                              \
        (x_).n = n_;                                                                               \
        (x_).v = p_;                                                                               \
    }

/* Sent (a) and decoded (d) values equal, per field kind. */
#define EQ_u8(a, d, ...) ok &= (a) == (d);
#define EQ_u32(a, d, ...) ok &= (a) == (d);
#define EQ_i32(a, d, ...) ok &= (a) == (d);
#define EQ_u64(a, d, ...) ok &= (a) == (d);
#define EQ_size(a, d, ...) ok &= (a) == (d);
#define EQ_sizes(a, d, n) ok &= !memcmp(a, d, (n) * sizeof(size_t));
#define EQ_fixed(a, d, n) ok &= !memcmp(a, d, n);
#define EQ_str(a, d, ...) ok &= (d) && !strcmp(a, d);
#define EQ_bytes(a, d, ...) ok &= (a).n == (d).n && (!(a).n || !memcmp((a).p, (d).p, (a).n));
#define EQ_ids(a, d, ...)                                                                          \
    ok &= (a).n == (d).n && !(d).v;                                                                \
    for (uint32_t i = 0; ok && i < (a).n; i++)                                                     \
        ok &= mgw_ids_get(&(d), i) == (a).v[i];
#define EQ_rec(a, d, r) ok &= eq_##r(&(a), &(d));
#define EQ_list(a, d, r, max)                                                                      \
    {                                                                                              \
        mgw_##r##_list_t l_ = (d);                                                                 \
        mgw_##r##_t e_;                                                                            \
        ok &= l_.n == (a).n && !l_.v;                                                              \
        for (uint32_t i = 0; ok && i < (a).n; i++) {                                               \
            ok &= mgw_##r##_next(&l_, &e_) == 0 && eq_##r(&(a).v[i], &e_);                         \
            mgw_##r##_free(&e_);                                                                   \
        }                                                                                          \
        ok &= mgw_##r##_next(&l_, &e_) == -1; /* and no more */                                    \
    }

#define F_SET(kind, f, ...) SET_##kind(m->f, __VA_ARGS__)
#define F_EQ(kind, f, ...) EQ_##kind(m->f, d->f, __VA_ARGS__)
#define F_NONE(kind, ...)

#define DEF_SET(name, ...)                                                                         \
    static void set_##name(mgw_##name##_t *m)                                                      \
    {                                                                                              \
        memset(m, 0, sizeof *m);                                                                   \
        __VA_ARGS__                                                                                \
    }
#define DEF_EQ(name, ...)                                                                          \
    static int eq_##name(const mgw_##name##_t *m, const mgw_##name##_t *d)                         \
    {                                                                                              \
        int ok = 1;                                                                                \
        __VA_ARGS__ return ok;                                                                     \
    }
#define MSG_SET(OP, name, ...) DEF_SET(name, __VA_ARGS__)
#define MSG_EQ(OP, name, ...) DEF_EQ(name, __VA_ARGS__)
#define REP_SET(OP, name, ...) DEF_SET(name##_reply, __VA_ARGS__)
#define REP_EQ(OP, name, ...) DEF_EQ(name##_reply, __VA_ARGS__)
MGW_RECORDS(DEF_SET, F_SET)
MGW_RECORDS(DEF_EQ, F_EQ)
MGW_MESSAGES(MSG_SET, F_SET)
MGW_MESSAGES(MSG_EQ, F_EQ)
MGW_REPLIES(REP_SET, F_SET)
MGW_REPLIES(REP_EQ, F_EQ)

/* A payload (pl, n) checked with decoder dec: the whole decodes to fields
 * equal to the sample's and encodes again to the same bytes; every proper
 * prefix, and the payload one byte long, are refused. */
#define CHECK_PAYLOAD(label, T, dec, put, eq, freef, sample, pl, n)                                \
    do {                                                                                           \
        T d_;                                                                                      \
        mgw_cur_t c_;                                                                              \
        mgw_cur_init(&c_, pl, n);                                                                  \
        if (dec(&c_, &d_) || !eq(sample, &d_)) {                                                   \
            fail(label, "decoded fields differ");                                                  \
        } else {                                                                                   \
            mgw_buf_t r_;                                                                          \
            mgw_buf_init(&r_, 0, 0, 0);                                                            \
            put(&r_, &d_);                                                                         \
            if (r_.err || r_.len - MGW_HDR_SIZE != (n) || memcmp(r_.p + MGW_HDR_SIZE, pl, n))      \
                fail(label, "the decoded message encodes to other bytes");                         \
            mgw_buf_free(&r_);                                                                     \
        }                                                                                          \
        freef(&d_);                                                                                \
        for (size_t k_ = 0; k_ < (n); k_++) {                                                      \
            uint8_t *short_ = malloc(k_ ? k_ : 1); /* exactly k_ bytes for ASan */                 \
            memcpy(short_, pl, k_);                                                                \
            mgw_cur_init(&c_, short_, k_);                                                         \
            if (!dec(&c_, &d_)) {                                                                  \
                fail(label, "a payload cut short decoded");                                        \
                k_ = (n);                                                                          \
            }                                                                                      \
            freef(&d_);                                                                            \
            free(short_);                                                                          \
        }                                                                                          \
        uint8_t *long_ = malloc((n) + 1);                                                          \
        memcpy(long_, pl, n);                                                                      \
        long_[n] = 0;                                                                              \
        mgw_cur_init(&c_, long_, (n) + 1);                                                         \
        if (!dec(&c_, &d_))                                                                        \
            fail(label, "a payload one byte long decoded");                                        \
        freef(&d_);                                                                                \
        free(long_);                                                                               \
    } while (0)

#define ROUNDS 50

/* A record: put alone, then got back, exactly. */
#define REC_DECODER(name)                                                                          \
    static int rec_##name##_decode(mgw_cur_t *c, mgw_##name##_t *m)                                \
    {                                                                                              \
        mgw_##name##_get(c, m);                                                                    \
        return mgw_cur_done(c);                                                                    \
    }
#define DEF_REC_DECODER(name, ...) REC_DECODER(name)
MGW_RECORDS(DEF_REC_DECODER, F_NONE)
#define REC_CHECK(name, ...)                                                                       \
    for (int round = 0; round < ROUNDS; round++) {                                                 \
        mgw_##name##_t m;                                                                          \
        mgw_buf_t b;                                                                               \
        set_##name(&m);                                                                            \
        mgw_buf_init(&b, 0, 0, 0);                                                                 \
        mgw_##name##_put(&b, &m);                                                                  \
        if (mgw_buf_finish(&b))                                                                    \
            fail(#name, "encoding");                                                               \
        else                                                                                       \
            CHECK_PAYLOAD(#name, mgw_##name##_t, rec_##name##_decode, mgw_##name##_put, eq_##name, \
                          mgw_##name##_free, &m, b.p + MGW_HDR_SIZE, b.len - MGW_HDR_SIZE);        \
        mgw_buf_free(&b);                                                                          \
        arena_free();                                                                              \
    }                                                                                              \
    nrec++;

/* A message: random samples, encoded with a random seq. */
#define MSG_CHECK(OP, name, fields)                                                                \
    for (int round = 0; round < ROUNDS; round++) {                                                 \
        mgw_##name##_t m;                                                                          \
        mgw_buf_t b;                                                                               \
        mgw_hdr_t h;                                                                               \
        uint32_t seq = (uint32_t)rnd();                                                            \
        set_##name(&m);                                                                            \
        mgw_##name##_encode(&b, seq, &m);                                                          \
        if (mgw_buf_finish(&b) || mgw_hdr_parse(b.p, &h, MGW_MSG_MAX) || h.op != MGW_OP_##OP ||    \
            h.seq != seq || h.length != b.len - MGW_HDR_SIZE) {                                    \
            fail(#name, "header");                                                                 \
        } else {                                                                                   \
            CHECK_PAYLOAD(#name, mgw_##name##_t, mgw_##name##_decode, mgw_##name##_put, eq_##name, \
                          mgw_##name##_free, &m, b.p + MGW_HDR_SIZE, h.length);                    \
        }                                                                                          \
        mgw_buf_free(&b);                                                                          \
        arena_free();                                                                              \
    }                                                                                              \
    nmsg++;

/* A reply: REPLY with the request's seq, rc 0 and the fields; a failure's
 * REPLY is its rc alone. */
#define REP_CHECK(OP, name, fields)                                                                \
    for (int round = 0; round < ROUNDS; round++) {                                                 \
        mgw_##name##_reply_t m;                                                                    \
        mgw_buf_t b;                                                                               \
        mgw_hdr_t h;                                                                               \
        mgw_cur_t c;                                                                               \
        uint32_t seq = (uint32_t)rnd();                                                            \
        set_##name##_reply(&m);                                                                    \
        mgw_##name##_reply_encode(&b, seq, 0, &m);                                                 \
        if (mgw_buf_finish(&b) || mgw_hdr_parse(b.p, &h, MGW_MSG_MAX) || h.op != MGW_OP_REPLY ||   \
            h.seq != seq || h.length < 4) {                                                        \
            fail(#name "_reply", "header");                                                        \
        } else {                                                                                   \
            mgw_cur_init(&c, b.p + MGW_HDR_SIZE, 4);                                               \
            if (mgw_cur_i32(&c) != 0)                                                              \
                fail(#name "_reply", "rc");                                                        \
            CHECK_PAYLOAD(#name "_reply", mgw_##name##_reply_t, mgw_##name##_reply_decode,         \
                          mgw_##name##_reply_put, eq_##name##_reply, mgw_##name##_reply_free, &m,  \
                          b.p + MGW_HDR_SIZE + 4, h.length - 4);                                   \
        }                                                                                          \
        mgw_buf_free(&b);                                                                          \
        mgw_##name##_reply_encode(&b, seq, -5, &m);                                                \
        mgw_cur_init(&c, b.p + MGW_HDR_SIZE, b.len - MGW_HDR_SIZE);                                \
        if (mgw_buf_finish(&b) || mgw_cur_i32(&c) != -5 || mgw_cur_done(&c))                       \
            fail(#name "_reply", "a failure's REPLY is not its rc alone");                         \
        mgw_buf_free(&b);                                                                          \
        arena_free();                                                                              \
    }                                                                                              \
    nrep++;

/* Each op's entries: requests (a second entry for an op would be a
 * duplicate case label here, and fail to compile) and replies. */
static int has_request(int op)
{
    switch (op) {
#define REQ_CASE(OP, name, fields)                                                                 \
    case MGW_OP_##OP:                                                                              \
        return 1;
        MGW_MESSAGES(REQ_CASE, F_NONE)
    }
    return 0;
}

static void check_ops(void)
{
    char what[96];
#define OP_CHECK(OP, num)                                                                          \
    if (MGW_OP_##OP != MGW_OP_REPLY && !has_request(MGW_OP_##OP)) {                                \
        fail(#OP, "no MGW_MESSAGES entry");                                                        \
    }                                                                                              \
    if (MGW_OP_##OP == MGW_OP_REPLY && has_request(MGW_OP_##OP)) {                                 \
        fail(#OP, "REPLY's payload is in MGW_REPLIES, per op");                                    \
    }
    MGW_OPS(OP_CHECK)
#define REP_OP(OP, name, fields)                                                                   \
    if (MGW_OP_##OP < MGW_OP_DEVICES || MGW_OP_##OP >= MGW_OP_CMD_MAX ||                           \
        !mgw_op_replied(MGW_OP_##OP)) {                                                            \
        snprintf(what, sizeof what, "op %d has a reply but is no command-lane request",            \
                 MGW_OP_##OP);                                                                     \
        fail(#name, what);                                                                         \
    }
    MGW_REPLIES(REP_OP, F_NONE)
    if (mgw_op_replied(MGW_OP_ENQ_WRITE) || mgw_op_replied(MGW_OP_REPLY))
        fail("mgw_op_replied", "an op without a reply entry is replied");
}

/* A list of count elements (each elen bytes of elem) after plen bytes of
 * prefix: message name's decoder must refuse it. */
#define OVER(label, name, prefix, plen, count, elem, elen)                                         \
    do {                                                                                           \
        mgw_##name##_t d_;                                                                         \
        mgw_buf_t b_;                                                                              \
        mgw_cur_t c_;                                                                              \
        mgw_buf_init(&b_, 0, 0, 0);                                                                \
        mgw_buf_raw(&b_, prefix, plen);                                                            \
        mgw_buf_u32(&b_, count);                                                                   \
        for (uint32_t i = 0; i < (count); i++)                                                     \
            mgw_buf_raw(&b_, elem, elen);                                                          \
        mgw_cur_init(&c_, b_.p + MGW_HDR_SIZE, b_.len - MGW_HDR_SIZE);                             \
        if (!mgw_##name##_decode(&c_, &d_))                                                        \
            fail(label, "a list over its bound decoded");                                          \
        mgw_##name##_free(&d_);                                                                    \
        mgw_buf_free(&b_);                                                                         \
    } while (0)

static void check_bounds(void)
{
    static const uint8_t id[8] = {1}, done[12] = {2}, arg[5] = {MGW_ARG_VALUE}, param[8] = {0x10},
                         hdr[12] = {3};
    /* at the bound: accepted; one over: refused */
    mgw_buf_t b;
    mgw_cur_t c;
    mgw_release_events_t re;
    mgw_buf_init(&b, 0, 0, 0);
    mgw_buf_u32(&b, MGW_MAX_WAIT);
    for (int i = 0; i < MGW_MAX_WAIT; i++)
        mgw_buf_u64(&b, (uint64_t)i);
    mgw_cur_init(&c, b.p + MGW_HDR_SIZE, b.len - MGW_HDR_SIZE);
    if (mgw_release_events_decode(&c, &re) || re.events.n != MGW_MAX_WAIT)
        fail("release_events", "a list of MGW_MAX_WAIT refused");
    mgw_buf_free(&b);
    OVER("release_events", release_events, NULL, 0, MGW_MAX_WAIT + 1, id, 8);
    OVER("events_done", events_done, NULL, 0, MGW_MAX_DONE + 1, done, 12);
    OVER("context_create", context_create, id, 8, MGW_MAX_DEVS + 1, id, 8);
    OVER("program_compile headers", program_compile, "\1\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16,
         MGW_MAX_HEADERS + 1, hdr, 12);
    /* kernel_create's reply: u8 kind, empty type name */
    mgw_buf_init(&b, 0, 0, 0);
    mgw_buf_u32(&b, MGW_MAX_ARGS + 1);
    for (int i = 0; i <= MGW_MAX_ARGS; i++)
        mgw_buf_raw(&b, arg, sizeof arg);
    mgw_kernel_create_reply_t kr;
    mgw_cur_init(&c, b.p + MGW_HDR_SIZE, b.len - MGW_HDR_SIZE);
    if (!mgw_kernel_create_reply_decode(&c, &kr))
        fail("kernel_create_reply", "a list over MGW_MAX_ARGS decoded");
    mgw_kernel_create_reply_free(&kr);
    mgw_buf_free(&b);
    /* DEVICES' reply: one device, its parameter list one over the bound
       (u32 param, empty value) */
    mgw_buf_init(&b, 0, 0, 0);
    mgw_buf_u32(&b, 1);
    mgw_buf_u32(&b, MGW_MAX_PARAMS + 1);
    for (int i = 0; i <= MGW_MAX_PARAMS; i++)
        mgw_buf_raw(&b, param, sizeof param);
    mgw_devices_reply_t dr;
    mgw_cur_init(&c, b.p + MGW_HDR_SIZE, b.len - MGW_HDR_SIZE);
    if (!mgw_devices_reply_decode(&c, &dr))
        fail("devices_reply", "a nested list over MGW_MAX_PARAMS decoded");
    mgw_devices_reply_free(&dr);
    mgw_buf_free(&b);
    /* a string with a NUL in it */
    mgw_buf_init(&b, 0, 0, 0);
    mgw_buf_u64(&b, 1);
    mgw_buf_u64(&b, 2);
    mgw_buf_bytes(&b, "k\0", 2);
    mgw_kernel_create_t kc;
    mgw_cur_init(&c, b.p + MGW_HDR_SIZE, b.len - MGW_HDR_SIZE);
    if (!mgw_kernel_create_decode(&c, &kc))
        fail("kernel_create", "a name with a NUL decoded");
    mgw_kernel_create_free(&kc);
    mgw_buf_free(&b);
}

int main(void)
{
    int nrec = 0, nmsg = 0, nrep = 0;
    check_ops();
    MGW_RECORDS(REC_CHECK, F_NONE)
    MGW_MESSAGES(MSG_CHECK, F_NONE)
    MGW_REPLIES(REP_CHECK, F_NONE)
    check_bounds();
    printf("wire_table: %d records, %d messages, %d replies, %d rounds each, %d failures\n", nrec,
           nmsg, nrep, ROUNDS, fails);
    return fails != 0;
}
