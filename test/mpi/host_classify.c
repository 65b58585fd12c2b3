/* The classification of buffers that every interposed call makes (issue 31),
   against a reference computed here from MPI's own answers: for every
   predefined datatype (test/include/mgtest_types.h: those of the standard's
   C binding, which the layout table must hold, whether at their first slot
   or not, and the Fortran, C++, removed and MPICH-only ones, which it may
   leave out), a derived one, counts from 0 to past 2^31 and addresses on
   both sides of each end of the reserved device range, mgdev_buf_is_device
   (inline for a dense predefined type in host memory) and
   mgdev_buf_is_device_any (out of line) answer MGDEV_BUF_HOST exactly when
   no byte of the span lies in the range, and mgdt_predefined gives MPI's
   size and extents (and MPI the size the language fixes).  Then host sends
   and receives of each predefined type move their data (the quick path of
   MPI_Send/MPI_Recv), and a device buffer of each type is still taken as
   one (the data arrive on the device).  One process: it sends to itself. */
#include "mgtest.h"
#include "p2p_common.h"

#include "mgtest_types.h"
#include "registry.h"

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
    for (int t = 0; t <= MGTEST_NTYPES; t++) {
        const mgtest_type_t *e = t < MGTEST_NTYPES ? &mgtest_types[t] : NULL;
        MPI_Datatype dt = e ? e->dt : vec;
        const char *tname = e ? e->name : "vector";
        if (e) {
            /* the table answers what MPI does, for every type of the
               standard's C binding; for the others, where it answers */
            const mgdt_layout_t *l = mgdt_predefined(dt);
            MPI_Count size, lb, ext, tlb, tex;
            PMPI_Type_size_x(dt, &size);
            PMPI_Type_get_extent_x(dt, &lb, &ext);
            PMPI_Type_get_true_extent_x(dt, &tlb, &tex);
            snprintf(where, sizeof(where), "%s", tname);
            CHECK(e->size < 0 || size == e->size);
            if (MGTEST_DT_STANDARD_C(e->flags))
                CHECK(l != NULL);
            if (l) {
                CHECK(l->dt == dt && l->size == size && l->extent == ext && l->true_lb == tlb &&
                      l->true_extent == tex);
                CHECK(l->dense == (tlb == 0 && size > 0 && ext == size && tex == size));
            }
            CHECK(mgdt_predefined_dense(dt) == NULL || mgdt_predefined_dense(dt) == l);
            dense += mgdt_predefined_dense(dt) != NULL && !(e->flags & MGTEST_DT_ALIAS);
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
    for (int t = 0; t < MGTEST_NTYPES && d; t++) {
        MPI_Datatype dt = mgtest_types[t].dt;
        const char *tname = mgtest_types[t].name;
        MPI_Count lb, ext;
        MPI_Request q;
        PMPI_Type_get_extent_x(dt, &lb, &ext);
        size_t bytes = (size_t)(COUNT * ext);
        for (size_t i = 0; i < bytes; i++)
            h[i] = (unsigned char)(i * 7 + t);
        memset(r, 0, bytes);
        snprintf(where, sizeof(where), "host %s", tname);
        MPI_Isend(h, COUNT, dt, 0, t, MPI_COMM_WORLD, &q);
        MPI_Recv(r, COUNT, dt, 0, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Count size;
        PMPI_Type_size_x(dt, &size);
        if (size == ext) /* no gaps: every byte moved */
            CHECK(memcmp(h, r, bytes) == 0);
        /* host to device and back: the device side runs as an operation */
        snprintf(where, sizeof(where), "device %s", tname);
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
