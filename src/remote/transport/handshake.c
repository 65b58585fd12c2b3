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

#include <sodium.h>
#include <stdio.h>
#include <string.h>

/* Receives one handshake message of the expected op into payload (exact len). */
static int recv_exact(const mgtr_transport_t *t, mgtr_ep_t *ep, uint16_t op, void *payload,
                      size_t len)
{
    uint8_t raw[MGW_HDR_SIZE];
    mgw_hdr_t h;
    if (t->recv(ep, raw, sizeof raw) || mgw_hdr_parse(raw, &h, 1024) || h.op != op ||
        h.length != len)
        return -1;
    return t->recv(ep, payload, len);
}

static int send_raw(const mgtr_transport_t *t, mgtr_ep_t *ep, uint16_t op, const void *a, size_t na,
                    const void *b, size_t nb)
{
    mgw_buf_t m;
    int rc;
    mgw_buf_init(&m, op, 0, 0);
    mgw_buf_raw(&m, a, na);
    mgw_buf_raw(&m, b, nb);
    rc = mgtr_msg_send(t, ep, &m);
    mgw_buf_free(&m);
    return rc;
}

int mgtr_auth_client(const mgtr_transport_t *t, mgtr_ep_t *ep, const mgw_key_t *key, int lane,
                     unsigned stripe, uint8_t token[MGW_TOKEN], char *err, size_t errlen)
{
    uint8_t nc[MGW_NONCE], ch[MGW_NONCE + MGW_MAC], want[MGW_MAC], resp[MGW_MAC];
    uint8_t l = (uint8_t)lane, tok[MGW_TOKEN];
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium initialization failed");
        return -1;
    }
    randombytes_buf(nc, sizeof nc);
    if (send_raw(t, ep, MGW_OP_HELLO, &l, 1, nc, sizeof nc) ||
        recv_exact(t, ep, MGW_OP_CHALLENGE, ch, sizeof ch)) {
        snprintf(err, errlen, "handshake failed (connection closed or not an mpigpu-proxy)");
        return -1;
    }
    mgw_auth_mac(key, "mgrm-proxy", l, nc, ch, want);
    if (sodium_memcmp(want, ch + MGW_NONCE, MGW_MAC)) {
        snprintf(err, errlen, "the proxy did not prove the shared key (wrong key?)");
        return -1;
    }
    mgw_auth_mac(key, "mgrm-client", l, ch, nc, resp);
    if (send_raw(t, ep, MGW_OP_RESPONSE, resp, sizeof resp, NULL, 0) ||
        recv_exact(t, ep, MGW_OP_AUTH_OK, tok, sizeof tok)) {
        snprintf(err, errlen, "the proxy refused the key");
        return -1;
    }
    if (lane == MGW_LANE_CMD) {
        memcpy(token, tok, MGW_TOKEN);
        return 0;
    }
    uint8_t idx[4] = {(uint8_t)stripe, (uint8_t)(stripe >> 8), (uint8_t)(stripe >> 16),
                      (uint8_t)(stripe >> 24)};
    if (send_raw(t, ep, MGW_OP_JOIN, token, MGW_TOKEN, idx, sizeof idx)) {
        snprintf(err, errlen, "bulk lane: join failed");
        return -1;
    }
    return 0;
}

int mgtr_auth_proxy(const mgtr_transport_t *t, mgtr_ep_t *ep, const mgw_key_t *key,
                    uint8_t token[MGW_TOKEN], char *err, size_t errlen)
{
    uint8_t hello[1 + MGW_NONCE], ns[MGW_NONCE], m[MGW_MAC], want[MGW_MAC];
    if (recv_exact(t, ep, MGW_OP_HELLO, hello, sizeof hello)) {
        snprintf(err, errlen, "bad or missing HELLO");
        return -1;
    }
    if (hello[0] != MGW_LANE_CMD && hello[0] != MGW_LANE_BULK) {
        snprintf(err, errlen, "bad lane %u in HELLO", hello[0]);
        return -1;
    }
    randombytes_buf(ns, sizeof ns);
    mgw_auth_mac(key, "mgrm-proxy", hello[0], hello + 1, ns, m);
    if (send_raw(t, ep, MGW_OP_CHALLENGE, ns, sizeof ns, m, sizeof m) ||
        recv_exact(t, ep, MGW_OP_RESPONSE, m, sizeof m)) {
        snprintf(err, errlen, "authentication failed: no valid response (client without the key?)");
        return -1;
    }
    mgw_auth_mac(key, "mgrm-client", hello[0], ns, hello + 1, want);
    if (sodium_memcmp(want, m, MGW_MAC)) {
        snprintf(err, errlen, "authentication failed: wrong key");
        return -1;
    }
    randombytes_buf(token, MGW_TOKEN);
    if (send_raw(t, ep, MGW_OP_AUTH_OK, token, MGW_TOKEN, NULL, 0)) {
        snprintf(err, errlen, "connection lost after authentication");
        return -1;
    }
    return hello[0];
}
