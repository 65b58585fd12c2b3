/*
 * The record layer of an encrypted endpoint: every byte that send and recv
 * move after the handshake travels in records
 *
 *   u32 n (little-endian, 1 .. MGTR_SEC_RECORD)  ciphertext (n bytes)  tag (16)
 *
 * sealed with libsodium's AEAD (AES-256-GCM where both ends have the
 * instructions for it, else ChaCha20-Poly1305, IETF variants), the length as
 * additional data, and as nonce the record's number in its direction (u64
 * little-endian, then 4 zero bytes).  Each direction of each connection has
 * a key of its own (handshake.c, mgw_auth_keys), so a number never repeats
 * under a key.  The receiver counts on its side: a record altered, cut,
 * replayed, reordered, moved to another connection or from the other
 * direction fails to open, and the endpoint fails for good.
 *
 * Sending seals straight from the caller's bytes into one record buffer of
 * the endpoint and hands that to the transport (the seal is the one copy).
 * Receiving reads a record that fits the caller's remaining bytes straight
 * into them and opens it in place; a longer record (a header read ahead of
 * its payload) is opened in the endpoint's buffer and handed out from there.
 * Records are small enough for the opened bytes to be in cache when the
 * caller reads them.
 *
 * With OpenSSL's libcrypto (HAVE_LIBCRYPTO), records of MGTR_SEC_EVP_MIN
 * bytes or more go through its EVP ciphers, which are about twice as fast
 * as libsodium 1.0.18's on bulk data; smaller ones through libsodium, whose
 * fixed cost per call is lower.  The ciphers are the same (RFC 5116 and
 * RFC 8439 constructions), so the bytes on the wire do not depend on it.
 */
#include "config.h"

#include "transport.h"
#include "mgparam.h"

#include <sodium.h>
#ifdef HAVE_LIBCRYPTO
#include <openssl/crypto.h>
#include <openssl/evp.h>
#endif
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mgtr_sec {
    crypto_aead_aes256gcm_state aes_tx, aes_rx; /* AES-GCM: expanded keys */
    uint8_t ktx[MGW_SESSION_KEY], krx[MGW_SESSION_KEY];
    int cipher; /* MGW_CIPHER_* */
    uint64_t tx_seq, rx_seq;
    uint64_t rekey_every; /* records per key (MGTR_SEC_REKEY) */
    uint8_t *txbuf;       /* length, ciphertext, tag */
    uint8_t *rxbuf;       /* a record longer than what the caller asked for */
    size_t rx_pos, rx_end;
    atomic_int failed;
#ifdef HAVE_LIBCRYPTO
    EVP_CIPHER_CTX *evp_tx, *evp_rx; /* keyed once; a nonce per record */
#endif
};

#define HDR 4
#define MGTR_SEC_EVP_MIN 2048
/* Records under one key: then both sides move to the next key,
 * BLAKE2b(key; "mgrm-rekey"), at the same record, so that no key seals
 * more than 64 GiB (TLS 1.3 caps AES-GCM at 2^24.5 full records per key
 * for the same reason). */
#define MGTR_SEC_REKEY (1ull << 20)

#ifdef HAVE_LIBCRYPTO
/* The keyed contexts of both directions; 0 or -1. */
static int evp_init(mgtr_sec_t *s)
{
    const EVP_CIPHER *c =
        s->cipher == MGW_CIPHER_AES256GCM ? EVP_aes_256_gcm() : EVP_chacha20_poly1305();
    s->evp_tx = EVP_CIPHER_CTX_new();
    s->evp_rx = EVP_CIPHER_CTX_new();
    return s->evp_tx && s->evp_rx && EVP_EncryptInit_ex(s->evp_tx, c, NULL, s->ktx, NULL) == 1 &&
                   EVP_DecryptInit_ex(s->evp_rx, c, NULL, s->krx, NULL) == 1
               ? 0
               : -1;
}

/* out = the ciphertext of in (k bytes; out may be in), tag after it. */
static int evp_seal(EVP_CIPHER_CTX *x, uint8_t *out, uint8_t *tag, const uint8_t *in, size_t k,
                    const uint8_t *ad, const uint8_t *nonce)
{
    int l;
    return EVP_EncryptInit_ex(x, NULL, NULL, NULL, nonce) == 1 &&
                   EVP_EncryptUpdate(x, NULL, &l, ad, HDR) == 1 &&
                   EVP_EncryptUpdate(x, out, &l, in, (int)k) == 1 &&
                   EVP_EncryptFinal_ex(x, out + l, &l) == 1 &&
                   EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, MGTR_SEC_TAG, tag) == 1
               ? 0
               : -1;
}

/* Opens p (k bytes) in place; 0, or -1 when the tag does not match. */
static int evp_open(EVP_CIPHER_CTX *x, uint8_t *p, size_t k, uint8_t *tag, const uint8_t *ad,
                    const uint8_t *nonce)
{
    int l;
    return EVP_DecryptInit_ex(x, NULL, NULL, NULL, nonce) == 1 &&
                   EVP_DecryptUpdate(x, NULL, &l, ad, HDR) == 1 &&
                   EVP_DecryptUpdate(x, p, &l, p, (int)k) == 1 &&
                   EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, MGTR_SEC_TAG, tag) == 1 &&
                   EVP_DecryptFinal_ex(x, p + l, &l) == 1
               ? 0
               : -1;
}
#endif

/* The next key of one direction (tx: this side's), and its expanded
 * forms; 0 or -1. */
static int rekey(mgtr_sec_t *s, int tx)
{
    uint8_t *k = tx ? s->ktx : s->krx, next[MGW_SESSION_KEY];
    static const char label[] = "mgrm-rekey";
    if (crypto_generichash(next, sizeof next, (const uint8_t *)label, sizeof label - 1, k,
                           MGW_SESSION_KEY))
        return -1;
    memcpy(k, next, sizeof next);
    sodium_memzero(next, sizeof next);
    if (s->cipher == MGW_CIPHER_AES256GCM)
        crypto_aead_aes256gcm_beforenm(tx ? &s->aes_tx : &s->aes_rx, k);
#ifdef HAVE_LIBCRYPTO
    if ((tx ? EVP_EncryptInit_ex(s->evp_tx, NULL, NULL, k, NULL)
            : EVP_DecryptInit_ex(s->evp_rx, NULL, NULL, k, NULL)) != 1)
        return -1;
#endif
    return 0;
}

/* Seals in (k bytes) into out, the tag after it. */
static int seal(mgtr_sec_t *s, uint8_t *out, const uint8_t *in, size_t k, const uint8_t *ad,
                const uint8_t *nonce)
{
#ifdef HAVE_LIBCRYPTO
    if (k >= MGTR_SEC_EVP_MIN)
        return evp_seal(s->evp_tx, out, out + k, in, k, ad, nonce);
#endif
    if (s->cipher == MGW_CIPHER_AES256GCM)
        return crypto_aead_aes256gcm_encrypt_detached_afternm(out, out + k, NULL, in, k, ad, HDR,
                                                              NULL, nonce, &s->aes_tx);
    return crypto_aead_chacha20poly1305_ietf_encrypt_detached(out, out + k, NULL, in, k, ad, HDR,
                                                              NULL, nonce, s->ktx);
}

/* Opens p (k bytes) in place against tag; 0 or -1. */
static int open_in_place(mgtr_sec_t *s, uint8_t *p, size_t k, uint8_t *tag, const uint8_t *ad,
                         const uint8_t *nonce)
{
#ifdef HAVE_LIBCRYPTO
    if (k >= MGTR_SEC_EVP_MIN)
        return evp_open(s->evp_rx, p, k, tag, ad, nonce);
#endif
    if (s->cipher == MGW_CIPHER_AES256GCM)
        return crypto_aead_aes256gcm_decrypt_detached_afternm(p, NULL, p, k, tag, ad, HDR, nonce,
                                                              &s->aes_rx);
    return crypto_aead_chacha20poly1305_ietf_decrypt_detached(p, NULL, p, k, tag, ad, HDR, nonce,
                                                              s->krx);
}

static void nonce_of(uint64_t seq, uint8_t n[12])
{
    for (int i = 0; i < 8; i++)
        n[i] = (uint8_t)(seq >> (8 * i));
    memset(n + 8, 0, 4);
}

/* libsodium, and libcrypto without its exit-time cleanup: that cleanup
 * deletes the thread-local key of libcrypto's per-thread state (its error
 * queue, made by the first EVP call of each thread), so a thread that ends
 * after exit() began (a proxy's session threads at SIGTERM, an
 * application's threads) would leave its state unfreed, which
 * LeakSanitizer reports (904 bytes from CRYPTO_zalloc, in 3 of 4 runs of
 * vcl_basic.sh in a sanitizer build).  Without it each thread's state is
 * freed when the thread ends, and the process-wide state stays reachable
 * to the end.  Must come before any other libcrypto call; later calls
 * change nothing.  0 or -1. */
static int crypto_init(void)
{
#ifdef HAVE_LIBCRYPTO
    if (OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL) != 1)
        return -1;
#endif
    return sodium_init() < 0 ? -1 : 0;
}

unsigned mgtr_sec_ciphers(void)
{
    if (crypto_init())
        return 0;
    return MGW_CIPHER_CHACHA20POLY1305 |
           (crypto_aead_aes256gcm_is_available() ? MGW_CIPHER_AES256GCM : 0);
}

const char *mgtr_sec_cipher_name(int cipher)
{
    return cipher == MGW_CIPHER_AES256GCM          ? "AES-256-GCM"
           : cipher == MGW_CIPHER_CHACHA20POLY1305 ? "ChaCha20-Poly1305"
                                                   : "none";
}

int mgtr_crypt_setup(int client, unsigned *offer, char *err, size_t errlen)
{
    /* MPIGPU_VCL_CIPHER's words in the table's order */
    static const unsigned want[] = {MGW_CIPHER_CHACHA20POLY1305 | MGW_CIPHER_AES256GCM,
                                    MGW_CIPHER_AES256GCM, MGW_CIPHER_CHACHA20POLY1305};
    mgparam_value_t v;
    unsigned have = mgtr_sec_ciphers();
    *offer = 0;
    if (mgparam_read(MGPARAM_VCL_ENCRYPT, &v, err, errlen))
        return -1;
    if (!v.num)
        return 0;
    if (!have) {
        snprintf(err, errlen, "libsodium initialization failed");
        return -1;
    }
    unsigned w = want[0];
    if (client) {
        if (mgparam_read(MGPARAM_VCL_CIPHER, &v, err, errlen))
            return -1;
        w = want[v.num];
        if (!(w & have)) {
            snprintf(err, errlen, "MPIGPU_VCL_CIPHER=%s: this CPU lacks the instructions for it",
                     v.text);
            return -1;
        }
    }
    *offer = w & have;
    return 0;
}

mgtr_sec_t *mgtr_sec_new(int cipher, const uint8_t tx[MGW_SESSION_KEY],
                         const uint8_t rx[MGW_SESSION_KEY])
{
    mgtr_sec_t *s = NULL;
    if (crypto_init())
        return NULL;
    if (cipher != MGW_CIPHER_CHACHA20POLY1305 &&
        (cipher != MGW_CIPHER_AES256GCM || !crypto_aead_aes256gcm_is_available()))
        return NULL;
    if (posix_memalign((void **)&s, 64, sizeof *s))
        return NULL;
    memset(s, 0, sizeof *s);
    s->cipher = cipher;
    s->txbuf = malloc(HDR + MGTR_SEC_RECORD + MGTR_SEC_TAG);
    s->rxbuf = malloc(MGTR_SEC_RECORD);
    if (!s->txbuf || !s->rxbuf) {
        mgtr_sec_free(s);
        return NULL;
    }
    memcpy(s->ktx, tx, MGW_SESSION_KEY);
    memcpy(s->krx, rx, MGW_SESSION_KEY);
    if (cipher == MGW_CIPHER_AES256GCM) {
        crypto_aead_aes256gcm_beforenm(&s->aes_tx, tx);
        crypto_aead_aes256gcm_beforenm(&s->aes_rx, rx);
    }
    s->rekey_every = MGTR_SEC_REKEY;
#ifdef HAVE_LIBCRYPTO
    if (evp_init(s)) {
        mgtr_sec_free(s);
        return NULL;
    }
#endif
    atomic_init(&s->failed, 0);
    return s;
}

void mgtr_sec_free(mgtr_sec_t *s)
{
    if (!s)
        return;
#ifdef HAVE_LIBCRYPTO
    EVP_CIPHER_CTX_free(s->evp_tx);
    EVP_CIPHER_CTX_free(s->evp_rx);
#endif
    free(s->txbuf);
    free(s->rxbuf);
    sodium_memzero(s, sizeof *s);
    free(s);
}

void mgtr_sec_rekey_every(mgtr_sec_t *s, uint64_t records)
{
    s->rekey_every = records ? records : MGTR_SEC_REKEY;
}

int mgtr_sec_failed(const mgtr_sec_t *s)
{
    return s && atomic_load_explicit(&s->failed, memory_order_relaxed);
}

size_t mgtr_sec_buffered(const mgtr_sec_t *s)
{
    return s->rx_end - s->rx_pos;
}

int mgtr_sec_send(mgtr_sec_t *s, mgtr_sendv_fn sendv, void *arg, const void *p, size_t n)
{
    const uint8_t *c = p;
    uint8_t nonce[12];
    while (n) {
        size_t k = n < MGTR_SEC_RECORD ? n : MGTR_SEC_RECORD;
        uint8_t *r = s->txbuf;
        for (int i = 0; i < HDR; i++)
            r[i] = (uint8_t)(k >> (8 * i));
        if (s->tx_seq && s->tx_seq % s->rekey_every == 0 && rekey(s, 1))
            return -1;
        nonce_of(s->tx_seq++, nonce);
        if (seal(s, r + HDR, c, k, r, nonce))
            return -1;
        struct iovec iov = {r, HDR + k + MGTR_SEC_TAG};
        if (sendv(arg, &iov, 1))
            return -1;
        c += k;
        n -= k;
    }
    return 0;
}

/* Reads the next record into dst (room for MGTR_SEC_RECORD bytes, or at
 * least its length when fits is set) and opens it there: its length, or 0
 * when the stream broke or the record is not genuine. */
static size_t record_recv(mgtr_sec_t *s, mgtr_recvv_fn recvv, void *arg, uint8_t *dst, size_t fits,
                          uint8_t **where)
{
    uint8_t hdr[HDR], tag[MGTR_SEC_TAG], nonce[12];
    struct iovec iov[2] = {{hdr, HDR}};
    if (recvv(arg, iov, 1))
        return 0;
    size_t k = 0;
    for (int i = 0; i < HDR; i++)
        k |= (size_t)hdr[i] << (8 * i);
    if (!k || k > MGTR_SEC_RECORD) { /* no sender writes such a length */
        atomic_store(&s->failed, 1);
        return 0;
    }
    *where = k <= fits ? dst : s->rxbuf;
    iov[0] = (struct iovec){*where, k};
    iov[1] = (struct iovec){tag, MGTR_SEC_TAG};
    if (recvv(arg, iov, 2))
        return 0;
    if (s->rx_seq && s->rx_seq % s->rekey_every == 0 && rekey(s, 0)) {
        atomic_store(&s->failed, 1);
        return 0;
    }
    nonce_of(s->rx_seq++, nonce);
    if (open_in_place(s, *where, k, tag, hdr, nonce)) {
        atomic_store(&s->failed, 1);
        return 0;
    }
    return k;
}

int mgtr_sec_recv(mgtr_sec_t *s, mgtr_recvv_fn recvv, void *arg, void *p, size_t n)
{
    uint8_t *d = p;
    while (n) {
        if (atomic_load_explicit(&s->failed, memory_order_relaxed))
            return -1;
        if (s->rx_pos < s->rx_end) {
            size_t k = s->rx_end - s->rx_pos < n ? s->rx_end - s->rx_pos : n;
            memcpy(d, s->rxbuf + s->rx_pos, k);
            s->rx_pos += k;
            d += k;
            n -= k;
            continue;
        }
        uint8_t *where;
        size_t k = record_recv(s, recvv, arg, d, n, &where);
        if (!k)
            return -1;
        if (where == d) {
            d += k;
            n -= k;
        } else {
            s->rx_pos = 0;
            s->rx_end = k;
        }
    }
    return 0;
}

int mgtr_tampered(const mgtr_transport_t *t, mgtr_ep_t *ep)
{
    return ep && t->sec && mgtr_sec_failed(t->sec(ep));
}

const char *mgtr_protection(const mgtr_transport_t *t, mgtr_ep_t *ep)
{
    mgtr_sec_t *s = t->sec ? t->sec(ep) : NULL;
    return !s                                  ? "plain (not encrypted)"
           : s->cipher == MGW_CIPHER_AES256GCM ? "encrypted (AES-256-GCM)"
                                               : "encrypted (ChaCha20-Poly1305)";
}
