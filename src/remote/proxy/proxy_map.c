/* The per-session ID -> object map: open addressing, linear probing.  IDs 0
 * and UINT64_MAX are reserved (empty and deleted slots).
 *
 * The client names each object with an ID of its own choosing (the virtual
 * ICD counts them up from 1 and never reuses one), so a long session brings
 * ever new IDs.  The map's memory follows the objects alive, not the IDs
 * ever seen: a release leaves a deleted slot, and when live and deleted
 * slots fill half the table it is rebuilt without the deleted ones at the
 * size the live objects need (at most a quarter full), growing or shrinking.
 * Each rebuild follows at least cap / 4 puts or deletions since the last, so
 * the cost per operation stays constant. */
#include <stdlib.h>

#include "proxy.h"

#define DELETED UINT64_MAX
#define MIN_CAP 64

static size_t hash(uint64_t id, size_t cap)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (size_t)id & (cap - 1);
}

/* Rebuilds the table for live + 1 objects: the smallest power of two from
 * MIN_CAP that holds them at most a quarter full. */
static int rebuild(mgpx_map_t *m)
{
    size_t cap = MIN_CAP;
    while ((m->live + 1) * 4 > cap)
        cap *= 2;
    mgpx_obj_t *s = calloc(cap, sizeof *s);
    if (!s)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        mgpx_obj_t *o = &m->slot[i];
        if (o->id && o->id != DELETED) {
            size_t j = hash(o->id, cap);
            while (s[j].id)
                j = (j + 1) & (cap - 1);
            s[j] = *o;
        }
    }
    free(m->slot);
    m->slot = s;
    m->cap = cap;
    m->used = m->live;
    if (cap > m->peak)
        m->peak = cap;
    return 0;
}

mgpx_obj_t *mgpx_map_get(mgpx_map_t *m, uint64_t id, int kind)
{
    if (!m->cap || id == 0 || id == DELETED)
        return NULL;
    for (size_t j = hash(id, m->cap);; j = (j + 1) & (m->cap - 1)) {
        mgpx_obj_t *o = &m->slot[j];
        if (o->id == 0)
            return NULL;
        if (o->id == id)
            return o->kind == kind ? o : NULL;
    }
}

int mgpx_map_put(mgpx_map_t *m, uint64_t id, int kind, void *h, void *aux)
{
    if (id == 0 || id == DELETED)
        return -1;
    if ((m->used + 1) * 2 > m->cap && rebuild(m))
        return -1;
    size_t j = hash(id, m->cap), tomb = SIZE_MAX;
    for (;; j = (j + 1) & (m->cap - 1)) {
        mgpx_obj_t *o = &m->slot[j];
        if (o->id == id)
            return -1; /* an ID alive in the session */
        if (o->id == DELETED && tomb == SIZE_MAX)
            tomb = j;
        if (o->id == 0)
            break;
    }
    if (tomb != SIZE_MAX)
        j = tomb;
    else
        m->used++;
    m->live++;
    if (kind > 0 && kind < MGW_K_MAX)
        m->nkind[kind]++;
    m->slot[j] = (mgpx_obj_t){id, kind, h, aux};
    return 0;
}

void mgpx_map_del(mgpx_map_t *m, mgpx_obj_t *o)
{
    if (o->kind > 0 && o->kind < MGW_K_MAX)
        m->nkind[o->kind]--;
    o->id = DELETED;
    o->h = o->aux = NULL;
    o->kind = MGW_K_NONE;
    m->live--;
}

/* After deletions: a table a sixteenth full or less is rebuilt smaller (the
 * caller holds no mgpx_obj_t of the map across this call). */
void mgpx_map_compact(mgpx_map_t *m)
{
    if (m->cap > MIN_CAP && m->live * 16 <= m->cap)
        rebuild(m); /* on failure the table stays as it is */
}

/* Releases in dependency order: events, kernels, programs, memory, samplers,
 * queues, contexts. */
void mgpx_map_free(mgpx_map_t *m)
{
    static const int order[] = {MGW_K_EVENT,   MGW_K_KERNEL, MGW_K_PROGRAM, MGW_K_MEM,
                                MGW_K_SAMPLER, MGW_K_QUEUE,  MGW_K_CONTEXT};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (size_t i = 0; i < m->cap; i++) {
            mgpx_obj_t *o = &m->slot[i];
            if (o->id && o->id != DELETED && o->kind == order[k]) {
                mgpx_obj_release(o);
                mgpx_map_del(m, o);
            }
        }
    free(m->slot);
    m->slot = NULL;
    m->cap = m->used = m->live = 0;
}
