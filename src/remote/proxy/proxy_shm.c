/* mpigpu-proxy: the shared-memory bulk lane of a client on this host.  The
 * client asks (SHM_OPEN) once its session is authenticated; the proxy makes
 * a fresh segment (random name, O_EXCL, mode 0600) and names it; the client
 * maps it, unlinks it and says so (SHM_READY); the proxy unlinks it too (a
 * client that could not map it, e.g. of another user, stays on the stream
 * lane).  No transfer runs before SHM_READY: the client sends both before
 * any other command, and the session thread switches the lane under
 * s->lock, which the bulk thread takes to get its next job. */
#include <string.h>
#include <sys/mman.h>

#include "proxy.h"

static void shm_unlink_name(mgpx_session_t *s)
{
    if (s->shm_name[0]) {
        shm_unlink(s->shm_name);
        s->shm_name[0] = 0;
    }
}

int mgpx_op_shm_open(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply)
{
    mgw_shm_open_t m;
    if (mgw_shm_open_decode(c, &m))
        return MGPX_BAD;
    if (s->dry || (s->px && s->px->no_shm) || s->shm_base || s->stripe[0].bk.base ||
        s->nstripes > 1)
        return CL_INVALID_OPERATION;
    if (mgtr_shm_create(s->shm_name, &s->shm_base)) {
        s->shm_name[0] = 0;
        s->shm_base = NULL;
        mgpx_log("session %u (%s): cannot make a shm segment; stream bulk lane", s->num, s->peer);
        return CL_OUT_OF_RESOURCES;
    }
    mgw_shm_open_reply_put(reply, &(mgw_shm_open_reply_t){.name = s->shm_name});
    return CL_SUCCESS;
}

int mgpx_op_shm_ready(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply)
{
    mgw_shm_ready_t m;
    if (mgw_shm_ready_decode(c, &m) || m.mapped > 1)
        return MGPX_BAD;
    if (s->dry || !s->shm_base)
        return CL_INVALID_OPERATION;
    shm_unlink_name(s);
    if (!m.mapped) {
        munmap(s->shm_base, MGTR_SHM_SIZE);
        s->shm_base = NULL;
        return CL_SUCCESS;
    }
    pthread_mutex_lock(&s->lock);
    mgtr_bulk_use_shm(&s->stripe[0].bk, s->shm_base, 1);
    s->shm_base = NULL; /* the lane owns it now */
    pthread_mutex_unlock(&s->lock);
    mgpx_log("session %u (%s): shared-memory bulk lane", s->num, s->peer);
    return CL_SUCCESS;
}

void mgpx_shm_session_end(mgpx_session_t *s)
{
    shm_unlink_name(s);
    if (s->shm_base)
        munmap(s->shm_base, MGTR_SHM_SIZE);
    s->shm_base = NULL;
    mgtr_bulk_fini(&s->stripe[0].bk);
}
