/*
 * The collective calls: every one of MPI 4.0 that takes a buffer, blocking,
 * nonblocking (I) and persistent (_init), in their int and large-count (_c)
 * forms.  Each describes its arguments to the collective engine
 * (src/coll/coll.h); a call whose significant buffers are all host memory
 * goes to its PMPI twin unchanged (no lock, no allocation), any other runs
 * in the engine.  The 128 entry points are generated from one line per
 * collective (src/mpi/coll.def, build-aux/gen-coll.awk) into coll_entry.c,
 * included at the end.  MPI_Barrier and its forms take no buffer and are not
 * interposed.
 */
#include "config.h"

#include <stdint.h>

#include "coll.h"
#include "mgerr.h"
#include "mgmpi.h"

/* A call on device addresses: the communicator as MPI checks it, then the
   engine; errors raised on the call's communicator (MPI_COMM_WORLD for
   MPI_Reduce_local, which has none). */
static int coll_enter(const mgcoll_call_t *c)
{
    int raised = 0, n = 0, rc = MPI_SUCCESS;
    MPI_Comm comm = c->kind == MGCOLL_REDUCE_LOCAL ? MPI_COMM_WORLD : c->comm;
    if (c->kind != MGCOLL_REDUCE_LOCAL)
        rc = mgmpi_check_comm(c->fn, c->comm, &n, &raised);
    if (rc == MPI_SUCCESS)
        rc = mgcoll_run(c, &raised);
    return mgmpi_raise(comm, rc, raised);
}

/* MPI_Bcast ... MPI_Neighbor_alltoallw_init_c (src/mpi/coll.def) */
#include "coll_entry.c"
