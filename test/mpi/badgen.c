/*
 * badgen: the bad-input generator (issue 22).
 *
 * Each case is drawn from (seed, case number) alone, so every rank draws the
 * same case and one case can be run again by itself:
 *     badgen [--seed S] [--first K] [--cases N] [--only C,C] [--skip C,C]
 *            [--timeout SECONDS] [--no-parity] [--verbose] [--list]
 * A case picks a category (--list names them), a datatype (random valid ones
 * from typegen.c, or hostile ones: huge or negative lower bounds and extents,
 * strides and displacements near INT64_MIN/MAX, large counts, uncommitted
 * types, MPI_DATATYPE_NULL), buffers (device addresses at, inside, just past
 * and just before an allocation, freed ones, host buffers between PROT_NONE
 * guard pages, NULL) and an interposed call, and then requires either
 *   - MPI_SUCCESS and the result of the same call made through PMPI on host
 *     copies of every buffer (the "mirrors"), every byte of every buffer
 *     compared, guard bytes included; or
 *   - an error class allowed for that input: the class MPICH gives for the
 *     same call on host memory where it checks the argument (parity), else
 *     one of a small set (MPI_ERR_BUFFER, _TYPE, _COUNT, _ARG, _OTHER, ...),
 *     with the bytes outside the call's reach unchanged.
 * A signal or a hang is the failure this program exists to find: a handler
 * prints the seed, the case and the call before the process dies, and a
 * watchdog (alarm) does the same for a case that runs longer than --timeout.
 * A case prints nothing when it passes.
 *
 * Local categories run on rank (case % size); point-to-point runs between
 * ranks 0 and 1 (more ranks idle), collectives on every rank.  Each side of
 * a point-to-point case knows from the draw whether its peer's call is meant
 * to fail, and only calls that both sides can complete are paired: a side
 * whose call must fail has no partner (or, for matched probes, a small eager
 * message to probe).  Tags are unique per case, so a message that a faulty
 * call sent anyway never matches a later case.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpigpu.h"
#include "typegen.h"

typedef __int128 i128;

/* ------------------------------------------------------------------ options */

enum {
    K_PACK,
    K_EXTERNAL,
    K_HOSTILE,
    K_ARGS,
    K_MEMCPY,
    K_QUERY,
    K_STALE,
    K_P2P,
    K_P2PHOSTILE,
    K_P2PARGS,
    K_TRUNC,
    K_COLL,
    K_N
};
static const char *const cat_names[K_N] = {"pack",       "external", "hostile", "args",
                                           "memcpy",     "query",    "stale",   "p2p",
                                           "p2phostile", "p2pargs",  "trunc",   "coll"};
static const char *const cat_help[K_N] = {
    "MPI_Pack/Unpack (+_c) of random valid types, device/host buffers around allocation ends",
    "MPI_Pack_external/Unpack_external (+_c) of homogeneous types",
    "extreme types (lb/extent/stride/displacement near +-2^40, +-2^61, INT64_MIN/MAX, "
    "large counts) with pack and unpack",
    "bad arguments to pack calls: MPI_DATATYPE_NULL, uncommitted types, MPI_COMM_NULL, "
    "negative counts/positions/sizes, NULL position, bad datarep, short buffers",
    "MPIX_Gpu_memcpy between device ranges in and out of bounds, host ranges and NULL",
    "MPIX_Gpu_query of addresses in, around and outside allocations",
    "freed device ranges: reuse, stale addresses in calls and queries, double free, "
    "register/deregister",
    "point-to-point (every send mode, blocking/I/_init/_c, Recv/Irecv/Recv_init/Mprobe/"
    "Improbe/Probe, Sendrecv(_replace)) with valid and out-of-bounds buffers, MPI_PROC_NULL",
    "point-to-point with the extreme types of `hostile`",
    "point-to-point with bad ranks, tags, counts, datatypes and MPI_COMM_NULL",
    "truncated receives (some of 128 KiB to 2 MiB, device to device): error classes, statuses",
    "the interposed collectives on device buffers (refused cleanly or correct)"};
/* Relative frequency of each category. */
static const int cat_weight[K_N] = {14, 5, 10, 8, 6, 4, 6, 20, 6, 8, 6, 7};

static unsigned long long opt_seed = 22;
static long opt_first = 0, opt_cases = 3000;
static int opt_timeout = 60, opt_parity = 1, opt_verbose = 0, opt_trace = 0;
/* --host-only: every buffer on the host and only cases with valid buffers, so
   that the library passes every call to MPICH: a failure then is the
   program's own (its references and checks), not the library's. */
static int opt_host = 0;
static unsigned cat_on = (1u << K_N) - 1;

/* -------------------------------------------------------------- case state */

static int rank, nranks, tag_ub;
static MPI_Comm dcomm, ccomm; /* data and control (tokens) communicators */
static long cur_case = -1;
static int cur_cat;
static tg_rng_t rng;
static int case_failed;
static long nfail;
static long stat_run[K_N], stat_fail[K_N], stat_err[K_N], stat_ok[K_N];
static char call_desc[768];
static char sig_line[1024];
static size_t sig_len;

static int rnd(int n)
{
    return n <= 1 ? 0 : (int)(tg_next(&rng) % (uint64_t)n);
}

static int chance(int pct)
{
    return rnd(100) < pct;
}

/* The call about to run, for failure lines and for the signal handler. */
static void call_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void call_set(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(call_desc, sizeof(call_desc), fmt, ap);
    va_end(ap);
    int n = snprintf(sig_line, sizeof(sig_line),
                     " on rank %d in seed %llu case %ld [%s]: %s (rerun: badgen --seed %llu "
                     "--first %ld --cases 1)\n",
                     rank, opt_seed, cur_case, cur_cat < 0 ? "end" : cat_names[cur_cat], call_desc,
                     opt_seed, cur_case);
    sig_len = n < 0 ? 0 : (size_t)n < sizeof(sig_line) ? (size_t)n : sizeof(sig_line) - 1;
    if (opt_trace)
        fprintf(stderr, "badgen: trace%s", sig_line);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!case_failed && cur_cat >= 0)
        stat_fail[cur_cat]++;
    case_failed = 1;
    if (nfail++ < 200)
        fprintf(stderr,
                "badgen: FAIL rank %d seed %llu case %ld [%s]: %s: %s (rerun: badgen --seed %llu "
                "--first %ld --cases 1)\n",
                rank, opt_seed, cur_case, cur_cat < 0 ? "end" : cat_names[cur_cat], call_desc, msg,
                opt_seed, cur_case);
}

/* A failure of the test program itself (its own setup calls). */
#define SETUP(call_)                                                                               \
    do {                                                                                           \
        int rc_ = (call_);                                                                         \
        if (rc_ != MPI_SUCCESS)                                                                    \
            fail("setup call %s failed (%s)", #call_, errstr(rc_));                                \
    } while (0)

static const char *errstr(int rc)
{
    static char buf[MPI_MAX_ERROR_STRING + 64];
    char s[MPI_MAX_ERROR_STRING];
    int len = 0, cls = rc;
    if (rc == MPI_SUCCESS)
        return "MPI_SUCCESS";
    MPI_Error_class(rc, &cls);
    s[0] = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof(s), "(no string)");
    snprintf(buf, sizeof(buf), "class %d, \"%s\"", cls, s);
    return buf;
}

static int eclass(int rc)
{
    int c = rc;
    if (rc != MPI_SUCCESS && MPI_Error_class(rc, &c) != MPI_SUCCESS)
        c = MPI_ERR_UNKNOWN;
    return c;
}

/* ------------------------------------------------------- signals, watchdog */

static void put_num(char *p, size_t *n, long v)
{
    char t[24];
    int k = 0;
    unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
    do {
        t[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        p[(*n)++] = '-';
    while (k)
        p[(*n)++] = t[--k];
}

static void on_signal(int sig)
{
    /* One write, so that the lines of two ranks do not interleave. */
    char line[sizeof(sig_line) + 64];
    size_t n = 0;
    const char *w = sig == SIGALRM ? "badgen: TIMEOUT (hang, or waiting for a peer's)"
                                   : "badgen: FATAL SIGNAL ";
    while (*w)
        line[n++] = *w++;
    if (sig != SIGALRM)
        put_num(line, &n, sig);
    for (size_t i = 0; i < sig_len; i++)
        line[n++] = sig_line[i];
    ssize_t rc = write(2, line, n);
    (void)rc;
    if (sig == SIGALRM) {
        /* A rank may wait here for a peer stuck in an earlier case (ranks
           run apart between the cases they share): give the peer's watchdog
           time to name that case before this exit ends the run. */
        sleep((unsigned)opt_timeout);
        _exit(3);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void signals_install(void)
{
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
}

/* --------------------------------------------------------- exact type shapes */

/* Saturating 128-bit arithmetic: any value beyond +-2^110 is as unusable as
   2^110 itself. */
#define SAT ((i128)1 << 110)
static i128 sat(i128 v)
{
    return v > SAT ? SAT : v < -SAT ? -SAT : v;
}

static i128 smul(i128 a, i128 b)
{
    i128 aa = a < 0 ? -a : a, bb = b < 0 ? -b : b;
    if (!a || !b)
        return 0;
    if (aa > SAT / bb)
        return (a < 0) != (b < 0) ? -SAT : SAT;
    return a * b;
}

/* MPI's view of a type, exactly: lb and ub (extent = ub - lb), the true
   bounds, the size; overlap when instances or blocks may share bytes. */
typedef struct shape {
    i128 lb, ub, tlb, tub, size;
    int overlap;
} shape_t;

/* n >= 1 copies of s, the k-th shifted by k * stride. */
static shape_t shape_rep(shape_t s, i128 n, i128 stride)
{
    shape_t r = s;
    i128 last = smul(n - 1, stride);
    i128 lo = last < 0 ? last : 0, hi = last > 0 ? last : 0;
    r.lb = sat(s.lb + lo);
    r.ub = sat(s.ub + hi);
    r.tlb = sat(s.tlb + lo);
    r.tub = sat(s.tub + hi);
    r.size = smul(n, s.size);
    i128 astride = stride < 0 ? -stride : stride;
    if (n > 1 && s.size > 0 && astride < s.tub - s.tlb)
        r.overlap = 1;
    return r;
}

static shape_t shape_shift(shape_t s, i128 d)
{
    s.lb = sat(s.lb + d);
    s.ub = sat(s.ub + d);
    s.tlb = sat(s.tlb + d);
    s.tub = sat(s.tub + d);
    return s;
}

static shape_t shape_union(shape_t a, shape_t b)
{
    shape_t r;
    r.lb = a.lb < b.lb ? a.lb : b.lb;
    r.ub = a.ub > b.ub ? a.ub : b.ub;
    r.tlb = a.tlb < b.tlb ? a.tlb : b.tlb;
    r.tub = a.tub > b.tub ? a.tub : b.tub;
    r.size = sat(a.size + b.size);
    r.overlap = a.overlap || b.overlap || (a.tlb < b.tub && b.tlb < a.tub);
    return r;
}

static i128 shape_extent(const shape_t *s)
{
    return s->ub - s->lb;
}

/* A datatype of a case.  `t` is what the call gets. */
typedef struct btype {
    MPI_Datatype t;
    shape_t s;
    int named;     /* predefined or MPI_DATATYPE_NULL: never freed */
    int committed; /* 0: passed uncommitted on purpose */
    int homog;     /* one basic type of equal native and external32 size */
    char desc[600];
} btype_t;

static void desc_set(btype_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void desc_set(btype_t *b, const char *fmt, ...)
{
    char tmp[sizeof(b->desc)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    memcpy(b->desc, tmp, sizeof(tmp));
}

static const struct {
    MPI_Datatype t;
    const char *name;
    int size;
} hbasics[] = {{MPI_CHAR, "char", 1},   {MPI_SHORT, "short", 2},   {MPI_INT, "int", 4},
               {MPI_FLOAT, "float", 4}, {MPI_DOUBLE, "double", 8}, {MPI_INT64_T, "int64", 8},
               {MPI_BYTE, "byte", 1}};

static void bt_basic(btype_t *b)
{
    int i = rnd((int)(sizeof(hbasics) / sizeof(hbasics[0])));
    memset(b, 0, sizeof(*b));
    b->t = hbasics[i].t;
    b->s.lb = b->s.tlb = 0;
    b->s.ub = b->s.tub = b->s.size = hbasics[i].size;
    b->named = b->committed = b->homog = 1;
    desc_set(b, "%s", hbasics[i].name);
}

/* The shape MPI reports (valid types only). */
static void bt_read_shape(btype_t *b)
{
    MPI_Count lb, ext, tlb, text, size;
    PMPI_Type_get_extent_x(b->t, &lb, &ext);
    PMPI_Type_get_true_extent_x(b->t, &tlb, &text);
    PMPI_Type_size_x(b->t, &size);
    b->s.lb = lb;
    b->s.ub = (i128)lb + ext;
    b->s.tlb = tlb;
    b->s.tub = (i128)tlb + text;
    b->s.size = size;
    b->s.overlap = 0;
}

/* 1 when t or a type inside it has no bytes: MPICH 4.0.2 divides by zero
   packing such types (a darray's empty share of the array, typegen.h), on
   host memory too, so the generator leaves them out. */
static int has_empty(MPI_Datatype t)
{
    int ni, na, nd, comb, empty = 0;
    MPI_Count size = 0;
    PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_NAMED)
        return 0;
    PMPI_Type_size_x(t, &size);
    if (size == 0)
        return 1;
    int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
    MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
    PMPI_Type_get_contents(t, ni, na, nd, ints, aints, types);
    for (int i = 0; i < nd; i++) {
        int cni, cna, cnd, ccomb;
        empty = empty || has_empty(types[i]);
        PMPI_Type_get_envelope(types[i], &cni, &cna, &cnd, &ccomb);
        if (ccomb != MPI_COMBINER_NAMED)
            PMPI_Type_free(&types[i]);
    }
    free(ints);
    free(aints);
    free(types);
    return empty;
}

/* A random valid committed type (typegen), small, without empty parts. */
static void bt_valid(btype_t *b, int depth)
{
    memset(b, 0, sizeof(*b));
    b->t = tg_type(&rng, depth, b->desc, sizeof(b->desc));
    while (has_empty(b->t)) {
        PMPI_Type_free(&b->t);
        b->t = tg_type(&rng, depth, b->desc, sizeof(b->desc));
    }
    b->committed = 1;
    b->homog = tg_homogeneous(b->t);
    if (b->homog) {
        /* external32 sizes are the native ones? (MPI_LONG is not) */
        MPI_Count xs = 0, sz = 0;
        PMPI_Pack_external_size_c("external32", 1, b->t, &xs);
        PMPI_Type_size_x(b->t, &sz);
        b->homog = xs == sz;
    }
    bt_read_shape(b);
}

static void bt_free(btype_t *b)
{
    if (!b->named && b->t != MPI_DATATYPE_NULL)
        PMPI_Type_free(&b->t);
    b->t = MPI_DATATYPE_NULL;
}

static const int64_t bigs[] = {(int64_t)1 << 31,    (int64_t)1 << 32,    (int64_t)1 << 40,
                               (int64_t)1 << 47,    (int64_t)1 << 61,    (int64_t)1 << 62,
                               INT64_MAX,           INT64_MAX - 7,       -((int64_t)1 << 31),
                               -((int64_t)1 << 40), -((int64_t)1 << 61), -((int64_t)1 << 62),
                               INT64_MIN,           INT64_MIN + 8,       (int64_t)3 << 60,
                               -((int64_t)3 << 60), INT64_MAX - 4095};

static int64_t draw_disp(int small_pct)
{
    if (chance(small_pct))
        return rnd(129) - 64;
    return bigs[rnd((int)(sizeof(bigs) / sizeof(bigs[0])))];
}

static int draw_bigcount(void)
{
    static const int c[] = {1, 2, 3, 5, 1 << 20, 1 << 30, INT_MAX};
    return c[rnd(7)];
}

/* Which of the shape's int64 facts MPI must agree with; an exact value that
   does not fit int64 is skipped (MPICH wraps it). */
static int fits64(i128 v)
{
    return v >= INT64_MIN && v <= INT64_MAX;
}

static int bt_shape_agrees(const btype_t *b)
{
    MPI_Count lb, ext, tlb, text, size;
    PMPI_Type_get_extent_x(b->t, &lb, &ext);
    PMPI_Type_get_true_extent_x(b->t, &tlb, &text);
    PMPI_Type_size_x(b->t, &size);
    i128 e = shape_extent(&b->s), te = b->s.tub - b->s.tlb;
    /* MPICH keeps lb and ub: an extent is right only where both fit. */
    if (fits64(b->s.lb) && fits64(b->s.ub) && fits64(e) && (b->s.lb != lb || e != ext))
        return 0;
    if (fits64(b->s.tlb) && fits64(b->s.tub) && fits64(te) && (b->s.tlb != tlb || te != text))
        return 0;
    if (fits64(b->s.size) && b->s.size <= INT64_MAX / 2 && b->s.size != size &&
        size != MPI_UNDEFINED)
        return 0;
    return 1;
}

/*
 * A hostile type: constructors with extreme arguments around a child whose
 * first block sits at displacement 0, so that the bytes of instance 0 always
 * include the neighbourhood of the origin (an access from a device origin is
 * then a device access, however far the rest reaches).  Committed.
 */
static void bt_hostile(btype_t *b, int depth, int basic_only)
{
    btype_t c;
    if (depth > 0 && chance(35))
        bt_hostile(&c, depth - 1, basic_only);
    else if (!basic_only && chance(30))
        bt_valid(&c, 2);
    else
        bt_basic(&c);
    memset(b, 0, sizeof(*b));
    b->homog = c.homog;
    b->committed = 1;
    i128 cext = shape_extent(&c.s);
    int kind = rnd(6);
    switch (kind) {
    case 0: { /* resized */
        int64_t lb = draw_disp(30), ext = draw_disp(25);
        PMPI_Type_create_resized(c.t, (MPI_Aint)lb, (MPI_Aint)ext, &b->t);
        b->s = c.s;
        b->s.lb = lb;
        b->s.ub = (i128)lb + ext;
        desc_set(b, "resized(%s,lb=%lld,ext=%lld)", c.desc, (long long)lb, (long long)ext);
        break;
    }
    case 1: { /* hvector */
        int n = draw_bigcount(), bl = 1 + rnd(2);
        int64_t stride = draw_disp(15);
        PMPI_Type_create_hvector(n, bl, (MPI_Aint)stride, c.t, &b->t);
        b->s = shape_rep(shape_rep(c.s, bl, cext), n, stride);
        desc_set(b, "hvector(%d,%d,%lld,%s)", n, bl, (long long)stride, c.desc);
        break;
    }
    case 2:   /* hindexed */
    case 3: { /* hindexed_block */
        int n = 2 + rnd(2), bl[3], same = 1 + rnd(2);
        MPI_Aint d[3];
        char dd[160] = "";
        size_t used = 0;
        for (int i = 0; i < n; i++) {
            bl[i] = kind == 3 ? same : 1 + rnd(2);
            d[i] = (MPI_Aint)(i == 0 ? rnd(17) : draw_disp(20));
            int w = snprintf(dd + used, sizeof(dd) - used, "%s%d@%lld", i ? "," : "", bl[i],
                             (long long)d[i]);
            used += w > 0 && (size_t)w < sizeof(dd) - used ? (size_t)w : 0;
        }
        if (chance(50)) { /* the block at 0 need not come first */
            int j = 1 + rnd(n - 1);
            MPI_Aint td = d[0];
            int tb = bl[0];
            d[0] = d[j];
            bl[0] = bl[j];
            d[j] = td;
            bl[j] = tb;
        }
        if (kind == 2)
            PMPI_Type_create_hindexed(n, bl, d, c.t, &b->t);
        else
            PMPI_Type_create_hindexed_block(n, same, d, c.t, &b->t);
        for (int i = 0; i < n; i++) {
            shape_t blk = shape_shift(shape_rep(c.s, bl[i], cext), d[i]);
            b->s = i ? shape_union(b->s, blk) : blk;
        }
        desc_set(b, "%s([%s],%s)", kind == 2 ? "hindexed" : "hindexed_block", dd, c.desc);
        break;
    }
    case 4: { /* contiguous */
        int n = draw_bigcount();
        PMPI_Type_contiguous(n, c.t, &b->t);
        b->s = shape_rep(c.s, n, cext);
        desc_set(b, "contig(%d,%s)", n, c.desc);
        break;
    }
    default: { /* vector: stride in child extents */
        static const int strides[] = {INT_MAX, INT_MIN, 1 << 20, -(1 << 20), -1, 2, -3};
        int n = draw_bigcount(), stride = strides[rnd(7)];
        PMPI_Type_vector(n, 1, stride, c.t, &b->t);
        b->s = shape_rep(c.s, n, smul(stride, cext));
        desc_set(b, "vector(%d,1,%d,%s)", n, stride, c.desc);
        break;
    }
    }
    bt_free(&c);
    PMPI_Type_commit(&b->t);
}

/* ------------------------------------------------------------------ regions */

enum { RK_DEV, RK_HOST };

typedef struct region {
    int kind, live;
    char *base;  /* what calls get: a device address or a host pointer */
    size_t size; /* bytes from base */
    char *area;  /* the bytes compared: [area, area + alen) holds [base, base + size) */
    size_t alen; /* (host: the whole pages, guard bytes before and after base) */
    char *map;   /* host: the mapping, with PROT_NONE pages at both ends */
    size_t maplen;
    unsigned char *mir;  /* expected contents of the area */
    unsigned char *orig; /* contents before the call */
    unsigned long long fill;
    cl_mem mem; /* device: as MPIX_Gpu_query gives it */
    char name[16];
} region_t;

#define NREG 16
static region_t regs[NREG];
static int nregs;
/* Set when a call that had to fail left a request behind: the case's device
   buffers are then never freed (the library may still reach them). */
static int leak_regions;

static unsigned char pat(unsigned long long fill, i128 i)
{
    uint64_t z = (uint64_t)fill ^ ((uint64_t)(int64_t)i * 0x9E3779B97F4A7C15ull);
    z ^= z >> 29;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 32;
    return (unsigned char)z;
}

static i128 addr(const void *p)
{
    return (i128)(uintptr_t)p;
}

static char *mkptr(i128 a)
{
    return (char *)(uintptr_t)(uint64_t)a;
}

static size_t page_size(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

/* A buffer of size bytes filled from `fill`: on the device, or on the host
   between guard pages with base at the end of its pages (at_end) or a few
   guard bytes after their start. */
static region_t *region_new(int kind, size_t size, unsigned long long fill, int at_end,
                            const char *name)
{
    if (nregs == NREG) {
        fail("internal: too many regions");
        return NULL;
    }
    region_t *r = &regs[nregs++];
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->size = size;
    r->fill = fill;
    snprintf(r->name, sizeof(r->name), "%s", name);
    if (kind == RK_HOST) {
        size_t ps = page_size(), pages = (size + 64 + ps - 1) / ps;
        r->maplen = (pages + 2) * ps;
        r->map = mmap(NULL, r->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (r->map == MAP_FAILED) {
            fail("internal: mmap of %zu bytes", r->maplen);
            nregs--;
            return NULL;
        }
        mprotect(r->map, ps, PROT_NONE);
        mprotect(r->map + r->maplen - ps, ps, PROT_NONE);
        r->area = r->map + ps;
        r->alen = pages * ps;
        r->base = at_end ? r->area + r->alen - size : r->area + 1 + rnd(63);
    } else {
        void *d = NULL;
        call_set("MPIX_Gpu_malloc(%zu) for the case's %s buffer", size, name);
        int rc = MPIX_Gpu_malloc(size, &d);
        if (rc != MPI_SUCCESS) {
            fail("MPIX_Gpu_malloc(%zu) failed (%s)", size, errstr(rc));
            nregs--;
            return NULL;
        }
        r->base = r->area = d;
        r->alen = size;
        int isdev = 0;
        MPIX_Gpu_query(d, &isdev, &r->mem, NULL);
    }
    r->mir = malloc(r->alen + 1);
    r->orig = malloc(r->alen + 1);
    for (size_t j = 0; j < r->alen; j++)
        r->mir[j] = pat(fill, (i128)j - (r->base - r->area));
    if (kind == RK_HOST) {
        memcpy(r->area, r->mir, r->alen);
    } else if (size) {
        int rc = MPIX_Gpu_memcpy(r->base, r->mir, size);
        if (rc != MPI_SUCCESS)
            fail("setup MPIX_Gpu_memcpy to a new allocation failed (%s)", errstr(rc));
    }
    memcpy(r->orig, r->mir, r->alen);
    r->live = 1;
    return r;
}

static void region_release(region_t *r)
{
    if (!r->live)
        return;
    if (r->kind == RK_HOST) {
        munmap(r->map, r->maplen);
    } else {
        call_set("MPIX_Gpu_free(%p) of the case's %s buffer", (void *)r->base, r->name);
        int rc = MPIX_Gpu_free(r->base);
        if (rc != MPI_SUCCESS)
            fail("MPIX_Gpu_free of a live allocation failed (%s)", errstr(rc));
    }
    r->live = 0;
}

static void regions_end(void)
{
    for (int i = 0; i < nregs; i++) {
        if (!leak_regions || regs[i].kind == RK_HOST)
            region_release(&regs[i]);
        free(regs[i].mir);
        free(regs[i].orig);
    }
    nregs = 0;
}

/* The live region holding every byte of [lo, hi) (absolute addresses), or
   NULL.  An empty range is held by nothing. */
static region_t *resolve(i128 lo, i128 hi)
{
    if (hi <= lo)
        return NULL;
    for (int i = 0; i < nregs; i++) {
        region_t *r = &regs[i];
        if (r->live && lo >= addr(r->base) && hi <= addr(r->base) + (i128)r->size)
            return r;
    }
    return NULL;
}

/* Host address in the mirror of r that stands for absolute address a. */
static char *mirror_at(region_t *r, i128 a)
{
    return mkptr(addr(r->mir) + (a - addr(r->area)));
}

/* Reads a region's bytes now into buf (alen bytes). */
static int region_read(region_t *r, unsigned char *buf)
{
    if (r->kind == RK_HOST) {
        memcpy(buf, r->area, r->alen);
        return 1;
    }
    if (!r->size)
        return 1;
    int rc = MPIX_Gpu_memcpy(buf, r->base, r->size);
    if (rc != MPI_SUCCESS) {
        fail("reading back %s buffer: MPIX_Gpu_memcpy failed (%s)", r->name, errstr(rc));
        return 0;
    }
    return 1;
}

/* Every byte of r equals its mirror, except [skip_lo, skip_hi) (absolute
   addresses) when use_orig: then bytes outside it equal the original. */
static void region_check(region_t *r, int use_orig, i128 skip_lo, i128 skip_hi)
{
    if (!r || !r->live)
        return;
    unsigned char *now = malloc(r->alen + 1);
    if (!region_read(r, now)) {
        free(now);
        return;
    }
    const unsigned char *want = use_orig ? r->orig : r->mir;
    long bad = 0;
    i128 first = 0;
    for (size_t j = 0; j < r->alen; j++) {
        i128 a = addr(r->area) + (i128)j;
        if (use_orig && a >= skip_lo && a < skip_hi)
            continue;
        if (now[j] != want[j]) {
            if (!bad++)
                first = a - addr(r->base);
        }
    }
    if (bad)
        fail("%ld byte(s) of the %s %s buffer differ from the %s, the first at offset %lld "
             "from its start (size %zu)",
             bad, r->name, r->kind == RK_DEV ? "device" : "host",
             use_orig ? "original outside the call's reach" : "PMPI reference", (long long)first,
             r->size);
    free(now);
}

/* ------------------------------------------------------------- placements */

/* Where the bytes an access reaches, [lo, hi) relative to the pointer, sit
   against a region of size bytes: the offset of the pointer from its base. */
enum {
    PL_START,        /* first byte at the start */
    PL_END,          /* last byte at the end */
    PL_MID,          /* inside */
    PL_OVER_END,     /* 1..64 bytes past the end */
    PL_UNDER_START,  /* 1..64 bytes before the start */
    PL_ORIGIN_START, /* the pointer itself at the start */
    PL_ORIGIN_END1,  /* at end - 1 */
    PL_ORIGIN_END,   /* at end */
    PL_ORIGIN_BEFORE /* 1..64 bytes before the start */
};

static i128 place(int pl, i128 lo, i128 hi, size_t size)
{
    i128 len = hi - lo, room = (i128)size - len;
    switch (pl) {
    case PL_START:
        return -lo;
    case PL_END:
        return (i128)size - hi;
    case PL_MID:
        return -lo + (room > 0 ? (i128)(tg_next(&rng) % (uint64_t)(room + 1)) : 0);
    case PL_OVER_END:
        return (i128)size - hi + 1 + rnd(64);
    case PL_UNDER_START:
        return -lo - 1 - rnd(64);
    case PL_ORIGIN_START:
        return 0;
    case PL_ORIGIN_END1:
        return (i128)size - 1;
    case PL_ORIGIN_END:
        return (i128)size;
    default:
        return -1 - rnd(64);
    }
}

/* A placement: in-bounds ones (0..2) most of the time when allowed. */
static int draw_place(int inb_pct)
{
    return chance(inb_pct) ? rnd(3) : 3 + rnd(6);
}

/* Whether the library can represent the reach [p + lo, p + hi): int64
   offsets and a range inside the address space. */
static int representable(char *p, i128 lo, i128 hi)
{
    return fits64(lo) && fits64(hi) && fits64(hi - lo) && addr(p) + lo >= 0 &&
           addr(p) + hi <= ((i128)1 << 64);
}

/* The bytes count instances of s reach from their origin: [lo, hi). */
static void reach(const shape_t *s, i128 count, i128 *lo, i128 *hi)
{
    if (count <= 0 || s->size <= 0) {
        *lo = *hi = 0;
        return;
    }
    shape_t r = shape_rep(*s, count, shape_extent(s));
    *lo = r.tlb;
    *hi = r.tub;
}

/* ---------------------------------------------------------------- verdicts */

#define BIT(c_) ((uint64_t)1 << (c_))
/* Classes any refusal of a bad buffer or type may use. */
#define A_BUF                                                                                      \
    (BIT(MPI_ERR_BUFFER) | BIT(MPI_ERR_TYPE) | BIT(MPI_ERR_COUNT) | BIT(MPI_ERR_ARG) |             \
     BIT(MPI_ERR_OTHER))

/* Every class that names a bad argument (--no-parity accepts any of them
   where MPICH gives one). */
#define A_ANY                                                                                      \
    (A_BUF | BIT(MPI_ERR_TAG) | BIT(MPI_ERR_COMM) | BIT(MPI_ERR_RANK) | BIT(MPI_ERR_ROOT) |        \
     BIT(MPI_ERR_TRUNCATE))

typedef struct expect {
    int fail;         /* 1: an error is required */
    int may_fail;     /* 1: success or an allowed error */
    uint64_t allowed; /* classes accepted */
    int ref;          /* -1, or the class PMPI gave on the host mirrors */
    const char *why;  /* what makes the call bad */
} expect_t;

static int class_ok(uint64_t allowed, int cls)
{
    return cls >= 0 && cls < 64 && (allowed & BIT(cls));
}

/* Judges a return code; 1 when it succeeded and the result must be checked. */
static int judge(int rc, const expect_t *ex)
{
    int cls = eclass(rc);
    if (rc == MPI_SUCCESS) {
        stat_ok[cur_cat]++;
        if (ex->fail) {
            fail("returned MPI_SUCCESS, but %s: an error was required", ex->why);
            return 0;
        }
        if (ex->ref > 0) {
            fail("returned MPI_SUCCESS where PMPI on host copies returned class %d", ex->ref);
            return 0;
        }
        return !ex->may_fail;
    }
    stat_err[cur_cat]++;
    if (ex->ref > 0) {
        if (cls != ex->ref && (opt_parity || !class_ok(A_ANY, cls)))
            fail("returned %s; PMPI on host copies returned class %d", errstr(rc), ex->ref);
        return 0;
    }
    if (ex->ref == 0 && !ex->fail && !ex->may_fail) {
        fail("returned %s; PMPI on host copies succeeded", errstr(rc));
        return 0;
    }
    if (!ex->fail && !ex->may_fail) {
        fail("returned %s for a valid call", errstr(rc));
        return 0;
    }
    if (!class_ok(ex->allowed, cls))
        fail("returned %s, not an allowed class (%s)", errstr(rc), ex->why ? ex->why : "");
    return 0;
}

/* ------------------------------------------------------------ pack family */

typedef struct pkcall {
    int unpack, ext, large;
    btype_t *T;
    MPI_Count count;
    char *typed, *packed;
    MPI_Count psize, pos0;
    MPI_Comm comm;
    const char *datarep;
    int null_pos;
} pkcall_t;

static int pk_invoke(const pkcall_t *c, char *typed, char *packed, MPI_Count *pos, int pmpi)
{
    MPI_Aint apos = (MPI_Aint)*pos;
    int ipos = (int)*pos, rc;
    MPI_Count cpos = *pos;
    int pnull = c->null_pos && !pmpi;
    if (c->ext && c->large) {
        rc = c->unpack
                 ? (pmpi ? PMPI_Unpack_external_c : MPI_Unpack_external_c)(
                       c->datarep, packed, c->psize, pnull ? NULL : &cpos, typed, c->count, c->T->t)
                 : (pmpi ? PMPI_Pack_external_c : MPI_Pack_external_c)(c->datarep, typed, c->count,
                                                                       c->T->t, packed, c->psize,
                                                                       pnull ? NULL : &cpos);
        *pos = cpos;
    } else if (c->ext) {
        rc = c->unpack
                 ? (pmpi ? PMPI_Unpack_external
                         : MPI_Unpack_external)(c->datarep, packed, (MPI_Aint)c->psize,
                                                pnull ? NULL : &apos, typed, (int)c->count, c->T->t)
                 : (pmpi ? PMPI_Pack_external
                         : MPI_Pack_external)(c->datarep, typed, (int)c->count, c->T->t, packed,
                                              (MPI_Aint)c->psize, pnull ? NULL : &apos);
        *pos = apos;
    } else if (c->large) {
        rc = c->unpack
                 ? (pmpi ? PMPI_Unpack_c : MPI_Unpack_c)(packed, c->psize, pnull ? NULL : &cpos,
                                                         typed, c->count, c->T->t, c->comm)
                 : (pmpi ? PMPI_Pack_c : MPI_Pack_c)(typed, c->count, c->T->t, packed, c->psize,
                                                     pnull ? NULL : &cpos, c->comm);
        *pos = cpos;
    } else {
        rc = c->unpack
                 ? (pmpi ? PMPI_Unpack : MPI_Unpack)(packed, (int)c->psize, pnull ? NULL : &ipos,
                                                     typed, (int)c->count, c->T->t, c->comm)
                 : (pmpi ? PMPI_Pack : MPI_Pack)(typed, (int)c->count, c->T->t, packed,
                                                 (int)c->psize, pnull ? NULL : &ipos, c->comm);
        *pos = ipos;
    }
    return rc;
}

static const char *pk_name(const pkcall_t *c)
{
    static const char *n[8] = {
        "MPI_Pack",          "MPI_Unpack",          "MPI_Pack_c",          "MPI_Unpack_c",
        "MPI_Pack_external", "MPI_Unpack_external", "MPI_Pack_external_c", "MPI_Unpack_external_c"};
    return n[(c->ext ? 4 : 0) + (c->large ? 2 : 0) + c->unpack];
}

/* Packed bytes of count instances (native or external32); -1 if unknown. */
static i128 pk_bytes(const pkcall_t *c)
{
    if (c->count <= 0 || c->T->t == MPI_DATATYPE_NULL)
        return 0;
    if (!c->ext || c->T->homog)
        return smul(c->count, c->T->s.size);
    return -1;
}

static const char *where_desc(region_t *r, i128 off)
{
    static char b[4][96];
    static int k;
    k = (k + 1) % 4;
    if (!r)
        snprintf(b[k], sizeof(b[k]), "NULL");
    else
        snprintf(b[k], sizeof(b[k]), "%s %s+%lld(of %zu)", r->kind == RK_DEV ? "dev" : "host",
                 r->name, (long long)off, r->size);
    return b[k];
}

/* Runs one pack-family call as drawn and judges it.  `tr`/`pr` are the
   regions the pointers were drawn from (for the description only). */
static void pk_run(pkcall_t *c, region_t *tr, i128 toff, region_t *pr, i128 poff,
                   const char *arg_bad, int arg_class)
{
    i128 n = pk_bytes(c);
    MPI_Count pos = c->pos0;
    call_set("%s(type=%s, count=%lld, typed=%s, packed=%s, size=%lld, pos=%lld%s%s)", pk_name(c),
             c->T->desc, (long long)c->count, where_desc(tr, toff), where_desc(pr, poff),
             (long long)c->psize, (long long)c->pos0,
             c->comm == MPI_COMM_NULL ? ", MPI_COMM_NULL" : "",
             c->null_pos ? ", position NULL" : "");
    expect_t ex = {0, 0, A_BUF, -1, NULL};
    i128 tlo = 0, thi = 0;
    reach(&c->T->s, c->count, &tlo, &thi);
    i128 ta = addr(c->typed) + tlo, tb = addr(c->typed) + thi;
    i128 pa = addr(c->packed) + c->pos0, pb = pa + (n > 0 ? n : 0);
    region_t *rt = NULL, *rp = NULL;
    int touches = n > 0;
    if (arg_bad) {
        ex.fail = 1;
        ex.why = arg_bad;
        ex.allowed = BIT(arg_class) |
                     (arg_class == MPI_ERR_TRUNCATE ? BIT(MPI_ERR_ARG) | BIT(MPI_ERR_BUFFER) : 0);
    }
    if (touches) {
        if (!representable(c->typed, tlo, thi))
            rt = NULL;
        else
            rt = resolve(ta, tb);
        rp = resolve(pa, pb);
        if (!rt || !rp) {
            if (!ex.fail) {
                ex.fail = 1;
                ex.why = !rt ? "the typed side reaches outside any live allocation"
                             : "the packed side reaches outside any live allocation";
                ex.allowed = A_BUF;
            } else {
                ex.allowed |= A_BUF;
            }
        }
    }
    /* A packed buffer too short for the data may be what the call reports. */
    if (n < 0 || n > (i128)c->psize - c->pos0)
        ex.allowed |= BIT(MPI_ERR_TRUNCATE) | BIT(MPI_ERR_ARG);
    /* The reference: the same call through PMPI on host mirrors, where that is
       safe (every byte inside a mirror, nothing MPICH fails to check). */
    int can_ref = (!touches || (rt && rp)) && !c->null_pos &&
                  (arg_bad == NULL || arg_class != MPI_ERR_TRUNCATE) &&
                  !(c->ext && strcmp(c->datarep, "external32"));
    MPI_Count refpos = c->pos0;
    int overlap_write = c->unpack && c->T->s.overlap && c->count > 0;
    if (can_ref) {
        char *mt = touches ? mirror_at(rt, addr(c->typed)) : c->typed;
        char *mp = touches ? mirror_at(rp, addr(c->packed)) : c->packed;
        /* Without bytes to move, point both at scratch so MPICH dereferences
           nothing of ours. */
        static char scratch[64];
        if (!touches) {
            mt = scratch;
            mp = scratch;
        }
        int rr = pk_invoke(c, mt, mp, &refpos, 1);
        ex.ref = eclass(rr);
        if (ex.ref != MPI_SUCCESS && !ex.fail) {
            ex.fail = 1;
            ex.why = "PMPI refused it on host copies";
            ex.allowed = BIT(ex.ref);
        } else if (ex.ref == MPI_SUCCESS && ex.fail) {
            /* MPICH accepts what this program calls bad: keep the demand for an
               error (a device side must not run into the unchecked case) but
               do not ask for parity. */
            ex.ref = -1;
        }
    }
    int rc = pk_invoke(c, c->typed, c->packed, &pos, 0);
    int ok = judge(rc, &ex);
    /* Bytes: on success the mirrors; otherwise the original bytes outside the
       call's output reach. */
    for (int i = 0; i < nregs; i++) {
        region_t *r = &regs[i];
        if (ok && !overlap_write) {
            region_check(r, 0, 0, 0);
        } else {
            i128 lo = c->unpack ? ta : pa, hi = c->unpack ? tb : pb;
            if (c->unpack && !representable(c->typed, tlo, thi))
                lo = hi = 0;
            region_check(r, 1, lo, hi);
        }
    }
    if (ok && pos != refpos)
        fail("position %lld after the call, PMPI gave %lld", (long long)pos, (long long)refpos);
}

/* The packed region and pointer for a call that moves n packed bytes from
   pos0; returns the pointer. */
static char *packed_side(int dev_pct, i128 n, MPI_Count pos0, int inb_pct, region_t **pr,
                         i128 *poff, int allow_oob)
{
    int dev = chance(dev_pct) && !opt_host;
    size_t need = (size_t)(n > 0 ? n : 0) + (size_t)pos0;
    size_t size = need + (size_t)rnd(48) + (chance(10) ? 0 : 1);
    int pl = allow_oob && dev ? draw_place(inb_pct) : rnd(3);
    *pr = region_new(dev ? RK_DEV : RK_HOST, size ? size : 1, tg_next(&rng), chance(50), "packed");
    if (!*pr)
        return NULL;
    *poff = place(pl, pos0, pos0 + (n > 0 ? n : 0), (*pr)->size);
    return mkptr(addr((*pr)->base) + *poff);
}

static void case_pack(int ext, int hostile, int args)
{
    btype_t T;
    if (hostile)
        bt_hostile(&T, 1, ext);
    else
        bt_valid(&T, 3);
    if (ext && !T.homog) {
        bt_free(&T);
        bt_basic(&T);
    }
    if (hostile && !bt_shape_agrees(&T)) {
        fail("internal: the program's shape of %s disagrees with MPI's", T.desc);
        bt_free(&T);
        return;
    }
    pkcall_t c;
    memset(&c, 0, sizeof(c));
    c.T = &T;
    c.unpack = rnd(2);
    c.ext = ext;
    c.large = chance(30);
    c.comm = dcomm;
    c.datarep = "external32";
    static const int counts[] = {0, 1, 1, 2, 3, 4, 7, 8};
    c.count = hostile && chance(40) ? (chance(80) ? 1 : 2) : counts[rnd(8)];
    if (hostile && c.large && chance(25))
        c.count = chance(50) ? ((MPI_Count)1 << 31) + rnd(5) : (MPI_Count)1 << 40;
    c.pos0 = chance(50) ? 0 : rnd(40);
    /* Keep valid cases small. */
    i128 lo, hi;
    reach(&T.s, c.count, &lo, &hi);
    while (!hostile && c.count > 1 && hi - lo > (1 << 16)) {
        c.count /= 2;
        reach(&T.s, c.count, &lo, &hi);
    }
    i128 n = pk_bytes(&c);
    if (n < 0) {
        MPI_Count x = 0;
        PMPI_Pack_external_size_c("external32", c.count, T.t, &x);
        n = x;
    }
    int fits = representable(mkptr(1 << 20), lo, hi) && hi - lo <= (1 << 17) && n <= (1 << 20);
    /* Typed side. */
    int tdev = hostile ? chance(85) : chance(65);
    if (!fits)
        tdev = 1;
    if (opt_host && (tdev = 0, !fits)) {
        bt_free(&T);
        return;
    }
    size_t tsize = fits ? (size_t)(hi - lo) + (size_t)rnd(64) + 1 : (size_t)(1 + rnd(4096));
    region_t *tr = region_new(tdev ? RK_DEV : RK_HOST, tsize, tg_next(&rng), chance(50), "typed");
    if (!tr) {
        bt_free(&T);
        return;
    }
    int pl = !tdev || args ? rnd(3) : draw_place(hostile ? 50 : 70);
    if (!fits || !representable(tr->base, lo, hi))
        pl = PL_ORIGIN_START + rnd(4);
    i128 toff = place(pl, lo, hi, tr->size);
    c.typed = mkptr(addr(tr->base) + toff);
    /* Packed side. */
    region_t *pr = NULL;
    i128 poff = 0;
    i128 pn = fits ? n : 64;
    c.packed = packed_side(60, pn, c.pos0, 75, &pr, &poff, !args);
    if (!c.packed) {
        bt_free(&T);
        return;
    }
    c.psize = c.pos0 + (pn > 0 ? (MPI_Count)pn : 0) + (chance(50) ? 0 : rnd(16));
    const char *arg_bad = NULL;
    int arg_class = 0;
    MPI_Datatype uncommitted = MPI_DATATYPE_NULL;
    btype_t U;
    if (!hostile && !args && n > 0 && chance(8)) {
        /* A short packed buffer: the call must not run past it. */
        c.psize = c.pos0 + (MPI_Count)n - 1 - rnd((int)(n < 8 ? n : 8));
        arg_bad = "the packed buffer is shorter than the data";
        arg_class = MPI_ERR_TRUNCATE;
    }
    if (args) {
        int devside = tr->kind == RK_DEV || pr->kind == RK_DEV;
        switch (rnd(9)) {
        case 0:
            U = T;
            U.t = MPI_DATATYPE_NULL;
            U.named = 1;
            desc_set(&U, "MPI_DATATYPE_NULL");
            c.T = &U;
            arg_bad = "MPI_DATATYPE_NULL";
            arg_class = MPI_ERR_TYPE;
            break;
        case 1:
            /* contiguous(1, T): the same bytes as T, never committed */
            PMPI_Type_contiguous(1, T.t, &uncommitted);
            U = T;
            U.t = uncommitted;
            U.named = 1;
            desc_set(&U, "uncommitted contig(1,%s)", T.desc);
            c.T = &U;
            c.count = c.count ? 1 : 0;
            arg_bad = "an uncommitted datatype";
            arg_class = MPI_ERR_TYPE;
            if (!c.count)
                arg_bad = NULL; /* nothing moves: MPICH still checks the type */
            break;
        case 2:
            if (ext)
                goto datarep;
            c.comm = MPI_COMM_NULL;
            arg_bad = "MPI_COMM_NULL";
            arg_class = MPI_ERR_COMM;
            break;
        case 3:
            c.count = -1 - rnd(3);
            arg_bad = "a negative count";
            arg_class = MPI_ERR_COUNT;
            break;
        case 4:
            if (!devside)
                break; /* MPICH does not check it */
            c.pos0 = -1 - rnd(9);
            arg_bad = "a negative position";
            arg_class = MPI_ERR_ARG;
            break;
        case 5:
            c.psize = -1 - rnd(9);
            arg_bad = "a negative buffer size";
            arg_class = MPI_ERR_ARG;
            break;
        case 6:
            if (!devside)
                break;
            c.null_pos = 1;
            arg_bad = "a NULL position";
            arg_class = MPI_ERR_ARG;
            break;
        case 7:
        datarep:
            if (!ext || !devside)
                break;
            c.datarep = chance(50) ? "native" : "external64";
            arg_bad = "a datarep other than external32";
            arg_class = MPI_ERR_ARG;
            break;
        default:
            if (!devside || n <= 0)
                break;
            c.psize = c.pos0 + (MPI_Count)n - 1;
            arg_bad = "the packed buffer is shorter than the data";
            arg_class = MPI_ERR_TRUNCATE;
            break;
        }
        if (arg_bad && !c.null_pos && c.T == &T && arg_class == MPI_ERR_TYPE)
            arg_bad = NULL;
    }
    if (arg_bad && arg_class == MPI_ERR_TRUNCATE && tr->kind == RK_HOST && pr->kind == RK_HOST)
        arg_bad = NULL, c.psize = c.pos0 + (MPI_Count)(n > 0 ? n : 0); /* MPICH overruns */
    /* Sizes that fit an int for the int forms. */
    if (!c.large && (c.count > INT_MAX || c.psize > INT_MAX || c.pos0 > INT_MAX)) {
        c.count = 1;
    }
    if (arg_bad || (!args && !hostile) || fits) {
        pk_run(&c, tr, toff, pr, poff, arg_bad, arg_class);
    } else {
        /* Hostile reach that cannot fit: the call must refuse it. */
        pk_run(&c, tr, toff, pr, poff, NULL, 0);
    }
    if (uncommitted != MPI_DATATYPE_NULL)
        PMPI_Type_free(&uncommitted);
    bt_free(&T);
}

/* A case of the bottom kind: MPI_BOTTOM (NULL) as origin and an hindexed
   type whose displacement is a device address, and a far host origin whose
   type reaches back into an allocation. */
static void case_absolute(void)
{
    if (opt_host)
        return;
    btype_t C;
    bt_valid(&C, 2);
    i128 lo, hi;
    reach(&C.s, 1, &lo, &hi);
    size_t size = (size_t)(hi - lo) + 64;
    region_t *tr = region_new(RK_DEV, size, tg_next(&rng), 0, "typed");
    if (!tr) {
        bt_free(&C);
        return;
    }
    int bottom = chance(50);
    int inb = chance(70);
    i128 at = inb ? -lo + rnd((int)(size - (size_t)(hi - lo)) + 1) : (i128)size - hi + 1 + rnd(32);
    MPI_Aint d;
    char *origin;
    if (bottom) {
        d = (MPI_Aint)(addr(tr->base) + at);
        origin = MPI_BOTTOM;
    } else {
        d = (MPI_Aint)((int64_t)1 << (20 + rnd(22)));
        origin = mkptr(addr(tr->base) + at - d);
    }
    int bl = 1;
    btype_t T;
    memset(&T, 0, sizeof(T));
    PMPI_Type_create_hindexed(1, &bl, &d, C.t, &T.t);
    PMPI_Type_commit(&T.t);
    T.committed = 1;
    T.s = shape_shift(C.s, d);
    desc_set(&T, "hindexed([1@%s%lld],%s)", bottom ? "&dev+" : "",
             (long long)(bottom ? (long long)at : (long long)d), C.desc);
    pkcall_t c;
    memset(&c, 0, sizeof(c));
    c.T = &T;
    c.unpack = rnd(2);
    c.large = chance(30);
    c.comm = dcomm;
    c.count = 1;
    c.typed = origin;
    region_t *pr = NULL;
    i128 poff = 0;
    i128 n = smul(1, T.s.size);
    c.packed = packed_side(50, n, 0, 100, &pr, &poff, 0);
    c.psize = (MPI_Count)n;
    if (c.packed)
        pk_run(&c, tr, addr(origin) - addr(tr->base), pr, poff, NULL, 0);
    bt_free(&T);
    bt_free(&C);
}

/* ------------------------------------------------------------------ memcpy */

/* A pointer for n bytes of memcpy: valid or not.  *r is its region. */
static char *copy_ptr(size_t n, region_t **r, int *valid_out, const char *name)
{
    /* A huge count is never given a host buffer (that would be a real
       overrun, the program's own) nor a pointer far from its allocation
       (a wild host pointer): the device pointer sits inside. */
    int huge = n > ((size_t)1 << 20), k = rnd(10);
    *valid_out = 1;
    *r = NULL;
    if (k == 0) {
        *valid_out = n == 0;
        return NULL;
    }
    if (k <= 3 && !huge) {
        *r = region_new(RK_HOST, n ? n + (size_t)rnd(64) : 1, tg_next(&rng), chance(50), name);
        if (!*r)
            return NULL;
        return (*r)->base + rnd((int)((*r)->size - n) + 1);
    }
    size_t size = huge ? (size_t)rnd(4096) + 1 : n + (size_t)rnd(64);
    *r = region_new(RK_DEV, size ? size : 1, tg_next(&rng), chance(50), name);
    if (!*r)
        return NULL;
    int pl = huge ? PL_ORIGIN_START + rnd(4) : draw_place(60);
    i128 off = place(pl, 0, (i128)n, (*r)->size);
    char *p = mkptr(addr((*r)->base) + off);
    *valid_out = n == 0 || resolve(addr(p), addr(p) + (i128)n) != NULL;
    return p;
}

static void case_memcpy(void)
{
    static const size_t big[] = {SIZE_MAX, SIZE_MAX / 2, (size_t)1 << 40, (size_t)1 << 31,
                                 ((size_t)1 << 63) + 1};
    size_t n;
    int k = rnd(10);
    if (k == 0)
        n = 0;
    else if (k == 1)
        n = big[rnd(5)];
    else
        n = 1 + (size_t)rnd(k < 8 ? 300 : 70000);
    region_t *dr = NULL, *sr = NULL;
    int dv, sv;
    char *dst, *src;
    int same = n && n < ((size_t)1 << 20) && chance(15);
    if (same) {
        /* Both in one allocation, possibly overlapping. */
        size_t size = n + (size_t)rnd(200) + 1;
        dr = sr = region_new(RK_DEV, size, tg_next(&rng), 0, "buf");
        if (!dr)
            return;
        dst = dr->base + rnd((int)(size - n) + 1);
        src = dr->base + rnd((int)(size - n) + 1);
        dv = sv = 1;
    } else {
        dst = copy_ptr(n, &dr, &dv, "dst");
        src = copy_ptr(n, &sr, &sv, "src");
    }
    call_set("MPIX_Gpu_memcpy(dst=%s, src=%s, %zu)",
             dr ? where_desc(dr, addr(dst) - addr(dr->base)) : "NULL",
             sr ? where_desc(sr, addr(src) - addr(sr->base)) : "NULL", n);
    expect_t ex = {0, 0, A_BUF, -1, NULL};
    if (n == 0) {
        ex.may_fail = 1; /* nothing to copy: success, or a refused pointer */
    } else if (!dv || !sv) {
        ex.fail = 1;
        ex.why = !dv ? "the destination range is not inside a live allocation or host buffer"
                     : "the source range is not inside a live allocation or host buffer";
    }
    if (!ex.fail && n) {
        memmove(mirror_at(dr, addr(dst)), mirror_at(sr, addr(src)), n);
    }
    int rc = MPIX_Gpu_memcpy(dst, src, n);
    int ok = judge(rc, &ex);
    for (int i = 0; i < nregs; i++) {
        if (ok || (ex.may_fail && rc == MPI_SUCCESS && n == 0))
            region_check(&regs[i], 0, 0, 0);
        else
            region_check(&regs[i], 1, 0, 0);
    }
}

/* ------------------------------------------------------------------- query */

static void query_one(void *p, int want_dev, region_t *r, int stale, const char *what)
{
    int isdev = -7;
    cl_mem mem = NULL;
    size_t off = (size_t)-1;
    call_set("MPIX_Gpu_query(%s)", what);
    int rc = MPIX_Gpu_query(p, &isdev, &mem, &off);
    if (rc != MPI_SUCCESS) {
        stat_err[cur_cat]++;
        if (want_dev >= 0 || !class_ok(A_BUF, eclass(rc)))
            fail("returned %s", errstr(rc));
        return;
    }
    stat_ok[cur_cat]++;
    if (want_dev == 1) {
        if (isdev != 1)
            fail("is_device=%d for a live device address", isdev);
        else if (mem != r->mem || off != (size_t)(addr(p) - addr(r->base)))
            fail("mem %p offset %zu, want %p offset %lld", (void *)mem, off, (void *)r->mem,
                 (long long)(addr(p) - addr(r->base)));
    } else if (want_dev == 0) {
        if (isdev != 0)
            fail("is_device=%d for a host address", isdev);
    } else {
        /* In the reserved range but not live: no claim that it is host
           memory for a freed range (issue 22: "device and freed"), and no
           live buffer. */
        if (isdev != 0 && isdev != 1)
            fail("is_device=%d", isdev);
        if (stale && isdev == 0)
            fail("a freed device address is called host memory (is_device=0)");
        if (isdev == 1 && mem) {
            for (int i = 0; i < nregs; i++)
                if (regs[i].live && regs[i].kind == RK_DEV && regs[i].mem == mem &&
                    off < regs[i].size)
                    return;
            /* a cl_mem of nothing live */
            fail("is_device=1 with a cl_mem %p of no live allocation", (void *)mem);
        }
    }
}

static void case_query(void)
{
    size_t size = (size_t)rnd(3) == 0 ? 0 : 1 + (size_t)rnd(5000);
    region_t *r = region_new(RK_DEV, size, tg_next(&rng), 0, "buf");
    region_t *h = region_new(RK_HOST, 64, tg_next(&rng), 0, "host");
    if (!r || !h)
        return;
    char what[128];
    for (int i = 0; i < 6; i++) {
        i128 off;
        int k = rnd(8);
        if (k == 0)
            off = 0;
        else if (k == 1)
            off = size ? (i128)rnd((int)size) : 0;
        else if (k == 2)
            off = size ? (i128)size - 1 : 0;
        else if (k == 3)
            off = (i128)size;
        else if (k == 4)
            off = (i128)size + 1 + rnd(64);
        else if (k == 5)
            off = -1 - rnd(64);
        else
            off = (i128)draw_disp(0);
        char *p = mkptr(addr(r->base) + off);
        int live = off >= 0 && (off < (i128)size || (size == 0 && off == 0));
        snprintf(what, sizeof(what), "dev+%lld of an allocation of %zu", (long long)off, size);
        if (k == 6 || k == 7) {
            /* Far away: host memory unless it stays in the reserved range; no
               claim either way, but it must not crash or name a live buffer. */
            query_one(p, live ? 1 : -1, r, 0, what);
        } else {
            query_one(p, live ? 1 : -1, r, 0, what);
        }
    }
    int onstack = 0;
    query_one(h->base + rnd(64), 0, NULL, 0, "a guarded host buffer");
    query_one(&onstack, 0, NULL, 0, "a stack address");
    query_one(NULL, 0, NULL, 0, "NULL");
    call_set("MPIX_Gpu_query(dev, is_device=NULL)");
    int rc = MPIX_Gpu_query(r->base, NULL, NULL, NULL);
    if (rc == MPI_SUCCESS)
        fail("accepted a NULL is_device");
    else if (!class_ok(A_BUF, eclass(rc)))
        fail("returned %s", errstr(rc));
}

/* ------------------------------------------------------------------- stale */

static void case_stale(void)
{
    size_t size = 16 + (size_t)rnd(8000);
    region_t *a = region_new(RK_DEV, size, tg_next(&rng), 0, "freed");
    if (!a)
        return;
    char *old = a->base;
    i128 off = rnd((int)size);
    int reg = chance(25);
    if (reg) {
        /* A registered second address of a live allocation, deregistered. */
        void *r2 = NULL;
        call_set("MPIX_Gpu_register(mem of a live allocation)");
        int rc = MPIX_Gpu_register(a->mem, &r2);
        if (rc != MPI_SUCCESS) {
            fail("returned %s", errstr(rc));
            return;
        }
        region_t *ra = a;
        call_set("MPIX_Gpu_deregister(a registered address)");
        rc = MPIX_Gpu_deregister(r2);
        if (rc != MPI_SUCCESS)
            fail("returned %s", errstr(rc));
        call_set("MPIX_Gpu_deregister(the same address again)");
        rc = MPIX_Gpu_deregister(r2);
        if (rc == MPI_SUCCESS)
            fail("a second deregister succeeded");
        else if (!class_ok(A_BUF, eclass(rc)))
            fail("returned %s", errstr(rc));
        old = r2;
        (void)ra;
    } else {
        region_release(a);
        /* Double free, a pointer inside, a host pointer. */
        call_set("MPIX_Gpu_free(a freed address)");
        int rc = MPIX_Gpu_free(old);
        if (rc == MPI_SUCCESS)
            fail("a second free succeeded");
        else if (!class_ok(A_BUF, eclass(rc)))
            fail("returned %s", errstr(rc));
    }
    /* A new allocation of the same size: a freed range is not handed out
       again at once (quarantine), unless the program allocated the whole
       range in between. */
    region_t *b = NULL;
    if (chance(70)) {
        b = region_new(RK_DEV, size, tg_next(&rng), 0, "new");
        if (b && !reg && addr(b->base) < addr(old) + (i128)size &&
            addr(old) < addr(b->base) + (i128)size) {
            call_set("MPIX_Gpu_malloc(%zu) right after MPIX_Gpu_free of %zu bytes", size, size);
            fail("the freed range [%p, +%zu) was handed out again at once (%p): a stale "
                 "pointer now reaches the new allocation",
                 (void *)old, size, (void *)b->base);
        }
    }
    char *p = mkptr(addr(old) + off);
    region_t *now = resolve(addr(p), addr(p) + 1);
    /* Query: the stale address is "device and freed" (or an error); where it
       is live again, the new allocation. */
    if (now)
        query_one(p, 1, now, 0, "a stale address now inside a new allocation");
    else if (!reg || chance(50))
        query_one(p, -1, NULL, !reg, "a freed device address");
    /* Use it: memcpy from/to it, pack from it, unpack to it. */
    size_t n = 1 + (size_t)rnd(64);
    region_t *h = region_new(RK_HOST, n + 64, tg_next(&rng), 1, "host");
    if (!h)
        return;
    expect_t ex = {0, 0, A_BUF, -1, NULL};
    region_t *live = resolve(addr(p), addr(p) + (i128)n);
    if (!live) {
        ex.fail = 1;
        ex.why = "the address was freed";
    }
    int which = rnd(4);
    int rc;
    if (which == 0 || which == 1) {
        call_set("MPIX_Gpu_memcpy(%s, %s, %zu)", which ? "host" : "stale", which ? "stale" : "host",
                 n);
        if (!ex.fail) {
            if (which)
                memcpy(mirror_at(h, addr(h->base)), mirror_at(live, addr(p)), n);
            else
                memcpy(mirror_at(live, addr(p)), mirror_at(h, addr(h->base)), n);
        }
        rc = which ? MPIX_Gpu_memcpy(h->base, p, n) : MPIX_Gpu_memcpy(p, h->base, n);
    } else {
        int pos = 0, refpos = 0;
        call_set("%s(stale, %zu x MPI_BYTE) with a host packed buffer",
                 which == 2 ? "MPI_Pack" : "MPI_Unpack", n);
        if (!ex.fail) {
            if (which == 2)
                PMPI_Pack(mirror_at(live, addr(p)), (int)n, MPI_BYTE, mirror_at(h, addr(h->base)),
                          (int)n, &refpos, MPI_COMM_WORLD);
            else
                PMPI_Unpack(mirror_at(h, addr(h->base)), (int)n, &refpos, mirror_at(live, addr(p)),
                            (int)n, MPI_BYTE, MPI_COMM_WORLD);
        }
        rc = which == 2 ? MPI_Pack(p, (int)n, MPI_BYTE, h->base, (int)n, &pos, MPI_COMM_WORLD)
                        : MPI_Unpack(h->base, (int)n, &pos, p, (int)n, MPI_BYTE, MPI_COMM_WORLD);
    }
    int ok = judge(rc, &ex);
    for (int i = 0; i < nregs; i++)
        region_check(&regs[i], !ok, 0, 0);
}

/* ---------------------------------------------------------- point-to-point */

enum {
    S_SEND,
    S_BSEND,
    S_SSEND,
    S_RSEND,
    S_ISEND,
    S_IBSEND,
    S_ISSEND,
    S_IRSEND,
    S_SEND_INIT,
    S_BSEND_INIT,
    S_SSEND_INIT,
    S_RSEND_INIT,
    S_SEND_C,
    S_SSEND_C,
    S_ISEND_C,
    S_SEND_INIT_C,
    S_N
};
static const char *const s_names[S_N] = {
    "MPI_Send",      "MPI_Bsend",      "MPI_Ssend",      "MPI_Rsend",
    "MPI_Isend",     "MPI_Ibsend",     "MPI_Issend",     "MPI_Irsend",
    "MPI_Send_init", "MPI_Bsend_init", "MPI_Ssend_init", "MPI_Rsend_init",
    "MPI_Send_c",    "MPI_Ssend_c",    "MPI_Isend_c",    "MPI_Send_init_c"};
enum {
    R_RECV,
    R_IRECV,
    R_RECV_INIT,
    R_MPROBE,
    R_IMPROBE,
    R_PROBE,
    R_IPROBE,
    R_RECV_C,
    R_IRECV_C,
    R_MPROBE_C,
    R_N
};
static const char *const r_names[R_N] = {"MPI_Recv",
                                         "MPI_Irecv",
                                         "MPI_Recv_init",
                                         "MPI_Mprobe+MPI_Mrecv",
                                         "MPI_Improbe+MPI_Imrecv",
                                         "MPI_Probe+MPI_Recv",
                                         "MPI_Iprobe+MPI_Recv",
                                         "MPI_Recv_c",
                                         "MPI_Irecv_c",
                                         "MPI_Mprobe+MPI_Mrecv_c"};
enum { C_WAIT, C_TEST, C_WAITALL, C_WAITANY, C_WAITSOME, C_TESTALL, C_TESTANY, C_TESTSOME, C_N };
static const char *const c_names[C_N] = {"MPI_Wait",    "MPI_Test",     "MPI_Waitall",
                                         "MPI_Waitany", "MPI_Waitsome", "MPI_Testall",
                                         "MPI_Testany", "MPI_Testsome"};

static int s_nonblocking(int f)
{
    return (f >= S_ISEND && f <= S_IRSEND) || f == S_ISEND_C;
}

static int s_persistent(int f)
{
    return (f >= S_SEND_INIT && f <= S_RSEND_INIT) || f == S_SEND_INIT_C;
}

static int s_ready(int f)
{
    return f == S_RSEND || f == S_IRSEND || f == S_RSEND_INIT;
}

static int r_posted_first(int f)
{
    return f == R_IRECV || f == R_RECV_INIT || f == R_IRECV_C;
}

static int r_probe(int f)
{
    return f == R_MPROBE || f == R_IMPROBE || f == R_PROBE || f == R_IPROBE || f == R_MPROBE_C;
}

#define SENTINEL 0x5a5a5a

/* Completes one request; returns the class-bearing code a single-completion
   call would return (the status's MPI_ERROR after MPI_ERR_IN_STATUS), and
   *single: whether the completion call is single-completion (its status's
   MPI_ERROR must stay as it was). */
static int complete(MPI_Request *req, int form, MPI_Status *st, int *single)
{
    int rc = MPI_SUCCESS, flag = 0, idx = -1, outc = 0, idxs[1];
    *single = form == C_WAIT || form == C_TEST || form == C_WAITANY || form == C_TESTANY;
    st->MPI_ERROR = SENTINEL;
    switch (form) {
    case C_WAIT:
        rc = MPI_Wait(req, st);
        break;
    case C_TEST:
        do
            rc = MPI_Test(req, &flag, st);
        while (rc == MPI_SUCCESS && !flag);
        break;
    case C_WAITALL:
        rc = MPI_Waitall(1, req, st);
        break;
    case C_WAITANY:
        rc = MPI_Waitany(1, req, &idx, st);
        break;
    case C_WAITSOME:
        rc = MPI_Waitsome(1, req, &outc, idxs, st);
        break;
    case C_TESTALL:
        do
            rc = MPI_Testall(1, req, &flag, st);
        while (rc == MPI_SUCCESS && !flag);
        break;
    case C_TESTANY:
        do
            rc = MPI_Testany(1, req, &idx, &flag, st);
        while (rc == MPI_SUCCESS && !flag);
        break;
    default:
        do
            rc = MPI_Testsome(1, req, &outc, idxs, st);
        while (rc == MPI_SUCCESS && outc == 0);
        break;
    }
    if (!*single && eclass(rc) == MPI_ERR_IN_STATUS)
        return st->MPI_ERROR == MPI_SUCCESS ? MPI_ERR_IN_STATUS : st->MPI_ERROR;
    return rc;
}

typedef struct side {
    btype_t *T;
    MPI_Count count;
    char *buf;
    int peer, tag;
    MPI_Comm comm;
    int rdy;     /* ready mode: the sender waits for the receiver's token */
    int tokpeer; /* the rank the token goes to or comes from */
    int bad;     /* the call must fail: a request it makes anyway is dropped */
} side_t;

/* Drops a request that a call which had to fail made anyway. */
static void drop(MPI_Request *req, int recv)
{
    if (*req == MPI_REQUEST_NULL)
        return;
    leak_regions = 1;
    if (recv) {
        int flag = 0;
        double t0 = MPI_Wtime();
        MPI_Cancel(req);
        while (MPI_Test(req, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag &&
               MPI_Wtime() - t0 < 2.0)
            ;
        if (flag)
            return;
    }
    MPI_Request_free(req);
}

static int send_post(const side_t *s, int form, MPI_Request *req)
{
    int c = (int)s->count;
    MPI_Datatype t = s->T->t;
    switch (form) {
    case S_SEND:
        return MPI_Send(s->buf, c, t, s->peer, s->tag, s->comm);
    case S_BSEND:
        return MPI_Bsend(s->buf, c, t, s->peer, s->tag, s->comm);
    case S_SSEND:
        return MPI_Ssend(s->buf, c, t, s->peer, s->tag, s->comm);
    case S_RSEND:
        return MPI_Rsend(s->buf, c, t, s->peer, s->tag, s->comm);
    case S_SEND_C:
        return MPI_Send_c(s->buf, s->count, t, s->peer, s->tag, s->comm);
    case S_SSEND_C:
        return MPI_Ssend_c(s->buf, s->count, t, s->peer, s->tag, s->comm);
    case S_ISEND:
        return MPI_Isend(s->buf, c, t, s->peer, s->tag, s->comm, req);
    case S_IBSEND:
        return MPI_Ibsend(s->buf, c, t, s->peer, s->tag, s->comm, req);
    case S_ISSEND:
        return MPI_Issend(s->buf, c, t, s->peer, s->tag, s->comm, req);
    case S_IRSEND:
        return MPI_Irsend(s->buf, c, t, s->peer, s->tag, s->comm, req);
    case S_ISEND_C:
        return MPI_Isend_c(s->buf, s->count, t, s->peer, s->tag, s->comm, req);
    case S_SEND_INIT:
        return MPI_Send_init(s->buf, c, t, s->peer, s->tag, s->comm, req);
    case S_BSEND_INIT:
        return MPI_Bsend_init(s->buf, c, t, s->peer, s->tag, s->comm, req);
    case S_SSEND_INIT:
        return MPI_Ssend_init(s->buf, c, t, s->peer, s->tag, s->comm, req);
    case S_RSEND_INIT:
        return MPI_Rsend_init(s->buf, c, t, s->peer, s->tag, s->comm, req);
    default:
        return MPI_Send_init_c(s->buf, s->count, t, s->peer, s->tag, s->comm, req);
    }
}

static void token_wait(const side_t *s)
{
    if (s->rdy)
        PMPI_Recv(NULL, 0, MPI_BYTE, s->tokpeer, s->tag, ccomm, MPI_STATUS_IGNORE);
}

static void token_send(const side_t *s)
{
    if (s->rdy)
        PMPI_Send(NULL, 0, MPI_BYTE, s->tokpeer, s->tag, ccomm);
}

/* The send side of a case: the first error code, or MPI_SUCCESS. */
static int do_send(const side_t *s, int form, int cform, int rounds)
{
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;
    int single, rc;
    token_wait(s);
    rc = send_post(s, form, &req);
    if (rc != MPI_SUCCESS || req == MPI_REQUEST_NULL)
        return rc;
    if (!s_persistent(form)) {
        if (s->bad) {
            drop(&req, 0);
            return MPI_SUCCESS;
        }
        return complete(&req, cform, &st, &single);
    }
    for (int k = 0; k < rounds; k++) {
        if (k > 0)
            token_wait(s);
        rc = (k & 1) ? MPI_Startall(1, &req) : MPI_Start(&req);
        if (rc != MPI_SUCCESS || s->bad)
            break;
        rc = complete(&req, cform, &st, &single);
        if (rc != MPI_SUCCESS)
            break;
    }
    MPI_Request_free(&req);
    return rc;
}

/* The receive side: the first error code; *st the receive's status, *pst
   the probe's, *single whether the completion was single-completion. */
static int do_recv(const side_t *s, int form, int cform, int rounds, MPI_Status *st,
                   MPI_Status *pst, int *single)
{
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Message msg = MPI_MESSAGE_NULL;
    int rc = MPI_SUCCESS, flag = 0, c = (int)s->count;
    MPI_Datatype t = s->T->t;
    *single = 1;
    memset(st, 0, sizeof(*st));
    memset(pst, 0, sizeof(*pst));
    st->MPI_ERROR = SENTINEL;
    pst->MPI_ERROR = SENTINEL;
    switch (form) {
    case R_RECV:
        return MPI_Recv(s->buf, c, t, s->peer, s->tag, s->comm, st);
    case R_RECV_C:
        return MPI_Recv_c(s->buf, s->count, t, s->peer, s->tag, s->comm, st);
    case R_PROBE:
    case R_IPROBE:
        if (form == R_PROBE)
            rc = MPI_Probe(s->peer, s->tag, s->comm, pst);
        else
            do
                rc = MPI_Iprobe(s->peer, s->tag, s->comm, &flag, pst);
            while (rc == MPI_SUCCESS && !flag);
        if (rc != MPI_SUCCESS)
            return rc;
        return MPI_Recv(s->buf, c, t, s->peer, s->tag, s->comm, st);
    case R_MPROBE:
    case R_MPROBE_C:
        rc = MPI_Mprobe(s->peer, s->tag, s->comm, &msg, pst);
        if (rc != MPI_SUCCESS)
            return rc;
        return form == R_MPROBE ? MPI_Mrecv(s->buf, c, t, &msg, st)
                                : MPI_Mrecv_c(s->buf, s->count, t, &msg, st);
    case R_IMPROBE:
        do
            rc = MPI_Improbe(s->peer, s->tag, s->comm, &flag, &msg, pst);
        while (rc == MPI_SUCCESS && !flag);
        if (rc != MPI_SUCCESS)
            return rc;
        rc = MPI_Imrecv(s->buf, c, t, &msg, &req);
        if (rc != MPI_SUCCESS)
            return rc;
        return complete(&req, cform, st, single);
    case R_IRECV:
        rc = MPI_Irecv(s->buf, c, t, s->peer, s->tag, s->comm, &req);
        break;
    case R_IRECV_C:
        rc = MPI_Irecv_c(s->buf, s->count, t, s->peer, s->tag, s->comm, &req);
        break;
    default:
        rc = MPI_Recv_init(s->buf, c, t, s->peer, s->tag, s->comm, &req);
        break;
    }
    if (rc != MPI_SUCCESS)
        return rc;
    if (form != R_RECV_INIT) {
        if (s->bad) {
            drop(&req, 1);
            return MPI_SUCCESS;
        }
        token_send(s);
        return complete(&req, cform, st, single);
    }
    for (int k = 0; k < rounds; k++) {
        rc = (k & 1) ? MPI_Startall(1, &req) : MPI_Start(&req);
        if (rc != MPI_SUCCESS)
            break;
        if (s->bad) {
            drop(&req, 1);
            return MPI_SUCCESS;
        }
        token_send(s);
        rc = complete(&req, cform, st, single);
        if (rc != MPI_SUCCESS)
            break;
    }
    MPI_Request_free(&req);
    return rc;
}

enum { M_OK, M_SBAD, M_RBAD, M_SNULL, M_RNULL, M_TRUNC };
enum {
    B_NONE,
    B_OOB,
    B_HOSTILE,
    B_RANK,
    B_TAG,
    B_COUNT,
    B_TNULL,
    B_UNCOMMITTED,
    B_COMMNULL,
    B_BIGCOUNT
};
static const char *const b_names[] = {"",
                                      "an out-of-bounds device buffer",
                                      "a type reaching outside its allocation",
                                      "a bad rank",
                                      "a bad tag",
                                      "a negative count",
                                      "MPI_DATATYPE_NULL",
                                      "an uncommitted datatype",
                                      "MPI_COMM_NULL",
                                      "a count above INT_MAX on a device buffer"};
static const int b_class[] = {
    0, -1, -1, MPI_ERR_RANK, MPI_ERR_TAG, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TYPE, MPI_ERR_COMM,
    -1};

static int case_tag(int sub)
{
    return 1 + (int)(((long long)cur_case * 2 + sub) % (tag_ub - 1));
}

/* A side's buffer, drawn alike on both ranks. */
typedef struct sdraw {
    int dev, at_end, pl;
    size_t size;
    unsigned long long fill;
    i128 off;
} sdraw_t;

static void sdraw(sdraw_t *d, i128 lo, i128 hi, int fits, int dev_pct, int oob)
{
    d->dev = (oob || chance(dev_pct)) && !opt_host;
    d->at_end = chance(50);
    d->fill = tg_next(&rng);
    d->size = fits ? (size_t)(hi - lo) + (size_t)rnd(64) + 1 : 1 + (size_t)rnd(4096);
    if (oob)
        d->pl = fits ? (chance(50) ? PL_OVER_END : PL_UNDER_START) : PL_ORIGIN_START + rnd(4);
    else
        d->pl = rnd(3);
    d->off = place(d->pl, lo, hi, d->size);
}

/* The bytes a sender's buffer held, rebuilt by its receiver. */
static unsigned char *sender_copy(const sdraw_t *d)
{
    unsigned char *b = malloc(d->size + 1);
    for (size_t j = 0; j < d->size; j++)
        b[j] = pat(d->fill, (i128)j);
    return b;
}

/* Unpacks count instances of T, packed from the peer's buffer, into the
   mirror of region r at pointer p. */
static void expect_from(const sdraw_t *peer, btype_t *T, MPI_Count count, region_t *r, char *p)
{
    if (count <= 0 || T->s.size <= 0)
        return;
    unsigned char *src = sender_copy(peer);
    MPI_Count n = 0, pos = 0;
    PMPI_Pack_size_c(count, T->t, MPI_COMM_WORLD, &n);
    char *packed = malloc((size_t)n + 1);
    PMPI_Pack_c(src + peer->off, count, T->t, packed, n, &pos, MPI_COMM_WORLD);
    MPI_Count used = pos;
    pos = 0;
    PMPI_Unpack_c(packed, used, &pos, mirror_at(r, addr(p)), count, T->t, MPI_COMM_WORLD);
    free(packed);
    free(src);
}

/* The bad variant of a side's arguments. */
static void side_spoil(side_t *sd, int bad, int is_send, btype_t *U, MPI_Datatype *unc)
{
    switch (bad) {
    case B_RANK:
        sd->peer = chance(50) ? nranks + rnd(3) : (is_send && chance(50) ? MPI_ANY_SOURCE : -7);
        break;
    case B_TAG:
        sd->tag = is_send && chance(40) ? MPI_ANY_TAG : -5 - rnd(9);
        break;
    case B_COUNT:
        sd->count = -1 - rnd(3);
        break;
    case B_TNULL:
        *U = *sd->T;
        U->t = MPI_DATATYPE_NULL;
        U->named = 1;
        desc_set(U, "MPI_DATATYPE_NULL");
        sd->T = U;
        break;
    case B_UNCOMMITTED:
        *U = *sd->T;
        PMPI_Type_dup(sd->T->t, unc);
        /* a dup of a committed type is committed: build a fresh one */
        PMPI_Type_free(unc);
        PMPI_Type_contiguous(1, sd->T->t, unc);
        U->t = *unc;
        U->named = 1;
        desc_set(U, "uncommitted contig(1,%s)", sd->T->desc);
        sd->T = U;
        break;
    case B_COMMNULL:
        sd->comm = MPI_COMM_NULL;
        break;
    case B_BIGCOUNT:
        sd->count = ((MPI_Count)1 << 31) + rnd(1000);
        break;
    default:
        break;
    }
}

/* single: 1 when MPI_ERROR must stay as it was (MPICH keeps it in every
   single-completion call but MPI_Probe, MPI_Iprobe and MPI_Sendrecv_replace,
   which set it to 0: 2 accepts either). */
static void status_check(const MPI_Status *st, int src, int tag, btype_t *T, MPI_Count count,
                         int single, const char *which)
{
    MPI_Count got = -1;
    if (st->MPI_SOURCE != src || st->MPI_TAG != tag)
        fail("%s status: source %d tag %d, want %d and %d", which, st->MPI_SOURCE, st->MPI_TAG, src,
             tag);
    if (T->s.size > 0 && MPI_Get_count_c(st, T->t, &got) == MPI_SUCCESS && got != count)
        fail("%s status: MPI_Get_count gives %lld, want %lld", which, (long long)got,
             (long long)count);
    if (single && st->MPI_ERROR != SENTINEL && !(single == 2 && st->MPI_ERROR == 0))
        fail("%s status: MPI_ERROR was overwritten with %d by a single-completion call", which,
             st->MPI_ERROR);
}

static void case_sendrecv(int kind);

static void case_p2p(int kind)
{
    if (kind != K_TRUNC && kind != K_P2PHOSTILE && chance(20)) {
        case_sendrecv(kind);
        return;
    }
    int s = rnd(2), r = 1 - s, mode, bad = B_NONE, large = 0;
    if (kind == K_TRUNC) {
        mode = M_TRUNC;
    } else if (kind == K_P2PARGS) {
        mode = chance(50) ? M_SBAD : M_RBAD;
    } else if (kind == K_P2PHOSTILE) {
        mode = M_OK; /* bad where the type does not fit (below) */
    } else {
        int m = rnd(100);
        mode = m < 62 ? M_OK : m < 76 ? M_SBAD : m < 90 ? M_RBAD : m < 95 ? M_SNULL : M_RNULL;
    }
    int hostile = kind == K_P2PHOSTILE;
    large =
        ((kind == K_P2P && mode == M_OK) || kind == K_TRUNC) && chance(kind == K_TRUNC ? 12 : 4);
    btype_t T;
    if (hostile)
        bt_hostile(&T, 1, 0);
    else if (large || (mode == M_TRUNC && chance(30)))
        bt_basic(&T);
    else
        bt_valid(&T, 3);
    if (hostile && !bt_shape_agrees(&T)) {
        call_set("building %s", T.desc);
        fail("internal: the program's shape disagrees with MPI's");
        bt_free(&T);
        return;
    }
    static const int counts[] = {0, 1, 1, 2, 3, 5, 8};
    MPI_Count cs = hostile ? 1 + chance(30) : counts[rnd(7)];
    if (large)
        cs = ((MPI_Count)(256 << 10) + rnd(2 << 20)) / (MPI_Count)T.s.size;
    if ((mode == M_TRUNC || mode == M_SBAD || mode == M_RBAD) && cs == 0)
        cs = 1 + rnd(3);
    if (mode == M_TRUNC && T.s.size == 0) {
        bt_free(&T);
        bt_basic(&T);
    }
    i128 lo, hi;
    reach(&T.s, cs, &lo, &hi);
    while (!hostile && !large && cs > 1 && hi - lo > 65536) {
        cs /= 2;
        reach(&T.s, cs, &lo, &hi);
    }
    int fits = representable(mkptr((i128)1 << 40), lo, hi) &&
               hi - lo <= (large ? ((i128)1 << 23) : ((i128)1 << 17));
    if (!fits) {
        mode = chance(50) ? M_SBAD : M_RBAD;
        bad = B_HOSTILE;
    } else if (mode == M_SBAD || mode == M_RBAD) {
        if (kind == K_P2PARGS)
            bad = chance(12) ? B_BIGCOUNT : B_RANK + rnd(6);
        else
            bad = B_OOB;
        if (bad == B_OOB && T.s.size == 0)
            bad = B_TAG;
    }
    MPI_Count cr = cs;
    if (mode == M_TRUNC)
        cr = rnd((int)cs);
    else if (mode == M_OK && !hostile && chance(20))
        cr = cs + rnd(3);
    int sf = rnd(S_N), rf = rnd(R_N), scf = rnd(C_N), rcf = rnd(C_N);
    if (bad == B_BIGCOUNT) {
        static const int sc[] = {S_SEND_C, S_SSEND_C, S_ISEND_C, S_SEND_INIT_C};
        static const int rc_[] = {R_RECV_C, R_IRECV_C, R_MPROBE_C};
        if (mode == M_SBAD)
            sf = sc[rnd(4)];
        else
            rf = rc_[rnd(3)];
    }
    /* A probe on the receive side needs a message to find when only its
       receive is bad; bad rank, tag or communicator go to the probe itself. */
    int feed = mode == M_RBAD && r_probe(rf) && bad != B_RANK && bad != B_TAG && bad != B_COMMNULL;
    if (s_ready(sf) && (mode == M_OK || mode == M_TRUNC) && !r_posted_first(rf))
        sf = S_SEND;
    int rdy = s_ready(sf) && (mode == M_OK || mode == M_TRUNC);
    int rounds = s_persistent(sf) && rf == R_RECV_INIT && mode == M_OK && chance(40) ? 2 : 1;
    if (mode == M_OK && (s_persistent(sf) != (rf == R_RECV_INIT)))
        rounds = 1;
    int anysrc = chance(20);
    i128 rlo, rhi;
    reach(&T.s, cr, &rlo, &rhi);
    int big = bad == B_BIGCOUNT || bad == B_HOSTILE;
    sdraw_t sd, rd;
    sdraw(&sd, lo, hi, fits && !(big && mode == M_SBAD), large ? 100 : 65,
          mode == M_SBAD ? bad == B_OOB || big : (mode == M_SNULL && chance(15)));
    sdraw(&rd, rlo, rhi, fits && !(big && mode == M_RBAD), large ? 100 : 65,
          mode == M_RBAD && (bad == B_OOB || big));
    int tag = case_tag(0);
    /* Shared draws end here. */
    if (rank > 1 || (opt_host && (sd.pl >= PL_OVER_END || rd.pl >= PL_OVER_END ||
                                  bad == B_BIGCOUNT || bad == B_HOSTILE))) {
        bt_free(&T);
        return;
    }
    btype_t U;
    MPI_Datatype unc = MPI_DATATYPE_NULL;
    expect_t ex = {0, 0, A_BUF, -1, NULL};
    int me_send = rank == s;
    if (me_send && (mode == M_RNULL || (mode == M_RBAD && !feed))) {
        bt_free(&T);
        return;
    }
    if (!me_send && (mode == M_SBAD || mode == M_SNULL)) {
        bt_free(&T);
        return;
    }
    if (me_send && feed) {
        region_t *h = region_new(RK_HOST, 16, sd.fill, 0, "feed");
        call_set("MPI_Send(16 bytes) to %d tag %d: a message for the peer's probe", r, tag);
        if (h) {
            int rc = MPI_Send(h->base, 16, MPI_BYTE, r, tag, dcomm);
            if (rc != MPI_SUCCESS)
                fail("returned %s", errstr(rc));
        }
        bt_free(&T);
        return;
    }
    sdraw_t *mine = me_send ? &sd : &rd;
    region_t *reg = region_new(mine->dev ? RK_DEV : RK_HOST, mine->size, mine->fill, mine->at_end,
                               me_send ? "send" : "recv");
    if (!reg) {
        bt_free(&T);
        return;
    }
    side_t sdd = {&T,
                  me_send ? cs : cr,
                  mkptr(addr(reg->base) + mine->off),
                  me_send ? r : (anysrc ? MPI_ANY_SOURCE : s),
                  tag,
                  dcomm,
                  rdy,
                  me_send ? r : s,
                  0};
    if (me_send && mode == M_SNULL)
        sdd.peer = MPI_PROC_NULL;
    if (!me_send && mode == M_RNULL)
        sdd.peer = MPI_PROC_NULL;
    int my_bad = (me_send && mode == M_SBAD) || (!me_send && mode == M_RBAD);
    if (my_bad) {
        sdd.bad = 1;
        side_spoil(&sdd, bad, me_send, &U, &unc);
        ex.fail = 1;
        ex.why = b_names[bad];
        if (b_class[bad] > 0) {
            ex.allowed = BIT(b_class[bad]);
            ex.ref = b_class[bad];
        } else if (feed) {
            /* The probed message may be longer than the bad receive: which
               error MPI reports first is not fixed. */
            ex.allowed |= BIT(MPI_ERR_TRUNCATE);
        }
    } else if (mode == M_SNULL && !resolve(addr(sdd.buf) + lo, addr(sdd.buf) + hi) && hi > lo) {
        ex.may_fail = 1;
    }
    if (!me_send && mode == M_TRUNC) {
        ex.fail = 1;
        ex.why = "the message is longer than the receive";
        ex.allowed = BIT(MPI_ERR_TRUNCATE);
        ex.ref = MPI_ERR_TRUNCATE;
    }
    /* judge() treats ref > 0 as the class required; ref == class when bad. */
    char what[700];
    snprintf(what, sizeof(what), "type=%s count=%lld buf=%s peer=%d tag=%d%s", sdd.T->desc,
             (long long)sdd.count, where_desc(reg, mine->off), sdd.peer, sdd.tag,
             sdd.comm == MPI_COMM_NULL ? " MPI_COMM_NULL" : "");
    if (me_send) {
        call_set("%s%s%s%s: %s", s_names[sf], s_nonblocking(sf) || s_persistent(sf) ? "+" : "",
                 s_nonblocking(sf) || s_persistent(sf) ? c_names[scf] : "", rounds > 1 ? " x2" : "",
                 what);
        int rc = do_send(&sdd, sf, scf, rounds);
        judge(rc, &ex);
        region_check(reg, 0, 0, 0); /* a send never writes its buffer */
    } else {
        MPI_Status st, pst;
        int single = 1;
        int check_data = mode == M_OK && !T.s.overlap;
        if (mode == M_OK)
            expect_from(&sd, &T, cs, reg, sdd.buf);
        call_set(
            "%s%s%s%s: %s", r_names[rf],
            rf == R_IRECV || rf == R_IRECV_C || rf == R_RECV_INIT || rf == R_IMPROBE ? "+" : "",
            rf == R_IRECV || rf == R_IRECV_C || rf == R_RECV_INIT || rf == R_IMPROBE ? c_names[rcf]
                                                                                     : "",
            rounds > 1 ? " x2" : "", what);
        int rc = do_recv(&sdd, rf, rcf, rounds, &st, &pst, &single);
        int ok = judge(rc, &ex);
        if (feed && (rf == R_PROBE || rf == R_IPROBE)) {
            /* The probed message stays when its receive fails: take it. */
            int there = 0;
            char scratch[16];
            PMPI_Iprobe(s, tag, dcomm, &there, MPI_STATUS_IGNORE);
            if (there)
                PMPI_Recv(scratch, 16, MPI_BYTE, s, tag, dcomm, MPI_STATUS_IGNORE);
        }
        if (ok && check_data)
            region_check(reg, 0, 0, 0);
        else
            region_check(reg, 1, addr(sdd.buf) + rlo, addr(sdd.buf) + rhi);
        if (ok && mode == M_OK) {
            status_check(&st, s, tag, &T, cs, single, "receive");
            if (r_probe(rf))
                status_check(&pst, s, tag, &T, cs, rf == R_PROBE || rf == R_IPROBE ? 2 : 1,
                             "probe");
        } else if (ok && mode == M_RNULL &&
                   (rf == R_RECV || rf == R_RECV_C || rf == R_PROBE || rf == R_IPROBE ||
                    rf == R_MPROBE || rf == R_MPROBE_C)) {
            /* (MPICH leaves the status of a nonblocking receive from
               MPI_PROC_NULL as it was) */
            status_check(&st, MPI_PROC_NULL, MPI_ANY_TAG, &T, 0, single, "receive");
        }
        /* The count of a truncated receive's status is left alone: MPICH's
           own (UCX) gives counts larger than the receive on host memory. */
    }
    if (unc != MPI_DATATYPE_NULL)
        PMPI_Type_free(&unc);
    bt_free(&T);
}

/* Sendrecv and Sendrecv_replace between ranks 0 and 1: both valid, or both
   bad (each side's call must fail by itself). */
static void case_sendrecv(int kind)
{
    int replace = chance(35), large_c = chance(30);
    int mode = kind == K_P2PARGS ? M_SBAD : chance(75) ? M_OK : M_SBAD;
    btype_t T;
    bt_valid(&T, 3);
    static const int counts[] = {0, 1, 2, 3, 5};
    MPI_Count c = counts[rnd(5)];
    if (mode != M_OK && c == 0)
        c = 1;
    i128 lo, hi;
    reach(&T.s, c, &lo, &hi);
    while (c > 1 && hi - lo > 32768) {
        c /= 2;
        reach(&T.s, c, &lo, &hi);
    }
    int bad = mode == M_OK ? B_NONE : kind == K_P2PARGS ? B_RANK + rnd(6) : B_OOB;
    if (bad == B_OOB && T.s.size == 0)
        bad = B_TAG;
    if (bad == B_OOB && c == 0)
        c = 1;
    sdraw_t sd[2], rd[2];
    int badside[2];
    for (int q = 0; q < 2; q++) {
        badside[q] = replace ? 0 : rnd(2);
        sdraw(&sd[q], lo, hi, 1, 65, bad == B_OOB && badside[q] == 0);
        sdraw(&rd[q], lo, hi, 1, 65, bad == B_OOB && badside[q] == 1);
    }
    if (rank > 1 || (opt_host && bad == B_OOB)) {
        bt_free(&T);
        return;
    }
    int peer = 1 - rank;
    region_t *sr = region_new(sd[rank].dev ? RK_DEV : RK_HOST, sd[rank].size, sd[rank].fill,
                              sd[rank].at_end, replace ? "buf" : "send");
    region_t *rr = replace ? sr
                           : region_new(rd[rank].dev ? RK_DEV : RK_HOST, rd[rank].size,
                                        rd[rank].fill, rd[rank].at_end, "recv");
    if (!sr || !rr) {
        bt_free(&T);
        return;
    }
    char *sbuf = mkptr(addr(sr->base) + sd[rank].off);
    char *rbuf = replace ? sbuf : mkptr(addr(rr->base) + rd[rank].off);
    side_t snd = {&T, c, sbuf, peer, case_tag(rank), dcomm, 0, peer, 0};
    side_t rcv = {&T, c, rbuf, peer, case_tag(peer), dcomm, 0, peer, 0};
    btype_t U;
    MPI_Datatype unc = MPI_DATATYPE_NULL;
    expect_t ex = {0, 0, A_BUF, -1, NULL};
    if (bad != B_NONE) {
        side_t *b = badside[rank] == 0 ? &snd : &rcv;
        side_spoil(b, bad, badside[rank] == 0, &U, &unc);
        if (bad == B_COUNT || bad == B_TNULL || bad == B_UNCOMMITTED) {
            /* count and type are per side in Sendrecv but one in _replace */
            if (replace)
                snd = *b, rcv.count = b->count, rcv.T = b->T;
        }
        if (bad == B_COMMNULL)
            snd.comm = rcv.comm = MPI_COMM_NULL;
        ex.fail = 1;
        ex.why = b_names[bad];
        if (b_class[bad] > 0) {
            ex.allowed = BIT(b_class[bad]);
            ex.ref = b_class[bad];
        }
    } else {
        /* The peer packed its own buffer, as it was before the call. */
        sdraw_t *ps = &sd[peer];
        expect_from(ps, &T, c, rr, rbuf);
    }
    MPI_Status st;
    memset(&st, 0, sizeof(st));
    st.MPI_ERROR = SENTINEL;
    call_set("%s%s(send: type=%s count=%lld buf=%s to %d tag %d; recv: type=%s count=%lld buf=%s "
             "from %d tag %d%s)%s%s",
             replace ? "MPI_Sendrecv_replace" : "MPI_Sendrecv", large_c ? "_c" : "", snd.T->desc,
             (long long)snd.count, where_desc(sr, sd[rank].off), snd.peer, snd.tag, rcv.T->desc,
             (long long)rcv.count, where_desc(rr, replace ? sd[rank].off : rd[rank].off), rcv.peer,
             rcv.tag, snd.comm == MPI_COMM_NULL ? ", MPI_COMM_NULL" : "", bad ? ": bad: " : "",
             bad ? b_names[bad] : "");
    int rc;
    if (replace && large_c)
        rc = MPI_Sendrecv_replace_c(sbuf, snd.count, snd.T->t, snd.peer, snd.tag, rcv.peer, rcv.tag,
                                    snd.comm, &st);
    else if (replace)
        rc = MPI_Sendrecv_replace(sbuf, (int)snd.count, snd.T->t, snd.peer, snd.tag, rcv.peer,
                                  rcv.tag, snd.comm, &st);
    else if (large_c)
        rc = MPI_Sendrecv_c(sbuf, snd.count, snd.T->t, snd.peer, snd.tag, rbuf, rcv.count, rcv.T->t,
                            rcv.peer, rcv.tag, snd.comm, &st);
    else
        rc = MPI_Sendrecv(sbuf, (int)snd.count, snd.T->t, snd.peer, snd.tag, rbuf, (int)rcv.count,
                          rcv.T->t, rcv.peer, rcv.tag, snd.comm, &st);
    int ok = judge(rc, &ex);
    if (ok && !T.s.overlap) {
        region_check(sr, 0, 0, 0);
        if (rr != sr)
            region_check(rr, 0, 0, 0);
        status_check(&st, peer, case_tag(peer), &T, c, replace ? 2 : 1, "receive");
    } else {
        region_check(sr, 1, replace ? addr(rbuf) + lo : 0, replace ? addr(rbuf) + hi : 0);
        if (rr != sr)
            region_check(rr, 1, addr(rbuf) + lo, addr(rbuf) + hi);
    }
    if (unc != MPI_DATATYPE_NULL)
        PMPI_Type_free(&unc);
    bt_free(&T);
}

/* ------------------------------------------------------------- collectives */

enum { CO_BCAST, CO_REDUCE, CO_ALLREDUCE, CO_GATHER, CO_SCATTER, CO_ALLGATHER, CO_ALLTOALL, CO_N };
static const char *const co_names[CO_N] = {"MPI_Bcast",   "MPI_Reduce",  "MPI_Allreduce",
                                           "MPI_Gather",  "MPI_Scatter", "MPI_Allgather",
                                           "MPI_Alltoall"};

static int coll_call(int op, int pmpi, char *sb, char *rb, int count, MPI_Datatype t, MPI_Op rop,
                     int root, MPI_Comm comm)
{
    switch (op) {
    case CO_BCAST:
        return (pmpi ? PMPI_Bcast : MPI_Bcast)(sb, count, t, root, comm);
    case CO_REDUCE:
        return (pmpi ? PMPI_Reduce : MPI_Reduce)(sb, rb, count, t, rop, root, comm);
    case CO_ALLREDUCE:
        return (pmpi ? PMPI_Allreduce : MPI_Allreduce)(sb, rb, count, t, rop, comm);
    case CO_GATHER:
        return (pmpi ? PMPI_Gather : MPI_Gather)(sb, count, t, rb, count, t, root, comm);
    case CO_SCATTER:
        return (pmpi ? PMPI_Scatter : MPI_Scatter)(sb, count, t, rb, count, t, root, comm);
    case CO_ALLGATHER:
        return (pmpi ? PMPI_Allgather : MPI_Allgather)(sb, count, t, rb, count, t, comm);
    default:
        return (pmpi ? PMPI_Alltoall : MPI_Alltoall)(sb, count, t, rb, count, t, comm);
    }
}

static void case_coll(void)
{
    int op = rnd(CO_N), dev = chance(70), m = rnd(100);
    int mode = m < 70 ? 0 : m < 85 ? 1 : 2; /* valid, out of bounds, bad argument */
    if (mode == 1)
        dev = 1;
    int root = rnd(nranks);
    int reduce = op == CO_REDUCE || op == CO_ALLREDUCE;
    int inplace = op == CO_ALLREDUCE && mode != 1 && chance(30);
    btype_t T;
    MPI_Op rop = MPI_SUM;
    int count;
    if (reduce) {
        static const MPI_Datatype rt[] = {MPI_INT, MPI_INT64_T, MPI_DOUBLE};
        static const char *const rn[] = {"int", "int64", "double"};
        int k = rnd(3);
        bt_basic(&T);
        T.t = rt[k];
        T.s.ub = T.s.tub = T.s.size = k == 0 ? 4 : 8;
        desc_set(&T, "%s", rn[k]);
        rop = k == 2 ? MPI_MAX : (chance(50) ? MPI_SUM : MPI_BXOR);
        count = 1 + rnd(64);
    } else {
        bt_valid(&T, 2);
        count = 1 + rnd(3);
    }
    i128 lo1, hi1, loa, hia;
    reach(&T.s, count, &lo1, &hi1);
    reach(&T.s, (i128)count * nranks, &loa, &hia);
    while (count > 1 && hia - loa > 65536) {
        count /= 2;
        reach(&T.s, count, &lo1, &hi1);
        reach(&T.s, (i128)count * nranks, &loa, &hia);
    }
    int send_all = op == CO_SCATTER || op == CO_ALLTOALL;
    int recv_all = op == CO_GATHER || op == CO_ALLGATHER || op == CO_ALLTOALL;
    sdraw_t sd, rd;
    sdraw(&sd, send_all ? loa : lo1, send_all ? hia : hi1, 1, 100,
          mode == 1 && (op == CO_BCAST || chance(50)));
    sdraw(&rd, recv_all ? loa : lo1, recv_all ? hia : hi1, 1, 100,
          mode == 1 && op != CO_BCAST && sd.pl < PL_OVER_END);
    if (mode == 1 && op != CO_BCAST && sd.pl < PL_OVER_END && rd.pl < PL_OVER_END)
        rd.pl = PL_OVER_END,
        rd.off = place(PL_OVER_END, recv_all ? loa : lo1, recv_all ? hia : hi1, rd.size);
    /* MPICH checks roots, types and communicators of collectives, but not
       negative counts (it crashes on them on host memory). */
    int argk = rnd(4);
    if (argk == 1 || (argk == 0 && (op == CO_ALLREDUCE || op == CO_ALLGATHER || op == CO_ALLTOALL)))
        argk = 2 + rnd(2);
    /* Shared draws end here. */
    if (opt_host && mode == 1) {
        bt_free(&T);
        return;
    }
    if (opt_host)
        dev = 0;
    unsigned long long f = (unsigned long long)rank * 0x1000193ull;
    region_t *sr = region_new(dev ? RK_DEV : RK_HOST, sd.size, sd.fill + f, sd.at_end, "send");
    region_t *rr = op == CO_BCAST ? NULL
                                  : region_new(dev ? RK_DEV : RK_HOST, rd.size, rd.fill + f,
                                               rd.at_end, "recv");
    if (!sr || (op != CO_BCAST && !rr)) {
        bt_free(&T);
        return;
    }
    char *sb = mkptr(addr(sr->base) + sd.off);
    char *rb = rr ? mkptr(addr(rr->base) + rd.off) : NULL;
    MPI_Datatype t = T.t;
    MPI_Comm comm = dcomm;
    int c = count, rt = root;
    expect_t ex = {0, 0, A_BUF, -1, NULL};
    if (mode == 2) {
        static const int cls[] = {MPI_ERR_ROOT, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_COMM};
        static const char *const why[] = {"a root out of range", "a negative count",
                                          "MPI_DATATYPE_NULL", "MPI_COMM_NULL"};
        if (argk == 0)
            rt = nranks + 1;
        else if (argk == 1)
            c = -1;
        else if (argk == 2)
            t = MPI_DATATYPE_NULL;
        else
            comm = MPI_COMM_NULL;
        ex.fail = 1;
        ex.why = why[argk];
        ex.allowed = BIT(cls[argk]) | (dev ? BIT(MPI_ERR_BUFFER) : 0);
    } else if (mode == 1) {
        /* The processes whose buffers reach outside their allocations
           refuse them; the others may complete (the refusing ones take
           part with scratch memory, so that nobody hangs). */
        ex.may_fail = 1;
        ex.why = "a buffer reaches outside its allocation";
    } else {
        /* The reference, on the mirrors of every rank. */
        int rr_ = coll_call(op, 1, inplace ? MPI_IN_PLACE : mirror_at(sr, addr(sb)),
                            inplace ? mirror_at(sr, addr(sb))
                            : rr    ? mirror_at(rr, addr(rb))
                                    : NULL,
                            c, t, rop, rt, comm);
        if (rr_ != MPI_SUCCESS) {
            call_set("PMPI reference of %s", co_names[op]);
            fail("the host reference failed (%s)", errstr(rr_));
        }
        if (dev) {
            ex.may_fail = 1;
            ex.allowed = BIT(MPI_ERR_BUFFER);
        }
    }
    call_set("%s(type=%s count=%d root=%d send=%s recv=%s%s%s)", co_names[op], T.desc, c, rt,
             inplace ? "MPI_IN_PLACE" : where_desc(sr, sd.off),
             inplace ? where_desc(sr, sd.off)
             : rr    ? where_desc(rr, rd.off)
                     : "-",
             comm == MPI_COMM_NULL ? " MPI_COMM_NULL" : "",
             t == MPI_DATATYPE_NULL ? " NULL type" : "");
    int rc = coll_call(op, 0, inplace ? MPI_IN_PLACE : sb, inplace ? sb : rb, c, t, rop, rt, comm);
    judge(rc, &ex);
    if (rc == MPI_SUCCESS && mode == 0) {
        region_check(sr, 0, 0, 0);
        region_check(rr, 0, 0, 0);
    } else if (rc == MPI_SUCCESS && mode == 1) {
        /* Completed beside a refusal: the data are undefined, but nothing
           outside the call's reach may change. */
        i128 rlo = recv_all ? loa : lo1, rhi = recv_all ? hia : hi1;
        if (op == CO_BCAST)
            region_check(sr, 1, addr(sb) + lo1, addr(sb) + hi1);
        else
            region_check(sr, 1, 0, 0);
        if (rr)
            region_check(rr, 1, addr(rb) + rlo, addr(rb) + rhi);
    } else {
        region_check(sr, 1, 0, 0);
        region_check(rr, 1, 0, 0);
    }
    bt_free(&T);
}

/* -------------------------------------------------------------------- main */

static int parse_cats(const char *s, unsigned *mask)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", s);
    *mask = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int k;
        for (k = 0; k < K_N; k++)
            if (!strcmp(tok, cat_names[k]))
                break;
        if (k == K_N)
            return 0;
        *mask |= 1u << k;
    }
    return 1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: badgen [--seed S] [--first K] [--cases N] [--only C,C] [--skip C,C]\n"
            "              [--timeout SECONDS] [--no-parity] [--host-only] [--trace]\n"
            "              [--verbose] [--list]\n"
            "Runs cases K .. K+N-1 of seed S (default 22, 0, 3000); a failing case prints its\n"
            "seed and number: --first K --cases 1 runs it alone.  --only/--skip select\n"
            "categories (--list names them); --timeout bounds one case (default 60 s);\n"
            "--no-parity accepts any allowed error class where MPICH's own differs;\n"
            "--host-only puts every buffer on the host and leaves out bad buffers, so that\n"
            "every call reaches MPICH (a check of the program itself); --trace prints\n"
            "each call before it runs; --verbose prints counts per category.\n");
}

static int parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned m;
        if (!strcmp(a, "--help")) {
            if (rank == 0)
                usage();
            return 2;
        } else if (!strcmp(a, "--list")) {
            if (rank == 0)
                for (int k = 0; k < K_N; k++)
                    printf("%-9s %s\n", cat_names[k], cat_help[k]);
            return 2;
        } else if (!strcmp(a, "--verbose")) {
            opt_verbose = 1;
        } else if (!strcmp(a, "--host-only")) {
            opt_host = 1;
        } else if (!strcmp(a, "--trace")) {
            opt_trace = 1;
        } else if (!strcmp(a, "--no-parity")) {
            opt_parity = 0;
        } else if (!v) {
            usage();
            return 0;
        } else if (!strcmp(a, "--seed")) {
            opt_seed = strtoull(v, NULL, 0), i++;
        } else if (!strcmp(a, "--first")) {
            opt_first = strtol(v, NULL, 0), i++;
        } else if (!strcmp(a, "--cases")) {
            opt_cases = strtol(v, NULL, 0), i++;
        } else if (!strcmp(a, "--timeout")) {
            opt_timeout = atoi(v), i++;
        } else if (!strcmp(a, "--only") || !strcmp(a, "--skip")) {
            if (!parse_cats(v, &m)) {
                if (rank == 0)
                    fprintf(stderr, "badgen: unknown category in \"%s\" (--list names them)\n", v);
                return 0;
            }
            cat_on = !strcmp(a, "--only") ? m : cat_on & ~m;
            i++;
        } else {
            usage();
            return 0;
        }
    }
    return 1;
}

static int draw_category(void)
{
    int total = 0, k;
    for (k = 0; k < K_N; k++)
        total += cat_weight[k];
    int x = rnd(total);
    for (k = 0; k < K_N - 1 && x >= cat_weight[k]; k++)
        x -= cat_weight[k];
    return k;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int pr = parse(argc, argv);
    if (pr != 1) {
        MPI_Finalize();
        return pr == 2 ? 0 : 2;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &dcomm);
    MPI_Comm_dup(MPI_COMM_WORLD, &ccomm);
    MPI_Comm_set_errhandler(dcomm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(ccomm, MPI_ERRORS_RETURN);
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    tag_ub = flag && ub ? *ub : 32767;
    int bsize = 8 << 20;
    void *battach = malloc((size_t)bsize);
    MPI_Buffer_attach(battach, bsize);
    /* After MPI_Init: UCX installs handlers of its own there. */
    signals_install();
    /* MPICH 4.0.2 divides by zero packing types with empty parts (typegen.h):
       its own fault, on host memory, so the generator never draws them. */
    tg_allow_empty = 0;
    for (long k = opt_first; k < opt_first + opt_cases; k++) {
        cur_case = k;
        rng.s = opt_seed * 0x9E3779B97F4A7C15ull ^ (unsigned long long)k * 0xD1B54A32D192ED03ull;
        tg_next(&rng);
        cur_cat = draw_category();
        if (!(cat_on & (1u << cur_cat)))
            continue;
        int local = cur_cat < K_P2P;
        if (opt_host && (cur_cat == K_MEMCPY || cur_cat == K_QUERY || cur_cat == K_STALE))
            continue;
        if (local && k % nranks != rank)
            continue;
        if (!local && cur_cat != K_COLL && nranks < 2)
            continue;
        case_failed = 0;
        leak_regions = 0;
        stat_run[cur_cat]++;
        call_set("(drawing the case)");
        alarm((unsigned)opt_timeout);
        switch (cur_cat) {
        case K_PACK:
            if (chance(10))
                case_absolute();
            else
                case_pack(0, 0, 0);
            break;
        case K_EXTERNAL:
            case_pack(1, 0, 0);
            break;
        case K_HOSTILE:
            case_pack(chance(15), 1, 0);
            break;
        case K_ARGS:
            case_pack(chance(25), 0, 1);
            break;
        case K_MEMCPY:
            case_memcpy();
            break;
        case K_QUERY:
            case_query();
            break;
        case K_STALE:
            case_stale();
            break;
        case K_COLL:
            case_coll();
            break;
        default:
            case_p2p(cur_cat);
            break;
        }
        regions_end();
        alarm(0);
        if (opt_verbose && case_failed == 0 && rank == 0 && k % 500 == 0)
            fprintf(stderr, "badgen: case %ld\n", k);
    }
    cur_cat = -1;
    call_set("(after the last case: the final MPI_Reduce; a peer died or hangs)");
    alarm((unsigned)opt_timeout);
    long tot[4][K_N], all_fail = 0;
    MPI_Reduce(stat_run, tot[0], K_N, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(stat_fail, tot[1], K_N, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(stat_ok, tot[2], K_N, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(stat_err, tot[3], K_N, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int k = 0; k < K_N; k++) {
            all_fail += tot[1][k];
            if (opt_verbose || tot[1][k])
                fprintf(stderr,
                        "badgen: %-9s %5ld cases (by rank), %4ld failed; calls: %ld succeeded, "
                        "%ld returned an error\n",
                        cat_names[k], tot[0][k], tot[1][k], tot[2][k], tot[3][k]);
        }
        if (all_fail == 0)
            printf(" No Errors (seed %llu, cases %ld..%ld)\n", opt_seed, opt_first,
                   opt_first + opt_cases - 1);
        else
            printf(" Found %ld failing cases (seed %llu)\n", all_fail, opt_seed);
    }
    MPI_Bcast(&all_fail, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Buffer_detach(&battach, &bsize);
    free(battach);
    MPI_Comm_free(&dcomm);
    MPI_Comm_free(&ccomm);
    alarm(0);
    MPI_Finalize();
    return all_fail != 0;
}
