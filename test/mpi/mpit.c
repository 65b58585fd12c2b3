/* The library's performance and control variables through MPI_T, as a tool
   reads them: they follow MPI's own, MPI's still answer, counters move with
   device packs by exactly the bytes packed and with device messages by
   protocol, settings read back as set, and misuse gets MPI_T's error codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgtest_check.h"
#include "mpigpu.h"

/* The index of our variable name, or -1. */
static int pvar_index(const char *name, int var_class)
{
    int i = -1;
    return MPI_T_pvar_get_index(name, var_class, &i) == MPI_SUCCESS ? i : -1;
}

static unsigned long long pvar_read(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    CHECK(MPI_T_pvar_read(s, h, &v) == MPI_SUCCESS);
    return v;
}

int main(int argc, char **argv)
{
    int provided = 0, n = 0, mpi_n = 0, ncat = 0;
    setenv("MPIGPU_P2P_DEPTH", "2", 1); /* read back below as a control variable */
    unsetenv("MPIGPU_P2P_FIRST");       /* read back as its default */
    MPI_Init(&argc, &argv);
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS);

    /* Ours follow MPI's: the category lists them, from MPI's count up. */
    CHECK(MPI_T_pvar_get_num(&n) == MPI_SUCCESS);
    int cat = -1, cat_pvars = 0, cat_cvars = -1, cat_cats = -1;
    CHECK(MPI_T_category_get_num(&ncat) == MPI_SUCCESS);
    CHECK(MPI_T_category_get_index("mpigpu", &cat) == MPI_SUCCESS);
    CHECK(cat == ncat - 1);
    char name[256], desc[256];
    int name_len = sizeof(name), desc_len = sizeof(desc);
    CHECK(MPI_T_category_get_info(cat, name, &name_len, desc, &desc_len, &cat_cvars, &cat_pvars,
                                  &cat_cats) == MPI_SUCCESS);
    CHECK(!strcmp(name, "mpigpu") && name_len == 7);
    CHECK(cat_pvars > 10 && cat_cats == 0);
    mpi_n = n - cat_pvars;
    CHECK(mpi_n >= 0);
    int *idx = calloc((size_t)cat_pvars, sizeof(int));
    CHECK(MPI_T_category_get_pvars(cat, cat_pvars, idx) == MPI_SUCCESS);
    for (int i = 0; i < cat_pvars; i++) {
        int verb, cls, bind, ro, cont, atom;
        MPI_Datatype dt;
        MPI_T_enum en;
        name_len = sizeof(name);
        desc_len = sizeof(desc);
        CHECK(idx[i] == mpi_n + i);
        CHECK(MPI_T_pvar_get_info(idx[i], name, &name_len, &verb, &cls, &dt, &en, desc, &desc_len,
                                  &bind, &ro, &cont, &atom) == MPI_SUCCESS);
        CHECK(!strncmp(name, "mpigpu_", 7) && desc_len > 1 && dt == MPI_UNSIGNED_LONG_LONG);
        CHECK(cont == 1 && bind == MPI_T_BIND_NO_OBJECT);
        CHECK(ro == (cls != MPI_T_PVAR_CLASS_COUNTER));
        CHECK(pvar_index(name, cls) == idx[i]);
    }
    /* A short buffer gets a truncated, terminated name and the full length. */
    char small[4];
    name_len = sizeof(small);
    CHECK(MPI_T_pvar_get_info(idx[0], small, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                              NULL, NULL, NULL) == MPI_SUCCESS);
    CHECK(strlen(small) == 3 && name_len > 4);
    /* MPI's own variables still answer, and are not ours. */
    if (mpi_n > 0) {
        name_len = sizeof(name);
        CHECK(MPI_T_pvar_get_info(0, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                  NULL, NULL, NULL) == MPI_SUCCESS);
        CHECK(strncmp(name, "mpigpu_", 7) != 0);
    }
    CHECK(MPI_T_pvar_get_info(n, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                              NULL, NULL) == MPI_T_ERR_INVALID_INDEX);
    CHECK(pvar_index("mpigpu_pack_bytes", MPI_T_PVAR_CLASS_LEVEL) == -1);

    /* Counters follow a device pack: exactly the packed bytes, and one call. */
    MPI_T_pvar_session s;
    MPI_T_pvar_handle hb, hc[3], hs;
    int count = 0;
    CHECK(MPI_T_pvar_session_create(&s) == MPI_SUCCESS);
    CHECK(MPI_T_pvar_handle_alloc(s, pvar_index("mpigpu_pack_bytes", MPI_T_PVAR_CLASS_COUNTER),
                                  NULL, &hb, &count) == MPI_SUCCESS &&
          count == 1);
    const char *calls[3] = {"mpigpu_pack_calls_kernel", "mpigpu_pack_calls_copy",
                            "mpigpu_pack_calls_host"};
    for (int m = 0; m < 3; m++)
        CHECK(MPI_T_pvar_handle_alloc(s, pvar_index(calls[m], MPI_T_PVAR_CLASS_COUNTER), NULL,
                                      &hc[m], &count) == MPI_SUCCESS);
    CHECK(MPI_T_pvar_handle_alloc(s,
                                  pvar_index("mpigpu_device_address_bytes", MPI_T_PVAR_CLASS_LEVEL),
                                  NULL, &hs, &count) == MPI_SUCCESS);
    unsigned long long b0 = pvar_read(s, hb), c0 = 0, addr0 = pvar_read(s, hs);
    for (int m = 0; m < 3; m++)
        c0 += pvar_read(s, hc[m]);

    MPI_Datatype vec;
    MPI_Type_vector(100, 2, 8, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    void *d = NULL;
    size_t bytes = 100 * 8 * sizeof(double);
    CHECK(MPIX_Gpu_malloc(bytes, &d) == MPI_SUCCESS);
    CHECK(pvar_read(s, hs) >= addr0 + bytes);
    char packed[100 * 2 * sizeof(double)];
    int pos = 0;
    CHECK(MPI_Pack(d, 1, vec, packed, sizeof(packed), &pos, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(pos == (int)sizeof(packed));
    unsigned long long c1 = 0;
    for (int m = 0; m < 3; m++)
        c1 += pvar_read(s, hc[m]);
    CHECK(pvar_read(s, hb) - b0 == sizeof(packed));
    CHECK(c1 - c0 == 1);
    /* A host pack moves nothing of ours. */
    char hsrc[100 * 8 * sizeof(double)];
    memset(hsrc, 1, sizeof(hsrc));
    pos = 0;
    MPI_Pack(hsrc, 1, vec, packed, sizeof(packed), &pos, MPI_COMM_WORLD);
    CHECK(pvar_read(s, hb) - b0 == sizeof(packed));

    /* Reset, readreset and write of a counter act on this handle's base. */
    unsigned long long v = 99;
    CHECK(MPI_T_pvar_reset(s, hb) == MPI_SUCCESS);
    CHECK(pvar_read(s, hb) == 0);
    v = 40;
    CHECK(MPI_T_pvar_write(s, hb, &v) == MPI_SUCCESS);
    CHECK(pvar_read(s, hb) == 40);
    CHECK(MPI_T_pvar_readreset(s, hb, &v) == MPI_SUCCESS && v == 40);
    CHECK(pvar_read(s, hb) == 0);
    CHECK(MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS);
    /* A level is read-only; ours are continuous. */
    CHECK(MPI_T_pvar_reset(s, hs) == MPI_T_ERR_PVAR_NO_WRITE);
    CHECK(MPI_T_pvar_write(s, hs, &v) == MPI_T_ERR_PVAR_NO_WRITE);
    CHECK(MPI_T_pvar_start(s, hb) == MPI_T_ERR_PVAR_NO_STARTSTOP);
    CHECK(MPI_T_pvar_stop(s, hb) == MPI_T_ERR_PVAR_NO_STARTSTOP);
    /* A handle belongs to its session. */
    MPI_T_pvar_session s2;
    CHECK(MPI_T_pvar_session_create(&s2) == MPI_SUCCESS);
    CHECK(MPI_T_pvar_read(s2, hb, &v) == MPI_T_ERR_INVALID_HANDLE);
    CHECK(MPI_T_pvar_handle_alloc(s2, n, NULL, &hb, &count) != MPI_SUCCESS);
    CHECK(MPI_T_pvar_session_free(&s2) == MPI_SUCCESS);

    /* A device send to self and its receive complete under the plain
       protocol: two operations. */
    MPI_T_pvar_handle hp;
    CHECK(MPI_T_pvar_handle_alloc(s, pvar_index("mpigpu_p2p_ops_plain", MPI_T_PVAR_CLASS_COUNTER),
                                  NULL, &hp, &count) == MPI_SUCCESS);
    unsigned long long p0 = pvar_read(s, hp);
    void *d2 = NULL;
    CHECK(MPIX_Gpu_malloc(bytes, &d2) == MPI_SUCCESS);
    MPI_Request rq;
    CHECK(MPI_Isend(d, 1, vec, 0, 7, MPI_COMM_WORLD, &rq) == MPI_SUCCESS);
    CHECK(MPI_Recv(d2, 1, vec, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(pvar_read(s, hp) - p0 == 2);
    CHECK(MPIX_Gpu_free(d2) == MPI_SUCCESS);

    CHECK(MPI_T_pvar_handle_free(s, &hb) == MPI_SUCCESS && hb == MPI_T_PVAR_HANDLE_NULL);
    /* The session takes the rest of its handles with it. */
    CHECK(MPI_T_pvar_session_free(&s) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_free(d) == MPI_SUCCESS);
    MPI_Type_free(&vec);

    /* The settings are control variables after MPI's: read-only text, the
       value MPI_Init read (set above), or the default. */
    int ncv = 0, ci = -1, cv_count = 0, scope = -1, bind = -1;
    MPI_Datatype cdt;
    CHECK(MPI_T_cvar_get_num(&ncv) == MPI_SUCCESS);
    CHECK(ncv >= cat_cvars && cat_cvars > 15);
    int *cidx = calloc((size_t)cat_cvars, sizeof(int));
    CHECK(MPI_T_category_get_cvars(cat, cat_cvars, cidx) == MPI_SUCCESS);
    for (int i = 0; i < cat_cvars; i++) {
        name_len = sizeof(name);
        CHECK(cidx[i] == ncv - cat_cvars + i);
        CHECK(MPI_T_cvar_get_info(cidx[i], name, &name_len, NULL, &cdt, NULL, NULL, NULL, &bind,
                                  &scope) == MPI_SUCCESS);
        /* MPIGPU_COLL_REDUCE alone is writable, the same on every process */
        int eq = !strcmp(name, "MPIGPU_COLL_REDUCE");
        CHECK(!strncmp(name, "MPIGPU_", 7) && cdt == MPI_CHAR &&
              scope == (eq ? MPI_T_SCOPE_ALL_EQ : MPI_T_SCOPE_CONSTANT));
        CHECK(strcmp(name, "MPIGPU_FORCE_PIPELINE") != 0); /* a test switch, not a setting */
    }
    if (ncv > cat_cvars) { /* MPI's own still answer */
        name_len = sizeof(name);
        CHECK(MPI_T_cvar_get_info(0, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_SUCCESS);
        CHECK(strncmp(name, "MPIGPU_", 7) != 0);
    }
    const struct {
        const char *name, *value;
    } cvs[] = {{"MPIGPU_P2P_DEPTH", "2"}, {"MPIGPU_P2P_FIRST", "64K"}};
    for (int i = 0; i < 2; i++) {
        MPI_T_cvar_handle ch;
        char val[512];
        CHECK(MPI_T_cvar_get_index(cvs[i].name, &ci) == MPI_SUCCESS);
        CHECK(MPI_T_cvar_handle_alloc(ci, NULL, &ch, &cv_count) == MPI_SUCCESS);
        CHECK(cv_count > 0 && cv_count <= (int)sizeof(val));
        memset(val, 'x', sizeof(val));
        CHECK(MPI_T_cvar_read(ch, val) == MPI_SUCCESS);
        CHECK(!strcmp(val, cvs[i].value));
        CHECK(MPI_T_cvar_write(ch, "3") == MPI_T_ERR_CVAR_SET_NEVER);
        CHECK(MPI_T_cvar_handle_free(&ch) == MPI_SUCCESS && ch == MPI_T_CVAR_HANDLE_NULL);
    }
    /* MPIGPU_COLL_REDUCE: a write of one of its words holds from then on,
       another word is refused */
    {
        MPI_T_cvar_handle ch;
        char val[512];
        CHECK(MPI_T_cvar_get_index("MPIGPU_COLL_REDUCE", &ci) == MPI_SUCCESS);
        CHECK(MPI_T_cvar_handle_alloc(ci, NULL, &ch, &cv_count) == MPI_SUCCESS);
        CHECK(MPI_T_cvar_read(ch, val) == MPI_SUCCESS && !strcmp(val, "auto"));
        CHECK(MPI_T_cvar_write(ch, "stage") == MPI_SUCCESS);
        CHECK(MPI_T_cvar_read(ch, val) == MPI_SUCCESS && !strcmp(val, "stage"));
        CHECK(MPI_T_cvar_write(ch, "sometimes") == MPI_T_ERR_INVALID);
        CHECK(MPI_T_cvar_read(ch, val) == MPI_SUCCESS && !strcmp(val, "stage"));
        CHECK(MPI_T_cvar_write(ch, "auto") == MPI_SUCCESS);
        CHECK(MPI_T_cvar_read(ch, val) == MPI_SUCCESS && !strcmp(val, "auto"));
        CHECK(MPI_T_cvar_handle_free(&ch) == MPI_SUCCESS);
    }
    CHECK(MPI_T_cvar_get_index("MPIGPU_NO_SUCH_SETTING", &ci) != MPI_SUCCESS);
    free(cidx);
    free(idx);
    CHECK(MPI_T_finalize() == MPI_SUCCESS);
    MPI_Finalize();
    if (errs)
        printf("mpit: %d checks failed\n", errs);
    else
        printf("mpit: %d performance variables after MPI's %d; all checks passed\n", cat_pvars,
               mpi_n);
    return errs != 0;
}
