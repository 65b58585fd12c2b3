/*
 * Mutual shared-key challenge/response (libsodium HMAC-SHA256):
 *   client -> HELLO     lane, Nc
 *   proxy  -> CHALLENGE Ns, HMAC(key, "mgrm-proxy" | lane | Nc | Ns)
 *   client -> RESPONSE  HMAC(key, "mgrm-client" | lane | Ns | Nc)
 *   proxy  -> AUTH_OK   token (random; joins the bulk lane to the session)
 *   client -> JOIN      token, u32 stripe (bulk lane only: its connection
 *                       number, 0 .. the session's stripes - 1)
 * Both nonces are fresh random bytes, so neither MAC can be replayed, and the
 * key itself never crosses the wire.
 */
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mgrm_key_load(const char *path, mgrm_key_t *key, char *err, size_t errlen)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "key file %s: not a regular file", path);
        close(fd);
        return -1;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        snprintf(err, errlen,
                 "key file %s: permissions 0%03o are too open; it must not be accessible by "
                 "group or others (chmod 600 %s)",
                 path, (unsigned)(st.st_mode & 0777), path);
        close(fd);
        return -1;
    }
    ssize_t n = read(fd, key->k, sizeof key->k);
    char extra;
    int more = n == (ssize_t)sizeof key->k && read(fd, &extra, 1) == 1;
    close(fd);
    if (n < 0 || more) {
        snprintf(err, errlen, "key file %s: %s", path,
                 more ? "longer than 1024 bytes" : "read error");
        return -1;
    }
    while (n > 0 && (key->k[n - 1] == '\n' || key->k[n - 1] == '\r'))
        n--;
    if (n < 16) {
        snprintf(err, errlen, "key file %s: key shorter than 16 bytes", path);
        return -1;
    }
    key->len = (size_t)n;
    return 0;
}

static void mac(const mgrm_key_t *key, const char *label, uint8_t lane, const uint8_t *a,
                const uint8_t *b, uint8_t out[MGRM_MAC])
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key->k, key->len);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label));
    crypto_auth_hmacsha256_update(&st, &lane, 1);
    crypto_auth_hmacsha256_update(&st, a, MGRM_NONCE);
    crypto_auth_hmacsha256_update(&st, b, MGRM_NONCE);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof st);
}

/* Receives one handshake message of the expected op into payload (exact len). */
static int recv_exact(const mgrm_transport_t *t, mgrm_ep_t *ep, uint16_t op, void *payload,
                      size_t len)
{
    uint8_t raw[MGRM_HDR_SIZE];
    mgrm_hdr_t h;
    if (t->recv(ep, raw, sizeof raw) || mgrm_hdr_parse(raw, &h, 1024) || h.op != op ||
        h.length != len)
        return -1;
    return t->recv(ep, payload, len);
}

static int send_raw(const mgrm_transport_t *t, mgrm_ep_t *ep, uint16_t op, const void *a, size_t na,
                    const void *b, size_t nb)
{
    mgrm_buf_t m;
    int rc;
    mgrm_buf_init(&m, op, 0, 0);
    mgrm_buf_raw(&m, a, na);
    mgrm_buf_raw(&m, b, nb);
    rc = mgrm_msg_send(t, ep, &m);
    mgrm_buf_free(&m);
    return rc;
}

int mgrm_auth_client(const mgrm_transport_t *t, mgrm_ep_t *ep, const mgrm_key_t *key, int lane,
                     unsigned stripe, uint8_t token[MGRM_TOKEN], char *err, size_t errlen)
{
    uint8_t nc[MGRM_NONCE], ch[MGRM_NONCE + MGRM_MAC], want[MGRM_MAC], resp[MGRM_MAC];
    uint8_t l = (uint8_t)lane, tok[MGRM_TOKEN];
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium initialization failed");
        return -1;
    }
    randombytes_buf(nc, sizeof nc);
    if (send_raw(t, ep, MGRM_OP_HELLO, &l, 1, nc, sizeof nc) ||
        recv_exact(t, ep, MGRM_OP_CHALLENGE, ch, sizeof ch)) {
        snprintf(err, errlen, "handshake failed (connection closed or not an mpigpu-proxy)");
        return -1;
    }
    mac(key, "mgrm-proxy", l, nc, ch, want);
    if (sodium_memcmp(want, ch + MGRM_NONCE, MGRM_MAC)) {
        snprintf(err, errlen, "the proxy did not prove the shared key (wrong key?)");
        return -1;
    }
    mac(key, "mgrm-client", l, ch, nc, resp);
    if (send_raw(t, ep, MGRM_OP_RESPONSE, resp, sizeof resp, NULL, 0) ||
        recv_exact(t, ep, MGRM_OP_AUTH_OK, tok, sizeof tok)) {
        snprintf(err, errlen, "the proxy refused the key");
        return -1;
    }
    if (lane == MGRM_LANE_CMD) {
        memcpy(token, tok, MGRM_TOKEN);
        return 0;
    }
    uint8_t idx[4] = {(uint8_t)stripe, (uint8_t)(stripe >> 8), (uint8_t)(stripe >> 16),
                      (uint8_t)(stripe >> 24)};
    if (send_raw(t, ep, MGRM_OP_JOIN, token, MGRM_TOKEN, idx, sizeof idx)) {
        snprintf(err, errlen, "bulk lane: join failed");
        return -1;
    }
    return 0;
}

int mgrm_auth_proxy(const mgrm_transport_t *t, mgrm_ep_t *ep, const mgrm_key_t *key,
                    uint8_t token[MGRM_TOKEN], char *err, size_t errlen)
{
    uint8_t hello[1 + MGRM_NONCE], ns[MGRM_NONCE], m[MGRM_MAC], want[MGRM_MAC];
    if (recv_exact(t, ep, MGRM_OP_HELLO, hello, sizeof hello)) {
        snprintf(err, errlen, "bad or missing HELLO");
        return -1;
    }
    if (hello[0] != MGRM_LANE_CMD && hello[0] != MGRM_LANE_BULK) {
        snprintf(err, errlen, "bad lane %u in HELLO", hello[0]);
        return -1;
    }
    randombytes_buf(ns, sizeof ns);
    mac(key, "mgrm-proxy", hello[0], hello + 1, ns, m);
    if (send_raw(t, ep, MGRM_OP_CHALLENGE, ns, sizeof ns, m, sizeof m) ||
        recv_exact(t, ep, MGRM_OP_RESPONSE, m, sizeof m)) {
        snprintf(err, errlen, "authentication failed: no valid response (client without the key?)");
        return -1;
    }
    mac(key, "mgrm-client", hello[0], ns, hello + 1, want);
    if (sodium_memcmp(want, m, MGRM_MAC)) {
        snprintf(err, errlen, "authentication failed: wrong key");
        return -1;
    }
    randombytes_buf(token, MGRM_TOKEN);
    if (send_raw(t, ep, MGRM_OP_AUTH_OK, token, MGRM_TOKEN, NULL, 0)) {
        snprintf(err, errlen, "connection lost after authentication");
        return -1;
    }
    return hello[0];
}
