/* Bad arguments with device buffers (issue 22, items 1 to 3).  One rank.
 *
 * Parity: every call is made twice, once on a host buffer and once on a
 * device buffer, with the same bad argument.  The host form goes to MPICH
 * unchanged, and its answer is the expectation: the device form must return
 * the same error class, raise it on the same error handler (MPI_COMM_WORLD's
 * where the communicator is MPI_COMM_NULL or there is none, else the call's),
 * exactly once, and give an MPI_Error_string that names the call.
 *
 * Spans: datatypes whose instances span more bytes than an int64 or an
 * address holds (MPI's own extents wrap) must get MPI_ERR_TYPE or
 * MPI_ERR_BUFFER from every call that takes a buffer, never a signal.  MPICH
 * itself faults on these with host buffers, so there is no host run.
 *
 * Own checks: where MPICH 4.0.2 checks nothing and writes out of bounds or
 * aborts (MPI_Pack's position beyond the buffer), the device form must fail.
 *
 * Every buffer sits between guard bytes; after each call the whole
 * allocation (device ones read back with MPIX_Gpu_memcpy) must be unchanged.
 * A receive that the library wrongly accepted would wait for ever: a trap
 * message to self is posted first, so that it completes instead (and fails
 * the check), and every message left over is drained after the case.
 *
 * An argument names a substring: only the cases whose names contain it run.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpigpu.h"

#define NBYTES 4096 /* the user's part of a buffer */
#define GUARD 4096  /* guard bytes on each side */
#define TRAP 7      /* the tag of every receive case and of its trap message */

static int errs, ncases;
static const char *only;
static char tname[160];

#define CHECK(cond_)                                                                               \
    do {                                                                                           \
        if (!(cond_)) {                                                                            \
            errs++;                                                                                \
            fprintf(stderr, "%s:%d [%s]: check failed: %s\n", __FILE__, __LINE__, tname, #cond_);  \
        }                                                                                          \
    } while (0)

static MPI_Comm comm; /* a duplicate of MPI_COMM_WORLD */
static char eh_last;  /* the communicator whose handler ran last: W(orld), C(omm), S(elf) */
static int eh_count;  /* handler calls since the case began */

static void eh_fn(MPI_Comm *c, int *code, ...)
{
    (void)code;
    eh_count++;
    eh_last = *c == MPI_COMM_WORLD ? 'W' : *c == comm ? 'C' : *c == MPI_COMM_SELF ? 'S' : '?';
}

/* ---- guarded buffers ---- */

typedef struct gbuf {
    char *base;
    int dev;
} gbuf_t;

static unsigned char pattern[NBYTES + 2 * GUARD];

static char *g_new(gbuf_t *g, int dev)
{
    size_t n = sizeof(pattern);
    g->dev = dev;
    if (dev) {
        void *d = NULL;
        if (MPIX_Gpu_malloc(n, &d) != MPI_SUCCESS || !d) {
            fprintf(stderr, "MPIX_Gpu_malloc failed\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPIX_Gpu_memcpy(d, pattern, n);
        g->base = d;
    } else {
        g->base = malloc(n);
        memcpy(g->base, pattern, n);
    }
    return g->base + GUARD;
}

/* The whole allocation must still hold the pattern; frees it. */
static void g_done(gbuf_t *g)
{
    size_t n = sizeof(pattern), i;
    unsigned char *h = malloc(n);
    if (g->dev)
        MPIX_Gpu_memcpy(h, g->base, n);
    else
        memcpy(h, g->base, n);
    for (i = 0; i < n && h[i] == pattern[i]; i++)
        ;
    if (i < n)
        fprintf(stderr, "[%s] %s buffer changed at offset %ld from the user's part\n", tname,
                g->dev ? "device" : "host", (long)i - GUARD);
    CHECK(i == n);
    free(h);
    if (g->dev)
        MPIX_Gpu_free(g->base);
    else
        free(g->base);
}

/* ---- one run of a case ---- */

typedef struct run {
    int rc;
    char eh;
    int nraised;
} run_t;

static MPI_Request R = MPI_REQUEST_NULL, RP = MPI_REQUEST_NULL, trap_req = MPI_REQUEST_NULL;
static int trap_buf[4], scratch[64];
static MPI_Message msg = MPI_MESSAGE_NULL;
static int msg_kept; /* the last run left msg matched */

static void trap_post(void)
{
    PMPI_Isend(trap_buf, 4, MPI_INT, 0, TRAP, comm, &trap_req);
}

/* Complete what a wrongly accepted call left behind, and drain every message
   to self. */
static void tidy(void)
{
    int flag = 1;
    if (R != MPI_REQUEST_NULL) {
        MPI_Cancel(&R);
        MPI_Wait(&R, MPI_STATUS_IGNORE);
    }
    if (RP != MPI_REQUEST_NULL)
        MPI_Request_free(&RP);
    msg_kept = msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC;
    if (msg_kept)
        PMPI_Mrecv(scratch, 64, MPI_INT, &msg, MPI_STATUS_IGNORE);
    msg = MPI_MESSAGE_NULL;
    while (flag) {
        MPI_Status st;
        PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st);
        if (flag) {
            int n = 0;
            PMPI_Get_count(&st, MPI_BYTE, &n);
            char *tmp = malloc(n > 0 ? (size_t)n : 1);
            PMPI_Recv(tmp, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, comm, MPI_STATUS_IGNORE);
            free(tmp);
        }
    }
    PMPI_Wait(&trap_req, MPI_STATUS_IGNORE);
}

static int selected(const char *name)
{
    int on = !only || strstr(name, only);
    snprintf(tname, sizeof(tname), "%s", name);
    if (on && getenv("BAD_ARGS_TRACE"))
        fprintf(stderr, "case %s\n", name);
    return on;
}

static int class_of(int rc)
{
    int c = rc;
    MPI_Error_class(rc, &c);
    return c;
}

/* The error string of the device run must name the call. */
static void names_call(const run_t *d, const char *fn)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    s[0] = '\0';
    MPI_Error_string(d->rc, s, &len);
    if (!strstr(s, fn))
        fprintf(stderr, "[%s] error string does not name %s: %s\n", tname, fn, s);
    CHECK(strstr(s, fn) != NULL);
}

static void expect_same(const char *fn, const run_t *h, const run_t *d)
{
    ncases++;
    /* The case's premise: MPICH refuses the host form. */
    CHECK(h->rc != MPI_SUCCESS);
    if (class_of(d->rc) != class_of(h->rc) || d->eh != h->eh || d->nraised != 1)
        fprintf(stderr,
                "[%s] device: class %d on handler %c (%d calls); host: class %d on handler %c\n",
                tname, class_of(d->rc), d->eh ? d->eh : '-', d->nraised, class_of(h->rc),
                h->eh ? h->eh : '-');
    CHECK(class_of(d->rc) == class_of(h->rc));
    CHECK(d->eh == h->eh);
    CHECK(d->nraised == 1);
    if (d->rc != MPI_SUCCESS)
        names_call(d, fn);
}

/* A call that must fail with one of two classes (b may equal a). */
static void expect_class(const char *fn, const run_t *d, int a, int b)
{
    int c = class_of(d->rc);
    ncases++;
    if (c != a && c != b)
        fprintf(stderr, "[%s] device: class %d, expected %d or %d\n", tname, c, a, b);
    CHECK(c == a || c == b);
    CHECK(d->nraised == 1);
    if (d->rc != MPI_SUCCESS)
        names_call(d, fn);
}

/* Run expr_ (which uses B, the buffer under test, and P, a host buffer on the
   other side) with B from host (dev_ 0) or device (1) memory. */
#define RUN(out_, dev_, expr_)                                                                     \
    do {                                                                                           \
        gbuf_t gb_, gp_;                                                                           \
        char *B = g_new(&gb_, (dev_)), *P = g_new(&gp_, 0);                                        \
        (void)B;                                                                                   \
        (void)P;                                                                                   \
        trap_post();                                                                               \
        eh_last = 0;                                                                               \
        eh_count = 0;                                                                              \
        (out_).rc = (expr_);                                                                       \
        (out_).eh = eh_last;                                                                       \
        (out_).nraised = eh_count;                                                                 \
        tidy();                                                                                    \
        g_done(&gb_);                                                                              \
        g_done(&gp_);                                                                              \
    } while (0)

/* The device form answers as the host form does. */
#define PARITY(fn_, why_, expr_)                                                                   \
    do {                                                                                           \
        if (selected(fn_ " " why_)) {                                                              \
            run_t h_, d_;                                                                          \
            RUN(h_, 0, expr_);                                                                     \
            RUN(d_, 1, expr_);                                                                     \
            expect_same(fn_, &h_, &d_);                                                            \
        }                                                                                          \
    } while (0)

/* The device form fails with class a_ or b_ (no host run). */
#define REFUSED(fn_, why_, a_, b_, dev_, expr_)                                                    \
    do {                                                                                           \
        if (selected(fn_ " " why_)) {                                                              \
            run_t d_;                                                                              \
            RUN(d_, (dev_), expr_);                                                                \
            expect_class(fn_, &d_, (a_), (b_));                                                    \
        }                                                                                          \
    } while (0)

/* ---- the cases ---- */

static int size, tag_ub, pos;
static MPI_Aint apos;
static MPI_Count cpos;
static MPI_Status st;

/* Item 3: every argument MPICH checks. */
static void bad_arguments(void)
{
    /* pack and unpack */
    PARITY("MPI_Pack", "comm null", (pos = 0, MPI_Pack(B, 1, MPI_INT, P, 64, &pos, MPI_COMM_NULL)));
    PARITY("MPI_Pack", "comm null packed",
           (pos = 0, MPI_Pack(P, 1, MPI_INT, B, 64, &pos, MPI_COMM_NULL)));
    PARITY("MPI_Pack", "count<0", (pos = 0, MPI_Pack(B, -1, MPI_INT, P, 64, &pos, comm)));
    PARITY("MPI_Pack", "type null",
           (pos = 0, MPI_Pack(B, 1, MPI_DATATYPE_NULL, P, 64, &pos, comm)));
    PARITY("MPI_Pack", "outsize<0", (pos = 0, MPI_Pack(P, 1, MPI_INT, B, -1, &pos, comm)));
    PARITY("MPI_Pack", "position null", MPI_Pack(B, 1, MPI_INT, P, 64, NULL, comm));
    PARITY("MPI_Pack_c", "comm null",
           (cpos = 0, MPI_Pack_c(B, 1, MPI_INT, P, 64, &cpos, MPI_COMM_NULL)));
    PARITY("MPI_Pack_c", "count<0", (cpos = 0, MPI_Pack_c(B, -1, MPI_INT, P, 64, &cpos, comm)));
    PARITY("MPI_Unpack", "comm null",
           (pos = 0, MPI_Unpack(P, 64, &pos, B, 1, MPI_INT, MPI_COMM_NULL)));
    PARITY("MPI_Unpack", "count<0", (pos = 0, MPI_Unpack(P, 64, &pos, B, -1, MPI_INT, comm)));
    PARITY("MPI_Unpack", "type null",
           (pos = 0, MPI_Unpack(P, 64, &pos, B, 1, MPI_DATATYPE_NULL, comm)));
    PARITY("MPI_Unpack", "insize<0", (pos = 0, MPI_Unpack(B, -1, &pos, P, 1, MPI_INT, comm)));
    PARITY("MPI_Unpack", "position null", MPI_Unpack(P, 64, NULL, B, 1, MPI_INT, comm));
    PARITY("MPI_Unpack_c", "comm null",
           (cpos = 0, MPI_Unpack_c(P, 64, &cpos, B, 1, MPI_INT, MPI_COMM_NULL)));
    PARITY("MPI_Pack_external", "count<0",
           (apos = 0, MPI_Pack_external("external32", B, -1, MPI_INT, P, 64, &apos)));
    PARITY("MPI_Pack_external", "type null",
           (apos = 0, MPI_Pack_external("external32", B, 1, MPI_DATATYPE_NULL, P, 64, &apos)));
    PARITY("MPI_Pack_external", "outsize<0",
           (apos = 0, MPI_Pack_external("external32", P, 1, MPI_INT, B, -1, &apos)));
    PARITY("MPI_Pack_external", "position null",
           MPI_Pack_external("external32", B, 1, MPI_INT, P, 64, NULL));
    PARITY("MPI_Unpack_external", "count<0",
           (apos = 0, MPI_Unpack_external("external32", P, 64, &apos, B, -1, MPI_INT)));
    PARITY("MPI_Unpack_external", "insize<0",
           (apos = 0, MPI_Unpack_external("external32", B, -1, &apos, P, 1, MPI_INT)));
    /* MPICH checks nothing here and writes out of bounds or aborts. */
    REFUSED("MPI_Pack", "position<0", MPI_ERR_ARG, MPI_ERR_ARG, 1,
            (pos = -4, MPI_Pack(P, 1, MPI_INT, B, 64, &pos, comm)));
    REFUSED("MPI_Pack", "position>outsize", MPI_ERR_TRUNCATE, MPI_ERR_TRUNCATE, 1,
            (pos = 80, MPI_Pack(P, 1, MPI_INT, B, 64, &pos, comm)));
    REFUSED("MPI_Pack", "outsize too small", MPI_ERR_TRUNCATE, MPI_ERR_TRUNCATE, 1,
            (pos = 0, MPI_Pack(P, 32, MPI_INT, B, 64, &pos, comm)));
    REFUSED("MPI_Unpack", "position<0", MPI_ERR_ARG, MPI_ERR_ARG, 1,
            (pos = -4, MPI_Unpack(P, 64, &pos, B, 1, MPI_INT, comm)));
    REFUSED("MPI_Unpack", "position>insize", MPI_ERR_TRUNCATE, MPI_ERR_TRUNCATE, 1,
            (pos = 80, MPI_Unpack(P, 64, &pos, B, 1, MPI_INT, comm)));
    REFUSED("MPI_Pack_external", "datarep", MPI_ERR_ARG, MPI_ERR_ARG, 1,
            (apos = 0, MPI_Pack_external("native", B, 1, MPI_INT, P, 64, &apos)));

    /* sends, one mode at a time */
    int big = tag_ub < INT_MAX ? tag_ub + 1 : -7;
    PARITY("MPI_Send", "comm null", MPI_Send(B, 4, MPI_INT, 0, 1, MPI_COMM_NULL));
    PARITY("MPI_Send", "count<0", MPI_Send(B, -1, MPI_INT, 0, 1, comm));
    PARITY("MPI_Send", "type null", MPI_Send(B, 4, MPI_DATATYPE_NULL, 0, 1, comm));
    PARITY("MPI_Send", "dest=size", MPI_Send(B, 4, MPI_INT, size, 1, comm));
    PARITY("MPI_Send", "dest=-5", MPI_Send(B, 4, MPI_INT, -5, 1, comm));
    PARITY("MPI_Send", "dest=any", MPI_Send(B, 4, MPI_INT, MPI_ANY_SOURCE, 1, comm));
    PARITY("MPI_Send", "tag<0", MPI_Send(B, 4, MPI_INT, 0, -3, comm));
    PARITY("MPI_Send", "tag=any", MPI_Send(B, 4, MPI_INT, 0, MPI_ANY_TAG, comm));
    PARITY("MPI_Send", "tag>ub", MPI_Send(B, 4, MPI_INT, 0, big, comm));
    PARITY("MPI_Send", "proc null count<0", MPI_Send(B, -1, MPI_INT, MPI_PROC_NULL, 1, comm));
    PARITY("MPI_Send", "proc null tag<0", MPI_Send(B, 4, MPI_INT, MPI_PROC_NULL, -3, comm));
    PARITY("MPI_Ssend", "comm null", MPI_Ssend(B, 4, MPI_INT, 0, 1, MPI_COMM_NULL));
    PARITY("MPI_Ssend", "dest=size", MPI_Ssend(B, 4, MPI_INT, size, 1, comm));
    PARITY("MPI_Ssend", "tag<0", MPI_Ssend(B, 4, MPI_INT, 0, -3, comm));
    PARITY("MPI_Rsend", "count<0", MPI_Rsend(B, -1, MPI_INT, 0, 1, comm));
    PARITY("MPI_Rsend", "dest=size", MPI_Rsend(B, 4, MPI_INT, size, 1, comm));
    PARITY("MPI_Bsend", "type null", MPI_Bsend(B, 4, MPI_DATATYPE_NULL, 0, 1, comm));
    PARITY("MPI_Bsend", "tag>ub", MPI_Bsend(B, 4, MPI_INT, 0, big, comm));
    PARITY("MPI_Isend", "comm null", MPI_Isend(B, 4, MPI_INT, 0, 1, MPI_COMM_NULL, &R));
    PARITY("MPI_Isend", "dest=size", MPI_Isend(B, 4, MPI_INT, size, 1, comm, &R));
    PARITY("MPI_Isend", "tag=any", MPI_Isend(B, 4, MPI_INT, 0, MPI_ANY_TAG, comm, &R));
    PARITY("MPI_Isend", "request null", MPI_Isend(B, 4, MPI_INT, 0, 1, comm, NULL));
    PARITY("MPI_Issend", "request null", MPI_Issend(B, 4, MPI_INT, 0, 1, comm, NULL));
    PARITY("MPI_Issend", "count<0", MPI_Issend(B, -1, MPI_INT, 0, 1, comm, &R));
    PARITY("MPI_Irsend", "request null", MPI_Irsend(B, 4, MPI_INT, 0, 1, comm, NULL));
    PARITY("MPI_Irsend", "tag<0", MPI_Irsend(B, 4, MPI_INT, 0, -3, comm, &R));
    PARITY("MPI_Ibsend", "request null", MPI_Ibsend(B, 4, MPI_INT, 0, 1, comm, NULL));
    PARITY("MPI_Ibsend", "dest=-5", MPI_Ibsend(B, 4, MPI_INT, -5, 1, comm, &R));
    PARITY("MPI_Send_c", "comm null", MPI_Send_c(B, 4, MPI_INT, 0, 1, MPI_COMM_NULL));
    PARITY("MPI_Send_c", "dest=size", MPI_Send_c(B, 4, MPI_INT, size, 1, comm));
    PARITY("MPI_Isend_c", "request null", MPI_Isend_c(B, 4, MPI_INT, 0, 1, comm, NULL));
    PARITY("MPI_Send_c", "big count comm null",
           MPI_Send_c(B, (MPI_Count)INT_MAX + 1, MPI_INT, 0, 1, MPI_COMM_NULL));
    PARITY("MPI_Send_c", "big count tag<0",
           MPI_Send_c(B, (MPI_Count)INT_MAX + 1, MPI_INT, 0, -3, comm));

    /* receives */
    PARITY("MPI_Recv", "comm null", MPI_Recv(B, 4, MPI_INT, 0, TRAP, MPI_COMM_NULL, &st));
    PARITY("MPI_Recv", "count<0", MPI_Recv(B, -1, MPI_INT, 0, TRAP, comm, &st));
    PARITY("MPI_Recv", "type null", MPI_Recv(B, 4, MPI_DATATYPE_NULL, 0, TRAP, comm, &st));
    PARITY("MPI_Recv", "source=size", MPI_Recv(B, 4, MPI_INT, size, TRAP, comm, &st));
    PARITY("MPI_Recv", "source=-5", MPI_Recv(B, 4, MPI_INT, -5, TRAP, comm, &st));
    PARITY("MPI_Recv", "tag<0", MPI_Recv(B, 4, MPI_INT, 0, -5, comm, &st));
    PARITY("MPI_Recv", "tag>ub", MPI_Recv(B, 4, MPI_INT, 0, big, comm, &st));
    PARITY("MPI_Irecv", "comm null", MPI_Irecv(B, 4, MPI_INT, 0, TRAP, MPI_COMM_NULL, &R));
    PARITY("MPI_Irecv", "source=size", MPI_Irecv(B, 4, MPI_INT, size, TRAP, comm, &R));
    PARITY("MPI_Irecv", "tag<0", MPI_Irecv(B, 4, MPI_INT, 0, -5, comm, &R));
    PARITY("MPI_Irecv", "request null", MPI_Irecv(B, 4, MPI_INT, 0, TRAP, comm, NULL));
    PARITY("MPI_Recv_c", "big count comm null",
           MPI_Recv_c(B, (MPI_Count)INT_MAX + 1, MPI_INT, 0, TRAP, MPI_COMM_NULL, &st));
    PARITY("MPI_Irecv_c", "request null", MPI_Irecv_c(B, 4, MPI_INT, 0, TRAP, comm, NULL));

    /* sendrecv, the device buffer on either side */
    PARITY("MPI_Sendrecv", "comm null",
           MPI_Sendrecv(B, 4, MPI_INT, 0, 1, P, 4, MPI_INT, 0, TRAP, MPI_COMM_NULL, &st));
    PARITY("MPI_Sendrecv", "dest=size send",
           MPI_Sendrecv(B, 4, MPI_INT, size, 1, P, 4, MPI_INT, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv", "dest=size recv",
           MPI_Sendrecv(P, 4, MPI_INT, size, 1, B, 4, MPI_INT, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv", "source=size",
           MPI_Sendrecv(B, 4, MPI_INT, 0, 1, P, 4, MPI_INT, size, TRAP, comm, &st));
    PARITY("MPI_Sendrecv", "sendtag<0 recv",
           MPI_Sendrecv(P, 4, MPI_INT, 0, -1, B, 4, MPI_INT, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv", "sendtag=any",
           MPI_Sendrecv(B, 4, MPI_INT, 0, MPI_ANY_TAG, P, 4, MPI_INT, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv", "recvtag<0",
           MPI_Sendrecv(B, 4, MPI_INT, 0, 1, P, 4, MPI_INT, 0, -3, comm, &st));
    PARITY("MPI_Sendrecv", "sendcount<0 recv",
           MPI_Sendrecv(P, -1, MPI_INT, 0, 1, B, 4, MPI_INT, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv", "recvcount<0",
           MPI_Sendrecv(B, 4, MPI_INT, 0, 1, P, -1, MPI_INT, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv_replace", "comm null",
           MPI_Sendrecv_replace(B, 4, MPI_INT, 0, 1, 0, TRAP, MPI_COMM_NULL, &st));
    PARITY("MPI_Sendrecv_replace", "count<0",
           MPI_Sendrecv_replace(B, -1, MPI_INT, 0, 1, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv_replace", "dest=size",
           MPI_Sendrecv_replace(B, 4, MPI_INT, size, 1, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv_replace", "source=size",
           MPI_Sendrecv_replace(B, 4, MPI_INT, 0, 1, size, TRAP, comm, &st));
    PARITY("MPI_Sendrecv_replace", "sendtag<0",
           MPI_Sendrecv_replace(B, 4, MPI_INT, 0, -2, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv_replace", "recvtag<0",
           MPI_Sendrecv_replace(B, 4, MPI_INT, 0, 1, 0, -2, comm, &st));

    /* persistent */
    PARITY("MPI_Send_init", "comm null", MPI_Send_init(B, 4, MPI_INT, 0, 1, MPI_COMM_NULL, &RP));
    PARITY("MPI_Send_init", "dest=size", MPI_Send_init(B, 4, MPI_INT, size, 1, comm, &RP));
    PARITY("MPI_Send_init", "tag<0", MPI_Send_init(B, 4, MPI_INT, 0, -1, comm, &RP));
    PARITY("MPI_Send_init", "count<0", MPI_Send_init(B, -1, MPI_INT, 0, 1, comm, &RP));
    PARITY("MPI_Send_init", "request null", MPI_Send_init(B, 4, MPI_INT, 0, 1, comm, NULL));
    PARITY("MPI_Ssend_init", "type null", MPI_Ssend_init(B, 4, MPI_DATATYPE_NULL, 0, 1, comm, &RP));
    PARITY("MPI_Rsend_init", "dest=-5", MPI_Rsend_init(B, 4, MPI_INT, -5, 1, comm, &RP));
    PARITY("MPI_Bsend_init", "tag>ub", MPI_Bsend_init(B, 4, MPI_INT, 0, big, comm, &RP));
    PARITY("MPI_Recv_init", "comm null", MPI_Recv_init(B, 4, MPI_INT, 0, TRAP, MPI_COMM_NULL, &RP));
    PARITY("MPI_Recv_init", "source=size", MPI_Recv_init(B, 4, MPI_INT, size, TRAP, comm, &RP));
    PARITY("MPI_Recv_init", "tag<0", MPI_Recv_init(B, 4, MPI_INT, 0, -9, comm, &RP));
    PARITY("MPI_Recv_init", "request null", MPI_Recv_init(B, 4, MPI_INT, 0, TRAP, comm, NULL));
    PARITY("MPI_Send_init_c", "comm null",
           MPI_Send_init_c(B, 4, MPI_INT, 0, 1, MPI_COMM_NULL, &RP));

    /* matched receives */
    PARITY("MPI_Mrecv", "count<0",
           (msg = MPI_MESSAGE_NO_PROC, MPI_Mrecv(B, -1, MPI_INT, &msg, &st)));
    PARITY("MPI_Mrecv", "type null",
           (msg = MPI_MESSAGE_NO_PROC, MPI_Mrecv(B, 4, MPI_DATATYPE_NULL, &msg, &st)));
    PARITY("MPI_Mrecv", "message null",
           (msg = MPI_MESSAGE_NULL, MPI_Mrecv(B, 4, MPI_INT, &msg, &st)));
    PARITY("MPI_Mrecv", "message pointer null", MPI_Mrecv(B, 4, MPI_INT, NULL, &st));
    PARITY("MPI_Imrecv", "request null",
           (msg = MPI_MESSAGE_NO_PROC, MPI_Imrecv(B, 4, MPI_INT, &msg, NULL)));
    PARITY("MPI_Imrecv", "message null",
           (msg = MPI_MESSAGE_NULL, MPI_Imrecv(B, 4, MPI_INT, &msg, &R)));
}

/* The trap, matched by MPI_Mprobe (tidy receives it if the call under test
   left it matched). */
static MPI_Message probe_trap(void)
{
    MPI_Message m = MPI_MESSAGE_NULL;
    PMPI_Mprobe(0, TRAP, comm, &m, MPI_STATUS_IGNORE);
    return m;
}

/* Item 2: a derived datatype that was never committed. */
static void uncommitted(MPI_Datatype u)
{
    PARITY("MPI_Pack", "uncommitted", (pos = 0, MPI_Pack(B, 1, u, P, 64, &pos, comm)));
    PARITY("MPI_Pack", "uncommitted packed", (pos = 0, MPI_Pack(P, 1, u, B, 64, &pos, comm)));
    PARITY("MPI_Pack", "uncommitted count 0", (pos = 0, MPI_Pack(B, 0, u, P, 64, &pos, comm)));
    PARITY("MPI_Pack_c", "uncommitted", (cpos = 0, MPI_Pack_c(B, 1, u, P, 64, &cpos, comm)));
    PARITY("MPI_Unpack", "uncommitted", (pos = 0, MPI_Unpack(P, 64, &pos, B, 1, u, comm)));
    PARITY("MPI_Unpack", "uncommitted packed", (pos = 0, MPI_Unpack(B, 64, &pos, P, 1, u, comm)));
    PARITY("MPI_Unpack_c", "uncommitted", (cpos = 0, MPI_Unpack_c(P, 64, &cpos, B, 1, u, comm)));
    PARITY("MPI_Pack_external", "uncommitted",
           (apos = 0, MPI_Pack_external("external32", B, 1, u, P, 64, &apos)));
    PARITY("MPI_Unpack_external", "uncommitted",
           (apos = 0, MPI_Unpack_external("external32", P, 64, &apos, B, 1, u)));
    PARITY("MPI_Send", "uncommitted", MPI_Send(B, 1, u, 0, 1, comm));
    PARITY("MPI_Send", "uncommitted proc null", MPI_Send(B, 1, u, MPI_PROC_NULL, 1, comm));
    PARITY("MPI_Ssend", "uncommitted", MPI_Ssend(B, 1, u, 0, 1, comm));
    PARITY("MPI_Rsend", "uncommitted", MPI_Rsend(B, 1, u, 0, 1, comm));
    PARITY("MPI_Bsend", "uncommitted", MPI_Bsend(B, 1, u, 0, 1, comm));
    PARITY("MPI_Isend", "uncommitted", MPI_Isend(B, 1, u, 0, 1, comm, &R));
    PARITY("MPI_Issend", "uncommitted", MPI_Issend(B, 1, u, 0, 1, comm, &R));
    PARITY("MPI_Irsend", "uncommitted", MPI_Irsend(B, 1, u, 0, 1, comm, &R));
    PARITY("MPI_Ibsend", "uncommitted", MPI_Ibsend(B, 1, u, 0, 1, comm, &R));
    PARITY("MPI_Send_c", "uncommitted", MPI_Send_c(B, 1, u, 0, 1, comm));
    PARITY("MPI_Recv", "uncommitted", MPI_Recv(B, 1, u, 0, TRAP, comm, &st));
    PARITY("MPI_Recv", "uncommitted proc null", MPI_Recv(B, 1, u, MPI_PROC_NULL, TRAP, comm, &st));
    PARITY("MPI_Irecv", "uncommitted", MPI_Irecv(B, 1, u, 0, TRAP, comm, &R));
    PARITY("MPI_Recv_c", "uncommitted", MPI_Recv_c(B, 1, u, 0, TRAP, comm, &st));
    PARITY("MPI_Irecv_c", "uncommitted", MPI_Irecv_c(B, 1, u, 0, TRAP, comm, &R));
    PARITY("MPI_Sendrecv", "uncommitted send",
           MPI_Sendrecv(B, 1, u, 0, 1, P, 4, MPI_INT, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv", "uncommitted recv",
           MPI_Sendrecv(P, 4, MPI_INT, 0, 1, B, 1, u, 0, TRAP, comm, &st));
    PARITY("MPI_Sendrecv_replace", "uncommitted",
           MPI_Sendrecv_replace(B, 1, u, 0, 1, 0, TRAP, comm, &st));
    PARITY("MPI_Send_init", "uncommitted", MPI_Send_init(B, 1, u, 0, 1, comm, &RP));
    PARITY("MPI_Ssend_init", "uncommitted", MPI_Ssend_init(B, 1, u, 0, 1, comm, &RP));
    PARITY("MPI_Recv_init", "uncommitted", MPI_Recv_init(B, 1, u, 0, TRAP, comm, &RP));
    PARITY("MPI_Recv_init_c", "uncommitted", MPI_Recv_init_c(B, 1, u, 0, TRAP, comm, &RP));
    PARITY("MPI_Mrecv", "uncommitted no proc",
           (msg = MPI_MESSAGE_NO_PROC, MPI_Mrecv(B, 1, u, &msg, &st)));
    PARITY("MPI_Imrecv", "uncommitted no proc",
           (msg = MPI_MESSAGE_NO_PROC, MPI_Imrecv(B, 1, u, &msg, &R)));
    /* A matched message: refused, and still matched afterwards (MPICH keeps
       it on an argument error). */
    PARITY("MPI_Mrecv", "uncommitted matched", (msg = probe_trap(), MPI_Mrecv(B, 1, u, &msg, &st)));
    CHECK(!selected("MPI_Mrecv uncommitted matched") || msg_kept);
    PARITY("MPI_Imrecv", "uncommitted matched",
           (msg = probe_trap(), MPI_Imrecv(B, 1, u, &msg, &R)));
    CHECK(!selected("MPI_Imrecv uncommitted matched") || msg_kept);
}

/* Item 1: spans that no int64 or address holds, on device buffers (and on
   host ones that could reach the device range). */
static void spans(const char *what, MPI_Datatype t, int n)
{
    char w[128];
#define SPAN(fn_, expr_)                                                                           \
    do {                                                                                           \
        snprintf(w, sizeof(w), "%s %s", fn_, what);                                                \
        if (selected(w)) {                                                                         \
            run_t d_;                                                                              \
            RUN(d_, 1, expr_);                                                                     \
            expect_class(fn_, &d_, MPI_ERR_TYPE, MPI_ERR_BUFFER);                                  \
        }                                                                                          \
    } while (0)
    SPAN("MPI_Pack", (pos = 0, MPI_Pack(B, n, t, P, 64, &pos, comm)));
    SPAN("MPI_Pack_c", (cpos = 0, MPI_Pack_c(B, n, t, P, 64, &cpos, comm)));
    SPAN("MPI_Unpack", (pos = 0, MPI_Unpack(P, 64, &pos, B, n, t, comm)));
    SPAN("MPI_Pack_external", (apos = 0, MPI_Pack_external("external32", B, n, t, P, 64, &apos)));
    SPAN("MPI_Unpack_external",
         (apos = 0, MPI_Unpack_external("external32", P, 64, &apos, B, n, t)));
    SPAN("MPI_Send", MPI_Send(B, n, t, 0, 1, comm));
    SPAN("MPI_Ssend", MPI_Ssend(B, n, t, 0, 1, comm));
    SPAN("MPI_Rsend", MPI_Rsend(B, n, t, 0, 1, comm));
    SPAN("MPI_Bsend", MPI_Bsend(B, n, t, 0, 1, comm));
    SPAN("MPI_Isend", MPI_Isend(B, n, t, 0, 1, comm, &R));
    SPAN("MPI_Ibsend", MPI_Ibsend(B, n, t, 0, 1, comm, &R));
    SPAN("MPI_Send_c", MPI_Send_c(B, n, t, 0, 1, comm));
    SPAN("MPI_Recv", MPI_Recv(B, n, t, 0, TRAP, comm, &st));
    SPAN("MPI_Irecv", MPI_Irecv(B, n, t, 0, TRAP, comm, &R));
    SPAN("MPI_Recv_c", MPI_Recv_c(B, n, t, 0, TRAP, comm, &st));
    SPAN("MPI_Sendrecv", MPI_Sendrecv(B, n, t, 0, 1, P, 4, MPI_INT, 0, TRAP, comm, &st));
    SPAN("MPI_Sendrecv", MPI_Sendrecv(P, 4, MPI_INT, 0, 1, B, n, t, 0, TRAP, comm, &st));
    SPAN("MPI_Sendrecv_replace", MPI_Sendrecv_replace(B, n, t, 0, 1, 0, TRAP, comm, &st));
    SPAN("MPI_Send_init", MPI_Send_init(B, n, t, 0, 1, comm, &RP));
    SPAN("MPI_Recv_init", MPI_Recv_init(B, n, t, 0, TRAP, comm, &RP));
    SPAN("MPI_Mrecv", (msg = probe_trap(), MPI_Mrecv(B, n, t, &msg, &st)));
    SPAN("MPI_Imrecv", (msg = probe_trap(), MPI_Imrecv(B, n, t, &msg, &R)));
    SPAN("MPI_Bcast", MPI_Bcast(B, n, t, 0, comm));
    SPAN("MPI_Gather", MPI_Gather(P, 4, MPI_INT, B, n, t, 0, comm));
#undef SPAN
}

/* Host buffers whose span wraps around the address space, so it may reach
   the device range: refused too, where MPI would fault. */
static void host_spans(const char *what, MPI_Datatype t, int n)
{
    char w[128];
#define HSPAN(fn_, expr_)                                                                          \
    do {                                                                                           \
        snprintf(w, sizeof(w), "%s host %s", fn_, what);                                           \
        if (selected(w)) {                                                                         \
            run_t d_;                                                                              \
            RUN(d_, 0, expr_);                                                                     \
            expect_class(fn_, &d_, MPI_ERR_TYPE, MPI_ERR_BUFFER);                                  \
        }                                                                                          \
    } while (0)
    HSPAN("MPI_Pack", (pos = 0, MPI_Pack(B, n, t, P, 64, &pos, comm)));
    HSPAN("MPI_Unpack", (pos = 0, MPI_Unpack(P, 64, &pos, B, n, t, comm)));
    HSPAN("MPI_Send", MPI_Send(B, n, t, 0, 1, comm));
    HSPAN("MPI_Isend", MPI_Isend(B, n, t, 0, 1, comm, &R));
    HSPAN("MPI_Recv", MPI_Recv(B, n, t, 0, TRAP, comm, &st));
    HSPAN("MPI_Bcast", MPI_Bcast(B, n, t, 0, comm));
#undef HSPAN
}

int main(int argc, char **argv)
{
    MPI_Errhandler eh;
    MPI_Datatype unc, unc2, t1, t2, t3, t4, t5, t6, t7;
    void *attached = malloc(1 << 16);
    int *ub = NULL, flag = 0, rank;

    MPI_Init(&argc, &argv);
    only = argc > 1 ? argv[1] : NULL;
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = (unsigned char)(i * 7 + 3);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_size(comm, &size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    tag_ub = flag ? *ub : 32767;
    MPI_Comm_create_errhandler(eh_fn, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, eh);
    MPI_Comm_set_errhandler(comm, eh);
    MPI_Buffer_attach(attached, 1 << 16);

    bad_arguments();

    MPI_Type_contiguous(4, MPI_INT, &unc);
    MPI_Type_vector(2, 1, 2, MPI_INT, &unc2);
    uncommitted(unc);
    if (selected("second uncommitted type"))
        uncommitted(unc2);
    /* Committing afterwards makes the same handle good (nothing stale cached). */
    if (selected("committed later")) {
        run_t d;
        MPI_Type_commit(&unc);
        RUN(d, 1, (pos = 0, MPI_Pack(B, 1, unc, P, 64, &pos, comm)));
        ncases++;
        CHECK(d.rc == MPI_SUCCESS && d.nraised == 0);
    }

    /* 8 instances 2^61 bytes apart; a contiguous of them (MPI's extent wraps
       to 0); a stride of INT64_MIN; a lower bound of -2^62 with an extent of
       2^62; displacements at either end of int64. */
    MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 61, &t1);
    MPI_Type_contiguous(8, t1, &t2);
    MPI_Type_create_hvector(2, 1, INT64_MIN, MPI_INT, &t3);
    MPI_Type_create_resized(MPI_INT, -((MPI_Aint)1 << 62), (MPI_Aint)1 << 62, &t4);
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {INT64_MAX - 2, INT64_MIN}, disp2[2] = {INT64_MIN, INT64_MAX - 8};
    MPI_Datatype ints[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_hindexed(1, bl, disp, MPI_INT, &t5);
    MPI_Type_create_struct(2, bl, disp2, ints, &t6);
    MPI_Type_create_hvector(2, 1, INT64_MAX / 2, MPI_INT, &t7);
    MPI_Datatype all[] = {t1, t2, t3, t4, t5, t6, t7};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        MPI_Type_commit(&all[i]);
    t1 = all[0], t2 = all[1], t3 = all[2], t4 = all[3], t5 = all[4], t6 = all[5], t7 = all[6];
    spans("resized 2^61 x8", t1, 8);
    spans("contiguous of resized 2^61", t2, 1);
    spans("hvector INT64_MIN", t3, 1);
    spans("hvector INT64_MIN x2", t3, 2);
    spans("lb -2^62 x3", t4, 3);
    spans("hindexed INT64_MAX", t5, 1);
    spans("struct INT64_MIN INT64_MAX", t6, 1);
    spans("hvector INT64_MAX/2 x2", t7, 2);
    host_spans("resized 2^61 x8", t1, 8);
    host_spans("lb -2^62 x3", t4, 3);
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        MPI_Type_free(&all[i]);
    MPI_Type_free(&unc);
    MPI_Type_free(&unc2);

    int bsize = 0;
    MPI_Buffer_detach(&attached, &bsize);
    free(attached);
    MPI_Comm_free(&comm);
    MPI_Errhandler_free(&eh);
    MPI_Finalize();
    if (rank == 0) {
        if (errs)
            printf(" Found %d errors in %d cases\n", errs, ncases);
        else
            printf(" No Errors (%d cases)\n", ncases);
    }
    return errs != 0;
}
