/*
 * The grant protocol (doc/design.md, "Host receives that read no header"): a
 * sender sends chunked messages (and their lane and rest variants) to a
 * process only once that process granted it, so that a process no device
 * sender asked yet puts every dense host receive in place and reads no
 * header.
 *
 * Sender: the first message to world rank w that could have gone in pieces
 * asks w for a grant (an int on the control communicator, tag
 * mgp2p_engine.tag_ask) and posts the receive of the grant (tag_grant);
 * it goes plain, as every message to w does until the grant arrived.  A
 * sender never waits for a grant: the receive is tested when the next
 * message to w is chosen and in progress passes.
 *
 * Receiver: a wildcard receive of requests stays posted on the control
 * communicator and is tested in progress passes.  Before the first request
 * the host receives are bare (mgp2p_host_first_buffer); from it on, new ones
 * read headers, and every requester is granted once no bare receive is
 * pending.  Both tags lie above the sequence numbers (mgp2p_init reserves
 * them), so neither meets a lane answer.
 *
 * Each process sends at most one request and one grant to each peer; their
 * send requests are completed at MPI_Finalize, and the receives still
 * posted there are cancelled.
 */
#include "config.h"

#include <stdlib.h>

#include "mgerr.h"
#include "p2p_impl.h"

enum { ASK_NONE = 0, ASK_SENT, ASK_GRANTED };

static const int ask_word = 1;

/* The request of world rank w to send us chunked messages: remembered
   until grant_all, in the same progress pass when no bare receive is
   pending. */
static void want_add(int w)
{
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    if (w < 0 || w >= g->size || g->want[w] || g->grant_send[w] != MPI_REQUEST_NULL)
        return;
    g->want[w] = 1;
    g->nwant++;
}

/* Grant every requester: no host receive started before the first request
   is pending any more. */
static void grant_all(void)
{
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    for (int w = 0; w < g->size && g->nwant > 0; w++) {
        if (!g->want[w])
            continue;
        g->want[w] = 0;
        g->nwant--;
        /* A failed send leaves w sending plain messages, which is valid. */
        if (PMPI_Isend(&ask_word, 1, MPI_INT, w, mgp2p_engine.tag_grant, mgp2p_engine.ctrl,
                       &g->grant_send[w]) == MPI_SUCCESS)
            mgp2p_engine.stats.grants_sent++;
        else
            g->grant_send[w] = MPI_REQUEST_NULL;
    }
}

/* Post the wildcard receive of the next request; none after a failure
   (senders then stay plain, which is valid). */
static int ask_post(void)
{
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    int rc = PMPI_Irecv(&g->ask_buf, 1, MPI_INT, MPI_ANY_SOURCE, mgp2p_engine.tag_ask,
                        mgp2p_engine.ctrl, &g->ask_recv);
    if (rc != MPI_SUCCESS)
        g->ask_recv = MPI_REQUEST_NULL;
    return rc;
}

/* Requests that arrived: the first turns this process to reading headers. */
static void asks_take(void)
{
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    while (g->ask_recv != MPI_REQUEST_NULL) {
        int flag = 0;
        MPI_Status st;
        if (PMPI_Test(&g->ask_recv, &flag, &st) != MPI_SUCCESS) {
            g->ask_recv = MPI_REQUEST_NULL; /* no more grants: senders stay plain */
            return;
        }
        if (!flag)
            return;
        g->hdr = 1;
        if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < g->size)
            g->from[st.MPI_SOURCE] = 1;
        want_add(st.MPI_SOURCE);
        ask_post();
    }
}

/* Whether the grant of world rank w arrived (sender side). */
static int granted_test(int w)
{
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    int flag = 0;
    if (PMPI_Test(&g->grant_recv[w], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        g->grant_recv[w] = MPI_REQUEST_NULL; /* stays asked: plain from now on */
        g->nasked--;
        return 0;
    }
    if (!flag)
        return 0;
    g->state[w] = ASK_GRANTED;
    g->nasked--;
    mgp2p_engine.stats.grants_received++;
    return 1;
}

int mgp2p_grant_init(int size)
{
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    g->size = size;
    g->ask_recv = MPI_REQUEST_NULL;
    g->state = calloc((size_t)size, 1);
    g->want = calloc((size_t)size, 1);
    g->from = calloc((size_t)size, 1);
    g->gbuf = calloc((size_t)size, sizeof(int));
    g->req = malloc(3 * (size_t)size * sizeof(MPI_Request));
    if (!g->state || !g->want || !g->from || !g->gbuf || !g->req)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory for p2p state");
    g->ask_send = g->req;
    g->grant_recv = g->req + size;
    g->grant_send = g->req + 2 * (size_t)size;
    for (int i = 0; i < 3 * size; i++)
        g->req[i] = MPI_REQUEST_NULL;
    if (!mgp2p_first_len()) /* MPIGPU_P2P_PROTOCOL=plain: no pieces, no watch */
        return MPI_SUCCESS;
    if (mgdev_state.settings.p2p_test_granted) {
        g->hdr = 1;
        for (int i = 0; i < size; i++)
            g->state[i] = ASK_GRANTED;
        return MPI_SUCCESS;
    }
    return ask_post();
}

/* Receive every request and grant still in flight, so that none is left
   unmatched at MPI_Finalize (UCX warns of those): the processes tell each
   other what they sent (one MPI_Alltoall on the control communicator,
   collective like MPI_Finalize itself; not under the plain protocol nor the
   test switch, which send nothing), then each receives what it lacks. */
static void grant_drain(int *out, int *in)
{
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    int missing = 0;
    for (int w = 0; w < g->size; w++) {
        out[2 * w] = g->ask_send[w] != MPI_REQUEST_NULL;
        out[2 * w + 1] = g->grant_send[w] != MPI_REQUEST_NULL;
    }
    if (PMPI_Alltoall(out, 2, MPI_INT, in, 2, MPI_INT, mgp2p_engine.ctrl) != MPI_SUCCESS)
        return;
    for (int w = 0; w < g->size; w++)
        missing += in[2 * w] && !g->from[w];
    while (missing > 0 && g->ask_recv != MPI_REQUEST_NULL) {
        MPI_Status st;
        if (PMPI_Wait(&g->ask_recv, &st) != MPI_SUCCESS)
            break;
        missing--;
        if (missing > 0)
            ask_post();
    }
    for (int w = 0; w < g->size; w++)
        if (in[2 * w + 1] && g->grant_recv[w] != MPI_REQUEST_NULL)
            PMPI_Wait(&g->grant_recv[w], MPI_STATUS_IGNORE);
}

void mgp2p_grant_finalize(void)
{
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    if (!g->req)
        goto fn_free;
    if (mgp2p_first_len() && !mgdev_state.settings.p2p_test_granted) {
        int *io = malloc(4 * (size_t)g->size * sizeof(int));
        if (io)
            grant_drain(io, io + 2 * g->size);
        free(io);
    }
    /* The receives that nothing will match now: cancelled.  Sends of one
       int complete. */
    if (g->ask_recv != MPI_REQUEST_NULL) {
        PMPI_Cancel(&g->ask_recv);
        PMPI_Wait(&g->ask_recv, MPI_STATUS_IGNORE);
    }
    for (int w = 0; w < g->size; w++) {
        if (g->grant_recv[w] != MPI_REQUEST_NULL)
            PMPI_Cancel(&g->grant_recv[w]);
        PMPI_Wait(&g->grant_recv[w], MPI_STATUS_IGNORE);
        PMPI_Wait(&g->ask_send[w], MPI_STATUS_IGNORE);
        PMPI_Wait(&g->grant_send[w], MPI_STATUS_IGNORE);
    }
fn_free:
    free(g->state);
    free(g->want);
    free(g->from);
    free(g->gbuf);
    free(g->req);
    *g = (mgp2p_grant_t){.ask_recv = MPI_REQUEST_NULL};
}

int mgp2p_granted(int w)
{
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    if (w < 0 || w >= g->size)
        return 0;
    if (g->state[w] == ASK_GRANTED)
        return 1;
    if (g->state[w] == ASK_SENT)
        return g->grant_recv[w] != MPI_REQUEST_NULL && granted_test(w);
    /* The first message to w that could go in pieces: ask. */
    g->state[w] = ASK_SENT;
    if (PMPI_Irecv(&g->gbuf[w], 1, MPI_INT, w, mgp2p_engine.tag_grant, mgp2p_engine.ctrl,
                   &g->grant_recv[w]) != MPI_SUCCESS) {
        g->grant_recv[w] = MPI_REQUEST_NULL;
        return 0;
    }
    g->nasked++;
    if (PMPI_Isend(&ask_word, 1, MPI_INT, w, mgp2p_engine.tag_ask, mgp2p_engine.ctrl,
                   &g->ask_send[w]) != MPI_SUCCESS)
        g->ask_send[w] = MPI_REQUEST_NULL; /* no grant will come: plain to w */
    mgp2p_engine.stats.grants_asked++;
    return 0;
}

void mgp2p_grant_progress(void)
{
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    if (g->ask_recv != MPI_REQUEST_NULL)
        asks_take();
    if (g->nwant > 0 && g->bare == 0)
        grant_all();
    for (int w = 0; w < g->size && g->nasked > 0; w++)
        if (g->grant_recv[w] != MPI_REQUEST_NULL && g->state[w] == ASK_SENT)
            (void)granted_test(w);
}

int mgp2p_grant_reading(void)
{
    mgp2p_lock();
    int hdr = mgp2p_engine.grant.hdr;
    mgp2p_unlock();
    return hdr;
}
