/*
 * The record layer of encrypted lanes (transport/secure.c) over a byte pipe
 * in memory, for both ciphers:
 *   - messages of many sizes (records of 1 byte to 64 KiB, split and
 *     buffered reads, the libsodium and the libcrypto paths) come out as they
 *     went in;
 *   - every record opens with libsodium's own AEAD call and the key, the
 *     record's number as nonce and its length as additional data: the wire
 *     format does not depend on which library sealed it;
 *   - a flipped bit anywhere in a record (length, ciphertext, tag), a
 *     replayed record, two records swapped, and a record opened with the other
 *     direction's key are each refused, and the layer then stays failed;
 *   - 300 random bit flips: the records before the altered one read back,
 *     the altered one and all after it are refused;
 *   - the keys roll over (every 3 records here) alike on both sides.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport.h"
#include "vcl_check.h"

/* A byte pipe: what sendv appends, recvv takes from the front. */
typedef struct pipe_ {
    uint8_t *p;
    size_t len, pos, cap;
} pipe_t;

static int pipe_sendv(void *arg, struct iovec *iov, int n)
{
    pipe_t *q = arg;
    for (int i = 0; i < n; i++) {
        if (q->len + iov[i].iov_len > q->cap) {
            size_t c = (q->len + iov[i].iov_len) * 2;
            uint8_t *np = realloc(q->p, c);
            if (!np)
                return -1;
            q->p = np;
            q->cap = c;
        }
        memcpy(q->p + q->len, iov[i].iov_base, iov[i].iov_len);
        q->len += iov[i].iov_len;
    }
    return 0;
}

static int pipe_recvv(void *arg, struct iovec *iov, int n)
{
    pipe_t *q = arg;
    for (int i = 0; i < n; i++) {
        if (q->len - q->pos < iov[i].iov_len)
            return -1; /* the end of the stream */
        memcpy(iov[i].iov_base, q->p + q->pos, iov[i].iov_len);
        q->pos += iov[i].iov_len;
    }
    return 0;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Opens every record of q with libsodium alone: 0 when all open. */
static int sodium_opens(int cipher, const uint8_t key[32], const pipe_t *q)
{
    size_t at = 0;
    for (uint64_t seq = 0; at < q->len; seq++) {
        uint8_t nonce[12] = {0}, *m;
        size_t k = le32(q->p + at);
        for (int i = 0; i < 8; i++)
            nonce[i] = (uint8_t)(seq >> (8 * i));
        if (!(m = malloc(k)))
            return -1;
        const uint8_t *c = q->p + at + 4, *tag = c + k;
        int bad = cipher == MGW_CIPHER_AES256GCM
                      ? crypto_aead_aes256gcm_decrypt_detached(m, NULL, c, k, tag, q->p + at, 4,
                                                               nonce, key)
                      : crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                            m, NULL, c, k, tag, q->p + at, 4, nonce, key);
        free(m);
        if (bad)
            return -1;
        at += 4 + k + MGTR_SEC_TAG;
    }
    return 0;
}

/* Sends msgs (sizes n[]) from a to b through a fresh pipe; returns it. */
static pipe_t sealed(mgtr_sec_t *a, const uint8_t *data, const size_t *n, int cnt)
{
    pipe_t q = {0};
    for (int i = 0; i < cnt; i++)
        CHECK(!mgtr_sec_send(a, pipe_sendv, &q, data, n[i]), "send %zu bytes", n[i]);
    return q;
}

static void cipher_checks(int cipher)
{
    const char *name = mgtr_sec_cipher_name(cipher);
    uint8_t k1[32], k2[32];
    size_t max = 1u << 20;
    uint8_t *data = malloc(max), *got = malloc(max);
    randombytes_buf(k1, sizeof k1);
    randombytes_buf(k2, sizeof k2);
    randombytes_buf(data, max);

    /* round trips: whole, in pieces (buffered), and across the size where
     * the libcrypto path starts */
    size_t sizes[] = {1, 16, 100, 2047, 2048, 2049, 65535, 65536, 65537, 1u << 20};
    int ns = (int)(sizeof sizes / sizeof *sizes);
    mgtr_sec_t *tx = mgtr_sec_new(cipher, k1, k2), *rx = mgtr_sec_new(cipher, k2, k1);
    CHECK(tx && rx, "%s: new", name);
    pipe_t q = sealed(tx, data, sizes, ns);
    CHECK(!sodium_opens(cipher, k1, &q), "%s: libsodium opens every record", name);
    for (int i = 0; i < ns; i++) {
        memset(got, 0, sizes[i]);
        size_t head = sizes[i] > 16 ? 16 : sizes[i]; /* a header, then the rest */
        CHECK(!mgtr_sec_recv(rx, pipe_recvv, &q, got, head) &&
                  !mgtr_sec_recv(rx, pipe_recvv, &q, got + head, sizes[i] - head) &&
                  !memcmp(got, data, sizes[i]),
              "%s: %zu bytes back", name, sizes[i]);
    }
    CHECK(q.pos == q.len && !mgtr_sec_buffered(rx) && !mgtr_sec_failed(rx), "%s: all read", name);
    free(q.p);
    mgtr_sec_free(tx);
    mgtr_sec_free(rx);

    /* tampering: each case on a fresh pair, three records of 3000 bytes */
    size_t three[] = {3000, 3000, 3000};
    size_t rec = 4 + 3000 + MGTR_SEC_TAG;
    const char *what[] = {"a flipped length bit",   "a flipped ciphertext bit", "a flipped tag bit",
                          "a replayed record",      "two records swapped",      "the wrong key",
                          "a record from elsewhere"};
    for (int t = 0; t < 7; t++) {
        tx = mgtr_sec_new(cipher, k1, k2);
        rx = mgtr_sec_new(cipher, t == 5 ? k1 : k2, t == 5 ? k2 : k1);
        q = sealed(tx, data, three, 3);
        uint8_t *r1 = q.p + rec; /* the second record */
        if (t == 0)
            r1[1] ^= 0x01; /* 3000 + 256: still a valid length */
        else if (t == 1)
            r1[4 + 1500] ^= 0x80;
        else if (t == 2)
            r1[4 + 3000 + 7] ^= 0x04;
        else if (t == 3)
            memcpy(r1, q.p, rec); /* the first again */
        else if (t == 4) {
            uint8_t *tmp = malloc(rec);
            memcpy(tmp, r1, rec);
            memcpy(r1, r1 + rec, rec);
            memcpy(r1 + rec, tmp, rec);
            free(tmp);
        } else if (t == 6) { /* the same place in another connection's stream */
            mgtr_sec_t *other = mgtr_sec_new(cipher, k2, k1);
            pipe_t o = sealed(other, data, three, 3);
            memcpy(r1, o.p + rec, rec);
            free(o.p);
            mgtr_sec_free(other);
        }
        int first = mgtr_sec_recv(rx, pipe_recvv, &q, got, 3000);
        int second = mgtr_sec_recv(rx, pipe_recvv, &q, got, 3000);
        int third = mgtr_sec_recv(rx, pipe_recvv, &q, got, 3000);
        if (t == 5)
            CHECK(first && mgtr_sec_failed(rx), "%s: %s refused", name, what[t]);
        else
            CHECK(!first && second && third && mgtr_sec_failed(rx),
                  "%s: %s refused (first %d, second %d, third %d)", name, what[t], first, second,
                  third);
        free(q.p);
        mgtr_sec_free(tx);
        mgtr_sec_free(rx);
    }

    /* 300 random flips: the records before the altered one read back, the
     * altered one and all after it are refused */
    for (int t = 0; t < 300; t++) {
        size_t sz[3];
        for (int i = 0; i < 3; i++)
            sz[i] = 1 + randombytes_uniform(9000);
        tx = mgtr_sec_new(cipher, k1, k2);
        rx = mgtr_sec_new(cipher, k2, k1);
        q = sealed(tx, data, sz, 3);
        size_t at = randombytes_uniform((uint32_t)q.len), end = 0;
        int hit = 0;
        q.p[at] ^= (uint8_t)(1u << randombytes_uniform(8));
        while (end + 4 + le32(q.p + end) + MGTR_SEC_TAG <= at) /* the record with the flip */
            end += 4 + sz[hit++] + MGTR_SEC_TAG;
        int ok = 1;
        for (int i = 0; i < 3; i++) {
            int r = mgtr_sec_recv(rx, pipe_recvv, &q, got, sz[i]);
            ok = ok && (i < hit ? !r && !memcmp(got, data, sz[i]) : r != 0);
        }
        CHECK(ok, "%s: a flip at byte %zu of record %d", name, at, hit);
        free(q.p);
        mgtr_sec_free(tx);
        mgtr_sec_free(rx);
    }

    /* the next key every 3 records: a receiver that moves alike reads all
     * ten, one that keeps the first key stops at the fourth */
    size_t ten[10];
    for (int i = 0; i < 10; i++)
        ten[i] = i % 2 ? 100 : 5000; /* both libraries' paths */
    for (int follow = 0; follow < 2; follow++) {
        tx = mgtr_sec_new(cipher, k1, k2);
        rx = mgtr_sec_new(cipher, k2, k1);
        mgtr_sec_rekey_every(tx, 3);
        if (follow)
            mgtr_sec_rekey_every(rx, 3);
        q = sealed(tx, data, ten, 10);
        int read = 0;
        while (read < 10 && !mgtr_sec_recv(rx, pipe_recvv, &q, got, ten[read]) &&
               !memcmp(got, data, ten[read]))
            read++;
        CHECK(read == (follow ? 10 : 3), "%s: new key every 3 records, receiver %s: %d read", name,
              follow ? "moves too" : "keeps its key", read);
        free(q.p);
        mgtr_sec_free(tx);
        mgtr_sec_free(rx);
    }
    free(data);
    free(got);
    printf("sec_records: %s: round trips, libsodium opens every record, 7 kinds of tampering "
           "and 300 random flips refused, keys roll over\n",
           name);
}

int main(void)
{
    unsigned have = mgtr_sec_ciphers();
    CHECK(have & MGW_CIPHER_CHACHA20POLY1305, "ChaCha20-Poly1305 available");
    cipher_checks(MGW_CIPHER_CHACHA20POLY1305);
    if (have & MGW_CIPHER_AES256GCM)
        cipher_checks(MGW_CIPHER_AES256GCM);
    else
        printf("sec_records: no AES-NI here: AES-256-GCM not checked\n");
    if (!failures)
        printf("sec_records: all checks passed\n");
    return failures ? 1 : 0;
}
