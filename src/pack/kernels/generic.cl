/*
 * Generic pack and unpack of any serialized type (mgdt_format.h is prepended).
 *
 * Each work-item owns a span of `span` consecutive words of W bytes of the
 * packed stream.  It walks the serialized tree top-down once for the first
 * word of the span (the paper's Algorithm 1 with bytes as the unit), learns
 * how many bytes are left in that leaf run, copies the run's words
 * sequentially, and walks again only when it crosses into the next run.  The
 * host picks W so that it divides the type's alignment, both buffer offsets
 * and the range, which makes every word lie inside one leaf run and be
 * W-aligned on both sides.  The host picks span: 1 word on GPUs when W >= 4
 * (adjacent work-items on adjacent words, coalesced), a few words when W is
 * small, and long spans on CPU devices, where per-work-item overhead
 * dominates.  Spans loop grid-stride so that the host can bound the launch.
 */

/* a / b and a % b for non-negative values, in 32 bits where the caller knows
   they fit (narrow): 64-bit division costs GPUs several times as many
   instructions. */
static long mg_div(long a, long b, int narrow)
{
    return narrow ? (long)((uint)a / (uint)b) : a / b;
}

static long mg_mod(long a, long b, int narrow)
{
    return narrow ? (long)((uint)a % (uint)b) : a % b;
}

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
   *basic the size of the leaf's basic elements (for byte swapping) and *left
   the bytes from p to the end of the run.  narrow: the instance's size fits
   32 bits. */
static long mg_walk(__global const mgdt_node_t *nodes, __global const long *la, long p,
                    long *leaf_p, long *basic, long *left, int narrow)
{
    long in = 0;
    int ni = 0;
    *leaf_p = 0;
    *basic = 0;
    *left = 0;
    for (int depth = 0; depth <= MGDT_MAX_DEPTH; depth++) {
        __global const mgdt_node_t *nd = nodes + ni;
        long cs = nd->child_size, ce = nd->child_extent, c, h, q;
        switch (nd->kind) {
        case MGDT_K_LEAF:
            *leaf_p = p;
            *basic = nd->basic;
            *left = nd->size - p;
            return in + p;
        case MGDT_K_CONTIG:
            c = mg_div(p, cs, narrow);
            in += c * ce;
            p -= c * cs;
            ni++;
            break;
        case MGDT_K_VECTOR:
            c = mg_div(p, cs, narrow);
            in +=
                mg_div(c, nd->blocklen, narrow) * nd->stride + mg_mod(c, nd->blocklen, narrow) * ce;
            p -= c * cs;
            ni++;
            break;
        case MGDT_K_BLKIDX:
            c = mg_div(p, cs, narrow);
            in +=
                la[nd->la + mg_div(c, nd->blocklen, narrow)] + mg_mod(c, nd->blocklen, narrow) * ce;
            p -= c * cs;
            ni++;
            break;
        case MGDT_K_INDEXED:
            h = mg_search(la + nd->la, nd->count, p);
            q = p - la[nd->la + h];
            c = mg_div(q, cs, narrow);
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
            c = mg_div(q, cs, narrow);
            in += c * ce;
            p = q - c * cs;
            break;
        case MGDT_K_SUBARRAY:
            c = mg_div(p, cs, narrow);
            p -= c * cs;
            in += nd->stride;
            for (int d = nd->ndims - 1; d >= 0; d--) {
                long s = la[nd->la + d];
                long i = mg_mod(c, s, narrow);
                c = mg_div(c, s, narrow);
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

/*
 * The span loop shared by every generic kernel.  For each run piece, BODY sees
 * off (user offset of the piece), w (its first packed word), m (its words),
 * lp (position of the piece in its leaf run) and basic.  m >= 1 even for a
 * corrupt tree, so that a bad walk cannot loop forever.
 */
#define MG_SPANS(W, BODY)                                                                          \
    const int narrow = first + nwords * (W) <= 0xffffffffL && size <= 0xffffffffL;                 \
    for (long sp = get_global_id(0) * span; sp < nwords; sp += get_global_size(0) * span) {        \
        long w = sp, wend = min(sp + span, nwords);                                                \
        while (w < wend) {                                                                         \
            long pos = first + w * (W), k = mg_div(pos, size, narrow), lp, basic, left;            \
            long off = typed_off + k * extent +                                                    \
                       mg_walk(nodes, la, pos - k * size, &lp, &basic, &left, narrow);             \
            long m = max(min(left / (W), wend - w), 1L);                                           \
            BODY;                                                                                  \
            w += m;                                                                                \
        }                                                                                          \
    }

#define MG_ARGS                                                                                    \
    __global const mgdt_node_t *nodes, __global const long *la, long size, long extent,            \
        long typed_off, long packed_off, long first, long nwords, long span

#define MG_GENERIC(W, T)                                                                           \
    __kernel void mg_pack_w##W(MG_ARGS, __global const uchar *typed,                               \
                               __global uchar *packed){MG_SPANS(W, {                               \
        __global const T *src = (__global const T *)(typed + off);                                 \
        __global T *dst = (__global T *)(packed + packed_off + w * (W));                           \
        for (long i = 0; i < m; i++)                                                               \
            dst[i] = src[i];                                                                       \
    })} __kernel void mg_unpack_w##W(MG_ARGS, __global uchar *typed, __global const uchar *packed) \
    {                                                                                              \
        MG_SPANS(W, {                                                                              \
            __global T *dst = (__global T *)(typed + off);                                         \
            __global const T *src = (__global const T *)(packed + packed_off + w * (W));           \
            for (long i = 0; i < m; i++)                                                           \
                dst[i] = src[i];                                                                   \
        })                                                                                         \
    }

MG_GENERIC(1, uchar)
MG_GENERIC(2, ushort)
MG_GENERIC(4, uint)
MG_GENERIC(8, ulong)
MG_GENERIC(16, uint4)

/*
 * Small instances (size <= MGPK_MAP_MAX): map[b] is the user offset of packed
 * byte b of one instance, built on the host once per type.  One word per
 * work-item on GPUs, like a hand-written kernel, with a table lookup (cached)
 * in place of the layout's arithmetic.  A span's words after the first step
 * through the table and wrap to the next instance.
 */
#define MG_MAP_ARGS                                                                                \
    __global const int *map, long size, long extent, long typed_off, long packed_off, long first,  \
        long nwords, long span

#define MG_MAP_SPANS(W, BODY)                                                                      \
    const int narrow = first + nwords * (W) <= 0xffffffffL && size <= 0xffffffffL;                 \
    for (long sp = get_global_id(0) * span; sp < nwords; sp += get_global_size(0) * span) {        \
        long wend = min(sp + span, nwords), pos = first + sp * (W);                                \
        long k = mg_div(pos, size, narrow), r = pos - k * size;                                    \
        long base = typed_off + k * extent;                                                        \
        for (long w = sp; w < wend; w++) {                                                         \
            long off = base + map[r];                                                              \
            BODY;                                                                                  \
            r += (W);                                                                              \
            if (r >= size) {                                                                       \
                r = 0;                                                                             \
                base += extent;                                                                    \
            }                                                                                      \
        }                                                                                          \
    }

#define MG_MAP(W, T)                                                                               \
    __kernel void mg_map_pack_w##W(MG_MAP_ARGS, __global const uchar *typed,                       \
                                   __global uchar *packed){                                        \
        MG_MAP_SPANS(W, *(__global T *)(packed + packed_off + w * (W)) =                           \
                            *(__global const T *)(typed + off))} __kernel void                     \
        mg_map_unpack_w##W(MG_MAP_ARGS, __global uchar *typed, __global const uchar *packed)       \
    {                                                                                              \
        MG_MAP_SPANS(W, *(__global T *)(typed + off) =                                             \
                            *(__global const T *)(packed + packed_off + w * (W)))                  \
    }

MG_MAP(1, uchar)
MG_MAP(2, ushort)
MG_MAP(4, uint)
MG_MAP(8, ulong)
MG_MAP(16, uint4)

/*
 * external32: byte-reverse every basic element.  The byte kernels (W = 1)
 * mirror each byte inside its element, so they handle leaves of different
 * basic sizes and any range; the word kernels serve types whose leaves all
 * hold elements of exactly W bytes, where a word is one element.
 */
#define MG_MIRROR(i) (basic > 1 ? off + (i)-2 * ((lp + (i)) % basic) + basic - 1 : off + (i))

__kernel void mg_swap_pack_w1(MG_ARGS, __global const uchar *typed, __global uchar *packed){
    MG_SPANS(1,
             {
                 for (long i = 0; i < m; i++)
                     packed[packed_off + w + i] = typed[MG_MIRROR(i)];
             })}

__kernel void mg_swap_unpack_w1(MG_ARGS, __global uchar *typed, __global const uchar *packed)
{
    MG_SPANS(1, {
        for (long i = 0; i < m; i++)
            typed[MG_MIRROR(i)] = packed[packed_off + w + i];
    })
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
    __kernel void mg_swap_pack_w##W(MG_ARGS, __global const uchar *typed, __global uchar *packed){ \
        MG_SPANS(W,                                                                                \
                 {                                                                                 \
                     __global const T *src = (__global const T *)(typed + off);                    \
                     __global T *dst = (__global T *)(packed + packed_off + w * (W));              \
                     for (long i = 0; i < m; i++)                                                  \
                         dst[i] = mg_bswap##W(src[i]);                                             \
                 })} __kernel void mg_swap_unpack_w##W(MG_ARGS, __global uchar *typed,             \
                                                       __global const uchar *packed)               \
    {                                                                                              \
        MG_SPANS(W, {                                                                              \
            __global T *dst = (__global T *)(typed + off);                                         \
            __global const T *src = (__global const T *)(packed + packed_off + w * (W));           \
            for (long i = 0; i < m; i++)                                                           \
                dst[i] = mg_bswap##W(src[i]);                                                      \
        })                                                                                         \
    }

MG_SWAP(2, ushort)
MG_SWAP(4, uint)
MG_SWAP(8, ulong)
