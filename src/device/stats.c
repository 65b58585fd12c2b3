/*
 * The pack engines' counters summed over every context in use, for the MPI_T
 * performance variables of the MPI face.
 */
#include "config.h"

#include <string.h>

#include "mgdev.h"

void mgdev_pack_stats(mgpk_stats_t *sum)
{
    mgdev_state_t *st = &mgdev_state;
    memset(sum, 0, sizeof(*sum));
    pthread_mutex_lock(&st->lock);
    for (size_t i = 0; i < 2 * st->nslots; i++) {
        mgpk_ctx_t *pk = i % 2 ? st->slots[i / 2].own : st->slots[i / 2].pk;
        mgpk_stats_t s;
        if (!pk)
            continue;
        mgpk_ctx_stats(pk, &s);
        sum->programs_built += s.programs_built;
        sum->programs_loaded += s.programs_loaded;
        sum->launches += s.launches;
        sum->choices += s.choices;
        sum->host_splits += s.host_splits;
        for (int d = 0; d < 2; d++)
            sum->bytes[d] += s.bytes[d];
        for (int m = 0; m < 4; m++)
            sum->calls[m] += s.calls[m];
    }
    pthread_mutex_unlock(&st->lock);
}
