/* The shared key and the MACs of the handshake (wire.h); the exchange
 * itself is transport/handshake.c. */
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mgw_key_load(const char *path, mgw_key_t *key, char *err, size_t errlen)
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

void mgw_auth_mac(const mgw_key_t *key, const char *label, const uint8_t ctx[MGW_AUTH_CTX],
                  const uint8_t *a, const uint8_t *b, uint8_t out[MGW_MAC])
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key->k, key->len);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label));
    crypto_auth_hmacsha256_update(&st, ctx, MGW_AUTH_CTX);
    crypto_auth_hmacsha256_update(&st, a, MGW_NONCE);
    crypto_auth_hmacsha256_update(&st, b, MGW_NONCE);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof st);
}

_Static_assert(MGW_SESSION_KEY == crypto_auth_hmacsha256_BYTES, "a key is one HMAC-SHA256");

void mgw_auth_keys(const mgw_key_t *key, const uint8_t ctx[MGW_AUTH_CTX], const uint8_t *nc,
                   const uint8_t *ns, uint8_t c2p[MGW_SESSION_KEY], uint8_t p2c[MGW_SESSION_KEY])
{
    mgw_auth_mac(key, "mgrm-key-c2p", ctx, nc, ns, c2p);
    mgw_auth_mac(key, "mgrm-key-p2c", ctx, nc, ns, p2c);
}
