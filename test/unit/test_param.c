/*
 * Unit tests of the settings table and its parser (common/mgparam.h), and of
 * the device layer reading them (device/settings.c): the table is whole and
 * has no duplicate names, every default parses, malformed values are refused
 * with a message that names the variable and the value, valid ones read as
 * before the table.  No MPI, no OpenCL.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgdev.h"
#include "mgerr.h"
#include "mgparam.h"

static void env_clear(void)
{
    for (int id = 0; id < MGPARAM_COUNT; id++)
        unsetenv(mgparam_table[id].name);
}

START_TEST(test_table_whole)
{
    for (int id = 0; id < MGPARAM_COUNT; id++) {
        const mgparam_t *p = &mgparam_table[id];
        ck_assert_msg(p->name != NULL, "table slot %d is empty", id);
        ck_assert_msg(!strncmp(p->name, "MPIGPU_", 7), "%s: not an MPIGPU_ name", p->name);
        ck_assert_msg(p->help && p->help[0], "%s: no help", p->name);
        ck_assert_msg(p->type != MGPARAM_T_ENUM || (p->values && p->values[0]),
                      "%s: an enum without values", p->name);
        ck_assert_msg(p->def || p->def_doc || p->type == MGPARAM_T_STRING,
                      "%s: neither a default nor the meaning of unset", p->name);
        ck_assert_msg(!(p->type == MGPARAM_T_INT || p->type == MGPARAM_T_SIZE) || p->min <= p->max,
                      "%s: empty range", p->name);
    }
}
END_TEST

START_TEST(test_no_duplicates)
{
    for (int i = 0; i < MGPARAM_COUNT; i++)
        for (int j = i + 1; j < MGPARAM_COUNT; j++)
            ck_assert_msg(strcmp(mgparam_table[i].name, mgparam_table[j].name) != 0,
                          "%s is declared twice (slots %d and %d)", mgparam_table[i].name, i, j);
}
END_TEST

START_TEST(test_defaults_parse)
{
    char err[256];
    mgparam_value_t v;
    for (int id = 0; id < MGPARAM_COUNT; id++) {
        const mgparam_t *p = &mgparam_table[id];
        if (!p->def)
            continue;
        ck_assert_msg(mgparam_parse(p, p->def, &v, err, sizeof err) == 0, "%s's default: %s",
                      p->name, err);
    }
    /* The p2p engine's arrays end where the table's ranges do. */
    ck_assert_int_eq(mgparam_table[MGPARAM_P2P_DEPTH].max, MGDEV_P2P_DEPTH_MAX);
    ck_assert_int_eq(mgparam_table[MGPARAM_P2P_SHM_SLOTS].max, MGDEV_P2P_SHM_SLOTS_MAX);
    /* One chunk default, the pack engine's too. */
    ck_assert_int_eq(mgparam_default(MGPARAM_CHUNK), 4 << 20);
}
END_TEST

/* name=value is refused with a message naming both (the value quoted, but
   for numbers) and containing want. */
static void refused(const char *name, const char *value, const char *want)
{
    char err[256] = "", head[128];
    mgparam_value_t v;
    int id;
    for (id = 0; id < MGPARAM_COUNT; id++)
        if (!strcmp(mgparam_table[id].name, name))
            break;
    ck_assert_msg(id < MGPARAM_COUNT, "%s is not in the table", name);
    setenv(name, value, 1);
    ck_assert_msg(mgparam_read((mgparam_id_t)id, &v, err, sizeof err) == -1, "%s=%s accepted", name,
                  value);
    unsetenv(name);
    snprintf(head, sizeof head, "%s=\"%s\"", name, value);
    if (!strstr(err, head))
        snprintf(head, sizeof head, "%s=%s ", name, value);
    ck_assert_msg(strstr(err, head) != NULL, "message \"%s\" does not name %s", err, head);
    ck_assert_msg(strstr(err, want) != NULL, "message \"%s\" lacks \"%s\"", err, want);
}

START_TEST(test_malformed_refused)
{
    env_clear();
    refused("MPIGPU_PACK", "fast", "is not one of auto, kernel, copy, host");
    refused("MPIGPU_HOST_DMA", "yes", "is not one of auto, on, off");
    refused("MPIGPU_CALIBRATE", "2", "is not one of 1, 0, force");
    refused("MPIGPU_P2P_PROTOCOL", "eager", "is not one of plain, chunked, auto");
    refused("MPIGPU_P2P_FIRST", "2K", "expected from 4K to 1G");
    refused("MPIGPU_P2P_SHM_PIECE", "2G", "expected from 4K to 1G");
    refused("MPIGPU_STAGING_MAX", "8K", "below the minimum of 16K");
    refused("MPIGPU_CHUNK", "-1", "positive byte count with an optional K, M or G suffix");
    refused("MPIGPU_CHUNK", "12Q", "positive byte count");
    refused("MPIGPU_CHUNK", "0", "positive byte count");
    refused("MPIGPU_SPAN", "99999999999G", "byte count");
    refused("MPIGPU_P2P_DEPTH", "9", "is not a number of pieces from 1 to 8");
    refused("MPIGPU_P2P_SHM_SLOTS", "1", "is not a number of slots from 2 to 64");
    refused("MPIGPU_LOCAL", "2048", "is not a work-group size from 1 to 1024");
    refused("MPIGPU_GRID", "5", "is not off or a number of words per work-item from 1 to 4");
    refused("MPIGPU_P2P_SHM", "maybe", "expected on or off");
    refused("MPIGPU_DEVICE", ":1", "non-empty platform name substring");
    refused("MPIGPU_VERBOSE", "yes", "from 0 to 9");
    refused("MPIGPU_VCL_SPIN", "100001", "is not a number of microseconds from 0 to 100000");
    refused("MPIGPU_VCL_STREAMS", "99", "is not a number from 1 to 16");
    refused("MPIGPU_PROXY_CMA_COPY", "dma", "is not one of auto, map, pinned, staging");
}
END_TEST

static long long read_num(mgparam_id_t id, const char *value)
{
    char err[256];
    mgparam_value_t v;
    setenv(mgparam_table[id].name, value, 1);
    ck_assert_msg(mgparam_read(id, &v, err, sizeof err) == 0, "%s", err);
    unsetenv(mgparam_table[id].name);
    ck_assert_int_eq(v.set, 1);
    return v.num;
}

START_TEST(test_valid_values)
{
    char err[256];
    mgparam_value_t v;
    env_clear();
    ck_assert_int_eq(read_num(MGPARAM_CHUNK, "4M"), 4 << 20);
    ck_assert_int_eq(read_num(MGPARAM_CHUNK, "3000"), 3000);
    ck_assert_int_eq(read_num(MGPARAM_STAGING_MAX, "16k"), 16 << 10);
    ck_assert_int_eq(read_num(MGPARAM_STAGING_KEEP, "0"), 0);
    ck_assert_int_eq(read_num(MGPARAM_P2P_FIRST, "1G"), 1 << 30);
    ck_assert_int_eq(read_num(MGPARAM_GRID, "off"), -1);
    ck_assert_int_eq(read_num(MGPARAM_GRID, "3"), 3);
    ck_assert_int_eq(read_num(MGPARAM_P2P_SHM, "off"), 0);
    ck_assert_int_eq(read_num(MGPARAM_P2P_SHM, "1"), 1);
    ck_assert_int_eq(read_num(MGPARAM_PACK, "host"), 3);
    ck_assert_int_eq(read_num(MGPARAM_CALIBRATE, "force"), 2);

    /* SUBSTRING[:N]; a tail that is no index stays in the substring. */
    setenv("MPIGPU_DEVICE", "NVIDIA:1", 1);
    ck_assert_int_eq(mgparam_read(MGPARAM_DEVICE, &v, err, sizeof err), 0);
    ck_assert_int_eq(v.num, 1);
    ck_assert_int_eq(v.len, 6);
    setenv("MPIGPU_DEVICE", "a:b", 1);
    ck_assert_int_eq(mgparam_read(MGPARAM_DEVICE, &v, err, sizeof err), 0);
    ck_assert_int_eq(v.num, 0);
    ck_assert_int_eq(v.len, 3);
    unsetenv("MPIGPU_DEVICE");

    /* Empty is unset, except where empty means something (no cache). */
    setenv("MPIGPU_PACK", "", 1);
    ck_assert_int_eq(mgparam_read(MGPARAM_PACK, &v, err, sizeof err), 0);
    ck_assert_int_eq(v.set, 0);
    ck_assert_int_eq(v.num, 0);
    unsetenv("MPIGPU_PACK");
    setenv("MPIGPU_CACHE_DIR", "", 1);
    ck_assert_int_eq(mgparam_read(MGPARAM_CACHE_DIR, &v, err, sizeof err), 0);
    ck_assert_int_eq(v.set, 1);
    ck_assert_str_eq(v.text, "");
    unsetenv("MPIGPU_CACHE_DIR");
}
END_TEST

/* The device layer's reading: defaults as before the table, and MPI_Init's
   message for a malformed value. */
START_TEST(test_device_settings)
{
    mgdev_settings_t s;
    env_clear();
    setenv("MPIGPU_CACHE_DIR", "", 1);
    ck_assert_int_eq(mgdev_settings_read(&s), MPI_SUCCESS);
    ck_assert_int_eq(s.method, MGPK_METHOD_AUTO);
    ck_assert_int_eq(s.chunk_bytes, 4 << 20);
    ck_assert_int_eq(s.staging_max, 64 << 20);
    ck_assert_int_eq(s.staging_keep, 256 << 20);
    ck_assert_int_eq(s.p2p_protocol, MGDEV_P2P_AUTO);
    ck_assert_int_eq(s.p2p_first, 64 << 10);
    ck_assert_int_eq(s.p2p_auto_min, 1 << 20);
    ck_assert_int_eq(s.p2p_host_recv, MGDEV_HOST_RECV_PIECES);
    ck_assert_int_eq(s.p2p_depth, 3);
    ck_assert_int_eq(s.p2p_shm, 1);
    ck_assert_int_eq(s.p2p_shm_piece, 8 << 20);
    ck_assert_int_eq(s.p2p_shm_slots, 2);
    ck_assert_int_eq(s.calibrate, MGPK_CALIB_ON);
    ck_assert_int_eq(s.host_dma, MGPK_DMA_AUTO);
    ck_assert_int_eq(s.span_bytes, 0);
    ck_assert_int_eq(s.grid_words, 0);
    ck_assert_int_eq(s.local_size, 0);
    ck_assert_ptr_null(s.device);
    ck_assert_ptr_null(s.cache_dir);
    mgdev_settings_free(&s);

    setenv("MPIGPU_P2P_PROTOCOL", "chunked", 1);
    setenv("MPIGPU_DEVICE", "Portable:0", 1);
    setenv("MPIGPU_HOST_DMA", "off", 1);
    ck_assert_int_eq(mgdev_settings_read(&s), MPI_SUCCESS);
    ck_assert_int_eq(s.p2p_protocol, MGDEV_P2P_CHUNKED);
    ck_assert_str_eq(s.device, "Portable");
    ck_assert_int_eq(s.host_dma, MGPK_DMA_OFF);
    mgdev_settings_free(&s);

    setenv("MPIGPU_VERBOSE", "1", 1);
    setenv("MPIGPU_P2P_DEPTH", "0", 1);
    ck_assert_int_eq(mgdev_settings_read(&s), MPI_ERR_OTHER);
    ck_assert_str_eq(mgerr_get(MPI_ERR_OTHER),
                     "mpigpu: MPIGPU_P2P_DEPTH=0 is not a number of pieces from 1 to 8");
    ck_assert_int_eq(s.verbose, 1); /* for MPI_Init's messages */
    ck_assert_ptr_null(s.device);
    env_clear();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("param");
    TCase *tc = tcase_create("param");
    tcase_add_test(tc, test_table_whole);
    tcase_add_test(tc, test_no_duplicates);
    tcase_add_test(tc, test_defaults_parse);
    tcase_add_test(tc, test_malformed_refused);
    tcase_add_test(tc, test_valid_values);
    tcase_add_test(tc, test_device_settings);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
