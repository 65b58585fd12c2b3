/* MPI-IO on device buffers, 1 to 4 ranks: every access mode (explicit
   offset, individual and shared file pointers, collective, ordered, split,
   nonblocking, large-count forms) writes count instances of each datatype
   from a device buffer, and the file must be byte-identical to the one that
   the same call on a host buffer writes, holes and bytes past the data
   included; then the same modes read the data back into a poisoned device
   buffer and a poisoned host buffer, which must be identical and hold what
   was written with every gap byte unchanged, with MPI_Get_count in the
   user's datatype.  Some cases use a file view with holes.  Also a read past
   the end of the file (a partial instance), and the errors of a bad file
   handle, a read-only file and a large count.  Files live in a directory
   made by mkdtemp under $TMPDIR and are removed. */
#include <limits.h>
#include <unistd.h>

#include "mpit_read.h"
#include "p2p_common.h"

static int rank, size;
static char path[PATH_MAX + 16], dir[PATH_MAX];

#define COUNT 3
#define BLK 16 /* bytes of each rank's block under the view with holes */

enum {
    M_AT,
    M_AT_ALL,
    M_IND,
    M_ALL,
    M_SHARED,
    M_ORDERED,
    M_SPLIT_AT,
    M_SPLIT_ALL,
    M_SPLIT_ORD,
    M_I_AT,
    M_I_AT_ALL,
    M_I_IND,
    M_I_ALL,
    M_I_SHARED,
    M_AT_C,
    M_ALL_C,
    M_I_AT_C,
    M_SHARED_C,
    NMODES
};
static const char *const mnames[NMODES] = {
    "at",       "at_all",    "individual", "all",   "shared",   "ordered",
    "split_at", "split_all", "split_ord",  "i_at",  "i_at_all", "i_individual",
    "i_all",    "i_shared",  "at_c",       "all_c", "i_at_c",   "shared_c"};

/* The mode moves the individual or the shared file pointer. */
static int mode_ind(int m)
{
    return m == M_IND || m == M_ALL || m == M_SPLIT_ALL || m == M_I_IND || m == M_I_ALL ||
           m == M_ALL_C;
}

static int mode_shared(int m)
{
    return m == M_SHARED || m == M_I_SHARED || m == M_SHARED_C;
}

static int mode_ordered(int m)
{
    return m == M_ORDERED || m == M_SPLIT_ORD;
}

/* One call of mode m (w: write), waited for; returns MPI's code. */
static int io_call(int m, int w, MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t,
                   MPI_Status *st)
{
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    MPI_Count cc = count;
    switch (m) {
    case M_AT:
        return w ? MPI_File_write_at(fh, off, buf, count, t, st)
                 : MPI_File_read_at(fh, off, buf, count, t, st);
    case M_AT_ALL:
        return w ? MPI_File_write_at_all(fh, off, buf, count, t, st)
                 : MPI_File_read_at_all(fh, off, buf, count, t, st);
    case M_IND:
        return w ? MPI_File_write(fh, buf, count, t, st) : MPI_File_read(fh, buf, count, t, st);
    case M_ALL:
        return w ? MPI_File_write_all(fh, buf, count, t, st)
                 : MPI_File_read_all(fh, buf, count, t, st);
    case M_SHARED:
        return w ? MPI_File_write_shared(fh, buf, count, t, st)
                 : MPI_File_read_shared(fh, buf, count, t, st);
    case M_SHARED_C:
        return w ? MPI_File_write_shared_c(fh, buf, cc, t, st)
                 : MPI_File_read_shared_c(fh, buf, cc, t, st);
    case M_ORDERED:
        return w ? MPI_File_write_ordered(fh, buf, count, t, st)
                 : MPI_File_read_ordered(fh, buf, count, t, st);
    case M_SPLIT_AT:
        rc = w ? MPI_File_write_at_all_begin(fh, off, buf, count, t)
               : MPI_File_read_at_all_begin(fh, off, buf, count, t);
        if (rc == MPI_SUCCESS)
            rc = w ? MPI_File_write_at_all_end(fh, buf, st) : MPI_File_read_at_all_end(fh, buf, st);
        return rc;
    case M_SPLIT_ALL:
        rc = w ? MPI_File_write_all_begin(fh, buf, count, t)
               : MPI_File_read_all_begin(fh, buf, count, t);
        if (rc == MPI_SUCCESS)
            rc = w ? MPI_File_write_all_end(fh, buf, st) : MPI_File_read_all_end(fh, buf, st);
        return rc;
    case M_SPLIT_ORD:
        rc = w ? MPI_File_write_ordered_begin(fh, buf, count, t)
               : MPI_File_read_ordered_begin(fh, buf, count, t);
        if (rc == MPI_SUCCESS)
            rc = w ? MPI_File_write_ordered_end(fh, buf, st)
                   : MPI_File_read_ordered_end(fh, buf, st);
        return rc;
    case M_AT_C:
        return w ? MPI_File_write_at_c(fh, off, buf, cc, t, st)
                 : MPI_File_read_at_c(fh, off, buf, cc, t, st);
    case M_ALL_C:
        return w ? MPI_File_write_all_c(fh, buf, cc, t, st)
                 : MPI_File_read_all_c(fh, buf, cc, t, st);
    case M_I_AT:
        rc = w ? MPI_File_iwrite_at(fh, off, buf, count, t, &r)
               : MPI_File_iread_at(fh, off, buf, count, t, &r);
        break;
    case M_I_AT_ALL:
        rc = w ? MPI_File_iwrite_at_all(fh, off, buf, count, t, &r)
               : MPI_File_iread_at_all(fh, off, buf, count, t, &r);
        break;
    case M_I_IND:
        rc = w ? MPI_File_iwrite(fh, buf, count, t, &r) : MPI_File_iread(fh, buf, count, t, &r);
        break;
    case M_I_ALL:
        rc = w ? MPI_File_iwrite_all(fh, buf, count, t, &r)
               : MPI_File_iread_all(fh, buf, count, t, &r);
        break;
    case M_I_SHARED:
        rc = w ? MPI_File_iwrite_shared(fh, buf, count, t, &r)
               : MPI_File_iread_shared(fh, buf, count, t, &r);
        break;
    case M_I_AT_C:
        rc = w ? MPI_File_iwrite_at_c(fh, off, buf, cc, t, &r)
               : MPI_File_iread_at_c(fh, off, buf, cc, t, &r);
        break;
    }
    if (rc != MPI_SUCCESS)
        return rc;
    if (m == M_I_IND || m == M_I_SHARED) {
        /* Test until done, as a progress loop would. */
        int flag = 0;
        while (rc == MPI_SUCCESS && !flag)
            rc = MPI_Test(&r, &flag, st);
        return rc;
    }
    return MPI_Wait(&r, st);
}

/* The call of mode m on every rank: the file pointer it moves set first,
   and independent shared-pointer calls made in rank order so that every run
   lays the data out alike. */
static int io_mode(int m, int w, MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t,
                   MPI_Status *st)
{
    int rc = MPI_SUCCESS;
    if (mode_ind(m))
        MPI_File_seek(fh, off, MPI_SEEK_SET);
    if (mode_shared(m) || mode_ordered(m))
        MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    if (!mode_shared(m))
        return io_call(m, w, fh, off, buf, count, t, st);
    for (int r = 0; r < size; r++) {
        if (r == rank)
            rc = io_call(m, w, fh, off, buf, count, t, st);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return rc;
}

static MPI_Offset fsize(void)
{
    return (MPI_Offset)size * 1024 + 256;
}

static void prefill(unsigned char *pat)
{
    fill(pat, (size_t)fsize(), 99);
}

/* The file's bytes: set to the pattern (w) or read back, by rank 0 under
   the default view; collective. */
static void raw(MPI_File fh, unsigned char *bytes, int w)
{
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    if (rank == 0) {
        if (w)
            CHECK(PMPI_File_write_at(fh, 0, bytes, (int)fsize(), MPI_BYTE, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
        else
            CHECK(PMPI_File_read_at(fh, 0, bytes, (int)fsize(), MPI_BYTE, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
    }
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
}

/* The view of a case: the default one, or (holes) blocks of BLK bytes per
   rank in turn with an 8-byte hole after every round; offsets are in bytes. */
static void view_set(MPI_File fh, int holes)
{
    if (!holes) {
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
        return;
    }
    MPI_Datatype b, ft;
    MPI_Type_contiguous(BLK, MPI_BYTE, &b);
    MPI_Type_create_resized(b, 0, (MPI_Aint)BLK * size + 8, &ft);
    MPI_Type_commit(&ft);
    MPI_File_set_view(fh, (MPI_Offset)rank * BLK, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    MPI_Type_free(&ft);
    MPI_Type_free(&b);
}

/* ti: an index of types[], or -1 for MPI_DOUBLE. */
static void test_mode(MPI_File fh, int m, int holes, int ti)
{
    MPI_Datatype t = ti < 0 ? MPI_DOUBLE : types[ti];
    int tsize = 0;
    MPI_Type_size(t, &tsize);
    size_t n = buf_size(t, COUNT);
    MPI_Offset off = holes ? 0 : (MPI_Offset)rank * COUNT * tsize;
    unsigned char *pat = malloc((size_t)fsize()), *fa = malloc((size_t)fsize()),
                  *fb = malloc((size_t)fsize());
    unsigned data = 10 + (unsigned)rank, poison = 50 + (unsigned)rank;
    MPI_Status st;
    MPI_Count got = -1;

    snprintf(where, sizeof(where), "%s %s%s", mnames[m], ti < 0 ? "double" : tnames[ti],
             holes ? " view" : "");
    prefill(pat);
    /* Write from a device buffer, then from a host buffer, into the same
       pattern: identical files. */
    for (int dev = 1; dev >= 0; dev--) {
        unsigned char *b = buf_make(n, data, dev);
        raw(fh, pat, 1);
        view_set(fh, holes);
        memset(&st, 0, sizeof(st));
        CHECK(io_mode(m, 1, fh, off, b + ORIGIN, COUNT, t, &st) == MPI_SUCCESS);
        MPI_Get_count_c(&st, t, &got);
        CHECK(got == COUNT);
        MPI_File_sync(fh);
        raw(fh, dev ? fa : fb, 0);
        buf_free(b, dev);
    }
    if (rank == 0) {
        CHECK(memcmp(fa, fb, (size_t)fsize()) == 0);
        CHECK(memcmp(fa, pat, (size_t)fsize()) != 0); /* something was written */
    }
    /* Read it back into poisoned device and host buffers. */
    unsigned char *want = expected(t, COUNT, data, poison);
    for (int dev = 1; dev >= 0; dev--) {
        unsigned char *b = buf_make(n, poison, dev);
        view_set(fh, holes);
        memset(&st, 0, sizeof(st));
        CHECK(io_mode(m, 0, fh, off, b + ORIGIN, COUNT, t, &st) == MPI_SUCCESS);
        MPI_Get_count_c(&st, t, &got);
        CHECK(got == COUNT);
        CHECK(buf_equal(b, want, n, dev));
        buf_free(b, dev);
    }
    free(want);
    free(pat);
    free(fa);
    free(fb);
}

/* Long buffers through the explicit-offset calls, which go in pieces of
   about one staging chunk (MPIGPU_STAGING_MAX=64K in the testlist: 16 KiB)
   whose offsets advance in etypes: each rank writes LONG vectors at an
   offset of 3 doubles under a view of doubles, from a device and from a host
   buffer, and the files must match; the reads give back the data, and one
   that meets the end of the file stops in a middle piece. */
#define LONG 3000
static void test_long(MPI_File fh)
{
    MPI_Datatype t = types[1]; /* 4 doubles, stride 3: 32 packed bytes */
    size_t n = buf_size(t, LONG);
    MPI_Offset region = (MPI_Offset)LONG * 32 + 64, fs = region * size + 64;
    unsigned char *fa = calloc(1, (size_t)fs), *fb = calloc(1, (size_t)fs);
    MPI_Status st;
    MPI_Count got = -1;
    unsigned long long jobs0 = mpit_value("mpigpu_p2p_worker_jobs");
    snprintf(where, sizeof(where), "long");
    for (int dev = 1; dev >= 0; dev--) {
        unsigned char *b = buf_make(n, 20 + (unsigned)rank, dev);
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
        MPI_File_set_size(fh, 0);
        MPI_File_set_view(fh, (MPI_Offset)rank * region, MPI_DOUBLE, MPI_DOUBLE, "native",
                          MPI_INFO_NULL);
        CHECK(MPI_File_write_at(fh, 3, b + ORIGIN, LONG, t, &st) == MPI_SUCCESS);
        MPI_Get_count_c(&st, t, &got);
        CHECK(got == LONG);
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_sync(fh);
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
        if (rank == 0)
            CHECK(PMPI_File_read_at(fh, 0, dev ? fa : fb, (int)fs, MPI_BYTE, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        buf_free(b, dev);
    }
    if (rank == 0)
        CHECK(memcmp(fa, fb, (size_t)fs) == 0);
    /* MPI wrote the device data in more than one piece, packed on the worker. */
    if (mpit_setting_bytes("MPIGPU_STAGING_MAX") <= 65536)
        CHECK(mpit_value("mpigpu_p2p_worker_jobs") > jobs0);
    unsigned char *want = expected(t, LONG, 20 + (unsigned)rank, 60);
    for (int dev = 1; dev >= 0; dev--) {
        unsigned char *b = buf_make(n, 60, dev);
        MPI_File_set_view(fh, (MPI_Offset)rank * region, MPI_DOUBLE, MPI_DOUBLE, "native",
                          MPI_INFO_NULL);
        CHECK(MPI_File_read_at(fh, 3, b + ORIGIN, LONG, t, &st) == MPI_SUCCESS);
        MPI_Get_count_c(&st, t, &got);
        CHECK(got == LONG);
        CHECK(buf_equal(b, want, n, dev));
        buf_free(b, dev);
    }
    free(want);
    /* The last rank's read runs past the end of the file: 1000 whole
       instances and 3 doubles of the next are there. */
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    CHECK(MPI_File_set_size(fh, (MPI_Offset)(size - 1) * region + 24 + 1000 * 32 + 24) ==
          MPI_SUCCESS);
    MPI_File_set_view(fh, (MPI_Offset)rank * region, MPI_DOUBLE, MPI_DOUBLE, "native",
                      MPI_INFO_NULL);
    if (rank == size - 1) {
        unsigned char *b = buf_make(n, 60, 1), *w = malloc(n), *packed = malloc(LONG * 32);
        int pos = 0;
        MPI_Count el = -1;
        fill(w, n, 60);
        PMPI_Pack(w + ORIGIN, LONG, t, packed, LONG * 32, &pos, MPI_COMM_SELF);
        unsigned char *full = expected(t, LONG, 20 + (unsigned)rank, 60);
        int pos2 = 0;
        unsigned char *fp = malloc(LONG * 32);
        PMPI_Pack(full + ORIGIN, LONG, t, fp, LONG * 32, &pos2, MPI_COMM_SELF);
        memcpy(packed, fp, 1000 * 32 + 24); /* what the file still holds */
        pos = 0;
        PMPI_Unpack(packed, LONG * 32, &pos, w + ORIGIN, LONG, t, MPI_COMM_SELF);
        CHECK(MPI_File_read_at(fh, 3, b + ORIGIN, LONG, t, &st) == MPI_SUCCESS);
        MPI_Get_elements_x(&st, t, &el);
        CHECK(el == 1000 * 4 + 3);
        CHECK(buf_equal(b, w, n, 1));
        free(fp);
        free(full);
        free(packed);
        free(w);
        buf_free(b, 1);
    }
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    MPI_File_set_size(fh, 0);
    free(fa);
    free(fb);
}

/* A read of 3 instances where the file ends inside the first (rank 0, its
   own file): the bytes the file holds reach the device buffer, in the
   datatype's layout, and nothing else changes; the status counts them (2
   doubles, no whole instance).  (ROMIO counts the bytes asked for on a host
   buffer of a noncontiguous type, which is why the host is no reference
   here.) */
static void test_eof(void)
{
    MPI_Datatype t = types[1]; /* 4 doubles, stride 3 */
    size_t n = buf_size(t, COUNT);
    unsigned char bytes[19];
    MPI_File fh;
    snprintf(where, sizeof(where), "eof");
    fill(bytes, sizeof(bytes), 7);
    CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) ==
          MPI_SUCCESS);
    MPI_File_set_size(fh, 0);
    CHECK(MPI_File_write_at(fh, 0, bytes, (int)sizeof(bytes), MPI_BYTE, MPI_STATUS_IGNORE) ==
          MPI_SUCCESS);
    /* want: the poisoned buffer with its first 19 packed bytes replaced */
    unsigned char *want = malloc(n), packed[3 * 32];
    int pos = 0;
    fill(want, n, 3);
    PMPI_Pack(want + ORIGIN, COUNT, t, packed, sizeof(packed), &pos, MPI_COMM_SELF);
    memcpy(packed, bytes, sizeof(bytes));
    pos = 0;
    PMPI_Unpack(packed, sizeof(packed), &pos, want + ORIGIN, COUNT, t, MPI_COMM_SELF);
    for (int nb = 0; nb < 2; nb++) {
        unsigned char *d = buf_make(n, 3, 1);
        MPI_Status sd;
        MPI_Request r;
        MPI_Count ed = -1;
        int cd = 0;
        if (nb) {
            CHECK(MPI_File_iread_at(fh, 0, d + ORIGIN, COUNT, t, &r) == MPI_SUCCESS);
            CHECK(MPI_Wait(&r, &sd) == MPI_SUCCESS);
        } else {
            CHECK(MPI_File_read_at(fh, 0, d + ORIGIN, COUNT, t, &sd) == MPI_SUCCESS);
        }
        MPI_Get_elements_x(&sd, t, &ed);
        MPI_Get_count(&sd, t, &cd);
        CHECK(ed == 2 && cd == MPI_UNDEFINED);
        CHECK(buf_equal(d, want, n, 1));
        buf_free(d, 1);
    }
    free(want);
    MPI_File_close(&fh);
    MPI_File_delete(path, MPI_INFO_NULL);
}

/* The "external32" representation: the staged bytes go as the twin, whose
   basic types drive MPI's conversion; device and host files must match, and
   the read converts back (rank 0, its own file; a double and a vector:
   MPICH 4.0.2's own external32 writes from host buffers die of SIGILL in
   MPI_Pack_external_size for a struct of mixed types, and corrupt the heap
   for a subarray of floats). */
static void test_external32(void)
{
    MPI_File fh;
    snprintf(where, sizeof(where), "external32");
    CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) ==
          MPI_SUCCESS);
    for (int ti = -1; ti <= 1; ti += 2) {
        MPI_Datatype t = ti < 0 ? MPI_DOUBLE : types[ti];
        size_t n = buf_size(t, COUNT);
        int tsize = 0;
        MPI_Type_size(t, &tsize);
        size_t fsz = (size_t)tsize * COUNT;
        unsigned char *file[2] = {malloc(fsz), malloc(fsz)};
        MPI_Status st;
        MPI_Count got = -1;
        for (int dev = 1; dev >= 0; dev--) {
            unsigned char *b = buf_make(n, 40, dev);
            MPI_File_set_size(fh, 0);
            MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL);
            CHECK(MPI_File_write_at(fh, 0, b + ORIGIN, COUNT, t, &st) == MPI_SUCCESS);
            MPI_Get_count_c(&st, t, &got);
            CHECK(got == COUNT);
            MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
            CHECK(MPI_File_read_at(fh, 0, file[dev], (int)fsz, MPI_BYTE, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
            buf_free(b, dev);
        }
        CHECK(memcmp(file[0], file[1], fsz) == 0);
        unsigned char *want = expected(t, COUNT, 40, 41), *b = buf_make(n, 41, 1);
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL);
        CHECK(MPI_File_read_at(fh, 0, b + ORIGIN, COUNT, t, &st) == MPI_SUCCESS);
        MPI_Get_count_c(&st, t, &got);
        CHECK(got == COUNT);
        CHECK(buf_equal(b, want, n, 1));
        buf_free(b, 1);
        free(want);
        free(file[0]);
        free(file[1]);
    }
    MPI_File_close(&fh);
    MPI_File_delete(path, MPI_INFO_NULL);
}

/* Errors: the class MPI gives the host form, raised on the file's handler. */
static int raised;
static void count_raise(MPI_File *fh, int *code, ...)
{
    (void)fh;
    (void)code;
    raised++;
}

static void test_errors(void)
{
    unsigned char *d = buf_make(256, 1, 1), h[256];
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, ch, cd;
    MPI_File fh;
    MPI_Errhandler eh;
    snprintf(where, sizeof(where), "errors");
    ch = MPI_File_write(MPI_FILE_NULL, h, 4, MPI_INT, MPI_STATUS_IGNORE);
    cd = MPI_File_write(MPI_FILE_NULL, d, 4, MPI_INT, MPI_STATUS_IGNORE);
    PMPI_Error_class(ch, &ch);
    CHECK(ch != MPI_SUCCESS && cd == ch);
    /* A file opened read-only: MPI refuses the staged write. */
    CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) ==
          MPI_SUCCESS);
    MPI_File_close(&fh);
    CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS);
    MPI_File_create_errhandler(count_raise, &eh);
    MPI_File_set_errhandler(fh, eh);
    raised = 0;
    ch = MPI_File_write_at(fh, 0, h, 4, MPI_INT, MPI_STATUS_IGNORE);
    cd = MPI_File_write_at(fh, 0, d, 4, MPI_INT, MPI_STATUS_IGNORE);
    PMPI_Error_class(ch, &ch);
    PMPI_Error_class(cd, &cd);
    CHECK(ch != MPI_SUCCESS && cd == ch && raised == 2);
    /* Checks of the device path, on the file's handler, named. */
    raised = 0;
    ch = MPI_File_read_at(fh, -1, h, 4, MPI_INT, MPI_STATUS_IGNORE);
    PMPI_Error_class(ch, &ch);
    CHECK(ch != MPI_SUCCESS && MPI_File_read_at(fh, -1, d, 4, MPI_INT, MPI_STATUS_IGNORE) == ch);
    CHECK(MPI_File_read_at_c(fh, 0, d, (MPI_Count)1 << 40, MPI_INT, MPI_STATUS_IGNORE) ==
          MPI_ERR_COUNT);
    MPI_Error_string(MPI_ERR_COUNT, msg, &len);
    CHECK(strstr(msg, "MPI_File_read_at_c") != NULL);
    CHECK(MPI_File_iread(fh, d, 4, MPI_INT, NULL) == MPI_ERR_ARG);
    CHECK(raised == 4);
    /* A negative large count that an int would wrap to a small one. */
    CHECK(MPI_File_read_at_c(fh, 0, d, -((MPI_Count)1 << 32), MPI_INT, MPI_STATUS_IGNORE) ==
          MPI_ERR_COUNT);
    CHECK(raised == 5);
    /* An uncommitted datatype. */
    MPI_Datatype v;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    ch = MPI_File_read_at(fh, 0, h, 1, v, MPI_STATUS_IGNORE);
    cd = MPI_File_read_at(fh, 0, d, 1, v, MPI_STATUS_IGNORE);
    PMPI_Error_class(ch, &ch);
    CHECK(ch == MPI_ERR_TYPE && cd == ch);
    MPI_Type_free(&v);
    /* Instances that span more bytes than an address holds: refused before
       anything moves, never a signal. */
    MPI_Datatype far;
    MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 61, &far);
    MPI_Type_commit(&far);
    raised = 0;
    cd = MPI_File_read_at(fh, 0, d, 8, far, MPI_STATUS_IGNORE);
    CHECK((cd == MPI_ERR_TYPE || cd == MPI_ERR_BUFFER) && raised == 1);
    cd = MPI_File_iread_at(fh, 0, d, 8, far, &(MPI_Request){MPI_REQUEST_NULL});
    CHECK((cd == MPI_ERR_TYPE || cd == MPI_ERR_BUFFER) && raised == 2);
    MPI_Type_free(&far);
    MPI_File_close(&fh);
    MPI_Errhandler_free(&eh);
    MPI_File_delete(path, MPI_INFO_NULL);
    buf_free(d, 1);
}

int main(int argc, char **argv)
{
    int multiple = 0, level = MPI_THREAD_SINGLE;
    for (int i = 1; i < argc; i++)
        multiple |= !strcmp(argv[i], "multiple");
    /* Under MPI_THREAD_MULTIPLE the progress thread steps the nonblocking
       calls' operations too. */
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (mpit_read_init()) {
        fprintf(stderr, "file_io: MPI_T does not start\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    types_create();
    if (rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/mpigpu-fio-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof(path), "%s/data", dir);

    MPI_File fh;
    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS);
    static const int tset[4] = {-1, 1, 2, 4}; /* double, vector, subarray, struct */
    /* One rank runs every mode, type and view; 2 ranks (whose collective
       calls cost more on a shared node) every mode with two of the types in
       turn; more ranks the modes whose calls meet other ranks' (collective,
       shared pointer) once each; everything with the argument "full". */
    int full = size == 1;
    for (int i = 1; i < argc; i++)
        full |= !strcmp(argv[i], "full");
    for (int m = 0; m < NMODES; m++) {
        int shared = mode_shared(m) || mode_ordered(m);
        int coll = shared || m == M_AT_ALL || m == M_ALL || m == M_SPLIT_AT || m == M_SPLIT_ALL ||
                   m == M_I_AT_ALL || m == M_I_ALL || m == M_ALL_C;
        for (int i = 0; i < 4; i++)
            for (int holes = 0; holes < 2; holes++) {
                int pick = i == (m + holes) % 4 && (size <= 2 || (coll && holes == !shared));
                if ((!holes || !shared) && (full || pick))
                    test_mode(fh, m, holes, tset[i]);
            }
    }
    test_long(fh);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_File_delete(path, MPI_INFO_NULL);
        snprintf(path, sizeof(path), "%s/self", dir);
        test_eof();
        test_external32();
        test_errors();
        CHECK(rmdir(dir) == 0);
    }
    types_free();
    mpit_read_finalize();
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all == 0 ? " No Errors\n" : " Found %d errors\n", all);
    MPI_Finalize();
    return all != 0;
}
