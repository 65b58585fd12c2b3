/*
 * sec_bench: what the record layer of encrypted lanes (transport/secure.c)
 * costs on this host, without OpenCL: SIZE MiB sent in 1 MiB send calls
 * over one loopback TCP connection of the remote path's transport, to a
 * child process, plain and with each cipher, SIZE MiB each way once.
 * Prints per cipher the wall-clock rate and the CPU time of both processes
 * per byte (the rate two busy cores could reach, the figure that a shared
 * host's load disturbs least).
 *
 *   sec_bench [SIZE_MIB]   (default 1024)
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "transport.h"

static double wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu(int who)
{
    struct rusage r;
    getrusage(who, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

/* One run: 0, or -1 with a message. */
static int run(int cipher, size_t total)
{
    const mgtr_transport_t *t = &mgtr_transport_tcp;
    const size_t chunk = 1u << 20;
    uint8_t k1[MGW_SESSION_KEY], k2[MGW_SESSION_KEY];
    mgtr_listener_t *l;
    mgtr_ep_t *ep;
    char addr[300], peer[128], err[256];
    randombytes_buf(k1, sizeof k1);
    randombytes_buf(k2, sizeof k2);
    if (t->listen("127.0.0.1:0", &l, addr, sizeof addr, err, sizeof err)) {
        fprintf(stderr, "sec_bench: %s\n", err);
        return -1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) { /* the sender */
        char *buf = malloc(chunk), c;
        if (!buf || t->connect(addr, &ep, err, sizeof err) ||
            (cipher && t->secure(ep, mgtr_sec_new(cipher, k1, k2))))
            _exit(1);
        memset(buf, 3, chunk);
        for (size_t s = 0; s < total; s += chunk)
            if (t->send(ep, buf, chunk))
                _exit(2);
        _exit(t->recv(ep, &c, 1) ? 3 : 0);
    }
    char *buf = malloc(chunk);
    int st = -1, bad = !buf || pid < 0 || t->accept(l, &ep, peer, sizeof peer) ||
                       (cipher && t->secure(ep, mgtr_sec_new(cipher, k2, k1)));
    double w0 = wall(), c0 = cpu(RUSAGE_SELF), c1 = cpu(RUSAGE_CHILDREN);
    for (size_t s = 0; !bad && s < total; s += chunk)
        bad = t->recv(ep, buf, chunk) || buf[chunk - 1] != 3;
    double w = wall() - w0;
    bad = bad || t->send(ep, "x", 1);
    if (pid > 0)
        waitpid(pid, &st, 0);
    double c = cpu(RUSAGE_SELF) - c0 + cpu(RUSAGE_CHILDREN) - c1;
    t->close(ep);
    t->listener_close(l);
    free(buf);
    if (bad || st != 0) {
        fprintf(stderr, "sec_bench: %s run failed\n", mgtr_sec_cipher_name(cipher));
        return -1;
    }
    double nspb = c / (double)total * 1e9;
    printf("%-18s %8.2f GB/s wall %8.3f ns/B CPU (both ends) %8.2f GB/s on two busy cores\n",
           cipher ? mgtr_sec_cipher_name(cipher) : "plain", (double)total / w / 1e9, nspb,
           2.0 / nspb);
    return 0;
}

int main(int argc, char **argv)
{
    size_t total = (size_t)(argc > 1 ? atol(argv[1]) : 1024) << 20;
    unsigned have = mgtr_sec_ciphers();
    if (!total || !have) {
        fprintf(stderr, "usage: sec_bench [SIZE_MIB]\n");
        return 2;
    }
    int bad = run(0, total);
    if (have & MGW_CIPHER_AES256GCM)
        bad |= run(MGW_CIPHER_AES256GCM, total);
    bad |= run(MGW_CIPHER_CHACHA20POLY1305, total);
    return bad ? 1 : 0;
}
