/* Unit tests of the device choice by locality (pure logic: made-up machines,
   no MPI, no OpenCL device and no topology). */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "locality.h"

#define GPU(pci, set)                                                                              \
    {                                                                                              \
        1, (pci), (set)                                                                            \
    }
#define CPU                                                                                        \
    {                                                                                              \
        0, MGDEV_LOC_PCI_NONE, NULL                                                                \
    }
#define NOPCI MGDEV_LOC_PCI_NONE

/* A device as a table writes it: its locality as a cpuset list string. */
typedef struct {
    int is_gpu;
    uint64_t pci;
    const char *cpus; /* NULL: hwloc cannot tell */
} dev_row_t;

typedef struct {
    const char *name;
    int ndevs;
    dev_row_t devs[6];
    const char *binding; /* NULL: no topology */
    int slot;
    int index; /* expected */
    mgdev_loc_why_t why;
    int n; /* expected number of candidates */
} case_t;

/* A two-package machine: PUs 0-7 on package 0, 8-15 on package 1.  FOUR:
   two GPUs on each package. */
#define FOUR                                                                                       \
    4,                                                                                             \
    {                                                                                              \
        GPU(0x100, "0-7"), GPU(0x200, "0-7"), GPU(0x300, "8-15"), GPU(0x400, "8-15")               \
    }
#define HW MGDEV_LOC_HWLOC
#define NOLOC MGDEV_LOC_NO_LOCALITY
#define NOGPU MGDEV_LOC_NO_GPU

/* clang-format off */
static const case_t cases[] = {
    /* name, ndevs, devices,                               binding, slot: index, why, n */
    {"no device", 0, {{0}},                                "0-15", 0,  -1, MGDEV_LOC_NO_DEVICE, 0},
    {"PoCL only", 1, {CPU},                                "0-15", 3,   0, NOGPU, 1},
    {"two CPU devices", 2, {CPU, CPU},                     "0-15", 1,   0, NOGPU, 1},
    {"GPU after CPU, no PCI", 2, {CPU, GPU(NOPCI, NULL)},  "0",    0,   1, NOLOC, 1},
    {"no PCI: spread", 3, {GPU(NOPCI, NULL), CPU, GPU(NOPCI, NULL)},
                                                           "0-15", 1,   2, NOLOC, 2},
    {"no PCI: slot wraps", 2, {GPU(NOPCI, NULL), GPU(NOPCI, NULL)},
                                                           "0-15", 2,   0, NOLOC, 2},
    {"package 0, slot 0", FOUR,                            "0-7",  0,   0, HW, 2},
    {"package 0, slot 1", FOUR,                            "0-7",  1,   1, HW, 2},
    {"package 0, slot wraps", FOUR,                        "0-7",  2,   0, HW, 2},
    {"package 1, slot 0", FOUR,                            "8-15", 0,   2, HW, 2},
    {"a core of package 1, slot 1", FOUR,                  "9",    1,   3, HW, 2},
    {"unbound: every GPU", FOUR,                           "0-15", 3,   3, HW, 4},
    {"across packages: GPUs that meet", 3,
     {GPU(0x100, "0-7"), GPU(0x200, "8-15"), GPU(0x300, "16-23")},
                                                           "6-9",  1,   1, HW, 2},
    {"the most specific locality", 2, {GPU(0x100, "0-15"), GPU(0x200, "0-7")},
                                                           "2",    1,   1, HW, 1},
    {"no GPU near: the far ones", 3, {GPU(0x100, "8-15"), CPU, GPU(0x200, "8-15")},
                                                           "0-7",  1,   2, HW, 2},
    {"unknown beats far", 2, {GPU(0x100, "8-15"), GPU(NOPCI, NULL)},
                                                           "0-3",  0,   1, HW, 1},
    {"near beats unknown", 2, {GPU(NOPCI, NULL), GPU(0x100, "0-7")},
                                                           "0-3",  1,   1, HW, 1},
    {"one board under two platforms", 4,
     {GPU(0x100, "0-7"), CPU, GPU(0x100, "0-7"), GPU(0x200, "0-7")},
                                                           "0-15", 1,   3, HW, 2},
    {"no topology: binding unknown", 2, {GPU(0x100, "0-7"), GPU(0x200, "8-15")},
                                                           NULL,   1,   1, HW, 2},
};
/* clang-format on */

/* Builds records (and their cpusets) from a row; free with rows_free. */
static void rows_make(const case_t *c, mgdev_loc_dev_t *devs, hwloc_bitmap_t *sets)
{
    for (int i = 0; i < c->ndevs; i++) {
        sets[i] = NULL;
        if (c->devs[i].cpus) {
            sets[i] = hwloc_bitmap_alloc();
            ck_assert_int_eq(hwloc_bitmap_list_sscanf(sets[i], c->devs[i].cpus), 0);
        }
        devs[i].is_gpu = c->devs[i].is_gpu;
        devs[i].pci = c->devs[i].pci;
        devs[i].cpuset = sets[i];
    }
}

static void rows_free(const case_t *c, hwloc_bitmap_t *sets)
{
    for (int i = 0; i < c->ndevs; i++)
        hwloc_bitmap_free(sets[i]);
}

static hwloc_bitmap_t set_of(const char *list)
{
    if (!list)
        return NULL;
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    ck_assert_int_eq(hwloc_bitmap_list_sscanf(b, list), 0);
    return b;
}

START_TEST(select_table)
{
    const case_t *c = &cases[_i];
    mgdev_loc_dev_t devs[6];
    hwloc_bitmap_t sets[6];
    hwloc_bitmap_t binding = set_of(c->binding);

    rows_make(c, devs, sets);
    mgdev_loc_choice_t got = mgdev_loc_select(devs, c->ndevs, binding, c->slot);
    ck_assert_msg(got.index == c->index && got.why == c->why && got.n == c->n,
                  "%s: got index %d why %d n %d, expected index %d why %d n %d", c->name, got.index,
                  (int)got.why, got.n, c->index, (int)c->why, c->n);
    if (got.n)
        ck_assert_int_eq(got.k, c->slot % got.n);
    rows_free(c, sets);
    hwloc_bitmap_free(binding);
}
END_TEST

/* Ranks share a key exactly when they share the candidate set: that is what
   numbers them apart on a node. */
START_TEST(keys_group_ranks)
{
    static const case_t four = {"four", FOUR, NULL, 0, 0, 0, 0};
    static const char *bindings[] = {"0", "5", "8", "0-7", "12-15"};
    uint64_t keys[5];
    mgdev_loc_dev_t devs[6];
    hwloc_bitmap_t sets[6];
    int cand[MGDEV_LOC_MAX_DEVICES];

    rows_make(&four, devs, sets);
    for (int r = 0; r < 5; r++) {
        hwloc_bitmap_t b = set_of(bindings[r]);
        mgdev_loc_choice_t c;
        mgdev_loc_candidates(devs, 4, b, cand, &c);
        keys[r] = c.key;
        hwloc_bitmap_free(b);
    }
    ck_assert(keys[0] == keys[1] && keys[1] == keys[3]);
    ck_assert(keys[2] == keys[4]);
    ck_assert(keys[0] != keys[2]);
    rows_free(&four, sets);
}
END_TEST

/* The list is capped, not overrun. */
START_TEST(many_devices)
{
    enum { N = MGDEV_LOC_MAX_DEVICES + 8 };
    mgdev_loc_dev_t *devs = calloc(N, sizeof(*devs));
    ck_assert_ptr_nonnull(devs);
    for (int i = 0; i < N; i++)
        devs[i] = (mgdev_loc_dev_t){1, (uint64_t)i << 8, NULL};
    mgdev_loc_choice_t c = mgdev_loc_select(devs, N, NULL, MGDEV_LOC_MAX_DEVICES + 1);
    ck_assert_int_eq(c.n, MGDEV_LOC_MAX_DEVICES);
    ck_assert_int_eq(c.index, 1);
    free(devs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("locality");
    TCase *tc = tcase_create("select");
    tcase_add_loop_test(tc, select_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, keys_group_ranks);
    tcase_add_test(tc, many_devices);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
