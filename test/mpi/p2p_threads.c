/* MPI_THREAD_MULTIPLE: on 2 ranks, 4 threads per rank exchange data with the
   same thread of the other rank (tag = thread number), all at once: each
   iteration picks a datatype, host or device on each side, and a form
   (Isend/Irecv/Waitall, Sendrecv, blocking Send and Recv, persistent
   requests).  Threads 0 and 1 also send messages longer than the staging
   chunk (run with a small MPIGPU_STAGING_MAX), so the continuation pieces of
   concurrent messages share one pair of ranks.  Every receive checks its
   bytes, the bytes around them and its status. */
#include <pthread.h>

#include "p2p_common.h"

#define NTHREADS 4
#define ITERS 60
#define BIG 20000

static int rank;
static pthread_mutex_t errs_lock = PTHREAD_MUTEX_INITIALIZER;

#define TCHECK(cond_)                                                                              \
    do {                                                                                           \
        if (!(cond_)) {                                                                            \
            pthread_mutex_lock(&errs_lock);                                                        \
            if (errs++ < 20)                                                                       \
                fprintf(stderr, "%s:%d [rank %d thread %d iter %d]: check failed: %s\n", __FILE__, \
                        __LINE__, rank, tid, it, #cond_);                                          \
            pthread_mutex_unlock(&errs_lock);                                                      \
        }                                                                                          \
    } while (0)

static unsigned seed_of(int r, int tid, int it)
{
    return (unsigned)(r * 101 + tid * 17 + it * 5 + 1);
}

static void *worker(void *arg)
{
    int tid = (int)(long)arg, peer = 1 - rank;
    for (int it = 0; it < ITERS; it++) {
        int ti = (tid + it) % NTYPES, big = tid < 2 && it % 10 == 9;
        int count = big ? BIG : 1 + it % 3, form = it % 4, tsize = 0;
        int sd = big || (it & 1), rd = big || (it & 2);
        MPI_Datatype t = types[ti];
        MPI_Type_size(t, &tsize);
        size_t n = buf_size(t, count);
        unsigned pseed = 7 + (unsigned)tid;
        unsigned char *s = buf_make(n, seed_of(rank, tid, it), sd);
        unsigned char *r = buf_make(n, pseed, rd);
        MPI_Request rq[2];
        MPI_Status st[2];
        switch (form) {
        case 0:
            TCHECK(MPI_Irecv(r + ORIGIN, count, t, peer, tid, MPI_COMM_WORLD, &rq[0]) ==
                   MPI_SUCCESS);
            TCHECK(MPI_Isend(s + ORIGIN, count, t, peer, tid, MPI_COMM_WORLD, &rq[1]) ==
                   MPI_SUCCESS);
            TCHECK(MPI_Waitall(2, rq, st) == MPI_SUCCESS);
            break;
        case 1:
            TCHECK(MPI_Sendrecv(s + ORIGIN, count, t, peer, tid, r + ORIGIN, count, t, peer, tid,
                                MPI_COMM_WORLD, &st[0]) == MPI_SUCCESS);
            break;
        case 2:
            if (rank == 0) {
                TCHECK(MPI_Send(s + ORIGIN, count, t, peer, tid, MPI_COMM_WORLD) == MPI_SUCCESS);
                TCHECK(MPI_Recv(r + ORIGIN, count, t, peer, tid, MPI_COMM_WORLD, &st[0]) ==
                       MPI_SUCCESS);
            } else {
                TCHECK(MPI_Recv(r + ORIGIN, count, t, peer, tid, MPI_COMM_WORLD, &st[0]) ==
                       MPI_SUCCESS);
                TCHECK(MPI_Send(s + ORIGIN, count, t, peer, tid, MPI_COMM_WORLD) == MPI_SUCCESS);
            }
            break;
        default:
            TCHECK(MPI_Recv_init(r + ORIGIN, count, t, peer, tid, MPI_COMM_WORLD, &rq[0]) ==
                   MPI_SUCCESS);
            TCHECK(MPI_Send_init(s + ORIGIN, count, t, peer, tid, MPI_COMM_WORLD, &rq[1]) ==
                   MPI_SUCCESS);
            TCHECK(MPI_Startall(2, rq) == MPI_SUCCESS);
            TCHECK(MPI_Waitall(2, rq, st) == MPI_SUCCESS);
            MPI_Request_free(&rq[0]);
            MPI_Request_free(&rq[1]);
            break;
        }
        unsigned char *want = expected(t, count, seed_of(peer, tid, it), pseed);
        int got = -1;
        TCHECK(buf_equal(r, want, n, rd));
        MPI_Get_count(&st[0], t, &got);
        TCHECK(got == count || (tsize == 0 && got == 0));
        TCHECK(st[0].MPI_SOURCE == peer && st[0].MPI_TAG == tid);
        free(want);
        buf_free(s, sd);
        buf_free(r, rd);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int size, provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size != 2 || provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "p2p_threads needs 2 ranks and MPI_THREAD_MULTIPLE (provided %d)\n",
                provided);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    types_create();
    snprintf(where, sizeof(where), "threads"); /* TCHECK says more */
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    types_free();
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0)
            printf(" No Errors (%d threads x %d iterations)\n", NTHREADS, ITERS);
        else
            printf(" Found %d errors\n", all);
    }
    MPI_Finalize();
    return all != 0;
}
