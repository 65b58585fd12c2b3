/* mpigpu-proxy: the one-copy (cross-memory attach) lane of a client on this
 * host, offered once its shm lane runs.  CMA_OPEN: the proxy answers its
 * pid and a fresh random nonce; the client lets the proxy attach to it
 * (prctl(PR_SET_PTRACER) under Yama), copies the nonce into its memory and
 * says where (CMA_READY: its pid, the nonce's address).  The proxy takes
 * the pid only if the kernel says that process holds the client's end of
 * the command connection (transport peer_is_pid), then reads the nonce
 * with process_vm_readv: a match turns the lane on.  Any failure (no right
 * to attach, ENOSYS, seccomp, another pid namespace) leaves the session on
 * the shm lane, and the client is told so by the reply code.  The proxy
 * then holds a pidfd of the client and checks it before every copy, so a
 * copy never goes to another process that took the pid of a client that
 * died (the jobs queued before its connection closed still run). */
#define _GNU_SOURCE
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proxy.h"

int mgpx_op_cma_open(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply)
{
    mgw_cma_open_t m;
    mgw_cma_open_reply_t rm = {.pid = (uint32_t)getpid()};
    if (mgw_cma_open_decode(c, &m))
        return MGPX_BAD;
    if (s->dry || (s->px && s->px->no_cma) || s->stripe[0].bk.ops != &mgtr_bulk_shm ||
        s->cma_offered || !s->t->peer_is_pid)
        return CL_INVALID_OPERATION;
    if (getrandom(s->cma_nonce, sizeof s->cma_nonce, 0) != (ssize_t)sizeof s->cma_nonce)
        return CL_OUT_OF_RESOURCES;
    s->cma_offered = 1; /* one try per session */
    memcpy(rm.nonce, s->cma_nonce, sizeof rm.nonce);
    mgw_cma_open_reply_put(reply, &rm);
    return CL_SUCCESS;
}

int mgpx_op_cma_ready(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply)
{
    unsigned char got[MGTR_CMA_NONCE];
    mgw_cma_ready_t m;
    int bad = mgw_cma_ready_decode(c, &m);
    uint32_t pid = m.pid;
    uint64_t addr = m.addr;
    if (bad || pid == 0 || pid > 0x7fffffffu || !mgtr_cma_range_ok(addr, sizeof got))
        return MGPX_BAD;
    if (s->dry || s->cma_offered != 1 || s->cma_pid)
        return CL_INVALID_OPERATION;
    s->cma_offered = 2;
    if (!s->t->peer_is_pid(s->cmd, (long)pid)) {
        mgpx_log("session %u (%s): pid %u does not hold the client's connection; no one-copy lane",
                 s->num, s->peer, pid);
        return CL_INVALID_VALUE;
    }
    if (mgtr_cma_copy((long)pid, 0, addr, got, sizeof got)) {
        mgpx_log("session %u (%s): cannot read the client's memory (%m); shm lane only", s->num,
                 s->peer);
        return CL_INVALID_OPERATION;
    }
    if (memcmp(got, s->cma_nonce, sizeof got)) {
        mgpx_log("session %u (%s): the client's memory does not hold the nonce; shm lane only",
                 s->num, s->peer);
        return CL_INVALID_VALUE;
    }
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd < 0) {
        mgpx_log("session %u (%s): pidfd_open: %m; shm lane only", s->num, s->peer);
        return CL_INVALID_OPERATION;
    }
    s->cma_pidfd = fd;
    s->cma_pid = (long)pid;
    mgpx_log("session %u (%s): one-copy lane (cross-memory attach), client pid %u, %s", s->num,
             s->peer, pid,
             !s->px || s->px->cma_map < 0
                 ? "mapped buffers on CPU devices; else pinned regions from 4 MiB, staging below"
             : s->px->cma_map == MGPX_CMA_MAP    ? "mapped buffers"
             : s->px->cma_map == MGPX_CMA_PINNED ? "pinned regions"
                                                 : "pinned staging");
    return CL_SUCCESS;
}

int mgpx_cma_alive(mgpx_session_t *s)
{
    struct pollfd p = {.fd = s->cma_pidfd, .events = POLLIN};
    return s->cma_pid > 0 && s->cma_pidfd >= 0 && poll(&p, 1, 0) == 0; /* readable: exited */
}

void mgpx_cma_session_end(mgpx_session_t *s)
{
    if (s->cma_pid > 0 && s->cma_pidfd >= 0)
        close(s->cma_pidfd);
    s->cma_pidfd = -1; /* cma_pid stays for the session's last log line */
}
