/*
 * Mutual shared-key challenge/response (libsodium HMAC-SHA256), then the
 * switch to encrypted records (secure.c):
 *   client -> HELLO     lane, Nc, encrypt, ciphers offered
 *   proxy  -> CHALLENGE Ns, HMAC(key, "mgrm-proxy" | ctx | Nc | Ns), encrypt,
 *                       cipher chosen
 *   client -> RESPONSE  HMAC(key, "mgrm-client" | ctx | Ns | Nc)
 *   -- encrypted from here when both sides have encryption on --
 *   proxy  -> AUTH_OK   token (random; joins the bulk lane to the session)
 * On the peer lane (proxy to proxy) HELLO names a session of the accepting
 * proxy (sid, from PEER_OPEN) and key is that session's peer key, which the
 * session's authenticated client handed to the connecting proxy: the
 * accepting proxy finds the key by sid (mgtr_peer_key_fn), and an unknown
 * sid fails like a wrong key.
 *   client -> JOIN      token, u32 stripe (bulk lane only: its connection
 *                       number, 0 .. the session's stripes - 1)
 * ctx is lane, both encrypt bytes, the ciphers offered and the cipher chosen:
 * a man in the middle who changes any of them breaks both MACs, so he cannot
 * talk a client into plain traffic.  Both nonces are fresh random bytes, so
 * neither MAC can be replayed, and the key itself never crosses the wire.
 * The keys of the records are HMACs of the key over ctx and both nonces
 * (mgw_auth_keys), one per direction, fresh on every connection.  A side
 * whose encryption setting differs from its peer's says so and stops.
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

static void auth_ctx(uint8_t ctx[MGW_AUTH_CTX], const mgw_hello_t *h, const mgw_challenge_t *c)
{
    ctx[0] = h->lane;
    ctx[1] = h->encrypt;
    ctx[2] = h->ciphers;
    ctx[3] = c->encrypt;
    ctx[4] = c->cipher;
}

/* Puts ep under the record layer of the handshake's keys; proxy: 1 on the
 * proxy's side. */
static int secure(const mgtr_transport_t *t, mgtr_ep_t *ep, const mgw_key_t *key,
                  const uint8_t ctx[MGW_AUTH_CTX], const mgw_hello_t *h, const mgw_challenge_t *c,
                  int proxy)
{
    uint8_t c2p[MGW_SESSION_KEY], p2c[MGW_SESSION_KEY];
    mgw_auth_keys(key, ctx, h->nonce, c->nonce, c2p, p2c);
    mgtr_sec_t *sec =
        t->secure ? mgtr_sec_new(c->cipher, proxy ? p2c : c2p, proxy ? c2p : p2c) : NULL;
    sodium_memzero(c2p, sizeof c2p);
    sodium_memzero(p2c, sizeof p2c);
    if (!sec || t->secure(ep, sec)) {
        mgtr_sec_free(sec);
        return -1;
    }
    return 0;
}

/* The proxy's choice among the ciphers both sides run: AES-256-GCM first
 * (several times faster with AES-NI), else ChaCha20-Poly1305; 0: none. */
static uint8_t cipher_pick(unsigned both)
{
    return both & MGW_CIPHER_AES256GCM          ? MGW_CIPHER_AES256GCM
           : both & MGW_CIPHER_CHACHA20POLY1305 ? MGW_CIPHER_CHACHA20POLY1305
                                                : 0;
}

int mgtr_auth_client(const mgtr_transport_t *t, mgtr_ep_t *ep, const mgw_key_t *key, unsigned offer,
                     int lane, unsigned stripe, uint8_t token[MGW_TOKEN], char *err, size_t errlen)
{
    uint8_t buf[HS_MAX], want[MGW_MAC], ctx[MGW_AUTH_CTX];
    mgw_hello_t hello = {.lane = (uint8_t)lane, .encrypt = offer != 0, .ciphers = (uint8_t)offer};
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
    memset(hello.sid, 0, sizeof hello.sid);
    if (lane == MGW_LANE_PEER)
        memcpy(hello.sid, token, MGW_TOKEN);
    mgw_hello_encode(&m, 0, &hello);
    if (hs_send(t, ep, &m) || hs_recv(t, ep, MGW_OP_CHALLENGE, buf, &c) ||
        mgw_challenge_decode(&c, &ch)) {
        snprintf(err, errlen, "handshake failed (connection closed or not an mpigpu-proxy)");
        return -1;
    }
    auth_ctx(ctx, &hello, &ch);
    mgw_auth_mac(key, "mgrm-proxy", ctx, hello.nonce, ch.nonce, want);
    if (sodium_memcmp(want, ch.mac, MGW_MAC)) {
        snprintf(err, errlen, "the proxy did not prove the shared key (wrong key?)");
        return -1;
    }
    if (ch.encrypt != hello.encrypt) {
        snprintf(err, errlen,
                 hello.encrypt
                     ? "the proxy runs with encryption off (MPIGPU_VCL_ENCRYPT=0 or "
                       "--no-encrypt) and this client with it on: set MPIGPU_VCL_ENCRYPT "
                       "alike on both sides"
                     : "the proxy encrypts its traffic and this client has "
                       "MPIGPU_VCL_ENCRYPT=0: set MPIGPU_VCL_ENCRYPT alike on both sides");
        return -1;
    }
    if (ch.encrypt &&
        (!ch.cipher || (ch.cipher & (ch.cipher - 1)) || !(ch.cipher & hello.ciphers))) {
        snprintf(err, errlen, "no cipher in common with the proxy (this client offers %s%s%s)",
                 hello.ciphers & MGW_CIPHER_AES256GCM ? "AES-256-GCM" : "",
                 hello.ciphers == (MGW_CIPHER_AES256GCM | MGW_CIPHER_CHACHA20POLY1305) ? ", " : "",
                 hello.ciphers & MGW_CIPHER_CHACHA20POLY1305 ? "ChaCha20-Poly1305" : "");
        return -1;
    }
    mgw_auth_mac(key, "mgrm-client", ctx, ch.nonce, hello.nonce, resp.mac);
    mgw_response_encode(&m, 0, &resp);
    if (hs_send(t, ep, &m)) {
        snprintf(err, errlen, "the proxy refused the key");
        return -1;
    }
    if (ch.encrypt && secure(t, ep, key, ctx, &hello, &ch, 0)) {
        snprintf(err, errlen, "cannot set up the encrypted lane (out of memory?)");
        return -1;
    }
    if (hs_recv(t, ep, MGW_OP_AUTH_OK, buf, &c) || mgw_auth_ok_decode(&c, &ok)) {
        snprintf(err, errlen, "the proxy refused the key");
        return -1;
    }
    if (lane == MGW_LANE_CMD) {
        memcpy(token, ok.token, MGW_TOKEN);
        return 0;
    }
    if (lane == MGW_LANE_PEER)
        return 0;
    mgw_join_t join = {.stripe = stripe};
    memcpy(join.token, token, MGW_TOKEN);
    mgw_join_encode(&m, 0, &join);
    if (hs_send(t, ep, &m)) {
        snprintf(err, errlen, "bulk lane: join failed");
        return -1;
    }
    return 0;
}

int mgtr_auth_proxy(const mgtr_transport_t *t, mgtr_ep_t *ep, const mgw_key_t *key, unsigned offer,
                    uint8_t token[MGW_TOKEN], mgtr_peer_key_fn peer_key, void *arg, char *err,
                    size_t errlen)
{
    mgw_key_t pk;
    uint8_t buf[HS_MAX], want[MGW_MAC], ctx[MGW_AUTH_CTX];
    mgw_hello_t hello;
    mgw_challenge_t ch = {.encrypt = offer != 0};
    mgw_response_t resp;
    mgw_auth_ok_t ok;
    mgw_buf_t m;
    mgw_cur_t c;
    if (hs_recv(t, ep, MGW_OP_HELLO, buf, &c) || mgw_hello_decode(&c, &hello)) {
        snprintf(err, errlen, "bad or missing HELLO");
        return -1;
    }
    if (hello.lane != MGW_LANE_CMD && hello.lane != MGW_LANE_BULK &&
        (hello.lane != MGW_LANE_PEER || !peer_key)) {
        snprintf(err, errlen, "bad lane %u in HELLO", hello.lane);
        return -1;
    }
    if (hello.lane == MGW_LANE_PEER) {
        /* an unknown session gets a key no one has: it fails as a wrong key would */
        if (peer_key(hello.sid, &pk, arg)) {
            pk.len = MGW_TOKEN;
            randombytes_buf(pk.k, pk.len);
        }
        key = &pk;
        memcpy(token, hello.sid, MGW_TOKEN);
    }
    if (ch.encrypt && hello.encrypt)
        ch.cipher = cipher_pick(offer & hello.ciphers);
    randombytes_buf(ch.nonce, sizeof ch.nonce);
    auth_ctx(ctx, &hello, &ch);
    mgw_auth_mac(key, "mgrm-proxy", ctx, hello.nonce, ch.nonce, ch.mac);
    mgw_challenge_encode(&m, 0, &ch);
    if (hs_send(t, ep, &m)) {
        snprintf(err, errlen, "connection lost during the handshake");
        return -1;
    }
    /* the client learns the same from CHALLENGE and says so on its side */
    if (hello.encrypt != ch.encrypt) {
        snprintf(err, errlen,
                 "the client %s encryption and this proxy %s (MPIGPU_VCL_ENCRYPT must be alike "
                 "on both sides)",
                 hello.encrypt ? "asks for" : "has turned off",
                 ch.encrypt ? "encrypts" : "runs with it off");
        return -1;
    }
    if (ch.encrypt && !ch.cipher) {
        snprintf(err, errlen, "no cipher in common with the client");
        return -1;
    }
    if (hs_recv(t, ep, MGW_OP_RESPONSE, buf, &c) || mgw_response_decode(&c, &resp)) {
        snprintf(err, errlen, "authentication failed: no valid response (client without the key?)");
        return -1;
    }
    mgw_auth_mac(key, "mgrm-client", ctx, ch.nonce, hello.nonce, want);
    if (sodium_memcmp(want, resp.mac, MGW_MAC)) {
        snprintf(err, errlen, "authentication failed: wrong key");
        return -1;
    }
    if (ch.encrypt && secure(t, ep, key, ctx, &hello, &ch, 1)) {
        snprintf(err, errlen, "cannot set up the encrypted lane (out of memory?)");
        return -1;
    }
    randombytes_buf(ok.token, MGW_TOKEN);
    if (hello.lane != MGW_LANE_PEER)
        memcpy(token, ok.token, MGW_TOKEN);
    sodium_memzero(&pk, sizeof pk);
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
