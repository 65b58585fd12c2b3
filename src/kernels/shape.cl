/*
 * Specialized kernels for the common shapes (mgdt_shape_t), with the shape's
 * parameters as kernel arguments instead of a tree in memory.  typed_off
 * already includes the shape's offset of the first run.  They must produce
 * exactly the bytes of the generic kernels.
 *
 * Like the generic kernels, each work-item owns `span` consecutive packed
 * words.  It locates the first one with a few divisions, then walks the runs
 * by counters (next run, next row, next instance): no division per run, so a
 * CPU device spends its time on the copy loop.
 */

/* Divisions of non-negative values: in 32 bits where every packed position
   of the launch and the instance size fit (narrow, uniform over the launch),
   since 64-bit division costs GPUs several times as many instructions. */
#define MG_DIV(a, b) (narrow ? (long)((uint)(a) / (uint)(b)) : (a) / (b))
#define MG_MOD(a, b) (narrow ? (long)((uint)(a) % (uint)(b)) : (a) % (b))

#define MG_SHAPE_ARGS                                                                              \
    long typed_off, long packed_off, long first, long nwords, long span, long extent

/* The span loop: locates the first word (LOCATE sets run_off, the user offset
   of the current run, and b, the byte inside it).  Whole runs left in the
   current row (ROW_LEFT of them, ROW_STRIDE apart) go through one tight
   nested loop, BULK; a partial run goes through COPY.  ADVANCE(x) moves the
   counters x runs along the row; NEXT steps to the next run, wrapping rows
   and instances. */
#define MG_SHAPE_SPANS(W, LOCATE, ROW_LEFT, ROW_STRIDE, ADVANCE, BULK, COPY, NEXT)                 \
    const int narrow = first + nwords * (W) <= 0xffffffffL && size <= 0xffffffffL;                 \
    for (long sp = get_global_id(0) * span; sp < nwords; sp += get_global_size(0) * span) {        \
        long w = sp, wend = min(sp + span, nwords), nw = blocklen / (W);                           \
        long pos = first + w * (W), k = MG_DIV(pos, size), r = pos - k * size;                     \
        LOCATE;                                                                                    \
        while (w < wend) {                                                                         \
            long nr = b == 0 ? min((long)(ROW_LEFT), MG_DIV(wend - w, nw)) : 0;                    \
            if (nr > 0) {                                                                          \
                long rs = (ROW_STRIDE);                                                            \
                BULK;                                                                              \
                w += nr * nw;                                                                      \
                ADVANCE(nr - 1);                                                                   \
            } else {                                                                               \
                long m = min((blocklen - b) / (W), wend - w);                                      \
                COPY;                                                                              \
                w += m;                                                                            \
                b = 0;                                                                             \
            }                                                                                      \
            NEXT;                                                                                  \
        }                                                                                          \
    }

#define MG_BULK_PACK(T, W)                                                                         \
    {                                                                                              \
        __global T *dst = (__global T *)(packed + packed_off + w * (W));                           \
        for (long j = 0; j < nr; j++) {                                                            \
            __global const T *src = (__global const T *)(typed + run_off + j * rs);                \
            for (long i = 0; i < nw; i++)                                                          \
                dst[j * nw + i] = src[i];                                                          \
        }                                                                                          \
    }

#define MG_BULK_UNPACK(T, W)                                                                       \
    {                                                                                              \
        __global const T *src = (__global const T *)(packed + packed_off + w * (W));               \
        for (long j = 0; j < nr; j++) {                                                            \
            __global T *dst = (__global T *)(typed + run_off + j * rs);                            \
            for (long i = 0; i < nw; i++)                                                          \
                dst[i] = src[j * nw + i];                                                          \
        }                                                                                          \
    }

#define MG_COPY_PACK(T, W)                                                                         \
    {                                                                                              \
        __global const T *src = (__global const T *)(typed + run_off + b);                         \
        __global T *dst = (__global T *)(packed + packed_off + w * (W));                           \
        for (long i = 0; i < m; i++)                                                               \
            dst[i] = src[i];                                                                       \
    }

#define MG_COPY_UNPACK(T, W)                                                                       \
    {                                                                                              \
        __global T *dst = (__global T *)(typed + run_off + b);                                     \
        __global const T *src = (__global const T *)(packed + packed_off + w * (W));               \
        for (long i = 0; i < m; i++)                                                               \
            dst[i] = src[i];                                                                       \
    }

/* VECTOR: count runs of blocklen bytes, stride bytes apart, per instance. */
#define MG_VEC_LOCATE                                                                              \
    long run = MG_DIV(r, blocklen), b = r - run * blocklen;                                        \
    long inst = typed_off + k * extent, run_off = inst + run * stride

#define MG_VEC_ADVANCE(x)                                                                          \
    run += (x);                                                                                    \
    run_off += (x)*stride

#define MG_VEC_NEXT                                                                                \
    if (++run == count) {                                                                          \
        run = 0;                                                                                   \
        inst += extent;                                                                            \
        run_off = inst;                                                                            \
    } else {                                                                                       \
        run_off += stride;                                                                         \
    }

#define MG_VECTOR(W, T)                                                                            \
    __kernel void mg_vec_pack_w##W(MG_SHAPE_ARGS, long blocklen, long count, long stride,          \
                                   __global const uchar *typed, __global uchar *packed)            \
    {                                                                                              \
        long size = blocklen * count;                                                              \
        MG_SHAPE_SPANS(W, MG_VEC_LOCATE, count - run, stride, MG_VEC_ADVANCE, MG_BULK_PACK(T, W),  \
                       MG_COPY_PACK(T, W), MG_VEC_NEXT)                                            \
    }                                                                                              \
    __kernel void mg_vec_unpack_w##W(MG_SHAPE_ARGS, long blocklen, long count, long stride,        \
                                     __global uchar *typed, __global const uchar *packed)          \
    {                                                                                              \
        long size = blocklen * count;                                                              \
        MG_SHAPE_SPANS(W, MG_VEC_LOCATE, count - run, stride, MG_VEC_ADVANCE,                      \
                       MG_BULK_UNPACK(T, W), MG_COPY_UNPACK(T, W), MG_VEC_NEXT)                    \
    }

MG_VECTOR(1, uchar)
MG_VECTOR(2, ushort)
MG_VECTOR(4, uint)
MG_VECTOR(8, ulong)
MG_VECTOR(16, uint4)

/* SUBARRAY: runs of blocklen bytes over a box of s0 x s1 x s2 runs (s2
   fastest), t0/t1/t2 bytes apart; unused dimensions have s = 1. */
#define MG_SUB_LOCATE                                                                              \
    long run = MG_DIV(r, blocklen), b = r - run * blocklen;                                        \
    long i2 = MG_MOD(run, s2);                                                                     \
    run = MG_DIV(run, s2);                                                                         \
    long i1 = MG_MOD(run, s1), i0 = MG_DIV(run, s1);                                               \
    long inst = typed_off + k * extent, row = inst + i0 * t0 + i1 * t1, run_off = row + i2 * t2

#define MG_SUB_ADVANCE(x)                                                                          \
    i2 += (x);                                                                                     \
    run_off += (x)*t2

#define MG_SUB_NEXT                                                                                \
    if (++i2 < s2) {                                                                               \
        run_off += t2;                                                                             \
    } else {                                                                                       \
        i2 = 0;                                                                                    \
        if (++i1 < s1) {                                                                           \
            row += t1;                                                                             \
        } else {                                                                                   \
            i1 = 0;                                                                                \
            if (++i0 == s0) {                                                                      \
                i0 = 0;                                                                            \
                inst += extent;                                                                    \
            }                                                                                      \
            row = inst + i0 * t0;                                                                  \
        }                                                                                          \
        run_off = row;                                                                             \
    }

#define MG_SUB_PARAMS long blocklen, long s0, long s1, long s2, long t0, long t1, long t2

#define MG_SUBARRAY(W, T)                                                                          \
    __kernel void mg_sub_pack_w##W(MG_SHAPE_ARGS, MG_SUB_PARAMS, __global const uchar *typed,      \
                                   __global uchar *packed)                                         \
    {                                                                                              \
        long size = blocklen * s0 * s1 * s2;                                                       \
        MG_SHAPE_SPANS(W, MG_SUB_LOCATE, s2 - i2, t2, MG_SUB_ADVANCE, MG_BULK_PACK(T, W),          \
                       MG_COPY_PACK(T, W), MG_SUB_NEXT)                                            \
    }                                                                                              \
    __kernel void mg_sub_unpack_w##W(MG_SHAPE_ARGS, MG_SUB_PARAMS, __global uchar *typed,          \
                                     __global const uchar *packed)                                 \
    {                                                                                              \
        long size = blocklen * s0 * s1 * s2;                                                       \
        MG_SHAPE_SPANS(W, MG_SUB_LOCATE, s2 - i2, t2, MG_SUB_ADVANCE, MG_BULK_UNPACK(T, W),        \
                       MG_COPY_UNPACK(T, W), MG_SUB_NEXT)                                          \
    }

MG_SUBARRAY(1, uchar)
MG_SUBARRAY(2, ushort)
MG_SUBARRAY(4, uint)
MG_SUBARRAY(8, ulong)
MG_SUBARRAY(16, uint4)

/*
 * Grid kernels (GPUs): no span loop.  The launch covers the range with
 * wpi (1 to MG_GRID_MAX) words per work-item, strided by the global size so
 * that each step of the grid reads and writes adjacent words (coalesced).  A
 * work-item locates each of its words with a few (32-bit where narrow)
 * divisions, issues all of its loads, then all of its stores, so that up to
 * wpi loads per work-item are in flight at once.  `span` of the span kernels
 * carries wpi here.
 */
#define MG_GRID_MAX 4

/* One step j of the grid: word w of the packed stream; OFF(pos) is the user
   offset (from typed) of packed byte pos. */
#define MG_GRID_LOAD(j, T, W, OFF, SRC)                                                            \
    {                                                                                              \
        long w = w0 + (j)*g;                                                                       \
        if ((j) < span && w < nwords) {                                                            \
            long pos = first + w * (W);                                                            \
            v##j = *(__global const T *)(SRC);                                                     \
        }                                                                                          \
    }

#define MG_GRID_STORE(j, T, W, OFF, DST)                                                           \
    {                                                                                              \
        long w = w0 + (j)*g;                                                                       \
        if ((j) < span && w < nwords) {                                                            \
            long pos = first + w * (W);                                                            \
            *(__global T *)(DST) = v##j;                                                           \
        }                                                                                          \
    }

/* Pack: load from typed + OFF(pos), store to the packed word w. */
#define MG_GRID_PACK(T, W, OFF)                                                                    \
    const int narrow = first + nwords * (W) <= 0xffffffffL && size <= 0xffffffffL;                 \
    long g = get_global_size(0), w0 = get_global_id(0);                                            \
    T v0, v1, v2, v3;                                                                              \
    MG_GRID_LOAD(0, T, W, OFF, typed + OFF(pos))                                                   \
    MG_GRID_LOAD(1, T, W, OFF, typed + OFF(pos))                                                   \
    MG_GRID_LOAD(2, T, W, OFF, typed + OFF(pos))                                                   \
    MG_GRID_LOAD(3, T, W, OFF, typed + OFF(pos))                                                   \
    MG_GRID_STORE(0, T, W, OFF, packed + packed_off + w * (W))                                     \
    MG_GRID_STORE(1, T, W, OFF, packed + packed_off + w * (W))                                     \
    MG_GRID_STORE(2, T, W, OFF, packed + packed_off + w * (W))                                     \
    MG_GRID_STORE(3, T, W, OFF, packed + packed_off + w * (W))                                     \
    (void)narrow

/* Unpack: load the packed word w, store to typed + OFF(pos). */
#define MG_GRID_UNPACK(T, W, OFF)                                                                  \
    const int narrow = first + nwords * (W) <= 0xffffffffL && size <= 0xffffffffL;                 \
    long g = get_global_size(0), w0 = get_global_id(0);                                            \
    T v0, v1, v2, v3;                                                                              \
    MG_GRID_LOAD(0, T, W, OFF, packed + packed_off + w * (W))                                      \
    MG_GRID_LOAD(1, T, W, OFF, packed + packed_off + w * (W))                                      \
    MG_GRID_LOAD(2, T, W, OFF, packed + packed_off + w * (W))                                      \
    MG_GRID_LOAD(3, T, W, OFF, packed + packed_off + w * (W))                                      \
    MG_GRID_STORE(0, T, W, OFF, typed + OFF(pos))                                                  \
    MG_GRID_STORE(1, T, W, OFF, typed + OFF(pos))                                                  \
    MG_GRID_STORE(2, T, W, OFF, typed + OFF(pos))                                                  \
    MG_GRID_STORE(3, T, W, OFF, typed + OFF(pos))                                                  \
    (void)narrow

/* User offset of packed byte pos of a vector of count runs. */
static long mg_vec_at(long pos, long size, long extent, long blocklen, long stride, int narrow)
{
    long k = MG_DIV(pos, size), r = pos - k * size, run = MG_DIV(r, blocklen);
    return k * extent + run * stride + (r - run * blocklen);
}

#define MG_VEC_OFF(pos) (typed_off + mg_vec_at((pos), size, extent, blocklen, stride, narrow))

#define MG_VECTOR_GRID(W, T)                                                                       \
    __kernel void mg_vecg_pack_w##W(MG_SHAPE_ARGS, long blocklen, long count, long stride,         \
                                    __global const uchar *typed, __global uchar *packed)           \
    {                                                                                              \
        long size = blocklen * count;                                                              \
        MG_GRID_PACK(T, W, MG_VEC_OFF);                                                            \
    }                                                                                              \
    __kernel void mg_vecg_unpack_w##W(MG_SHAPE_ARGS, long blocklen, long count, long stride,       \
                                      __global uchar *typed, __global const uchar *packed)         \
    {                                                                                              \
        long size = blocklen * count;                                                              \
        MG_GRID_UNPACK(T, W, MG_VEC_OFF);                                                          \
    }

MG_VECTOR_GRID(1, uchar)
MG_VECTOR_GRID(2, ushort)
MG_VECTOR_GRID(4, uint)
MG_VECTOR_GRID(8, ulong)
MG_VECTOR_GRID(16, uint4)

/* User offset of packed byte pos of a subarray (see MG_SUB_LOCATE). */
static long mg_sub_at(long pos, long size, long extent, long blocklen, long s1, long s2, long t0,
                      long t1, long t2, int narrow)
{
    long k = MG_DIV(pos, size), r = pos - k * size, run = MG_DIV(r, blocklen);
    long b = r - run * blocklen, q = MG_DIV(run, s2), i2 = run - q * s2;
    long i0 = MG_DIV(q, s1), i1 = q - i0 * s1;
    return k * extent + i0 * t0 + i1 * t1 + i2 * t2 + b;
}

#define MG_SUB_OFF(pos)                                                                            \
    (typed_off + mg_sub_at((pos), size, extent, blocklen, s1, s2, t0, t1, t2, narrow))

#define MG_SUBARRAY_GRID(W, T)                                                                     \
    __kernel void mg_subg_pack_w##W(MG_SHAPE_ARGS, MG_SUB_PARAMS, __global const uchar *typed,     \
                                    __global uchar *packed)                                        \
    {                                                                                              \
        long size = blocklen * s0 * s1 * s2;                                                       \
        MG_GRID_PACK(T, W, MG_SUB_OFF);                                                            \
    }                                                                                              \
    __kernel void mg_subg_unpack_w##W(MG_SHAPE_ARGS, MG_SUB_PARAMS, __global uchar *typed,         \
                                      __global const uchar *packed)                                \
    {                                                                                              \
        long size = blocklen * s0 * s1 * s2;                                                       \
        MG_GRID_UNPACK(T, W, MG_SUB_OFF);                                                          \
    }

MG_SUBARRAY_GRID(1, uchar)
MG_SUBARRAY_GRID(2, ushort)
MG_SUBARRAY_GRID(4, uint)
MG_SUBARRAY_GRID(8, ulong)
MG_SUBARRAY_GRID(16, uint4)

/* Small instances through the byte-offset table of the map kernels
   (generic.cl, MG_MAP_ARGS): map[r] is the user offset of packed byte r of
   one instance. */
#define MG_MAP_OFF(pos) (typed_off + mg_map_at((pos), map, size, extent, narrow))

static long mg_map_at(long pos, __global const int *map, long size, long extent, int narrow)
{
    long k = MG_DIV(pos, size);
    return k * extent + map[pos - k * size];
}

#define MG_MAP_GRID(W, T)                                                                          \
    __kernel void mg_mapg_pack_w##W(                                                               \
        __global const int *map, long size, long extent, long typed_off, long packed_off,          \
        long first, long nwords, long span, __global const uchar *typed, __global uchar *packed)   \
    {                                                                                              \
        MG_GRID_PACK(T, W, MG_MAP_OFF);                                                            \
    }                                                                                              \
    __kernel void mg_mapg_unpack_w##W(                                                             \
        __global const int *map, long size, long extent, long typed_off, long packed_off,          \
        long first, long nwords, long span, __global uchar *typed, __global const uchar *packed)   \
    {                                                                                              \
        MG_GRID_UNPACK(T, W, MG_MAP_OFF);                                                          \
    }

MG_MAP_GRID(1, uchar)
MG_MAP_GRID(2, ushort)
MG_MAP_GRID(4, uint)
MG_MAP_GRID(8, ulong)
MG_MAP_GRID(16, uint4)
