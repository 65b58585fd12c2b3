/*
 * mpigpu-info: what the library sees and would do on this node (API.md,
 * "Programs"): its version, the OpenCL platforms and devices, the device each
 * local rank would take and why, and the pack method table; with --params,
 * every setting of the table in common/mgparam_table.c.  It runs as a
 * singleton, without mpiexec; --params does not even start MPI, so that it
 * also explains a setting that makes MPI_Init fail.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "locality.h"
#include "mpigpu.h"
#include "mgdev.h"
#include "mgparam.h"
#include "mgpk.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: mpigpu-info [-n RANKS]\n"
               "       mpigpu-info --params [--all] [--tsv]\n"
               "  -n RANKS  the device each of RANKS local ranks would take (default: one per\n"
               "            candidate device)\n"
               "  --params  every setting: its value here, its default and its meaning\n"
               "  --all     with --params: the switches for tests too, marked test\n"
               "  --tsv     with --params: tab-separated name, reader (lib, icd, proxy), class\n"
               "            (user, test), type, default (empty: unset has a meaning of its\n"
               "            own), value and meaning, one setting a line\n");
}

static const char *reader_name(mgparam_reader_t r)
{
    return r == MGPARAM_ICD ? "icd" : r == MGPARAM_PROXY ? "proxy" : "lib";
}

/* The value as this process's environment sets it, "default" (with its
   value where it has one) or the parser's message; *bad set on a message. */
static void value_text(mgparam_id_t id, char *buf, size_t len, int *bad)
{
    const mgparam_t *p = &mgparam_table[id];
    mgparam_value_t v;
    char err[256];
    if (mgparam_read(id, &v, err, sizeof err) != 0) {
        snprintf(buf, len, "invalid: %s", err);
        *bad = 1;
    } else if (v.set)
        snprintf(buf, len, "%s", v.text);
    else
        snprintf(buf, len, "%s%s(default)", p->def ? p->def : "", p->def ? " " : "");
}

static int params_print(int all, int tsv)
{
    static const char *const sections[] = {
        "libmpigpu (read at MPI_Init)", "libmpigpu-vcl, the virtual ICD (read at its first call)",
        "mpigpu-proxy (read at start)"};
    char type[128], val[320];
    int bad = 0;
    for (int r = MGPARAM_LIB; r <= MGPARAM_PROXY; r++) {
        if (!tsv)
            printf("%s# %s\n", r == MGPARAM_LIB ? "" : "\n", sections[r]);
        for (int id = 0; id < MGPARAM_COUNT; id++) {
            const mgparam_t *p = &mgparam_table[id];
            int test = (p->flags & MGPARAM_F_TEST) != 0;
            if ((int)p->reader != r || (test && !all))
                continue;
            mgparam_type_text(p, type, sizeof type);
            value_text((mgparam_id_t)id, val, sizeof val, &bad);
            /* The default column holds a value the parser accepts, empty
               where unset has a meaning of its own (the guide's check). */
            if (tsv) {
                printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p->name, reader_name(p->reader),
                       test ? "test" : "user", type, p->def ? p->def : "", val, p->help);
                continue;
            }
            printf("%s = %s%s\n", p->name, val, test ? "  [test only]" : "");
            printf("    %s\n    %s; default %s\n", p->help, type, mgparam_default_text(p));
        }
    }
    return bad;
}

static void platforms_print(void)
{
    cl_platform_id plats[32];
    cl_uint np = 0;
    char name[256], ver[256], dname[256];
    if (clGetPlatformIDs(32, plats, &np) != CL_SUCCESS)
        np = 0;
    printf("\nOpenCL platforms: %u\n", np);
    for (cl_uint p = 0; p < np && p < 32; p++) {
        cl_device_id devs[64];
        cl_uint nd = 0;
        name[0] = ver[0] = '\0';
        clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
        clGetPlatformInfo(plats[p], CL_PLATFORM_VERSION, sizeof ver, ver, NULL);
        printf("  platform %u: %s (%s)\n", p, name, ver);
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &nd) != CL_SUCCESS)
            nd = 0;
        for (cl_uint d = 0; d < nd && d < 64; d++) {
            cl_device_type type = 0;
            cl_ulong mem = 0;
            cl_bool unified = CL_FALSE;
            dname[0] = '\0';
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dname, dname, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
            printf("    device %u: %s, %s, %.1f GiB%s\n", d, dname,
                   (type & CL_DEVICE_TYPE_GPU)   ? "GPU"
                   : (type & CL_DEVICE_TYPE_CPU) ? "CPU"
                                                 : "other",
                   (double)mem / (1 << 30), unified ? ", shares host memory" : "");
        }
    }
}

static void device_name(cl_device_id dev, char *buf, size_t len)
{
    cl_platform_id plat = NULL;
    char pname[256] = "";
    buf[0] = '\0';
    clGetDeviceInfo(dev, CL_DEVICE_NAME, len, buf, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL);
    if (plat)
        clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "\" of platform \"%s", pname);
}

static void rank_print(void *arg, int local_rank, cl_device_id dev, const char *why)
{
    char name[600] = "";
    (void)arg;
    if (dev)
        device_name(dev, name, sizeof name);
    printf("  local rank %d: %s%s%s (%s)\n", local_rank, dev ? "device \"" : "", dev ? name : "",
           dev ? "\"" : "none", why);
}

static void ranks_print(int nranks)
{
    mgdev_state_t *st = &mgdev_state;
    char name[600];
    printf("\nDevice choice\n");
    if (st->settings.device) {
        printf("  MPIGPU_DEVICE names device %d of the first platform matching \"%s\"; every "
               "rank takes it\n",
               st->settings.device_index, st->settings.device);
    } else {
        printf("  by hwloc locality, for ranks bound as this process is:\n");
        mgdev_loc_preview(nranks, rank_print, NULL);
    }
    cl_device_id dev = NULL;
    mgdev_default_get(NULL, &dev, NULL, NULL);
    if (dev) {
        device_name(dev, name, sizeof name);
        printf("  this process uses: device \"%s\"\n", name);
    }
}

static const char *bytes_text(int64_t n, char *buf, size_t len)
{
    if (n >= (1 << 20) && n % (1 << 20) == 0)
        snprintf(buf, len, "%lld MiB", (long long)(n >> 20));
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(buf, len, "%lld KiB", (long long)(n >> 10));
    else
        snprintf(buf, len, "%lld B", (long long)n);
    return buf;
}

static void calib_print(void)
{
    static const char *const source[] = {"not decided", "static rule (no measurement)",
                                         "measured now", "read from the cache"};
    static const char *const method[] = {"kernel", "copy", "host"};
    mgpk_ctx_t *pk = NULL;
    mgpk_calib_info_t *info = calloc(1, sizeof *info);
    char a[32], b[32];

    printf("\nPack method table (MPIGPU_PACK=auto)\n");
    mgdev_default_get(NULL, NULL, NULL, &pk);
    if (!info || !pk || mgpk_calib_get(pk, info) != MPI_SUCCESS) {
        printf("  none: %s\n", pk ? "the calibration failed" : "no device in use");
        free(info);
        return;
    }
    printf("  %s", source[info->source]);
    if (info->source == MGPK_CAL_MEASURED)
        printf(" in %.2f s", info->seconds);
    printf("\n  cache file: %s\n", info->path[0] ? info->path : "none (no cache directory)");
    if (info->source == MGPK_CAL_STATIC) {
        free(info);
        return;
    }
    printf("  fastest method and its time per call (us), by packed size and block length:\n");
    for (int h = 0; h < 2; h++) {
        for (int st = 0; st < MGPK_CAL_NSTRIDES; st++) {
            printf("  into %s memory, blocks every %lld block lengths:\n", h ? "host" : "device",
                   (long long)info->strides[st]);
            printf("    %10s", "");
            for (int bl = 0; bl < MGPK_CAL_NBLOCKS; bl++)
                printf("  %18s", bytes_text(info->blocks[bl], a, sizeof a));
            printf("\n");
            for (int si = 0; si < MGPK_CAL_NSIZES; si++) {
                printf("    %10s", bytes_text(info->sizes[si], b, sizeof b));
                for (int bl = 0; bl < MGPK_CAL_NBLOCKS; bl++) {
                    int best = -1;
                    for (int m = 0; m < MGPK_CAL_NMETHODS; m++) {
                        double t = info->t[h][st][si][bl][m];
                        if (t >= 0 && (best < 0 || t < info->t[h][st][si][bl][best]))
                            best = m;
                    }
                    if (best < 0)
                        printf("  %18s", "-");
                    else
                        printf("  %7s %10.1f", method[best], info->t[h][st][si][bl][best] * 1e6);
                }
                printf("\n");
            }
        }
    }
    free(info);
}

int main(int argc, char **argv)
{
    int params = 0, all = 0, tsv = 0, nranks = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--params"))
            params = 1;
        else if (!strcmp(argv[i], "--all"))
            all = 1;
        else if (!strcmp(argv[i], "--tsv"))
            tsv = 1;
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            nranks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (params)
        return params_print(all, tsv);

    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    printf("mpigpu %s\n", PACKAGE_VERSION);
    MPI_Get_library_version(lib, &len);
    for (char *t = strchr(lib, '\t'); t; t = strchr(t, '\t'))
        *t = ' ';
    printf("MPI: %.*s\n", (int)strcspn(lib, "\n"), lib);
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        /* The cause is on stderr already (src/mpi/init.c). */
        printf("MPI_Init failed: see mpigpu-info --params\n");
        platforms_print();
        MPI_Finalize();
        return 1;
    }
    printf("device addresses accepted: %s\n", MPIX_Query_opencl_support() ? "yes" : "no");
    platforms_print();
    ranks_print(nranks);
    calib_print();
    MPI_Finalize();
    return 0;
}
