/* Unit tests of the device-address registry (no MPI). */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "registry.h"

static cl_context ctx;
static cl_device_id dev;

static void cl_setup(void)
{
    cl_platform_id plat;
    cl_int err;
    ck_assert_int_eq(clGetPlatformIDs(1, &plat, NULL), CL_SUCCESS);
    ck_assert_int_eq(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL), CL_SUCCESS);
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
}

static void cl_teardown(void)
{
    clReleaseContext(ctx);
}

static void reg_setup(void)
{
    ck_assert_int_eq(mgdev_reg_init(), MPI_SUCCESS);
}

static void reg_teardown(void)
{
    mgdev_reg_finalize();
}

static cl_mem buf_new(size_t size)
{
    cl_int err;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size ? size : 1, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    return m;
}

static cl_uint refcount(cl_mem m)
{
    cl_uint n = 0;
    clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof(n), &n, NULL);
    return n;
}

/* Insert a fresh buffer owned by the registry. */
static char *alloc(size_t size)
{
    void *p = NULL;
    cl_mem m = buf_new(size);
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, size, 1, &p), MPI_SUCCESS);
    clReleaseMemObject(m);
    return p;
}

START_TEST(test_bounds)
{
    char *a = alloc(1000), *b = alloc(1000);
    mgdev_reg_entry_t e;
    size_t off = 99;

    ck_assert_uint_eq((uintptr_t)a % MGDEV_REG_ALIGN, 0);
    ck_assert_int_eq(mgdev_reg_lookup(a, &e, &off), 1);
    ck_assert_uint_eq(off, 0);
    ck_assert_uint_eq(e.size, 1000);
    ck_assert_int_eq(e.owned, 1);
    ck_assert_ptr_eq(e.context, ctx);
    ck_assert_int_eq(mgdev_reg_lookup(a + 999, NULL, &off), 1);
    ck_assert_uint_eq(off, 999);
    /* One past the end and just before the start belong to nobody. */
    ck_assert_int_eq(mgdev_reg_lookup(a + 1000, NULL, NULL), 0);
    ck_assert_int_eq(mgdev_reg_lookup(a - 1, NULL, NULL), 0);
    ck_assert_int_eq(mgdev_reg_lookup(b - 1, NULL, NULL), 0);
    ck_assert_int_eq(mgdev_reg_lookup(b + 1000, NULL, NULL), 0);
    ck_assert(b >= a + 1000 + MGDEV_REG_ALIGN || a >= b + 1000 + MGDEV_REG_ALIGN);
    /* Host memory is host, fast. */
    int local;
    ck_assert_int_eq(mgdev_reg_lookup(&local, NULL, NULL), 0);
    ck_assert_int_eq(mgdev_reg_lookup(NULL, NULL, NULL), 0);
    ck_assert_int_eq(mgdev_reg_in_range(&local, sizeof(local)), 0);
    ck_assert_int_eq(mgdev_reg_in_range(a + 999, 1), 1);
    ck_assert_int_eq(mgdev_reg_remove(a, 1, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(b, 1, NULL), MPI_SUCCESS);
}
END_TEST

START_TEST(test_size_zero)
{
    char *a = alloc(0), *b = alloc(0);
    ck_assert_ptr_ne(a, b);
    ck_assert_int_eq(mgdev_reg_lookup(a, NULL, NULL), 1);
    ck_assert_int_eq(mgdev_reg_lookup(a + 1, NULL, NULL), 0);
    ck_assert_int_eq(mgdev_reg_remove(a, 1, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(b, 1, NULL), MPI_SUCCESS);
}
END_TEST

/* s contains want, printed with printf's %p. */
static void assert_has_ptr(const char *s, const char *fmt, const void *p)
{
    char want[128];
    snprintf(want, sizeof(want), fmt, p);
    ck_assert_msg(s && strstr(s, want), "\"%s\" lacks \"%s\"", s ? s : "(null)", want);
}

START_TEST(test_after_free)
{
    char *a = alloc(4096), *b = alloc(64);
    char why[MGDEV_REG_WHY_LEN], want[128];
    mgdev_reg_entry_t e;
    ck_assert_int_eq(mgdev_reg_remove(a, 1, NULL), MPI_SUCCESS);
    for (size_t k = 0; k < 4096; k += 511) {
        int found = mgdev_reg_lookup(a + k, &e, NULL);
        ck_assert(!found || e.base != (uintptr_t)b);
        ck_assert_int_eq(found, 0);
        /* Every byte of it, and its guard, names the freed range. */
        mgdev_reg_why(a + k, why, sizeof(why));
        snprintf(want, sizeof(want), "lies in a freed range (4096 bytes at %p, freed by",
                 (void *)a);
        ck_assert_msg(strstr(why, want), "%s", why);
    }
    mgdev_reg_why(a + 4096 + MGDEV_REG_ALIGN - 1, why, sizeof(why));
    ck_assert_ptr_nonnull(strstr(why, "freed range"));
    /* A second free is an error that names the address and the freed range. */
    ck_assert_int_eq(mgdev_reg_remove(a, 1, NULL), MPI_ERR_BUFFER);
    assert_has_ptr(mgerr_get(MPI_ERR_BUFFER), "%p lies in a freed range", a);
    /* Past the end of a live allocation, and never allocated. */
    mgdev_reg_why(b + 64, why, sizeof(why));
    assert_has_ptr(why, "past the end of the device allocation [%p,", b);
    mgdev_reg_why(b + (1 << 30), why, sizeof(why));
    ck_assert_ptr_nonnull(strstr(why, "lies in no allocation"));
    int local;
    mgdev_reg_why(&local, why, sizeof(why));
    ck_assert_ptr_nonnull(strstr(why, "host address"));
    ck_assert_int_eq(mgdev_reg_remove(b, 1, NULL), MPI_SUCCESS);
}
END_TEST

/* A freed range is not handed out again while free space remains: the next
   allocation of the same size gets another address, and the stale pointer
   still meets the freed range. */
START_TEST(test_reuse_last)
{
    char why[MGDEV_REG_WHY_LEN];
    size_t n = 0, bytes = 0;
    char *a = alloc(4096);
    ck_assert_int_eq(mgdev_reg_remove(a, 1, NULL), MPI_SUCCESS);
    mgdev_reg_quarantine(&n, &bytes);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(bytes, 4096 + MGDEV_REG_ALIGN);
    char *b = alloc(4096);
    ck_assert_ptr_ne(b, a);
    ck_assert(b >= a + 4096 + MGDEV_REG_ALIGN || b + 4096 + MGDEV_REG_ALIGN <= a);
    ck_assert_int_eq(mgdev_reg_lookup(a, NULL, NULL), 0);
    assert_has_ptr(mgdev_reg_why(a + 8, why, sizeof(why)), "freed range (4096 bytes at %p", a);
    ck_assert_int_eq(mgdev_reg_remove(b, 1, NULL), MPI_SUCCESS);
    mgdev_reg_quarantine(&n, NULL);
    ck_assert_uint_eq(n, 2);
}
END_TEST

/* When no free hole fits, quarantined space is taken back oldest first, not
   lowest first: four quarter-size entries fill the reservation, three are
   freed (B, then D, then A), and the next two allocations get B's and D's
   addresses while A, freed last, stays in quarantine.  The registry does not
   compare sizes with the cl_mem, so a small buffer stands for the big ones. */
START_TEST(test_oldest_first)
{
    size_t reserved = 0, n = 0;
    char why[MGDEV_REG_WHY_LEN];
    mgdev_reg_usage(NULL, NULL, &reserved);
    size_t quarter = reserved / 4, size = quarter - 2 * MGDEV_REG_ALIGN;
    cl_mem m = buf_new(64);
    void *a, *b, *c, *d, *x, *y, *z;
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, size, 0, &a), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, size, 0, &b), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, size, 0, &c), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, size, 0, &d), MPI_SUCCESS);
    ck_assert(a < b && b < c && c < d);
    ck_assert_int_eq(mgdev_reg_remove(b, 0, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(d, 0, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(a, 0, NULL), MPI_SUCCESS);
    /* A small allocation still finds free space at the end: no quarantined
       range is touched. */
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, 1, 0, &z), MPI_SUCCESS);
    ck_assert((char *)z > (char *)d);
    mgdev_reg_quarantine(&n, NULL);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, size, 0, &x), MPI_SUCCESS);
    ck_assert_ptr_eq(x, b);
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, size, 0, &y), MPI_SUCCESS);
    ck_assert_ptr_eq(y, d);
    mgdev_reg_quarantine(&n, NULL);
    ck_assert_uint_eq(n, 1);
    char want[128];
    snprintf(want, sizeof(want), "lies in a freed range (%zu bytes at %p", size, a);
    ck_assert_msg(strstr(mgdev_reg_why(a, why, sizeof(why)), want), "%s", why);
    /* The address space is full now: one more takes A's space back. */
    void *w = NULL;
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, size, 0, &w), MPI_SUCCESS);
    ck_assert_ptr_eq(w, a);
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, size, 0, &w), MPI_ERR_NO_MEM);
    ck_assert_int_eq(mgdev_reg_remove(a, 0, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(x, 0, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(c, 0, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(y, 0, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(z, 0, NULL), MPI_SUCCESS);
    ck_assert_uint_eq(refcount(m), 1);
    clReleaseMemObject(m);
}
END_TEST

/* The quarantine holds MGDEV_REG_QUARANTINE_RANGES ranges: one free more ends
   the oldest's, whose space is then the lowest free hole and is handed out
   next; the second oldest is still reported as freed. */
START_TEST(test_quarantine_bound)
{
    const size_t max = MGDEV_REG_QUARANTINE_RANGES;
    char why[MGDEV_REG_WHY_LEN];
    size_t n = 0;
    cl_mem m = buf_new(64);
    void *first = NULL, *second = NULL, *p = NULL;
    for (size_t i = 0; i <= max; i++) {
        ck_assert_int_eq(mgdev_reg_insert(m, ctx, 100, 0, &p), MPI_SUCCESS);
        ck_assert(i == 0 || p != first);
        if (i == 0)
            first = p;
        if (i == 1)
            second = p;
        ck_assert_int_eq(mgdev_reg_remove(p, 0, NULL), MPI_SUCCESS);
    }
    mgdev_reg_quarantine(&n, NULL);
    ck_assert_uint_eq(n, max);
    ck_assert_ptr_nonnull(strstr(mgdev_reg_why(first, why, sizeof(why)), "lies in no allocation"));
    assert_has_ptr(mgdev_reg_why(second, why, sizeof(why)), "freed range (100 bytes at %p", second);
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, 100, 0, &p), MPI_SUCCESS);
    ck_assert_ptr_eq(p, first);
    ck_assert_int_eq(mgdev_reg_remove(p, 0, NULL), MPI_SUCCESS);
    ck_assert_uint_eq(refcount(m), 1);
    clReleaseMemObject(m);
}
END_TEST

START_TEST(test_remove_errors)
{
    char *a = alloc(100);
    void *r = NULL;
    cl_mem m = buf_new(64);
    char want[64];
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, 64, 0, &r), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(a + 1, 1, NULL), MPI_ERR_BUFFER);
    snprintf(want, sizeof(want), "%p", (void *)(a + 1));
    ck_assert_ptr_nonnull(strstr(mgerr_get(MPI_ERR_BUFFER), want));
    ck_assert_int_eq(mgdev_reg_remove(a, 0, NULL), MPI_ERR_BUFFER); /* free vs deregister */
    ck_assert_int_eq(mgdev_reg_remove(r, 1, NULL), MPI_ERR_BUFFER);
    int local;
    ck_assert_int_eq(mgdev_reg_remove(&local, 1, NULL), MPI_ERR_BUFFER);
    ck_assert_int_eq(mgdev_reg_lookup(a, NULL, NULL), 1); /* still live */
    ck_assert_int_eq(mgdev_reg_remove(a, 1, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(r, 0, NULL), MPI_SUCCESS);
    clReleaseMemObject(m);
}
END_TEST

START_TEST(test_same_mem_twice)
{
    cl_mem m = buf_new(512);
    void *p = NULL, *q = NULL;
    mgdev_reg_entry_t e;
    size_t off;
    ck_assert_uint_eq(refcount(m), 1);
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, 512, 0, &p), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, 512, 0, &q), MPI_SUCCESS);
    ck_assert_ptr_ne(p, q);
    ck_assert_uint_eq(refcount(m), 3);
    ck_assert_int_eq(mgdev_reg_lookup((char *)q + 100, &e, &off), 1);
    ck_assert_ptr_eq(e.mem, m);
    ck_assert_uint_eq(off, 100);
    ck_assert_int_eq(mgdev_reg_remove(p, 0, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_lookup(q, NULL, NULL), 1);
    ck_assert_int_eq(mgdev_reg_remove(q, 0, &e), MPI_SUCCESS);
    ck_assert_ptr_eq(e.mem, m);
    ck_assert_uint_eq(refcount(m), 1);
    clReleaseMemObject(m);
}
END_TEST

START_TEST(test_sub_buffer)
{
    cl_uint align_bits = 0;
    clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits, NULL);
    size_t align = align_bits / 8 ? align_bits / 8 : 128;
    cl_mem parent = buf_new(4 * align);
    cl_buffer_region region = {align, 2 * align};
    cl_int err;
    cl_mem sub =
        clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    void *p = NULL, *q = NULL;
    mgdev_reg_entry_t e;
    ck_assert_int_eq(mgdev_reg_insert(parent, ctx, 4 * align, 0, &p), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_insert(sub, ctx, 2 * align, 0, &q), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_lookup((char *)q + 2 * align - 1, &e, NULL), 1);
    ck_assert_ptr_eq(e.mem, sub);
    ck_assert_int_eq(mgdev_reg_lookup((char *)q + 2 * align, NULL, NULL), 0);
    ck_assert_int_eq(mgdev_reg_lookup((char *)p + 4 * align - 1, &e, NULL), 1);
    ck_assert_ptr_eq(e.mem, parent);
    ck_assert_int_eq(mgdev_reg_remove(q, 0, NULL), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_remove(p, 0, NULL), MPI_SUCCESS);
    clReleaseMemObject(sub);
    clReleaseMemObject(parent);
}
END_TEST

START_TEST(test_cycles_bounded)
{
    enum { LIVE = 64, CYCLES = 20000 };
    char *live[LIVE] = {0};
    size_t sizes[LIVE] = {0};
    cl_mem m = buf_new(1 << 20);
    unsigned seed = 12345;
    size_t in_use, hw, reserved, nfreed = 0, qn, qbytes;

    for (int i = 0; i < CYCLES; i++) {
        int k = rand_r(&seed) % LIVE;
        if (live[k]) {
            ck_assert_int_eq(mgdev_reg_lookup(live[k] + sizes[k] - 1, NULL, NULL), 1);
            ck_assert_int_eq(mgdev_reg_remove(live[k], 0, NULL), MPI_SUCCESS);
            live[k] = NULL;
            nfreed++;
        } else {
            sizes[k] = (size_t)(rand_r(&seed) % (1 << 20)) + 1;
            ck_assert_int_eq(mgdev_reg_insert(m, ctx, sizes[k], 0, (void **)&live[k]), MPI_SUCCESS);
        }
    }
    mgdev_reg_usage(&in_use, &hw, &reserved);
    mgdev_reg_quarantine(&qn, &qbytes);
    /* Fewer frees than the quarantine holds, and address space to spare:
       every freed range is still quarantined, none was handed out again, and
       every byte below the high-water mark is live or quarantined. */
    ck_assert_uint_le(in_use, (size_t)LIVE * ((1 << 20) + 2 * MGDEV_REG_ALIGN));
    ck_assert_uint_eq(qn, nfreed);
    ck_assert_uint_eq(hw, MGDEV_REG_ALIGN + in_use + qbytes);
    for (int k = 0; k < LIVE; k++)
        if (live[k])
            ck_assert_int_eq(mgdev_reg_remove(live[k], 0, NULL), MPI_SUCCESS);
    mgdev_reg_usage(&in_use, NULL, NULL);
    ck_assert_uint_eq(in_use, 0);
    ck_assert_uint_eq(refcount(m), 1);
    clReleaseMemObject(m);
}
END_TEST

enum { NSTABLE = 32, NREADERS = 4 };
static char *stable[NSTABLE];
static cl_mem stable_mem;
static volatile int writer_done;

static void *reader(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    long bad = 0;
    while (!writer_done) {
        int k = rand_r(&seed) % NSTABLE;
        size_t at = (size_t)(rand_r(&seed) % 300), off = 0;
        mgdev_reg_entry_t e;
        if (!mgdev_reg_lookup(stable[k] + at, &e, &off) || off != at || e.mem != stable_mem ||
            e.base != (uintptr_t)stable[k])
            bad++;
        if (mgdev_reg_lookup(stable[k] + 300, NULL, NULL))
            bad++;
    }
    return (void *)bad;
}

static void *writer(void *arg)
{
    cl_mem m = arg;
    for (int i = 0; i < 5000; i++) {
        void *p = NULL;
        if (mgdev_reg_insert(m, ctx, (size_t)(i % 977) + 1, 0, &p) != MPI_SUCCESS ||
            mgdev_reg_lookup(p, NULL, NULL) != 1 || mgdev_reg_remove(p, 0, NULL) != MPI_SUCCESS)
            return (void *)1;
    }
    return NULL;
}

START_TEST(test_concurrent)
{
    pthread_t r[NREADERS], w;
    void *res;
    cl_mem wm = buf_new(1024);
    stable_mem = buf_new(300);
    writer_done = 0;
    for (int k = 0; k < NSTABLE; k++)
        ck_assert_int_eq(mgdev_reg_insert(stable_mem, ctx, 300, 0, (void **)&stable[k]),
                         MPI_SUCCESS);
    for (int i = 0; i < NREADERS; i++)
        pthread_create(&r[i], NULL, reader, (void *)(uintptr_t)(i + 1));
    pthread_create(&w, NULL, writer, wm);
    pthread_join(w, &res);
    writer_done = 1;
    ck_assert_ptr_null(res);
    for (int i = 0; i < NREADERS; i++) {
        pthread_join(r[i], &res);
        ck_assert_int_eq((long)res, 0);
    }
    for (int k = 0; k < NSTABLE; k++)
        ck_assert_int_eq(mgdev_reg_remove(stable[k], 0, NULL), MPI_SUCCESS);
    clReleaseMemObject(stable_mem);
    clReleaseMemObject(wm);
}
END_TEST

START_TEST(test_finalize_releases)
{
    cl_mem m = buf_new(128);
    void *p = NULL;
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, 128, 0, &p), MPI_SUCCESS);
    ck_assert_uint_eq(refcount(m), 2);
    mgdev_reg_finalize();
    ck_assert_uint_eq(refcount(m), 1);
    ck_assert_int_eq(mgdev_reg_lookup(p, NULL, NULL), 0);
    /* The range stays reserved: an old address is never a host address. */
    ck_assert_int_eq(mgdev_reg_in_range(p, 1), 1);
    char why[MGDEV_REG_WHY_LEN];
    ck_assert_ptr_nonnull(strstr(mgdev_reg_why(p, why, sizeof(why)), "MPI_Finalize"));
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, 128, 0, &p), MPI_ERR_OTHER);
    ck_assert_int_eq(mgdev_reg_init(), MPI_SUCCESS); /* for the teardown */
    void *q = NULL;
    ck_assert_int_eq(mgdev_reg_insert(m, ctx, 128, 0, &q), MPI_SUCCESS);
    ck_assert_int_eq(mgdev_reg_in_range(q, 1), 1); /* the same reservation */
    ck_assert_int_eq(mgdev_reg_remove(q, 0, NULL), MPI_SUCCESS);
    clReleaseMemObject(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("registry");
    tcase_add_unchecked_fixture(tc, cl_setup, cl_teardown);
    tcase_add_checked_fixture(tc, reg_setup, reg_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_bounds);
    tcase_add_test(tc, test_size_zero);
    tcase_add_test(tc, test_after_free);
    tcase_add_test(tc, test_reuse_last);
    tcase_add_test(tc, test_oldest_first);
    tcase_add_test(tc, test_quarantine_bound);
    tcase_add_test(tc, test_remove_errors);
    tcase_add_test(tc, test_same_mem_twice);
    tcase_add_test(tc, test_sub_buffer);
    tcase_add_test(tc, test_cycles_bounded);
    tcase_add_test(tc, test_concurrent);
    tcase_add_test(tc, test_finalize_releases);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
