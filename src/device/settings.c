/* The device layer's settings, read through the settings table (common/mgparam.h). */
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
#include "mgparam.h"

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

/* MPIGPU_CACHE_DIR, set but empty: no cache; unset: the XDG place. */
static void resolve_cache_dir(const mgparam_value_t *v, mgdev_settings_t *s)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char *dir = NULL;

    if (v->set) {
        dir = v->text[0] ? strdup(v->text) : NULL;
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
    /* The table's enum words, in its order (mgparam_table.c). */
    static const mgpk_method_t methods[] = {MGPK_METHOD_AUTO, MGPK_METHOD_KERNEL, MGPK_METHOD_COPY,
                                            MGPK_METHOD_HOST};
    static const mgpk_dma_t dmas[] = {MGPK_DMA_AUTO, MGPK_DMA_ON, MGPK_DMA_OFF};
    static const mgpk_calib_mode_t calibs[] = {MGPK_CALIB_ON, MGPK_CALIB_OFF, MGPK_CALIB_FORCE};
    static const int protocols[] = {MGDEV_P2P_PLAIN, MGDEV_P2P_CHUNKED, MGDEV_P2P_AUTO};
    static const int host_recvs[] = {MGDEV_HOST_RECV_PIECES, MGDEV_HOST_RECV_MESSAGE};
    mgparam_value_t v[MGPARAM_COUNT];
    char err[256];
    int rc = MPI_SUCCESS;

    int id;

    memset(s, 0, sizeof(*s));
    for (id = 0; id < MGPARAM_COUNT; id++)
        if (mgparam_table[id].reader == MGPARAM_LIB &&
            mgparam_read((mgparam_id_t)id, &v[id], err, sizeof err) != 0)
            break;
    /* MPIGPU_VERBOSE is read first, so that it holds for the messages of an
       MPI_Init that fails on a later setting. */
    if (id > MGPARAM_VERBOSE)
        s->verbose = (int)v[MGPARAM_VERBOSE].num;
    if (id < MGPARAM_COUNT)
        MG_FAIL(rc, fn_fail, MPI_ERR_OTHER, "mpigpu: %s", err);
    s->force_pipeline = (int)v[MGPARAM_FORCE_PIPELINE].num;
    s->force_shared = (int)v[MGPARAM_FORCE_SHARED].num;
    if (v[MGPARAM_DEVICE].set) {
        s->device = strndup(v[MGPARAM_DEVICE].text, v[MGPARAM_DEVICE].len);
        if (!s->device)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM,
                    "mpigpu: out of host memory reading MPIGPU_DEVICE");
        s->device_index = (int)v[MGPARAM_DEVICE].num;
    }
    s->method = methods[v[MGPARAM_PACK].num];
    s->host_dma = dmas[v[MGPARAM_HOST_DMA].num];
    s->calibrate = calibs[v[MGPARAM_CALIBRATE].num];
    s->span_bytes = (size_t)v[MGPARAM_SPAN].num;
    s->grid_words = (int)v[MGPARAM_GRID].num;
    s->local_size = (int)v[MGPARAM_LOCAL].num;
    s->kernel_switch_us = (int)v[MGPARAM_KERNEL_SWITCH].num;
    s->inline_max = (size_t)v[MGPARAM_INLINE_MAX].num;
    s->chunk_bytes = (size_t)v[MGPARAM_CHUNK].num;
    s->staging_max = (size_t)v[MGPARAM_STAGING_MAX].num;
    s->staging_keep = (size_t)v[MGPARAM_STAGING_KEEP].num;
    s->p2p_protocol = protocols[v[MGPARAM_P2P_PROTOCOL].num];
    s->p2p_first = (size_t)v[MGPARAM_P2P_FIRST].num;
    s->p2p_auto_min = (size_t)v[MGPARAM_P2P_AUTO_MIN].num;
    s->p2p_host_recv = host_recvs[v[MGPARAM_P2P_HOST_RECV].num];
    s->p2p_depth = (int)v[MGPARAM_P2P_DEPTH].num;
    s->p2p_shm = (int)v[MGPARAM_P2P_SHM].num;
    s->p2p_shm_piece = (size_t)v[MGPARAM_P2P_SHM_PIECE].num;
    s->p2p_shm_slots = (int)v[MGPARAM_P2P_SHM_SLOTS].num;
    s->p2p_test_granted = (int)v[MGPARAM_P2P_TEST_GRANTED].num;
    s->shared_block = (size_t)v[MGPARAM_SHARED_BLOCK].num;
    s->shared_dirty = (int)v[MGPARAM_SHARED_DIRTY].num;
    s->shared_zero_copy = (int)v[MGPARAM_SHARED_ZERO_COPY].num;
    s->enqueue_queue_max = (size_t)v[MGPARAM_ENQUEUE_QUEUE_MAX].num;
    resolve_cache_dir(&v[MGPARAM_CACHE_DIR], s);

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
                         .local_size = s->local_size,
                         .inline_max = s->inline_max};
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
