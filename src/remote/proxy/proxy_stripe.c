/* mpigpu-proxy: the stripes of a session's TCP bulk lane.  The client asks
 * for N connections (STREAMS, before any joins; the proxy caps N at
 * --streams); each joins the session with its token and its number.  Chunk
 * k of all the chunks going one way (counted over every transfer, in the
 * order of the jobs, which is the order the client sent their commands)
 * travels on stripe k mod N, so both ends know which stripe carries which
 * chunk without telling each other.  The bulk thread posts the receives and
 * sends of a transfer to the stripes' threads, at most as many as it has
 * staging buffers for, so the staging pool is never overrun; each thread
 * moves its stripe's bytes (the kernel's copies and checksums) on its own
 * core.  A chunk that is not the one due on its stripe (transfer, offset
 * or length) breaks the lane: it is logged and the session closes.  With
 * one stripe the bulk thread moves the bytes itself, as before there were
 * stripes. */
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

static int io_run(mgpx_session_t *s, unsigned i, mgpx_io_t *io)
{
    mgtr_bulk_t *bk = &s->stripe[i].bk;
    mgtr_chunk_t due = io->ch;
    if (io->send)
        return bk->ops->send(bk, &io->ch, io->p);
    if (bk->ops->recv_hdr(bk, &io->ch))
        return -1;
    if (io->ch.xfer != due.xfer || io->ch.off != due.off || io->ch.n != due.n) {
        mgpx_log("session %u (%s): stripe %u: chunk of transfer %llu at offset %llu (%zu bytes) "
                 "where transfer %llu at offset %llu (%zu bytes) was due",
                 s->num, s->peer, i, (unsigned long long)io->ch.xfer,
                 (unsigned long long)io->ch.off, io->ch.n, (unsigned long long)due.xfer,
                 (unsigned long long)due.off, due.n);
        bk->ops->release(bk, &io->ch);
        return -1;
    }
    if (bk->ops->recv_data(bk, &io->ch, io->p)) {
        bk->ops->release(bk, &io->ch);
        return -1;
    }
    return 0;
}

void mgpx_io_post(mgpx_session_t *s, mgpx_io_t *io, unsigned long long seq)
{
    io->next = NULL;
    io->done = 0;
    io->rc = 0;
    io->posted = 1;
    if (s->nstripes <= 1) {
        io->rc = io_run(s, 0, io);
        io->done = 1;
        return;
    }
    mgpx_stripe_t *st = &s->stripe[seq % s->nstripes];
    pthread_mutex_lock(&s->io_lock);
    *st->tail = io;
    st->tail = &io->next;
    pthread_cond_broadcast(&s->io_cond);
    pthread_mutex_unlock(&s->io_lock);
}

int mgpx_io_wait(mgpx_session_t *s, mgpx_io_t *io)
{
    if (!io->posted)
        return 0;
    if (s->nstripes > 1) {
        pthread_mutex_lock(&s->io_lock);
        while (!io->done)
            pthread_cond_wait(&s->io_cond, &s->io_lock);
        pthread_mutex_unlock(&s->io_lock);
    }
    io->posted = 0;
    return io->rc;
}

void mgpx_stripes_shutdown(mgpx_session_t *s)
{
    for (unsigned i = 0; i < MGW_STREAMS_MAX; i++)
        if (s->stripe[i].ep)
            s->t->shutdown(s->stripe[i].ep);
}

typedef struct stripe_arg {
    mgpx_session_t *s;
    unsigned i;
} stripe_arg_t;

static void *stripe_main(void *arg)
{
    mgpx_session_t *s = ((stripe_arg_t *)arg)->s;
    unsigned i = ((stripe_arg_t *)arg)->i;
    mgpx_stripe_t *st = &s->stripe[i];
    free(arg);
    for (;;) {
        pthread_mutex_lock(&s->io_lock);
        while (!st->head && !s->io_quit)
            pthread_cond_wait(&s->io_cond, &s->io_lock);
        mgpx_io_t *io = st->head;
        if (io && !(st->head = io->next))
            st->tail = &st->head;
        int broken = s->io_broken;
        pthread_mutex_unlock(&s->io_lock);
        if (!io)
            break;
        int rc = broken ? -1 : io_run(s, i, io);
        if (rc && !broken) {
            /* the other stripes' transfers cannot finish either */
            mgpx_log("session %u (%s): bulk stripe %u broken", s->num, s->peer, i);
            mgpx_stripes_shutdown(s);
        }
        pthread_mutex_lock(&s->io_lock);
        if (rc)
            s->io_broken = 1;
        io->rc = rc;
        io->done = 1;
        pthread_cond_broadcast(&s->io_cond);
        pthread_mutex_unlock(&s->io_lock);
    }
    return NULL;
}

int mgpx_stripes_start(mgpx_session_t *s)
{
    for (unsigned i = 0; i < s->nstripes; i++) {
        s->stripe[i].bk.t = s->t;
        s->stripe[i].bk.ep = s->stripe[i].ep;
    }
    if (s->nstripes <= 1)
        return 0;
    for (unsigned i = 0; i < s->nstripes; i++) {
        stripe_arg_t *a = malloc(sizeof *a);
        if (!a)
            return -1;
        a->s = s;
        a->i = i;
        if (pthread_create(&s->stripe[i].th, NULL, stripe_main, a)) {
            free(a);
            return -1;
        }
        s->stripe[i].started = 1;
    }
    mgpx_log("session %u (%s): bulk lane of %u TCP stripes", s->num, s->peer, s->nstripes);
    return 0;
}

void mgpx_stripes_stop(mgpx_session_t *s)
{
    pthread_mutex_lock(&s->io_lock);
    s->io_quit = 1;
    pthread_cond_broadcast(&s->io_cond);
    pthread_mutex_unlock(&s->io_lock);
    for (unsigned i = 0; i < MGW_STREAMS_MAX; i++)
        if (s->stripe[i].started) {
            pthread_join(s->stripe[i].th, NULL);
            s->stripe[i].started = 0;
        }
}

int mgpx_op_streams(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply)
{
    mgw_streams_t m;
    if (mgw_streams_decode(c, &m) || m.want < 1 || m.want > MGW_STREAMS_MAX)
        return MGPX_BAD;
    uint32_t want = m.want;
    unsigned cap = s->px && s->px->max_streams ? s->px->max_streams : MGW_STREAMS_MAX;
    unsigned n = want < cap ? want : cap;
    pthread_mutex_lock(&s->lock);
    int late = s->njoined > 0 || s->bulk_started;
    if (!late) {
        s->nstripes = n;
        s->depth = n > 1 ? MGPX_STAGING_MAX : MGPX_STAGING_SLOTS;
    }
    pthread_mutex_unlock(&s->lock);
    if (late)
        return CL_INVALID_OPERATION; /* the lane is already there */
    mgw_streams_reply_put(reply, &(mgw_streams_reply_t){.granted = n});
    return CL_SUCCESS;
}
