/*
 * The per-datatype method attribute (MPIX_Gpu_pack_keyval): packs and unpacks
 * of device data of a type carrying kernel, copy or host take that method
 * whatever MPIGPU_PACK says, give MPI_Pack's bytes, and MPI_Type_dup keeps
 * the attribute.  Which method ran is read back from MPIGPU_VERBOSE's lines,
 * caught by pointing stderr at a temporary file.
 */
#include <mpi.h>
#include <mpigpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int errs;
#define CHECK(cond_)                                                                               \
    do {                                                                                           \
        if (!(cond_)) {                                                                            \
            errs++;                                                                                \
            fprintf(stdout, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond_);              \
        }                                                                                          \
    } while (0)

enum { NV = 2000 };

/* Pack and unpack count vector instances of t through device memory and
   check both against the host. */
static void roundtrip(MPI_Datatype t, const double *src, double *d)
{
    static char ref[NV * sizeof(double)], out[NV * sizeof(double)];
    static double back[2 * NV], want[2 * NV];
    int pos = 0;
    PMPI_Pack(src, 1, t, ref, sizeof(ref), &pos, MPI_COMM_WORLD);
    CHECK(MPIX_Gpu_memcpy(d, src, sizeof(back)) == MPI_SUCCESS);
    pos = 0;
    CHECK(MPI_Pack(d, 1, t, out, sizeof(out), &pos, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(pos == (int)sizeof(out) && memcmp(out, ref, sizeof(ref)) == 0);
    memset(back, 0, sizeof(back));
    memset(want, 0, sizeof(want));
    CHECK(MPIX_Gpu_memcpy(d, back, sizeof(back)) == MPI_SUCCESS);
    pos = 0;
    CHECK(MPI_Unpack(out, sizeof(out), &pos, d, 1, t, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_memcpy(back, d, sizeof(back)) == MPI_SUCCESS);
    pos = 0;
    PMPI_Unpack(ref, sizeof(ref), &pos, want, 1, t, MPI_COMM_WORLD);
    CHECK(memcmp(back, want, sizeof(back)) == 0);
}

/* Lines of the log between offsets [from, end) that contain what. */
static int count_in(FILE *log, long from, const char *what)
{
    char line[512];
    int n = 0;
    fflush(stderr);
    fseek(log, from, SEEK_SET);
    while (fgets(line, sizeof(line), log))
        n += strstr(line, what) != NULL;
    return n;
}

int main(int argc, char **argv)
{
    char path[] = "/tmp/mpigpu-pack-attr-XXXXXX";
    int fd = mkstemp(path), kv = -1, kv2 = -2;
    setenv("MPIGPU_VERBOSE", "1", 1);
    if (fd < 0 || dup2(fd, 2) < 0)
        return 1;
    unlink(path);
    FILE *log = fdopen(dup(fd), "r");
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (!MPIX_Query_opencl_support()) {
        printf(" No Errors\n"); /* nothing to choose without a device */
        MPI_Finalize();
        return 0;
    }
    CHECK(MPIX_Gpu_pack_keyval(NULL) != MPI_SUCCESS);
    CHECK(MPIX_Gpu_pack_keyval(&kv) == MPI_SUCCESS && kv != MPI_KEYVAL_INVALID);
    CHECK(MPIX_Gpu_pack_keyval(&kv2) == MPI_SUCCESS && kv2 == kv);

    static double src[2 * NV];
    double *d = NULL;
    for (int i = 0; i < 2 * NV; i++)
        src[i] = i * 0.25 - 7;
    CHECK(MPIX_Gpu_malloc(sizeof(src), (void **)&d) == MPI_SUCCESS);
    MPI_Datatype base, tk, tc, th, tcd, tbad;
    MPI_Type_vector(NV, 1, 2, MPI_DOUBLE, &base);
    MPI_Type_commit(&base);
    const struct {
        MPI_Datatype *t;
        intptr_t m;
    } set[] = {{&tk, MPIX_GPU_PACK_KERNEL},
               {&tc, MPIX_GPU_PACK_COPY},
               {&th, MPIX_GPU_PACK_HOST},
               {&tbad, 99}};
    for (int i = 0; i < 4; i++) {
        MPI_Type_dup(base, set[i].t);
        CHECK(MPI_Type_set_attr(*set[i].t, kv, (void *)set[i].m) == MPI_SUCCESS);
    }
    MPI_Type_dup(tc, &tcd); /* inherits copy */

    long at = (fflush(stderr), lseek(fd, 0, SEEK_END));
    roundtrip(tc, src, d);
    CHECK(count_in(log, at, "copy commands") == 2);
    at = lseek(fd, 0, SEEK_END);
    roundtrip(tcd, src, d);
    CHECK(count_in(log, at, "copy commands") == 2);
    at = lseek(fd, 0, SEEK_END);
    roundtrip(tk, src, d);
    CHECK(count_in(log, at, "vector kernel") == 2 && count_in(log, at, "copy commands") == 0);
    at = lseek(fd, 0, SEEK_END);
    roundtrip(th, src, d);
    CHECK(count_in(log, at, "on the host (the datatype's method attribute)") == 2);
    /* An unknown value and no attribute: MPIGPU_PACK=auto, which is the vector
       kernel under MPIGPU_CALIBRATE=0 (pack_attr_static) and otherwise what the
       calibrated table picks, one method per call (pack_attr). */
    at = lseek(fd, 0, SEEK_END);
    roundtrip(tbad, src, d);
    roundtrip(base, src, d);
    const char *cal = getenv("MPIGPU_CALIBRATE");
    if (cal && !strcmp(cal, "0"))
        CHECK(count_in(log, at, "vector kernel") == 4);
    else
        CHECK(count_in(log, at, "vector kernel") + count_in(log, at, "copy commands") +
                  count_in(log, at, "on the host (MPIGPU_PACK=auto: the calibration)") ==
              4);

    MPI_Datatype *all[] = {&base, &tk, &tc, &th, &tcd, &tbad};
    for (int i = 0; i < 6; i++)
        MPI_Type_free(all[i]);
    MPIX_Gpu_free(d);
    MPI_Finalize();
    fclose(log);
    if (errs)
        printf(" Found %d errors\n", errs);
    else
        printf(" No Errors\n");
    return errs != 0;
}
