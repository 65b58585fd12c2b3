/*
 * Host reference traversal over the serialized form: the paper's Algorithm 1
 * with packed bytes as the unit, exactly what the generic OpenCL kernel
 * computes for one work-item.  It is the oracle of the serialized format in
 * the tests, so it reads only nodes[] and lookaside[], never the tree.
 */
#include <string.h>

#include "mgdt_tree.h"

int64_t mgdt_block_search(const int64_t *pfx, int64_t count, int64_t p)
{
    int64_t lo = 0, hi = count - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (pfx[mid] <= p)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

typedef struct run {
    int64_t off;   /* user offset of the byte, relative to the instance origin */
    int64_t left;  /* bytes left in this leaf run, including this one */
    int64_t pos;   /* position inside the leaf */
    int64_t basic; /* the leaf's basic element size */
} run_t;

/* Descend from the root for byte p of one instance (0 <= p < root size). */
static void locate(const mgdt_type_t *ty, int64_t p, run_t *r)
{
    const mgdt_node_t *nodes = ty->nodes;
    const int64_t *la = ty->lookaside;
    int64_t i = 0, off = 0;

    for (;;) {
        const mgdt_node_t *n = &nodes[i];
        const int64_t *a = n->la >= 0 ? la + n->la : NULL;
        int64_t cs = n->child_size, ce = n->child_extent, k, h, q;

        switch (n->kind) {
        case MGDT_K_CONTIG:
            k = p / cs;
            off += k * ce;
            p -= k * cs;
            i++;
            break;
        case MGDT_K_VECTOR:
            k = p / cs;
            off += (k / n->blocklen) * n->stride + (k % n->blocklen) * ce;
            p -= k * cs;
            i++;
            break;
        case MGDT_K_BLKIDX:
            k = p / cs;
            off += a[k / n->blocklen] + (k % n->blocklen) * ce;
            p -= k * cs;
            i++;
            break;
        case MGDT_K_INDEXED:
        case MGDT_K_STRUCT:
            h = mgdt_block_search(a, n->count, p);
            q = p - a[h];
            if (n->kind == MGDT_K_STRUCT) {
                i = a[2 * n->count + 1 + h];
                cs = nodes[i].size;
                ce = nodes[i].extent;
            } else {
                i++;
            }
            k = q / cs;
            off += a[n->count + 1 + h] + k * ce;
            p = q - k * cs;
            break;
        case MGDT_K_SUBARRAY:
            k = p / cs;
            p -= k * cs;
            off += n->stride;
            for (int d = n->ndims - 1; d >= 0; d--) {
                off += (k % a[d]) * a[n->ndims + d];
                k /= a[d];
            }
            i++;
            break;
        default: /* MGDT_K_LEAF */
            r->off = off + p;
            r->left = n->size - p;
            r->pos = p;
            r->basic = n->basic;
            return;
        }
    }
}

/* Locate stream position pos of count instances. */
static void locate_stream(const mgdt_type_t *ty, int64_t pos, run_t *r)
{
    int64_t inst = pos / ty->size;
    locate(ty, pos - inst * ty->size, r);
    r->off += inst * ty->extent;
}

int64_t mgdt_ref_offset(const mgdt_type_t *ty, int64_t pos)
{
    int64_t left;
    return mgdt_ref_run(ty, pos, &left);
}

int64_t mgdt_ref_run(const mgdt_type_t *ty, int64_t pos, int64_t *left)
{
    run_t r;
    if (ty->size == 0) {
        *left = 0;
        return 0;
    }
    locate_stream(ty, pos, &r);
    *left = r.left;
    return r.off;
}

int64_t mgdt_ref_mean_run(const mgdt_type_t *ty, int64_t first, int64_t n, int maxruns)
{
    int64_t pos = first, end = first + n, runs = 0, prev_end = -1;
    while (pos < end && runs < maxruns) {
        int64_t left, off = mgdt_ref_run(ty, pos, &left);
        if (left <= 0)
            break;
        if (left > end - pos)
            left = end - pos;
        if (off != prev_end)
            runs++;
        prev_end = off + left;
        pos += left;
    }
    return runs ? (pos - first + runs - 1) / runs : n;
}

static void ref_copy(const mgdt_type_t *ty, char *user, char *packed, int64_t first, int64_t n,
                     int to_packed)
{
    int64_t end = first + n;
    for (int64_t pos = first; ty->size > 0 && pos < end;) {
        run_t r;
        locate_stream(ty, pos, &r);
        int64_t len = r.left < end - pos ? r.left : end - pos;
        if (to_packed)
            memcpy(packed + (pos - first), user + r.off, len);
        else
            memcpy(user + r.off, packed + (pos - first), len);
        pos += len;
    }
}

void mgdt_ref_pack(const mgdt_type_t *ty, const void *buf, int64_t count, void *packed,
                   int64_t first, int64_t n)
{
    (void)count; /* positions beyond count * size are the caller's error */
    ref_copy(ty, (char *)buf, packed, first, n, 1);
}

void mgdt_ref_unpack(const mgdt_type_t *ty, const void *packed, int64_t count, void *buf,
                     int64_t first, int64_t n)
{
    (void)count;
    ref_copy(ty, buf, (char *)packed, first, n, 0);
}

void mgdt_ref_swap(const mgdt_type_t *ty, void *packed, int64_t first, int64_t n)
{
    unsigned char *b = packed;
    int64_t end = first + n;

    for (int64_t pos = first; ty->size > 0 && pos < end;) {
        run_t r;
        locate_stream(ty, pos, &r);
        int64_t run_end = pos + r.left, w = r.basic > 0 ? r.basic : 1;
        /* Elements never straddle leaves; one cut by the range is left alone. */
        for (int64_t es = pos - r.pos % w; es < run_end && es < end; es += w) {
            if (w == 1 || es < first || es + w > end)
                continue;
            unsigned char *e = b + (es - first);
            for (int64_t j = 0; j < w / 2; j++) {
                unsigned char t = e[j];
                e[j] = e[w - 1 - j];
                e[w - 1 - j] = t;
            }
        }
        pos = run_end;
    }
}
