/* The per-session ID -> object map: open addressing, linear probing.  IDs 0
 * and UINT64_MAX are reserved (empty and deleted slots). */
#include <stdlib.h>

#include "proxy.h"

#define DELETED UINT64_MAX

static size_t hash(uint64_t id, size_t cap)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (size_t)id & (cap - 1);
}

static int grow(mgpx_map_t *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
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
    size_t live = 0;
    for (size_t i = 0; i < cap; i++)
        live += s[i].id != 0;
    free(m->slot);
    m->slot = s;
    m->cap = cap;
    m->used = live;
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
    if ((m->used + 1) * 2 > m->cap && grow(m))
        return -1;
    size_t j = hash(id, m->cap), tomb = SIZE_MAX;
    for (;; j = (j + 1) & (m->cap - 1)) {
        mgpx_obj_t *o = &m->slot[j];
        if (o->id == id)
            return -1; /* IDs are never reused within a session */
        if (o->id == DELETED && tomb == SIZE_MAX)
            tomb = j;
        if (o->id == 0)
            break;
    }
    if (tomb != SIZE_MAX)
        j = tomb;
    else
        m->used++;
    m->slot[j] = (mgpx_obj_t){id, kind, h, aux};
    return 0;
}

void mgpx_map_del(mgpx_map_t *m, mgpx_obj_t *o)
{
    o->id = DELETED;
    o->h = o->aux = NULL;
    o->kind = MGW_K_NONE;
}

/* Releases in dependency order: events, kernels, programs, memory, queues,
 * contexts. */
void mgpx_map_free(mgpx_map_t *m)
{
    static const int order[] = {MGW_K_EVENT, MGW_K_KERNEL, MGW_K_PROGRAM,
                                MGW_K_MEM,   MGW_K_QUEUE,  MGW_K_CONTEXT};
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
    m->cap = m->used = 0;
}
