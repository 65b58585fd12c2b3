/*
 * Messages that a probe received early (doc/design.md, "Probes of chunked
 * messages").
 *
 * A chunked message's first piece is exactly mgp2p_first_len() bytes
 * long and starts with a header that holds the whole message's length.  MPI
 * cannot show a probe those bytes without receiving them, so a probe that
 * finds a message of exactly that length receives it here, reads the header, and reports the
 * message's full length.  The message then waits in this list until a
 * receive (or MPI_Mrecv of the handle an MPI_Mprobe gave) takes it.  Every
 * receive through mpigpu looks here first while the list is not empty.
 *
 * Order: MPI_Probe and MPI_Iprobe match nothing, so before taking the
 * message they saw, they take every older message of the same sender on the
 * communicator (take_through).  The list then holds a prefix of each
 * sender's messages in the order they were sent, older than anything MPI
 * still holds from it, and looking here first keeps MPI's order between two
 * processes.  MPI_Mprobe and MPI_Improbe match, as a receive would, so they
 * take only the message they saw.  A plain message taken this way is
 * delivered from here just the same.  Until a device sender asked this
 * process for a grant (grant.c) no chunked message can come to it, so a
 * probe then takes nothing early: MPI's answer is the message's length.
 * Entries and the handles of matched ones are guarded by the p2p lock;
 * mgp2p_early_any() reads a counter without it.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "p2p_impl.h"

/* MPI_Mprobe of an early message gives a real message handle of MPI's: a
   stand-in, 0 bytes this process sends itself on a private duplicate of
   MPI_COMM_SELF and matches with MPI_Improbe.  The stand-in's send completes
   once the stand-in is received, when the entry is taken (standin_drop); so
   the handle is MPI's own, unique while the entry lives, and no value of
   mpigpu's own can collide with one of MPI's. */
static MPI_Comm standin = MPI_COMM_NULL;
static char standin_byte;

static mgp2p_early_t *head, **tail = &head;
atomic_int mgp2p_nearly;
static unsigned next_handle;

int mgp2p_early_is_handle(MPI_Message m)
{
    int found = 0;
    if (!mgp2p_early_any() || m == MPI_MESSAGE_NULL || m == MPI_MESSAGE_NO_PROC)
        return 0;
    mgp2p_lock();
    for (const mgp2p_early_t *e = head; e && !found; e = e->next)
        found = e->handle == m;
    mgp2p_unlock();
    return found;
}

/* Receive e's stand-in and complete its send (e out of the list, or
   finalize). */
static void standin_drop(mgp2p_early_t *e)
{
    if (e->handle == MPI_MESSAGE_NULL)
        return;
    PMPI_Mrecv(&standin_byte, 0, MPI_BYTE, &e->handle, MPI_STATUS_IGNORE);
    PMPI_Wait(&e->standin_send, MPI_STATUS_IGNORE);
    e->handle = MPI_MESSAGE_NULL;
}

static int matches(const mgp2p_early_t *e, int source, int tag, MPI_Comm comm)
{
    return e->handle == MPI_MESSAGE_NULL && e->comm == comm &&
           (source == MPI_ANY_SOURCE || source == e->source) &&
           (tag == MPI_ANY_TAG || tag == e->tag);
}

/* The oldest unclaimed entry that a receive (source, tag, comm) matches, or
   NULL (lock held). */
static mgp2p_early_t *find(int source, int tag, MPI_Comm comm)
{
    for (mgp2p_early_t *e = head; e; e = e->next)
        if (matches(e, source, tag, comm))
            return e;
    return NULL;
}

static void unlink_entry(mgp2p_early_t *e)
{
    mgp2p_early_t **p = &head;
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    if (tail == &e->next)
        tail = p;
    e->next = NULL;
    atomic_fetch_sub(&mgp2p_nearly, 1);
}

int mgp2p_early_find(int source, int tag, MPI_Comm comm, const MPI_Message *message)
{
    if (message)
        return mgp2p_early_is_handle(*message);
    if (!mgp2p_early_any() || source == MPI_PROC_NULL)
        return 0;
    mgp2p_lock();
    int found = find(source, tag, comm) != NULL;
    mgp2p_unlock();
    return found;
}

mgp2p_early_t *mgp2p_early_take(int source, int tag, MPI_Comm comm, const MPI_Message *message)
{
    mgp2p_early_t *e = NULL;
    if (!mgp2p_early_any() || (!message && source == MPI_PROC_NULL))
        return NULL;
    mgp2p_lock();
    if (message) {
        for (e = head; e && e->handle != *message; e = e->next)
            ;
    } else {
        e = find(source, tag, comm);
    }
    if (e)
        unlink_entry(e);
    mgp2p_unlock();
    if (e)
        standin_drop(e);
    return e;
}

void mgp2p_early_free(mgp2p_early_t *e)
{
    if (!e)
        return;
    mgdev_big_put(e->buf, e->size);
    free(e);
}

/* The status a probe reports for e: its sender, its tag and the length of
   the whole message (MPI_ERROR left alone, as by every probe). */
static void early_status(const mgp2p_early_t *e, MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = e->source;
    status->MPI_TAG = e->tag;
    PMPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)e->total);
    PMPI_Status_set_cancelled(status, 0);
}

/* Receive the message matched as *m (of len bytes, from source with tag)
   into a new entry at the list's tail.  Returns an MPI error code (raised by
   PMPI where it came from there). */
static int early_add(MPI_Message *m, int64_t len, MPI_Comm comm, mgp2p_early_t **out)
{
    MPI_Status st;
    mgp2p_early_t *e = calloc(1, sizeof(*e));
    char *buf = NULL;
    size_t size = 0;
    int rc = e ? mgdev_big_get(len > 0 ? (size_t)len : 1, &buf, &size) : MPI_ERR_NO_MEM;
    if (rc != MPI_SUCCESS) {
        free(e);
        /* The message is matched: receive it anyway, so that it does not
           stay matched to nothing, and report the error. */
        char one;
        PMPI_Mrecv(&one, 0, MPI_BYTE, m, MPI_STATUS_IGNORE);
        return mgerr_set(MPI_ERR_NO_MEM,
                         "mpigpu: out of host memory for a probed message of %lld bytes",
                         (long long)len);
    }
    rc = PMPI_Mrecv_c(buf, (MPI_Count)len, MPI_BYTE, m, &st);
    if (rc != MPI_SUCCESS) {
        mgdev_big_put(buf, size);
        free(e);
        return rc;
    }
    e->comm = comm;
    e->source = st.MPI_SOURCE;
    e->tag = st.MPI_TAG;
    e->buf = buf;
    e->size = size;
    e->len = len;
    e->total = mgp2p_first_total(buf, len);
    e->handle = MPI_MESSAGE_NULL;
    mgp2p_lock();
    *tail = e;
    tail = &e->next;
    atomic_fetch_add(&mgp2p_nearly, 1);
    mgp2p_unlock();
    *out = e;
    return MPI_SUCCESS;
}

/* A probe found a message of one chunk from source with tag.  A probe does
   not match: a later receive of any tag must still get the older messages
   of the same sender first.  So every message of source on comm is taken,
   oldest first (MPI gives them in the order they were sent), up to and
   including the first of that tag, the one the probe saw. */
static int take_through(int source, int tag, MPI_Comm comm)
{
    for (;;) {
        MPI_Message m = MPI_MESSAGE_NULL;
        MPI_Status st;
        MPI_Count len = 0;
        int f = 0;
        mgp2p_early_t *e = NULL;
        int rc = PMPI_Improbe(source, MPI_ANY_TAG, comm, &f, &m, &st);
        if (rc != MPI_SUCCESS || !f)
            return rc; /* (not found: another thread received it) */
        PMPI_Get_count_c(&st, MPI_BYTE, &len);
        rc = early_add(&m, (int64_t)len, comm, &e);
        if (rc != MPI_SUCCESS || st.MPI_TAG == tag)
            return rc;
    }
}

/* Give e (in the list) a message handle for MPI_Mrecv: its stand-in's (lock
   held).  The stand-in is sent to self, so MPI_Improbe finds it at once;
   every tag below 2^15 is valid under any MPI_TAG_UB. */
static int claim(mgp2p_early_t *e, MPI_Message *message)
{
    int rc = MPI_SUCCESS, f = 0, tag = (int)(next_handle++ & 0x7fff);
    MPI_Message m = MPI_MESSAGE_NULL;
    if (standin == MPI_COMM_NULL) {
        rc = PMPI_Comm_dup(MPI_COMM_SELF, &standin);
        MG_CHECK(rc, fn_fail);
        PMPI_Comm_set_errhandler(standin, MPI_ERRORS_RETURN);
    }
    rc = PMPI_Isend(&standin_byte, 0, MPI_BYTE, 0, tag, standin, &e->standin_send);
    MG_CHECK(rc, fn_fail);
    while (rc == MPI_SUCCESS && !f)
        rc = PMPI_Improbe(0, tag, standin, &f, &m, MPI_STATUS_IGNORE);
    MG_CHECK(rc, fn_fail);
    e->handle = m;
    *message = m;
    mgp2p_message_note(m, e->comm);
fn_exit:
    return rc;
fn_fail:
    rc = mgerr_set(MPI_ERR_OTHER, "mpigpu: MPI_Mprobe: no stand-in message for a probed message");
    goto fn_exit;
}

int mgp2p_probe(int source, int tag, MPI_Comm comm, int wait, int *flag, MPI_Message *message,
                MPI_Status *status)
{
    MPI_Status st;
    MPI_Count len = 0;
    int rc = MPI_SUCCESS, f = 0;
    mgp2p_early_t *e = NULL;

    *flag = 0;
    for (;;) {
        if (mgp2p_early_any() && source != MPI_PROC_NULL) {
            mgp2p_lock();
            if ((e = find(source, tag, comm))) {
                early_status(e, status);
                if (message)
                    rc = claim(e, message);
                *flag = rc == MPI_SUCCESS;
            }
            mgp2p_unlock();
            if (e)
                return rc;
        }
        if (wait && !mgp2p_progress_busy() && !mgp2p_early_any()) {
            /* Nothing else needs this process: MPI may block. */
            rc = message ? PMPI_Mprobe(source, tag, comm, message, &st)
                         : PMPI_Probe(source, tag, comm, &st);
            f = 1;
        } else {
            mgp2p_progress();
            rc = message ? PMPI_Improbe(source, tag, comm, &f, message, &st)
                         : PMPI_Iprobe(source, tag, comm, &f, &st);
        }
        if (rc != MPI_SUCCESS)
            return rc;
        if (!f) {
            if (wait)
                continue;
            return MPI_SUCCESS;
        }
        PMPI_Get_count_c(&st, MPI_BYTE, &len);
        if (source == MPI_PROC_NULL || st.MPI_SOURCE == MPI_PROC_NULL || !mgp2p_first_len() ||
            (int64_t)len != mgp2p_first_len() || !mgp2p_grant_reading()) {
            /* Not a first piece: MPI's own answer, but for MPI_ERROR, which
               st never had (MPICH's MPI_Probe writes MPI_SUCCESS there, its
               MPI_Mprobe nothing); MPI lets no probe write it. */
            mgp2p_status_copy(status, &st);
            *flag = 1;
            if (message)
                mgp2p_message_note(*message, comm);
            return MPI_SUCCESS;
        }
        /* A first piece's length: maybe a chunked message's.  Take it. */
        if (message) {
            /* MPI matched it: a later receive can no longer take it, and the
               handle now stands for the list's entry. */
            rc = early_add(message, (int64_t)len, comm, &e);
            *message = MPI_MESSAGE_NULL;
        } else {
            rc = take_through(st.MPI_SOURCE, st.MPI_TAG, comm);
        }
        if (rc != MPI_SUCCESS)
            return rc;
        /* Report from the list (another thread may have added an older
           match first). */
    }
}

void mgp2p_early_finalize(void)
{
    mgp2p_early_t *e;
    while ((e = head)) {
        unlink_entry(e);
        standin_drop(e);
        mgp2p_early_free(e);
    }
    tail = &head;
    if (standin != MPI_COMM_NULL)
        PMPI_Comm_free(&standin);
}

/* Matched messages and their communicators: MPI has no call that maps a
   message to its communicator, which a device receive needs for errors and
   for the world rank of a chunked message's sender.  Filled by the probes,
   emptied by the receives; guarded by the p2p lock. */
static struct {
    MPI_Message *msg;
    MPI_Comm *comm;
    size_t n, cap;
} matched;

void mgp2p_message_note(MPI_Message message, MPI_Comm comm)
{
    if (message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC)
        return;
    mgp2p_lock();
    if (matched.n == matched.cap) {
        size_t cap = matched.cap ? 2 * matched.cap : 16;
        MPI_Message *m = realloc(matched.msg, cap * sizeof(*m));
        if (m)
            matched.msg = m;
        MPI_Comm *c = realloc(matched.comm, cap * sizeof(*c));
        if (c)
            matched.comm = c;
        if (m && c)
            matched.cap = cap;
    }
    if (matched.n < matched.cap) {
        matched.msg[matched.n] = message;
        matched.comm[matched.n++] = comm;
    }
    mgp2p_unlock();
}

/* The communicator of a matched message, forgotten, or MPI_COMM_WORLD for
   one not seen. */
MPI_Comm mgp2p_message_take(MPI_Message message)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    mgp2p_lock();
    for (size_t i = 0; i < matched.n; i++) {
        if (matched.msg[i] == message) {
            comm = matched.comm[i];
            matched.msg[i] = matched.msg[--matched.n];
            matched.comm[i] = matched.comm[matched.n];
            break;
        }
    }
    if (matched.n == 0) {
        free(matched.msg);
        free(matched.comm);
        matched.msg = NULL;
        matched.comm = NULL;
        matched.cap = 0;
    }
    mgp2p_unlock();
    return comm;
}
