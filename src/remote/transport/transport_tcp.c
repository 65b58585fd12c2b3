/* TCP transport: TCP_NODELAY, keepalive with a short timeout so that a dead
 * peer turns into an error within seconds instead of a hang. */
#define _GNU_SOURCE
#include "transport.h"
#include "mgclock.h"
#include "mgparam.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct mgtr_ep {
    int fd;
    mgtr_sec_t *sec; /* encrypted from the handshake's keys on; else NULL */
};

struct mgtr_listener {
    int fd;
};

static int split_addr(const char *addr, char *host, size_t hostlen, char *port, size_t portlen)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1])
        return -1;
    size_t hl = (size_t)(colon - addr);
    if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') {
        addr++;
        hl -= 2;
    }
    if (hl >= hostlen || strlen(colon + 1) >= portlen)
        return -1;
    memcpy(host, addr, hl);
    host[hl] = 0;
    strcpy(port, colon + 1);
    return 0;
}

static void tune(int fd)
{
    int one = 1, idle = 2, intvl = 1, cnt = 3;
    unsigned int user_timeout = 10000; /* ms of unacknowledged data */
    int bufsz = 4 << 20;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof bufsz);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof bufsz);
}

static mgtr_ep_t *ep_new(int fd)
{
    mgtr_ep_t *ep = malloc(sizeof *ep);
    if (!ep) {
        close(fd);
        return NULL;
    }
    ep->fd = fd;
    ep->sec = NULL;
    tune(fd);
    return ep;
}

static int tcp_connect(const char *addr, mgtr_ep_t **out, char *err, size_t errlen)
{
    char host[256], port[32];
    struct addrinfo hints = {0}, *res = NULL, *ai;
    int fd = -1, rc;
    if (split_addr(addr, host, sizeof host, port, sizeof port)) {
        snprintf(err, errlen, "bad address \"%s\" (expected HOST:PORT)", addr);
        return -1;
    }
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if ((rc = getaddrinfo(host, port, &hints, &res))) {
        snprintf(err, errlen, "%s: %s", addr, gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        rc = errno;
        close(fd);
        fd = -1;
        errno = rc;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "connect to %s: %s", addr, strerror(errno));
        return -1;
    }
    if (!(*out = ep_new(fd))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static int tcp_listen(const char *addr, mgtr_listener_t **out, char *bound, size_t boundlen,
                      char *err, size_t errlen)
{
    char host[256], port[32];
    struct addrinfo hints = {0}, *res = NULL;
    int fd, rc, one = 1;
    if (split_addr(addr, host, sizeof host, port, sizeof port)) {
        snprintf(err, errlen, "bad address \"%s\" (expected HOST:PORT)", addr);
        return -1;
    }
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if ((rc = getaddrinfo(host, port, &hints, &res))) {
        snprintf(err, errlen, "%s: %s", addr, gai_strerror(rc));
        return -1;
    }
    fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 64)) {
        snprintf(err, errlen, "listen on %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char sport[32] = "?";
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        getnameinfo((struct sockaddr *)&ss, sl, NULL, 0, sport, sizeof sport, NI_NUMERICSERV);
    snprintf(bound, boundlen, "%s:%s", host, sport);
    *out = malloc(sizeof **out);
    if (!*out) {
        close(fd);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    (*out)->fd = fd;
    return 0;
}

static int tcp_accept(mgtr_listener_t *l, mgtr_ep_t **out, char *peer, size_t peerlen)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd;
    do
        fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
    while (fd < 0 && (errno == EINTR || errno == ECONNABORTED));
    if (fd < 0)
        return -1;
    char h[128] = "?", p[32] = "?";
    getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, p, sizeof p,
                NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(peer, peerlen, "%s:%s", h, p);
    *out = ep_new(fd);
    return *out ? 0 : -1;
}

/* Moves mh's iovec past the k bytes that one sendmsg or recvmsg moved, and
   past the empty entries after them. */
static void iov_consume(struct msghdr *mh, size_t k)
{
    while (k) {
        size_t d = k < mh->msg_iov->iov_len ? k : mh->msg_iov->iov_len;
        mh->msg_iov->iov_base = (char *)mh->msg_iov->iov_base + d;
        mh->msg_iov->iov_len -= d;
        k -= d;
        if (!mh->msg_iov->iov_len) {
            mh->msg_iov++;
            mh->msg_iovlen--;
        }
    }
    while (mh->msg_iovlen && !mh->msg_iov->iov_len) {
        mh->msg_iov++;
        mh->msg_iovlen--;
    }
}

/* The raw stream: all of iov, or exactly iov's bytes. */
static int raw_sendv(void *arg, struct iovec *iov, int n)
{
    mgtr_ep_t *ep = arg;
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    while (mh.msg_iovlen) {
        ssize_t r = sendmsg(ep->fd, &mh, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        iov_consume(&mh, (size_t)r);
    }
    return 0;
}

static int raw_recvv(void *arg, struct iovec *iov, int n)
{
    mgtr_ep_t *ep = arg;
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    while (mh.msg_iovlen) {
        ssize_t r = recvmsg(ep->fd, &mh, MSG_WAITALL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        iov_consume(&mh, (size_t)r);
    }
    return 0;
}

static int tcp_send(mgtr_ep_t *ep, const void *p, size_t n)
{
    if (ep->sec)
        return mgtr_sec_send(ep->sec, raw_sendv, ep, p, n);
    struct iovec iov = {(void *)p, n};
    return raw_sendv(ep, &iov, 1);
}

static int tcp_recv(mgtr_ep_t *ep, void *p, size_t n)
{
    if (ep->sec)
        return mgtr_sec_recv(ep->sec, raw_recvv, ep, p, n);
    struct iovec iov = {p, n};
    return raw_recvv(ep, &iov, 1);
}

static int tcp_secure(mgtr_ep_t *ep, mgtr_sec_t *sec)
{
    if (ep->sec)
        return -1;
    ep->sec = sec;
    return 0;
}

static mgtr_sec_t *tcp_sec(mgtr_ep_t *ep)
{
    return ep->sec;
}

double mgtr_now_ns(void)
{
    return (double)mg_clock_ns();
}

long long mgtr_now_ms(void)
{
    return (long long)(mg_clock_ns() / 1000000u);
}

static void tcp_spin_readable(mgtr_ep_t *ep, long spin_ns)
{
    double end = mgtr_now_ns() + (double)spin_ns;
    char c;
    if (ep->sec && mgtr_sec_buffered(ep->sec))
        return;
    do {
        ssize_t r = recv(ep->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (r != -1 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return;
    } while (mgtr_now_ns() < end);
}

static int tcp_set_timeout(mgtr_ep_t *ep, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return setsockopt(ep->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
                   setsockopt(ep->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv)
               ? -1
               : 0;
}

/* The peer's address is a loopback one or the address this end of the
 * connection has (a local address: the kernel routes it over loopback). */
static int tcp_is_local(mgtr_ep_t *ep)
{
    struct sockaddr_storage a, b;
    socklen_t al = sizeof a, bl = sizeof b;
    if (getpeername(ep->fd, (struct sockaddr *)&a, &al) ||
        getsockname(ep->fd, (struct sockaddr *)&b, &bl) || a.ss_family != b.ss_family)
        return 0;
    if (a.ss_family == AF_INET) {
        struct in_addr pa = ((struct sockaddr_in *)&a)->sin_addr;
        struct in_addr la = ((struct sockaddr_in *)&b)->sin_addr;
        return (ntohl(pa.s_addr) >> 24) == 127 || pa.s_addr == la.s_addr;
    }
    if (a.ss_family == AF_INET6) {
        struct in6_addr *pa = &((struct sockaddr_in6 *)&a)->sin6_addr;
        struct in6_addr *la = &((struct sockaddr_in6 *)&b)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(pa) || !memcmp(pa, la, sizeof *pa);
    }
    return 0;
}

/* An address as /proc/net/tcp* prints it: the 32-bit words of the
 * address in memory order (%08X each, 1 for IPv4, 4 for IPv6), ':', the
 * port (%04X, host order). */
static int proc_addr(const struct sockaddr_storage *a, char *out, size_t n)
{
    uint32_t w[4];
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)a;
        memcpy(w, &s->sin_addr, 4);
        return snprintf(out, n, "%08" PRIX32 ":%04X", w[0], ntohs(s->sin_port)) >= (int)n;
    }
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
    memcpy(w, &s->sin6_addr, 16);
    return snprintf(out, n, "%08" PRIX32 "%08" PRIX32 "%08" PRIX32 "%08" PRIX32 ":%04X", w[0], w[1],
                    w[2], w[3], ntohs(s->sin6_port)) >= (int)n;
}

/* The inode of the socket whose local address is loc and remote rem, from
 * /proc/net/tcp or tcp6; 0 if none. */
static unsigned long proc_inode(const char *file, const char *loc, const char *rem)
{
    char line[512], l[64], r[64];
    unsigned long ino = 0, i;
    FILE *f = fopen(file, "re");
    if (!f)
        return 0;
    while (!ino && fgets(line, sizeof line, f))
        if (sscanf(line, " %*s %63s %63s %*s %*s %*s %*s %*s %*s %lu", l, r, &i) == 3 &&
            !strcmp(l, loc) && !strcmp(r, rem))
            ino = i;
    fclose(f);
    return ino;
}

static int tcp_peer_is_pid(mgtr_ep_t *ep, long pid)
{
    struct sockaddr_storage a, b;
    socklen_t al = sizeof a, bl = sizeof b;
    char pa[64], la[64], dir[64], want[64], got[64];
    unsigned long ino;
    int found = 0;
    if (pid <= 0 || getpeername(ep->fd, (struct sockaddr *)&a, &al) ||
        getsockname(ep->fd, (struct sockaddr *)&b, &bl) || a.ss_family != b.ss_family ||
        (a.ss_family != AF_INET && a.ss_family != AF_INET6) || proc_addr(&a, pa, sizeof pa) ||
        proc_addr(&b, la, sizeof la))
        return 0;
    /* the peer's socket: local address = our peer's, remote = ours */
    ino = proc_inode(a.ss_family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6", pa, la);
    if (!ino)
        return 0;
    snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
    snprintf(want, sizeof want, "socket:[%lu]", ino);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        char path[400];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t k = readlink(path, got, sizeof got - 1);
        if (k > 0) {
            got[k] = 0;
            found = !strcmp(got, want);
        }
    }
    closedir(d);
    return found;
}

static void tcp_shutdown(mgtr_ep_t *ep)
{
    shutdown(ep->fd, SHUT_RDWR);
}

static void tcp_close(mgtr_ep_t *ep)
{
    if (ep) {
        close(ep->fd);
        mgtr_sec_free(ep->sec);
        free(ep);
    }
}

static void tcp_listener_shutdown(mgtr_listener_t *l)
{
    shutdown(l->fd, SHUT_RDWR);
}

static void tcp_listener_close(mgtr_listener_t *l)
{
    if (l) {
        close(l->fd);
        free(l);
    }
}

const mgtr_transport_t mgtr_transport_tcp = {
    .name = "tcp",
    .connect = tcp_connect,
    .listen = tcp_listen,
    .accept = tcp_accept,
    .send = tcp_send,
    .recv = tcp_recv,
    .set_timeout = tcp_set_timeout,
    .is_local = tcp_is_local,
    .peer_is_pid = tcp_peer_is_pid,
    .spin_readable = tcp_spin_readable,
    .secure = tcp_secure,
    .sec = tcp_sec,
    .shutdown = tcp_shutdown,
    .close = tcp_close,
    .listener_shutdown = tcp_listener_shutdown,
    .listener_close = tcp_listener_close,
};

long mgtr_spin_ns = 0;

int mgtr_spin_setup(int param, char *err, size_t errlen)
{
    mgparam_value_t v;
    if (mgparam_read((mgparam_id_t)param, &v, err, errlen))
        return -1;
    if (!v.set) {
        mgtr_spin_ns =
            sysconf(_SC_NPROCESSORS_ONLN) >= MGTR_SPIN_MIN_CPUS ? MGTR_SPIN_DEFAULT_US * 1000L : 0;
        return 0;
    }
    mgtr_spin_ns = (long)v.num * 1000L;
    return 0;
}

int mgtr_msg_recv(const mgtr_transport_t *t, mgtr_ep_t *ep, mgw_hdr_t *h, uint8_t **buf,
                  size_t *cap, uint32_t max)
{
    uint8_t raw[MGW_HDR_SIZE];
    if (mgtr_spin_ns > 0 && t->spin_readable)
        t->spin_readable(ep, mgtr_spin_ns);
    if (t->recv(ep, raw, sizeof raw))
        return -1;
    if (mgw_hdr_parse(raw, h, max))
        return -2;
    if (h->length > *cap || !*buf) {
        size_t c = h->length < 4096 ? 4096 : h->length;
        uint8_t *p = realloc(*buf, c);
        if (!p)
            return -1;
        *buf = p;
        *cap = c;
    }
    return h->length && t->recv(ep, *buf, h->length) ? -1 : 0;
}

int mgtr_msg_send(const mgtr_transport_t *t, mgtr_ep_t *ep, mgw_buf_t *b)
{
    if (mgw_buf_finish(b))
        return -1;
    return t->send(ep, b->p, b->len);
}
