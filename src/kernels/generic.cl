/*
 * Generic element-parallel pack and unpack (mgdt_format.h is prepended).
 *
 * One work-item moves one word of W bytes of the packed stream and finds its
 * user-buffer offset by walking the serialized tree top-down (the paper's
 * Algorithm 1 with bytes as the unit).  The host picks W so that it divides
 * the type's alignment, both buffer offsets and the range, which makes every
 * word lie inside one leaf run and be W-aligned on both sides.  Work-items
 * loop grid-stride so that the host can bound the launch size.
 */

/* Largest h in [0, count) with pfx[h] <= p: the block holding packed byte p
   (empty blocks share their pfx with the next one and are skipped). */
static long mg_search(__global const long *pfx, long count, long p)
{
    long lo = 0, hi = count - 1;
    while (lo < hi) {
        long mid = lo + (hi - lo + 1) / 2;
        if (pfx[mid] <= p)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* User offset, relative to the instance origin, of packed byte p of one
   instance of nodes[0]; *leaf_p receives p's position inside its leaf run and
   *basic the size of the leaf's basic elements (for byte swapping). */
static long mg_walk(__global const mgdt_node_t *nodes, __global const long *la, long p,
                    long *leaf_p, long *basic)
{
    long in = 0;
    int ni = 0;
    for (int depth = 0; depth <= MGDT_MAX_DEPTH; depth++) {
        __global const mgdt_node_t *nd = nodes + ni;
        long cs = nd->child_size, ce = nd->child_extent, c, h, q;
        switch (nd->kind) {
        case MGDT_K_LEAF:
            *leaf_p = p;
            *basic = nd->basic;
            return in + p;
        case MGDT_K_CONTIG:
            c = p / cs;
            in += c * ce;
            p -= c * cs;
            ni++;
            break;
        case MGDT_K_VECTOR:
            c = p / cs;
            in += (c / nd->blocklen) * nd->stride + (c % nd->blocklen) * ce;
            p -= c * cs;
            ni++;
            break;
        case MGDT_K_BLKIDX:
            c = p / cs;
            in += la[nd->la + c / nd->blocklen] + (c % nd->blocklen) * ce;
            p -= c * cs;
            ni++;
            break;
        case MGDT_K_INDEXED:
            h = mg_search(la + nd->la, nd->count, p);
            q = p - la[nd->la + h];
            c = q / cs;
            in += la[nd->la + nd->count + 1 + h] + c * ce;
            p = q - c * cs;
            ni++;
            break;
        case MGDT_K_STRUCT:
            h = mg_search(la + nd->la, nd->count, p);
            q = p - la[nd->la + h];
            in += la[nd->la + nd->count + 1 + h];
            ni = (int)la[nd->la + 2 * nd->count + 1 + h];
            cs = nodes[ni].size;
            ce = nodes[ni].extent;
            c = q / cs;
            in += c * ce;
            p = q - c * cs;
            break;
        case MGDT_K_SUBARRAY:
            c = p / cs;
            p -= c * cs;
            in += nd->stride;
            for (int d = nd->ndims - 1; d >= 0; d--) {
                long s = la[nd->la + d];
                long i = c % s;
                c /= s;
                in += i * la[nd->la + nd->ndims + d];
            }
            ni++;
            break;
        default:
            return in;
        }
    }
    return in;
}

/* Global user offset of packed word w of the range starting at `first`. */
#define MG_LOCATE(W)                                                                               \
    long pos = first + w * (W);                                                                    \
    long k = pos / size;                                                                           \
    long lp, basic;                                                                                \
    long off = typed_off + k * extent + mg_walk(nodes, la, pos - k * size, &lp, &basic)

#define MG_ARGS                                                                                    \
    __global const mgdt_node_t *nodes, __global const long *la, long size, long extent,            \
        long typed_off, long packed_off, long first, long nwords

#define MG_GENERIC(W, T)                                                                           \
    __kernel void mg_pack_w##W(MG_ARGS, __global const uchar *typed, __global uchar *packed)       \
    {                                                                                              \
        for (long w = get_global_id(0); w < nwords; w += get_global_size(0)) {                     \
            MG_LOCATE(W);                                                                          \
            *(__global T *)(packed + packed_off + w * (W)) = *(__global const T *)(typed + off);   \
        }                                                                                          \
    }                                                                                              \
    __kernel void mg_unpack_w##W(MG_ARGS, __global uchar *typed, __global const uchar *packed)     \
    {                                                                                              \
        for (long w = get_global_id(0); w < nwords; w += get_global_size(0)) {                     \
            MG_LOCATE(W);                                                                          \
            *(__global T *)(typed + off) = *(__global const T *)(packed + packed_off + w * (W));   \
        }                                                                                          \
    }

MG_GENERIC(1, uchar)
MG_GENERIC(2, ushort)
MG_GENERIC(4, uint)
MG_GENERIC(8, ulong)
MG_GENERIC(16, uint4)

/*
 * external32: byte-reverse every basic element.  The byte kernels (W = 1)
 * mirror each byte inside its element, so they handle leaves of different
 * basic sizes and any range; the word kernels serve types whose leaves all
 * hold elements of exactly W bytes, where a word is one element.
 */
__kernel void mg_swap_pack_w1(MG_ARGS, __global const uchar *typed, __global uchar *packed)
{
    for (long w = get_global_id(0); w < nwords; w += get_global_size(0)) {
        MG_LOCATE(1);
        long e = basic > 1 ? lp % basic : 0;
        long b = basic > 1 ? basic : 1;
        packed[packed_off + w] = typed[off - e + (b - 1 - e)];
    }
}

__kernel void mg_swap_unpack_w1(MG_ARGS, __global uchar *typed, __global const uchar *packed)
{
    for (long w = get_global_id(0); w < nwords; w += get_global_size(0)) {
        MG_LOCATE(1);
        long e = basic > 1 ? lp % basic : 0;
        long b = basic > 1 ? basic : 1;
        typed[off - e + (b - 1 - e)] = packed[packed_off + w];
    }
}

static ushort mg_bswap2(ushort x)
{
    return (ushort)((x >> 8) | (x << 8));
}

static uint mg_bswap4(uint x)
{
    return as_uint(as_uchar4(x).s3210);
}

static ulong mg_bswap8(ulong x)
{
    return as_ulong(as_uchar8(x).s76543210);
}

#define MG_SWAP(W, T)                                                                              \
    __kernel void mg_swap_pack_w##W(MG_ARGS, __global const uchar *typed, __global uchar *packed)  \
    {                                                                                              \
        for (long w = get_global_id(0); w < nwords; w += get_global_size(0)) {                     \
            MG_LOCATE(W);                                                                          \
            *(__global T *)(packed + packed_off + w * (W)) =                                       \
                mg_bswap##W(*(__global const T *)(typed + off));                                   \
        }                                                                                          \
    }                                                                                              \
    __kernel void mg_swap_unpack_w##W(MG_ARGS, __global uchar *typed,                              \
                                      __global const uchar *packed)                                \
    {                                                                                              \
        for (long w = get_global_id(0); w < nwords; w += get_global_size(0)) {                     \
            MG_LOCATE(W);                                                                          \
            *(__global T *)(typed + off) =                                                         \
                mg_bswap##W(*(__global const T *)(packed + packed_off + w * (W)));                 \
        }                                                                                          \
    }

MG_SWAP(2, ushort)
MG_SWAP(4, uint)
MG_SWAP(8, ulong)
