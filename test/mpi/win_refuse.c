/* One-sided calls refuse device addresses (API.md): every window call that
   takes a buffer returns MPI_ERR_BUFFER for a device one, raised on the
   window's error handler (the communicator's for the constructors), with a
   message that names the call; nothing crashes, and the window stays usable:
   the same calls on host buffers then move data as plain MPI does. */
#include "p2p_common.h"

static int rank, size, raised;

static void count_raise(MPI_Win *win, int *code, ...)
{
    (void)win;
    (void)code;
    raised++;
}

static void count_comm_raise(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
    raised++;
}

/* rc is the refusal of fn: MPI_ERR_BUFFER, raised once, named. */
static void refused(int rc, const char *fn)
{
    char msg[MPI_MAX_ERROR_STRING] = "", name[64];
    int len = 0;
    snprintf(where, sizeof(where), "%s", fn);
    CHECK(rc == MPI_ERR_BUFFER);
    CHECK(raised == 1);
    MPI_Error_string(MPI_ERR_BUFFER, msg, &len);
    snprintf(name, sizeof(name), "%s:", fn); /* the call, not a longer one's prefix */
    CHECK(strstr(msg, name) != NULL);
    CHECK(strstr(msg, "device address") != NULL);
    raised = 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = (rank + 1) % size;
    int *d = NULL, *d2 = NULL, *d3 = NULL;
    MPIX_Gpu_malloc(64 * sizeof(int), (void **)&d);
    MPIX_Gpu_malloc(64 * sizeof(int), (void **)&d2);
    MPIX_Gpu_malloc(64 * sizeof(int), (void **)&d3);
    int h[16], res[16], cmp[16], wbuf[16];
    for (int i = 0; i < 16; i++)
        h[i] = 100 * rank + i, wbuf[i] = -1, res[i] = cmp[i] = 0;

    MPI_Win win;
    MPI_Errhandler eh;
    MPI_Win_create_errhandler(count_raise, &eh);

    /* Constructors, on the communicator's handler. */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Errhandler ceh;
    MPI_Comm_create_errhandler(count_comm_raise, &ceh);
    MPI_Comm_set_errhandler(comm, ceh);
    MPI_Win w2 = MPI_WIN_NULL;
    refused(MPI_Win_create(d, 64, 4, MPI_INFO_NULL, comm, &w2), "MPI_Win_create");
    refused(MPI_Win_create_c(d, 64, 4, MPI_INFO_NULL, comm, &w2), "MPI_Win_create_c");
    refused(MPI_Win_allocate(64, 4, MPI_INFO_NULL, comm, d, &w2), "MPI_Win_allocate");
    refused(MPI_Win_allocate_c(64, 4, MPI_INFO_NULL, comm, d, &w2), "MPI_Win_allocate_c");
    refused(MPI_Win_allocate_shared(64, 4, MPI_INFO_NULL, comm, d, &w2), "MPI_Win_allocate_shared");
    refused(MPI_Win_allocate_shared_c(64, 4, MPI_INFO_NULL, comm, d, &w2),
            "MPI_Win_allocate_shared_c");
    CHECK(w2 == MPI_WIN_NULL);

    /* A dynamic window refuses to attach device memory. */
    CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w2) == MPI_SUCCESS);
    MPI_Win_set_errhandler(w2, eh);
    refused(MPI_Win_attach(w2, d, 64), "MPI_Win_attach");
    MPI_Win_free(&w2);

    /* A shared window: the location of the base pointer. */
    MPI_Comm shm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
    int *sbase = NULL;
    CHECK(MPI_Win_allocate_shared(64, 4, MPI_INFO_NULL, shm, &sbase, &w2) == MPI_SUCCESS);
    MPI_Win_set_errhandler(w2, eh);
    MPI_Aint ssz = 0;
    int sdu = 0;
    MPI_Aint sdu_c = 0;
    refused(MPI_Win_shared_query(w2, 0, &ssz, &sdu, d), "MPI_Win_shared_query");
    refused(MPI_Win_shared_query_c(w2, 0, &ssz, &sdu_c, d), "MPI_Win_shared_query_c");
    CHECK(MPI_Win_shared_query(w2, 0, &ssz, &sdu, &sbase) == MPI_SUCCESS && ssz == 64);
    MPI_Win_free(&w2);
    MPI_Comm_free(&shm);

    /* Communication calls, on the window's handler. */
    CHECK(MPI_Win_create(wbuf, sizeof(wbuf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win) ==
          MPI_SUCCESS);
    MPI_Win_set_errhandler(win, eh);
    MPI_Win_lock_all(0, win);
    MPI_Request r = MPI_REQUEST_NULL;
    refused(MPI_Put(d, 4, MPI_INT, peer, 0, 4, MPI_INT, win), "MPI_Put");
    refused(MPI_Put_c(d, 4, MPI_INT, peer, 0, 4, MPI_INT, win), "MPI_Put_c");
    refused(MPI_Get(d, 4, MPI_INT, peer, 0, 4, MPI_INT, win), "MPI_Get");
    refused(MPI_Get_c(d, 4, MPI_INT, peer, 0, 4, MPI_INT, win), "MPI_Get_c");
    refused(MPI_Accumulate(d, 4, MPI_INT, peer, 0, 4, MPI_INT, MPI_SUM, win), "MPI_Accumulate");
    refused(MPI_Accumulate_c(d, 4, MPI_INT, peer, 0, 4, MPI_INT, MPI_SUM, win), "MPI_Accumulate_c");
    refused(MPI_Get_accumulate(d, 4, MPI_INT, res, 4, MPI_INT, peer, 0, 4, MPI_INT, MPI_SUM, win),
            "MPI_Get_accumulate");
    refused(MPI_Get_accumulate(h, 4, MPI_INT, d, 4, MPI_INT, peer, 0, 4, MPI_INT, MPI_SUM, win),
            "MPI_Get_accumulate");
    refused(MPI_Get_accumulate_c(h, 4, MPI_INT, d, 4, MPI_INT, peer, 0, 4, MPI_INT, MPI_SUM, win),
            "MPI_Get_accumulate_c");
    refused(MPI_Fetch_and_op(d, res, MPI_INT, peer, 0, MPI_SUM, win), "MPI_Fetch_and_op");
    refused(MPI_Fetch_and_op(h, d, MPI_INT, peer, 0, MPI_SUM, win), "MPI_Fetch_and_op");
    refused(MPI_Compare_and_swap(d, cmp, res, MPI_INT, peer, 0, win), "MPI_Compare_and_swap");
    refused(MPI_Compare_and_swap(h, d, res, MPI_INT, peer, 0, win), "MPI_Compare_and_swap");
    refused(MPI_Compare_and_swap(h, cmp, d, MPI_INT, peer, 0, win), "MPI_Compare_and_swap");
    refused(MPI_Rput(d, 4, MPI_INT, peer, 0, 4, MPI_INT, win, &r), "MPI_Rput");
    refused(MPI_Rput_c(d, 4, MPI_INT, peer, 0, 4, MPI_INT, win, &r), "MPI_Rput_c");
    refused(MPI_Rget(d, 4, MPI_INT, peer, 0, 4, MPI_INT, win, &r), "MPI_Rget");
    refused(MPI_Rget_c(d, 4, MPI_INT, peer, 0, 4, MPI_INT, win, &r), "MPI_Rget_c");
    refused(MPI_Raccumulate(d, 4, MPI_INT, peer, 0, 4, MPI_INT, MPI_SUM, win, &r),
            "MPI_Raccumulate");
    refused(MPI_Raccumulate_c(d, 4, MPI_INT, peer, 0, 4, MPI_INT, MPI_SUM, win, &r),
            "MPI_Raccumulate_c");
    refused(
        MPI_Rget_accumulate(h, 4, MPI_INT, d, 4, MPI_INT, peer, 0, 4, MPI_INT, MPI_SUM, win, &r),
        "MPI_Rget_accumulate");
    refused(MPI_Rget_accumulate_c(d2, 4, MPI_INT, res, 4, MPI_INT, peer, 0, 4, MPI_INT, MPI_SUM,
                                  win, &r),
            "MPI_Rget_accumulate_c");
    CHECK(r == MPI_REQUEST_NULL);
    /* A derived origin type whose bytes reach into a device allocation from
       a host-looking origin. */
    MPI_Datatype far;
    MPI_Type_create_hindexed(1, (int[]){1}, (MPI_Aint[]){(MPI_Aint)((char *)d3 - (char *)h)},
                             MPI_INT, &far);
    MPI_Type_commit(&far);
    refused(MPI_Put(h, 1, far, peer, 0, 1, MPI_INT, win), "MPI_Put");
    MPI_Type_free(&far);
    /* Instances from a device address that span more bytes than an int64
       holds. */
    MPI_Datatype huge;
    MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 61, &huge);
    MPI_Type_commit(&huge);
    int rc = MPI_Get(d, 8, huge, peer, 0, 1, MPI_INT, win);
    snprintf(where, sizeof(where), "span");
    CHECK(rc == MPI_ERR_TYPE && raised == 1);
    {
        char m[MPI_MAX_ERROR_STRING];
        int l = 0;
        MPI_Error_string(rc, m, &l);
        CHECK(strstr(m, "MPI_Get:") != NULL);
    }
    raised = 0;
    MPI_Type_free(&huge);
    MPI_Win_unlock_all(win);

    /* Host buffers still move data. */
    snprintf(where, sizeof(where), "host one-sided");
    MPI_Win_fence(0, win);
    CHECK(MPI_Put(h, 4, MPI_INT, peer, 0, 4, MPI_INT, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    int from = (rank + size - 1) % size;
    for (int i = 0; i < 4; i++)
        CHECK(wbuf[i] == 100 * from + i);
    CHECK(MPI_Accumulate(h, 2, MPI_INT, peer, 4, 2, MPI_INT, MPI_REPLACE, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    CHECK(MPI_Get(res, 6, MPI_INT, peer, 0, 6, MPI_INT, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 4; i++)
        CHECK(res[i] == 100 * rank + i);
    CHECK(res[4] == 100 * rank && res[5] == 100 * rank + 1);
    CHECK(raised == 0);
    MPI_Win_free(&win);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&comm);
    MPI_Errhandler_free(&ceh);
    MPIX_Gpu_free(d);
    MPIX_Gpu_free(d2);
    MPIX_Gpu_free(d3);
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all == 0 ? " No Errors\n" : " Found %d errors\n", all);
    MPI_Finalize();
    return all != 0;
}
