/* The one place that reads mpigpu's environment variables. */
#define _GNU_SOURCE /* asprintf */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mgdev.h"
#include "mgerr.h"
#include "mglog.h"

static int parse_device(const char *v, mgdev_settings_t *s)
{
    const char *colon = strrchr(v, ':');
    char *end = NULL;
    size_t len = strlen(v);

    s->device_index = 0;
    if (colon && colon[1]) {
        errno = 0;
        long n = strtol(colon + 1, &end, 10);
        if (*end == '\0' && !errno && n >= 0 && n <= 1 << 20) {
            s->device_index = (int)n;
            len = (size_t)(colon - v);
        }
    }
    if (len == 0)
        return mgerr_set(MPI_ERR_OTHER,
                         "mpigpu: MPIGPU_DEVICE=\"%s\": expected SUBSTRING[:N] with a non-empty "
                         "platform name substring",
                         v);
    s->device = strndup(v, len);
    if (!s->device)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory reading MPIGPU_DEVICE");
    return MPI_SUCCESS;
}

static int parse_method(const char *v, mgpk_method_t *m)
{
    static const struct {
        const char *name;
        mgpk_method_t method;
    } names[] = {{"auto", MGPK_METHOD_AUTO},
                 {"kernel", MGPK_METHOD_KERNEL},
                 {"copy", MGPK_METHOD_COPY},
                 {"host", MGPK_METHOD_HOST}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!strcmp(v, names[i].name)) {
            *m = names[i].method;
            return MPI_SUCCESS;
        }
    }
    return mgerr_set(MPI_ERR_OTHER,
                     "mpigpu: MPIGPU_PACK=\"%s\" is not one of auto, kernel, copy, host", v);
}

static int parse_dma(const char *v, mgpk_dma_t *d)
{
    if (!strcmp(v, "auto"))
        *d = MGPK_DMA_AUTO;
    else if (!strcmp(v, "on"))
        *d = MGPK_DMA_ON;
    else if (!strcmp(v, "off"))
        *d = MGPK_DMA_OFF;
    else
        return mgerr_set(MPI_ERR_OTHER,
                         "mpigpu: MPIGPU_HOST_DMA=\"%s\" is not one of auto, on, off", v);
    return MPI_SUCCESS;
}

/* MPIGPU_GRID: off, or 1 to MGPK_GRID_MAX_WORDS words per work-item. */
static int parse_grid(const char *v, int *g)
{
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (!strcmp(v, "off"))
        *g = -1;
    else if (end != v && !*end && n >= 1 && n <= 4)
        *g = (int)n;
    else
        return mgerr_set(MPI_ERR_OTHER,
                         "mpigpu: MPIGPU_GRID=\"%s\": expected off or 1 to 4 words per work-item",
                         v);
    return MPI_SUCCESS;
}

/* A whole number from lo to hi; what names it in the error ("a number of
   pieces"). */
static int parse_count(const char *name, const char *v, long lo, long hi, const char *what,
                       int *out)
{
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < lo || n > hi)
        return mgerr_set(MPI_ERR_OTHER, "mpigpu: %s=\"%s\": expected %s from %ld to %ld", name, v,
                         what, lo, hi);
    *out = (int)n;
    return MPI_SUCCESS;
}

static int parse_bytes(const char *name, const char *v, size_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    unsigned long long mult = 1;
    if (end != v && (*end == 'K' || *end == 'k'))
        mult = 1ULL << 10, end++;
    else if (end != v && (*end == 'M' || *end == 'm'))
        mult = 1ULL << 20, end++;
    else if (end != v && (*end == 'G' || *end == 'g'))
        mult = 1ULL << 30, end++;
    if (end == v || *end != '\0' || errno || n == 0 || v[0] == '-' || n > (SIZE_MAX / mult))
        return mgerr_set(MPI_ERR_OTHER,
                         "mpigpu: %s=\"%s\": expected a positive byte count with an optional K, "
                         "M or G suffix",
                         name, v);
    *out = (size_t)(n * mult);
    return MPI_SUCCESS;
}

/* The bytes of a piece of a message: 4K to 1G. */
static int parse_piece(const char *name, const char *v, size_t *out)
{
    int rc = parse_bytes(name, v, out);
    if (rc == MPI_SUCCESS && (*out < ((size_t)4 << 10) || *out > ((size_t)1 << 30)))
        rc = mgerr_set(MPI_ERR_OTHER, "mpigpu: %s=\"%s\": expected from 4K to 1G", name, v);
    return rc;
}

/* mkdir -p; returns 0 on success. */
static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int bad = mkdir(path, 0700) != 0 && errno != EEXIST;
        *p = '/';
        if (bad)
            return -1;
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

static void resolve_cache_dir(mgdev_settings_t *s)
{
    const char *v = getenv("MPIGPU_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char *dir = NULL;

    if (v) {
        dir = v[0] ? strdup(v) : NULL; /* set but empty: cache disabled */
    } else if (xdg && xdg[0] == '/') {
        if (asprintf(&dir, "%s/mpigpu", xdg) < 0)
            dir = NULL;
    } else if (home && home[0]) {
        if (asprintf(&dir, "%s/.cache/mpigpu", home) < 0)
            dir = NULL;
    }
    if (dir && make_dirs(dir) != 0) {
        /* The cache only saves time: said under MPIGPU_VERBOSE, not a warning. */
        MGLOG_INFO(MGLOG_DEVICE, "cannot create cache directory %s (%s): cache disabled", dir,
                   strerror(errno));
        free(dir);
        dir = NULL;
    }
    s->cache_dir = dir;
}

int mgdev_settings_read(mgdev_settings_t *s)
{
    int rc = MPI_SUCCESS;
    const char *v;

    memset(s, 0, sizeof(*s));
    s->method = MGPK_METHOD_AUTO;
    s->chunk_bytes = MGDEV_CHUNK_DEFAULT;
    s->staging_max = MGDEV_STAGING_DEFAULT;
    s->staging_keep = MGDEV_STAGING_KEEP_DEFAULT;
    s->p2p_protocol = MGDEV_P2P_AUTO;
    s->p2p_first = MGDEV_P2P_FIRST_DEFAULT;
    s->p2p_auto_min = MGDEV_P2P_AUTO_MIN_DEFAULT;
    s->p2p_depth = MGDEV_P2P_DEPTH_DEFAULT;
    s->p2p_shm = 1;
    s->p2p_shm_piece = MGDEV_P2P_SHM_PIECE_DEFAULT;
    s->p2p_shm_slots = MGDEV_P2P_SHM_SLOTS_DEFAULT;

    if ((v = getenv("MPIGPU_VERBOSE")) && v[0])
        s->verbose = atoi(v);
    if ((v = getenv("MPIGPU_FORCE_PIPELINE")) && v[0])
        s->force_pipeline = atoi(v) != 0;
    if ((v = getenv("MPIGPU_DEVICE")) && v[0]) {
        rc = parse_device(v, s);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_PACK")) && v[0]) {
        rc = parse_method(v, &s->method);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_HOST_DMA")) && v[0]) {
        rc = parse_dma(v, &s->host_dma);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_CALIBRATE")) && v[0]) {
        if (!strcmp(v, "0"))
            s->calibrate = MGPK_CALIB_OFF;
        else if (!strcmp(v, "force"))
            s->calibrate = MGPK_CALIB_FORCE;
        else if (strcmp(v, "1") != 0)
            MG_FAIL(rc, fn_fail, MPI_ERR_OTHER,
                    "mpigpu: MPIGPU_CALIBRATE=\"%s\" is not one of 0, 1, force", v);
    }
    if ((v = getenv("MPIGPU_SPAN")) && v[0]) {
        rc = parse_bytes("MPIGPU_SPAN", v, &s->span_bytes);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_GRID")) && v[0]) {
        rc = parse_grid(v, &s->grid_words);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_LOCAL")) && v[0]) {
        rc = parse_count("MPIGPU_LOCAL", v, 1, 1024, "a work-group size", &s->local_size);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_CHUNK")) && v[0]) {
        rc = parse_bytes("MPIGPU_CHUNK", v, &s->chunk_bytes);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_STAGING_MAX")) && v[0]) {
        rc = parse_bytes("MPIGPU_STAGING_MAX", v, &s->staging_max);
        MG_CHECK(rc, fn_fail);
        if (s->staging_max < MGDEV_STAGING_MIN)
            MG_FAIL(rc, fn_fail, MPI_ERR_OTHER,
                    "mpigpu: MPIGPU_STAGING_MAX=\"%s\" is below the minimum of 16K", v);
    }
    if ((v = getenv("MPIGPU_STAGING_KEEP")) && v[0]) {
        if (strcmp(v, "0") == 0) {
            s->staging_keep = 0;
        } else {
            rc = parse_bytes("MPIGPU_STAGING_KEEP", v, &s->staging_keep);
            MG_CHECK(rc, fn_fail);
        }
    }
    if ((v = getenv("MPIGPU_P2P_PROTOCOL")) && v[0]) {
        if (strcmp(v, "chunked") == 0)
            s->p2p_protocol = MGDEV_P2P_CHUNKED;
        else if (strcmp(v, "plain") == 0)
            s->p2p_protocol = MGDEV_P2P_PLAIN;
        else if (strcmp(v, "auto") != 0)
            MG_FAIL(rc, fn_fail, MPI_ERR_OTHER,
                    "mpigpu: MPIGPU_P2P_PROTOCOL=\"%s\": expected auto, plain or chunked", v);
    }
    if ((v = getenv("MPIGPU_P2P_FIRST")) && v[0]) {
        rc = parse_piece("MPIGPU_P2P_FIRST", v, &s->p2p_first);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_P2P_AUTO_MIN")) && v[0]) {
        rc = parse_bytes("MPIGPU_P2P_AUTO_MIN", v, &s->p2p_auto_min);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_P2P_HOST_RECV")) && v[0]) {
        if (strcmp(v, "message") == 0)
            s->p2p_host_recv = MGDEV_HOST_RECV_MESSAGE;
        else if (strcmp(v, "pieces") != 0)
            MG_FAIL(rc, fn_fail, MPI_ERR_OTHER,
                    "mpigpu: MPIGPU_P2P_HOST_RECV=\"%s\": expected pieces or message", v);
    }
    if ((v = getenv("MPIGPU_P2P_DEPTH")) && v[0]) {
        rc = parse_count("MPIGPU_P2P_DEPTH", v, 1, MGDEV_P2P_DEPTH_MAX, "a number of pieces",
                         &s->p2p_depth);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_P2P_SHM")) && v[0]) {
        if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0)
            s->p2p_shm = 0;
        else if (strcmp(v, "on") != 0 && strcmp(v, "1") != 0)
            MG_FAIL(rc, fn_fail, MPI_ERR_OTHER, "mpigpu: MPIGPU_P2P_SHM=\"%s\": expected on or off",
                    v);
    }
    if ((v = getenv("MPIGPU_P2P_SHM_PIECE")) && v[0]) {
        rc = parse_piece("MPIGPU_P2P_SHM_PIECE", v, &s->p2p_shm_piece);
        MG_CHECK(rc, fn_fail);
    }
    if ((v = getenv("MPIGPU_P2P_SHM_SLOTS")) && v[0]) {
        rc = parse_count("MPIGPU_P2P_SHM_SLOTS", v, 2, MGDEV_P2P_SHM_SLOTS_MAX, "a number of slots",
                         &s->p2p_shm_slots);
        MG_CHECK(rc, fn_fail);
    }
    resolve_cache_dir(s);

fn_exit:
    return rc;
fn_fail:
    mgdev_settings_free(s);
    goto fn_exit;
}

void mgdev_settings_free(mgdev_settings_t *s)
{
    free(s->device);
    free(s->cache_dir);
    s->device = NULL;
    s->cache_dir = NULL;
}

mgpk_settings_t mgdev_settings_pack(const mgdev_settings_t *s)
{
    mgpk_settings_t p = {.method = s->method,
                         .verbose = s->verbose,
                         .chunk_bytes = s->chunk_bytes,
                         .force_pipeline = s->force_pipeline,
                         .cache_dir = s->cache_dir,
                         .host_dma = s->host_dma,
                         .calibrate = s->calibrate,
                         .span_bytes = s->span_bytes,
                         .grid_words = s->grid_words,
                         .local_size = s->local_size};
    return p;
}

const char *mgdev_method_name(mgpk_method_t m)
{
    switch (m) {
    case MGPK_METHOD_KERNEL:
        return "kernel";
    case MGPK_METHOD_COPY:
        return "copy";
    case MGPK_METHOD_HOST:
        return "host";
    default:
        return "auto";
    }
}
