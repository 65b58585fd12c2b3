/*
 * A TCP relay for the encryption tests (vcl_crypt.sh): it stands between
 * clients and a proxy, forwards every connection's bytes both ways, writes
 * them all to a capture file, and on command alters the traffic.
 *
 *   relay TARGET CAPTURE CTL [plain]
 *
 * listens on 127.0.0.1 (a free port, printed as "relay: listening on
 * 127.0.0.1:PORT") and connects each client it accepts to TARGET
 * (HOST:PORT).  Connections are numbered from 0 in the order they come (a
 * client's command lane first, then its bulk stripes).
 *
 * Unless "plain" is given, each direction is cut into the frames of the
 * remote protocol: the plain handshake messages (client to proxy: HELLO and
 * RESPONSE; proxy to client: CHALLENGE), then the encrypted records (u32
 * length n, then n + 16 bytes).  Before it forwards a record, a direction
 * looks for the file CTL; when it holds "flip K D" or "replay K D" and this
 * is connection K, direction D (0: client to proxy, 1: proxy to client), it
 * flips one bit in the middle of the record's ciphertext, or sends the
 * previous record of the direction again first, then renames CTL to
 * CTL.done and says so on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HDR 16
#define TAG 16
#define UNIT_MAX (64u << 20)

static const char *capture_path, *ctl_path;
static int plain;
static FILE *capture;
static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct dir {
    int from, to, conn, d;
} dir_t;

static int readn(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = recv(fd, c, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static int writen(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t r = send(fd, c, n, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static int forward(dir_t *x, const void *p, size_t n)
{
    pthread_mutex_lock(&cap_lock);
    fwrite(p, 1, n, capture);
    fflush(capture);
    pthread_mutex_unlock(&cap_lock);
    return writen(x->to, p, n);
}

/* The command for this direction, if CTL names it: 'f', 'r' or 0. */
static int command(dir_t *x)
{
    char what[16];
    int k, d;
    FILE *f = fopen(ctl_path, "r");
    if (!f)
        return 0;
    int n = fscanf(f, "%15s %d %d", what, &k, &d);
    fclose(f);
    if (n != 3 || k != x->conn || d != x->d)
        return 0;
    char done[4096];
    snprintf(done, sizeof done, "%s.done", ctl_path);
    if (rename(ctl_path, done))
        return 0; /* the other direction took it */
    return !strcmp(what, "flip") ? 'f' : !strcmp(what, "replay") ? 'r' : 0;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void *pump(void *arg)
{
    dir_t *x = arg;
    uint8_t *unit = malloc(UNIT_MAX + HDR), *prev = malloc(UNIT_MAX + HDR);
    size_t prevn = 0;
    int handshake = x->d == 0 ? 2 : 1; /* plain messages before the records */
    if (!unit || !prev)
        goto out;
    for (;;) {
        size_t n;
        if (plain) {
            ssize_t r = recv(x->from, unit, 1 << 16, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0 || forward(x, unit, (size_t)r))
                break;
            continue;
        }
        if (handshake) {
            if (readn(x->from, unit, HDR) || le32(unit + 8) > 4096 ||
                readn(x->from, unit + HDR, le32(unit + 8)))
                break;
            n = HDR + le32(unit + 8);
            handshake--;
        } else {
            if (readn(x->from, unit, 4) || le32(unit) > UNIT_MAX ||
                readn(x->from, unit + 4, le32(unit) + TAG))
                break;
            n = 4 + le32(unit) + TAG;
            int c = command(x);
            if (c == 'f') {
                unit[4 + le32(unit) / 2] ^= 0x10;
                fprintf(stderr, "relay: flipped a bit of a %zu-byte record, connection %d %s\n", n,
                        x->conn, x->d ? "proxy to client" : "client to proxy");
            } else if (c == 'r' && prevn) {
                fprintf(stderr, "relay: replayed a %zu-byte record, connection %d %s\n", prevn,
                        x->conn, x->d ? "proxy to client" : "client to proxy");
                if (forward(x, prev, prevn))
                    break;
            }
            memcpy(prev, unit, n);
            prevn = n;
        }
        if (forward(x, unit, n))
            break;
    }
out:
    /* the peer sees the end, and the other direction stops too */
    shutdown(x->to, SHUT_RDWR);
    shutdown(x->from, SHUT_RDWR);
    free(unit);
    free(prev);
    return NULL;
}

static void *conn_main(void *arg)
{
    dir_t *x = arg; /* two: client to proxy, proxy to client */
    pthread_t t;
    if (pthread_create(&t, NULL, pump, &x[1]) == 0) {
        pump(&x[0]);
        pthread_join(t, NULL);
    }
    close(x[0].from);
    close(x[0].to);
    free(x);
    return NULL;
}

static int dial(const char *addr)
{
    char host[256], *colon;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    snprintf(host, sizeof host, "%s", addr);
    if (!(colon = strrchr(host, ':')))
        return -1;
    *colon = 0;
    if (getaddrinfo(host, colon + 1, &hints, &res))
        return -1;
    int fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen)) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "plain"))) {
        fprintf(stderr, "usage: relay TARGET CAPTURE CTL [plain]\n");
        return 2;
    }
    capture_path = argv[2];
    ctl_path = argv[3];
    plain = argc == 5;
    signal(SIGPIPE, SIG_IGN);
    if (!(capture = fopen(capture_path, "w"))) {
        perror(capture_path);
        return 2;
    }
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 64) ||
        getsockname(l, (struct sockaddr *)&a, &al)) {
        perror("relay: listen");
        return 2;
    }
    printf("relay: listening on 127.0.0.1:%u\n", ntohs(a.sin_port));
    fflush(stdout);
    for (int conn = 0;; conn++) {
        int c = accept(l, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            perror("relay: accept");
            return 1;
        }
        int p = dial(argv[1]);
        dir_t *x = calloc(2, sizeof *x);
        pthread_t t;
        if (p < 0 || !x) {
            fprintf(stderr, "relay: cannot reach %s\n", argv[1]);
            close(c);
            if (p >= 0)
                close(p);
            free(x);
            continue;
        }
        x[0] = (dir_t){c, p, conn, 0};
        x[1] = (dir_t){p, c, conn, 1};
        if (pthread_create(&t, NULL, conn_main, x) == 0)
            pthread_detach(t);
    }
}
