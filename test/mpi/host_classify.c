/* The classification of buffers that every interposed call makes (issue 31),
   against a reference computed here from MPI's own answers: for every
   predefined datatype (the layout table's, whether it sits at its first
   slot or not), a derived one, counts from 0 to past 2^31 and addresses on
   both sides of each end of the reserved device range, mgdev_buf_is_device
   (inline for a dense predefined type in host memory) and
   mgdev_buf_is_device_any (out of line) answer MGDEV_BUF_HOST exactly when
   no byte of the span lies in the range, and mgdt_predefined gives MPI's
   size and extents.  Then host sends and receives of each predefined type
   move their data (the quick path of MPI_Send/MPI_Recv), and a device
   buffer of each type is still taken as one (the data arrive on the
   device).  One process: it sends to itself. */
#include "mgtest.h"
#include "p2p_common.h"

#include "registry.h"

static const MPI_Datatype predefined[] = {MPI_CHAR,
                                          MPI_SIGNED_CHAR,
                                          MPI_UNSIGNED_CHAR,
                                          MPI_BYTE,
                                          MPI_WCHAR,
                                          MPI_SHORT,
                                          MPI_UNSIGNED_SHORT,
                                          MPI_INT,
                                          MPI_UNSIGNED,
                                          MPI_LONG,
                                          MPI_UNSIGNED_LONG,
                                          MPI_LONG_LONG_INT,
                                          MPI_UNSIGNED_LONG_LONG,
                                          MPI_FLOAT,
                                          MPI_DOUBLE,
                                          MPI_LONG_DOUBLE,
                                          MPI_C_BOOL,
                                          MPI_INT8_T,
                                          MPI_INT16_T,
                                          MPI_INT32_T,
                                          MPI_INT64_T,
                                          MPI_UINT8_T,
                                          MPI_UINT16_T,
                                          MPI_UINT32_T,
                                          MPI_UINT64_T,
                                          MPI_AINT,
                                          MPI_OFFSET,
                                          MPI_COUNT,
                                          MPI_C_FLOAT_COMPLEX,
                                          MPI_C_DOUBLE_COMPLEX,
                                          MPI_C_LONG_DOUBLE_COMPLEX,
                                          MPI_PACKED,
                                          MPI_FLOAT_INT,
                                          MPI_DOUBLE_INT,
                                          MPI_LONG_INT,
                                          MPI_2INT,
                                          MPI_SHORT_INT,
                                          MPI_LONG_DOUBLE_INT};
#define NPRE ((int)(sizeof(predefined) / sizeof(predefined[0])))

/* The reference: whether count instances of dt at buf touch [base, end),
   from MPI's extents, in 128 bits; -1 where it cannot say (a span that no
   address holds: the library answers SPAN or DEVICE then, never HOST for a
   span reaching the range). */
static int reference(uintptr_t buf, MPI_Count count, MPI_Datatype dt, uintptr_t base, uintptr_t end)
{
    MPI_Count lb, ext, tlb, tex;
    PMPI_Type_get_extent_x(dt, &lb, &ext);
    PMPI_Type_get_true_extent_x(dt, &tlb, &tex);
    if (count <= 0 || tex <= 0)
        return buf >= base && buf < end; /* the origin alone */
    __int128 step = (__int128)(count - 1) * ext;
    __int128 first = (__int128)buf + (step < 0 ? step : 0) + tlb;
    __int128 last = (__int128)buf + (step > 0 ? step : 0) + tlb + tex; /* past the end */
    if (first < 0 || last > (__int128)UINTPTR_MAX)
        return -1;
    return first < (__int128)end && last > (__int128)base;
}

static void classify(uintptr_t a, MPI_Count count, MPI_Datatype dt, const char *tname)
{
    const void *p = (const void *)a;
    int ref = reference(a, count, dt, mgdev_res.base, mgdev_res.base + mgdev_res.size);
    int got = mgdev_buf_is_device(p, count, dt), any = mgdev_buf_is_device_any(p, count, dt);
    snprintf(where, sizeof(where), "%s x %lld at %#lx (range %#lx + %#zx)", tname, (long long)count,
             (unsigned long)a, (unsigned long)mgdev_res.base, mgdev_res.size);
    CHECK(got == any);
    if (ref >= 0)
        CHECK((got != MGDEV_BUF_HOST) == ref);
    else
        CHECK(got != MGDEV_BUF_HOST || !mgdev_reg_in_range(p, 1));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    uintptr_t base = mgdev_res.base, end = base + mgdev_res.size;
    CHECK(base != 0);
    MPI_Datatype vec;
    MPI_Type_vector(3, 2, 5, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    static const MPI_Count counts[] = {0,          1,          2,          7,         1000,
                                       2147483646, 2147483647, 2147483648, 2147483653};
    const uintptr_t addrs[] = {0x1000,
                               base - 4096,
                               base - 64,
                               base - 17,
                               base - 8,
                               base - 1,
                               base,
                               base + 1,
                               base + 4096,
                               end - 64,
                               end - 8,
                               end - 1,
                               end,
                               end + 1,
                               end + 4096,
                               ((uintptr_t)1 << 62) - 8,
                               (uintptr_t)1 << 62,
                               (uintptr_t)MPI_IN_PLACE};
    int dense = 0;
    for (int t = 0; t <= NPRE; t++) {
        MPI_Datatype dt = t < NPRE ? predefined[t] : vec;
        char tname[32];
        snprintf(tname, sizeof(tname), t < NPRE ? "predefined %d" : "vector", t);
        if (t < NPRE) {
            /* the table answers what MPI does */
            const mgdt_layout_t *l = mgdt_predefined(dt);
            MPI_Count size, lb, ext, tlb, tex;
            PMPI_Type_size_x(dt, &size);
            PMPI_Type_get_extent_x(dt, &lb, &ext);
            PMPI_Type_get_true_extent_x(dt, &tlb, &tex);
            snprintf(where, sizeof(where), "%s", tname);
            CHECK(l != NULL);
            if (!l)
                continue;
            CHECK(l->dt == dt && l->size == size && l->extent == ext && l->true_lb == tlb &&
                  l->true_extent == tex);
            CHECK(l->dense == (tlb == 0 && size > 0 && ext == size && tex == size));
            CHECK(mgdt_predefined_dense(dt) == NULL || mgdt_predefined_dense(dt) == l);
            dense += mgdt_predefined_dense(dt) != NULL;
        } else {
            CHECK(mgdt_predefined(dt) == NULL && mgdt_predefined_dense(dt) == NULL);
        }
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (size_t k = 0; k < sizeof(addrs) / sizeof(addrs[0]); k++)
                classify(addrs[k], counts[c], dt, tname);
    }
    snprintf(where, sizeof(where), "dense types");
    CHECK(dense >= 10); /* the common ones take the inline path */

    /* Host and device buffers of each predefined type through MPI_Send and
       MPI_Recv (to itself: an MPI_Isend first). */
    enum { COUNT = 40 };
    unsigned char *h = malloc(COUNT * 64), *r = malloc(COUNT * 64), *back = malloc(COUNT * 64);
    void *d = NULL;
    MPIX_Gpu_malloc(COUNT * 64, &d);
    CHECK(d != NULL);
    for (int t = 0; t < NPRE && d; t++) {
        MPI_Datatype dt = predefined[t];
        MPI_Count lb, ext;
        MPI_Request q;
        PMPI_Type_get_extent_x(dt, &lb, &ext);
        size_t bytes = (size_t)(COUNT * ext);
        for (size_t i = 0; i < bytes; i++)
            h[i] = (unsigned char)(i * 7 + t);
        memset(r, 0, bytes);
        snprintf(where, sizeof(where), "host predefined %d", t);
        MPI_Isend(h, COUNT, dt, 0, t, MPI_COMM_WORLD, &q);
        MPI_Recv(r, COUNT, dt, 0, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Count size;
        PMPI_Type_size_x(dt, &size);
        if (size == ext) /* no gaps: every byte moved */
            CHECK(memcmp(h, r, bytes) == 0);
        /* host to device and back: the device side runs as an operation */
        snprintf(where, sizeof(where), "device predefined %d", t);
        MPI_Isend(h, COUNT, dt, 0, t, MPI_COMM_WORLD, &q);
        MPI_Recv(d, COUNT, dt, 0, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        memset(back, 0, bytes);
        MPI_Irecv(back, COUNT, dt, 0, t, MPI_COMM_WORLD, &q);
        MPI_Send(d, COUNT, dt, 0, t, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (size == ext)
            CHECK(memcmp(h, back, bytes) == 0);
    }
    if (d)
        MPIX_Gpu_free(d);
    free(h);
    free(r);
    free(back);
    MPI_Type_free(&vec);
    MPI_Finalize();
    if (errs)
        fprintf(stderr, "host_classify: %d checks failed\n", errs);
    else
        printf("host_classify: every classification as the reference\n");
    return errs ? 1 : 0;
}
