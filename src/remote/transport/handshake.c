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

#define HS_MAX 128 /* no handshake message is longer */

/* Receives one handshake message of op into buf: 0 with c over its payload,
 * or -1. */
static int hs_recv(const mgtr_transport_t *t, mgtr_ep_t *ep, uint16_t op, uint8_t buf[HS_MAX],
                   mgw_cur_t *c)
{
    uint8_t raw[MGW_HDR_SIZE];
    mgw_hdr_t h;
    if (t->recv(ep, raw, sizeof raw) || mgw_hdr_parse(raw, &h, HS_MAX) || h.op != op ||
        (h.length && t->recv(ep, buf, h.length)))
        return -1;
    mgw_cur_init(c, buf, h.length);
    return 0;
}

/* Sends a message that encode started in m, and frees m. */
static int hs_send(const mgtr_transport_t *t, mgtr_ep_t *ep, mgw_buf_t *m)
{
    int rc = mgtr_msg_send(t, ep, m);
    mgw_buf_free(m);
    return rc;
}

int mgtr_auth_client(const mgtr_transport_t *t, mgtr_ep_t *ep, const mgw_key_t *key, int lane,
                     unsigned stripe, uint8_t token[MGW_TOKEN], char *err, size_t errlen)
{
    uint8_t buf[HS_MAX], want[MGW_MAC];
    mgw_hello_t hello = {.lane = (uint8_t)lane};
    mgw_challenge_t ch;
    mgw_response_t resp;
    mgw_auth_ok_t ok;
    mgw_buf_t m;
    mgw_cur_t c;
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium initialization failed");
        return -1;
    }
    randombytes_buf(hello.nonce, sizeof hello.nonce);
    mgw_hello_encode(&m, 0, &hello);
    if (hs_send(t, ep, &m) || hs_recv(t, ep, MGW_OP_CHALLENGE, buf, &c) ||
        mgw_challenge_decode(&c, &ch)) {
        snprintf(err, errlen, "handshake failed (connection closed or not an mpigpu-proxy)");
        return -1;
    }
    mgw_auth_mac(key, "mgrm-proxy", hello.lane, hello.nonce, ch.nonce, want);
    if (sodium_memcmp(want, ch.mac, MGW_MAC)) {
        snprintf(err, errlen, "the proxy did not prove the shared key (wrong key?)");
        return -1;
    }
    mgw_auth_mac(key, "mgrm-client", hello.lane, ch.nonce, hello.nonce, resp.mac);
    mgw_response_encode(&m, 0, &resp);
    if (hs_send(t, ep, &m) || hs_recv(t, ep, MGW_OP_AUTH_OK, buf, &c) ||
        mgw_auth_ok_decode(&c, &ok)) {
        snprintf(err, errlen, "the proxy refused the key");
        return -1;
    }
    if (lane == MGW_LANE_CMD) {
        memcpy(token, ok.token, MGW_TOKEN);
        return 0;
    }
    mgw_join_t join = {.stripe = stripe};
    memcpy(join.token, token, MGW_TOKEN);
    mgw_join_encode(&m, 0, &join);
    if (hs_send(t, ep, &m)) {
        snprintf(err, errlen, "bulk lane: join failed");
        return -1;
    }
    return 0;
}

int mgtr_auth_proxy(const mgtr_transport_t *t, mgtr_ep_t *ep, const mgw_key_t *key,
                    uint8_t token[MGW_TOKEN], char *err, size_t errlen)
{
    uint8_t buf[HS_MAX], want[MGW_MAC];
    mgw_hello_t hello;
    mgw_challenge_t ch;
    mgw_response_t resp;
    mgw_auth_ok_t ok;
    mgw_buf_t m;
    mgw_cur_t c;
    if (hs_recv(t, ep, MGW_OP_HELLO, buf, &c) || mgw_hello_decode(&c, &hello)) {
        snprintf(err, errlen, "bad or missing HELLO");
        return -1;
    }
    if (hello.lane != MGW_LANE_CMD && hello.lane != MGW_LANE_BULK) {
        snprintf(err, errlen, "bad lane %u in HELLO", hello.lane);
        return -1;
    }
    randombytes_buf(ch.nonce, sizeof ch.nonce);
    mgw_auth_mac(key, "mgrm-proxy", hello.lane, hello.nonce, ch.nonce, ch.mac);
    mgw_challenge_encode(&m, 0, &ch);
    if (hs_send(t, ep, &m) || hs_recv(t, ep, MGW_OP_RESPONSE, buf, &c) ||
        mgw_response_decode(&c, &resp)) {
        snprintf(err, errlen, "authentication failed: no valid response (client without the key?)");
        return -1;
    }
    mgw_auth_mac(key, "mgrm-client", hello.lane, ch.nonce, hello.nonce, want);
    if (sodium_memcmp(want, resp.mac, MGW_MAC)) {
        snprintf(err, errlen, "authentication failed: wrong key");
        return -1;
    }
    randombytes_buf(ok.token, MGW_TOKEN);
    memcpy(token, ok.token, MGW_TOKEN);
    mgw_auth_ok_encode(&m, 0, &ok);
    if (hs_send(t, ep, &m)) {
        snprintf(err, errlen, "connection lost after authentication");
        return -1;
    }
    return hello.lane;
}

int mgtr_auth_join(const mgtr_transport_t *t, mgtr_ep_t *ep, uint8_t token[MGW_TOKEN],
                   uint32_t *stripe)
{
    uint8_t buf[HS_MAX];
    mgw_join_t join;
    mgw_cur_t c;
    *stripe = UINT32_MAX;
    if (hs_recv(t, ep, MGW_OP_JOIN, buf, &c) || mgw_join_decode(&c, &join))
        return -1;
    *stripe = join.stripe;
    memcpy(token, join.token, MGW_TOKEN);
    return join.stripe < MGW_STREAMS_MAX ? 0 : -1;
}
