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
 * `span` (here 1 to 4) words per work-item, strided by the global size so
 * that each step of the grid reads and writes adjacent words (coalesced).  A
 * work-item locates each of its words with a few divisions, issues all of its
 * loads, then all of its stores.  Where every packed position of the launch
 * and the instance size fit 31 bits, positions and divisions are 32-bit
 * (uint) and only user offsets 64-bit: a byte-wide type spends its time on
 * this arithmetic.
 */

/* Step j of the grid: packed word w, packed byte pos; ADDR is the address
   loaded from (LOAD) or stored to (STORE). */
#define MG_GRID_LOAD(j, I, T, W, ADDR)                                                             \
    if ((j) < span && w0 + (I)(j)*g < nw) {                                                        \
        I w = w0 + (I)(j)*g, pos = fst + w * (W);                                                  \
        v##j = *(__global const T *)(ADDR);                                                        \
    }

#define MG_GRID_STORE(j, I, T, W, ADDR)                                                            \
    if ((j) < span && w0 + (I)(j)*g < nw) {                                                        \
        I w = w0 + (I)(j)*g, pos = fst + w * (W);                                                  \
        *(__global T *)(ADDR) = v##j;                                                              \
    }

#define MG_GRID_RUN(I, T, W, LADDR, SADDR)                                                         \
    {                                                                                              \
        I g = (I)get_global_size(0), w0 = (I)get_global_id(0), nw = (I)nwords, fst = (I)first;     \
        T v0, v1, v2, v3;                                                                          \
        MG_GRID_LOAD(0, I, T, W, LADDR)                                                            \
        MG_GRID_LOAD(1, I, T, W, LADDR)                                                            \
        MG_GRID_LOAD(2, I, T, W, LADDR)                                                            \
        MG_GRID_LOAD(3, I, T, W, LADDR)                                                            \
        MG_GRID_STORE(0, I, T, W, SADDR)                                                           \
        MG_GRID_STORE(1, I, T, W, SADDR)                                                           \
        MG_GRID_STORE(2, I, T, W, SADDR)                                                           \
        MG_GRID_STORE(3, I, T, W, SADDR)                                                           \
    }

/* AT(I, pos): the user offset of packed byte pos, relative to typed_off. */
#define MG_GRID_NARROW(W) (first + nwords * (W) <= 0x7fffffffL && size <= 0x7fffffffL)
#define MG_PACKED_AT(W) (packed + packed_off + w * (W))
#define MG_TYPED_AT(AT, I) (typed + typed_off + AT(I, pos))

#define MG_GRID_PACK(T, W, AT)                                                                     \
    if (MG_GRID_NARROW(W))                                                                         \
        MG_GRID_RUN(uint, T, W, MG_TYPED_AT(AT, uint), MG_PACKED_AT(W))                            \
    else                                                                                           \
        MG_GRID_RUN(long, T, W, MG_TYPED_AT(AT, long), MG_PACKED_AT(W))

#define MG_GRID_UNPACK(T, W, AT)                                                                   \
    if (MG_GRID_NARROW(W))                                                                         \
        MG_GRID_RUN(uint, T, W, MG_PACKED_AT(W), MG_TYPED_AT(AT, uint))                            \
    else                                                                                           \
        MG_GRID_RUN(long, T, W, MG_PACKED_AT(W), MG_TYPED_AT(AT, long))

/* Vector: instance k, run, byte b. */
#define MG_VEC_AT_FN(I)                                                                            \
    static long mg_vec_at_##I(I pos, I size, long extent, I blocklen, long stride)                 \
    {                                                                                              \
        I k = pos / size, r = pos - k * size, run = r / blocklen;                                  \
        return (long)k * extent + (long)run * stride + (long)(r - run * blocklen);                 \
    }
MG_VEC_AT_FN(uint)
MG_VEC_AT_FN(long)

#define MG_VEC_AT(I, pos) mg_vec_at_##I(pos, (I)size, extent, (I)blocklen, stride)

/* The grid kernels' scalars (mgpk_grid_args_t, one by-value argument) as
   the locals that the locate functions and MG_GRID_RUN name. */
#define MG_GRID_LOCALS                                                                             \
    long typed_off = a.typed_off, packed_off = a.packed_off, first = a.first, nwords = a.nwords;   \
    long span = a.span, extent = a.extent

#define MG_VECTOR_GRID(W, T)                                                                       \
    __kernel void mg_vecg_pack_w##W(mgpk_grid_args_t a, __global const uchar *typed,               \
                                    __global uchar *packed)                                        \
    {                                                                                              \
        MG_GRID_LOCALS;                                                                            \
        long blocklen = a.p[0], stride = a.p[2], size = blocklen * a.p[1];                         \
        MG_GRID_PACK(T, W, MG_VEC_AT)                                                              \
    }                                                                                              \
    __kernel void mg_vecg_unpack_w##W(mgpk_grid_args_t a, __global uchar *typed,                   \
                                      __global const uchar *packed)                                \
    {                                                                                              \
        MG_GRID_LOCALS;                                                                            \
        long blocklen = a.p[0], stride = a.p[2], size = blocklen * a.p[1];                         \
        MG_GRID_UNPACK(T, W, MG_VEC_AT)                                                            \
    }

MG_VECTOR_GRID(1, uchar)
MG_VECTOR_GRID(2, ushort)
MG_VECTOR_GRID(4, uint)
MG_VECTOR_GRID(8, ulong)
MG_VECTOR_GRID(16, uint4)

/* Subarray: instance k, run (i0, i1, i2), byte b (see MG_SUB_LOCATE). */
#define MG_SUB_AT_FN(I)                                                                            \
    static long mg_sub_at_##I(I pos, I size, long extent, I blocklen, I s1, I s2, long t0,         \
                              long t1, long t2)                                                    \
    {                                                                                              \
        I k = pos / size, r = pos - k * size, run = r / blocklen;                                  \
        I b = r - run * blocklen, q = run / s2, i2 = run - q * s2;                                 \
        I i0 = q / s1, i1 = q - i0 * s1;                                                           \
        return (long)k * extent + (long)i0 * t0 + (long)i1 * t1 + (long)i2 * t2 + (long)b;         \
    }
MG_SUB_AT_FN(uint)
MG_SUB_AT_FN(long)

#define MG_SUB_AT(I, pos) mg_sub_at_##I(pos, (I)size, extent, (I)blocklen, (I)s1, (I)s2, t0, t1, t2)

#define MG_SUB_GRID_LOCALS                                                                         \
    MG_GRID_LOCALS;                                                                                \
    long blocklen = a.p[0], s1 = a.p[2], s2 = a.p[3], t0 = a.p[4], t1 = a.p[5], t2 = a.p[6];       \
    long size = blocklen * a.p[1] * s1 * s2

#define MG_SUBARRAY_GRID(W, T)                                                                     \
    __kernel void mg_subg_pack_w##W(mgpk_grid_args_t a, __global const uchar *typed,               \
                                    __global uchar *packed)                                        \
    {                                                                                              \
        MG_SUB_GRID_LOCALS;                                                                        \
        MG_GRID_PACK(T, W, MG_SUB_AT)                                                              \
    }                                                                                              \
    __kernel void mg_subg_unpack_w##W(mgpk_grid_args_t a, __global uchar *typed,                   \
                                      __global const uchar *packed)                                \
    {                                                                                              \
        MG_SUB_GRID_LOCALS;                                                                        \
        MG_GRID_UNPACK(T, W, MG_SUB_AT)                                                            \
    }

MG_SUBARRAY_GRID(1, uchar)
MG_SUBARRAY_GRID(2, ushort)
MG_SUBARRAY_GRID(4, uint)
MG_SUBARRAY_GRID(8, ulong)
MG_SUBARRAY_GRID(16, uint4)

/* Small instances through the byte-offset table of the map kernels
   (generic.cl, MG_MAP_ARGS): map[r] is the user offset of packed byte r of
   one instance. */
#define MG_MAP_AT_FN(I)                                                                            \
    static long mg_map_at_##I(I pos, __global const int *map, I size, long extent)                 \
    {                                                                                              \
        I k = pos / size;                                                                          \
        return (long)k * extent + map[pos - k * size];                                             \
    }
MG_MAP_AT_FN(uint)
MG_MAP_AT_FN(long)

#define MG_MAP_AT(I, pos) mg_map_at_##I(pos, map, (I)size, extent)

#define MG_MAP_GRID(W, T)                                                                          \
    __kernel void mg_mapg_pack_w##W(__global const int *map, mgpk_grid_args_t a,                   \
                                    __global const uchar *typed, __global uchar *packed)           \
    {                                                                                              \
        MG_GRID_LOCALS;                                                                            \
        long size = a.p[0];                                                                        \
        MG_GRID_PACK(T, W, MG_MAP_AT)                                                              \
    }                                                                                              \
    __kernel void mg_mapg_unpack_w##W(__global const int *map, mgpk_grid_args_t a,                 \
                                      __global uchar *typed, __global const uchar *packed)         \
    {                                                                                              \
        MG_GRID_LOCALS;                                                                            \
        long size = a.p[0];                                                                        \
        MG_GRID_UNPACK(T, W, MG_MAP_AT)                                                            \
    }

MG_MAP_GRID(1, uchar)
MG_MAP_GRID(2, ushort)
MG_MAP_GRID(4, uint)
MG_MAP_GRID(8, ulong)
MG_MAP_GRID(16, uint4)

/*
 * Multi kernels: several blocks in one launch (mgpk_pack_multi), each a
 * count of instances of a contiguous, vector or subarray shape, their packed
 * bytes one after the other.  The table holds MG_MULTI_NP longs per block
 * (pk_kernel.c fills it): packed start and length in the call's packed
 * stream, the typed offset of its first run from the typed origin, the
 * instance extent and size, the run length, and the runs of a box s0 x s1 x
 * s2 (s2 fastest), t0/t1/t2 bytes apart (a vector: 1 x 1 x count, a
 * contiguous run: 1 x 1 x 1).  Each work-item owns `span` consecutive
 * packed words: it finds the block of its first word by bisection, then
 * walks the runs by counters and goes on into the next block at its end.
 */
#define MG_MULTI_NP 12

#define MG_MULTI(W, T, NAME, TCONST, PCONST, MOVE)                                                 \
    __kernel void NAME(long nblk, long typed_off, long packed_off, long first, long nwords,        \
                       long span, __global const long *tab, TCONST uchar *typed,                   \
                       PCONST uchar *packed)                                                       \
    {                                                                                              \
        for (long sp = get_global_id(0) * span; sp < nwords; sp += get_global_size(0) * span) {    \
            long w = sp, wend = min(sp + span, nwords), pos = first + w * (W);                     \
            long lo = 0, hi = nblk - 1;                                                            \
            while (lo < hi) {                                                                      \
                long mid = (lo + hi + 1) / 2;                                                      \
                if (tab[mid * MG_MULTI_NP] <= pos)                                                 \
                    lo = mid;                                                                      \
                else                                                                               \
                    hi = mid - 1;                                                                  \
            }                                                                                      \
            for (long bk = lo; w < wend && bk < nblk; bk++) {                                      \
                __global const long *d = tab + bk * MG_MULTI_NP;                                   \
                long pstart = d[0], plen = d[1], extent = d[3], size = d[4], blocklen = d[5];      \
                long s0 = d[6], s1 = d[7], s2 = d[8], t0 = d[9], t1 = d[10], t2 = d[11];           \
                long bend = min(wend, (pstart + plen - first) / (W));                              \
                pos = first + w * (W);                                                             \
                long r = pos - pstart, k = r / size;                                               \
                r -= k * size;                                                                     \
                long run = r / blocklen, b = r - run * blocklen;                                   \
                long i2 = run % s2;                                                                \
                run /= s2;                                                                         \
                long i1 = run % s1, i0 = run / s1;                                                 \
                long inst = typed_off + d[2] + k * extent, row = inst + i0 * t0 + i1 * t1;         \
                long run_off = row + i2 * t2;                                                      \
                while (w < bend) {                                                                 \
                    long nw = blocklen / (W), nr = b == 0 ? min(s2 - i2, (bend - w) / nw) : 0;     \
                    if (nr > 0) {                                                                  \
                        /* whole runs left in the row: one tight nested loop */                    \
                        for (long j = 0; j < nr; j++) {                                            \
                            __global T *tp = (__global T *)(typed + run_off + j * t2);             \
                            __global T *pp =                                                       \
                                (__global T *)(packed + packed_off + (w + j * nw) * (W));          \
                            for (long i = 0; i < nw; i++)                                          \
                                MOVE;                                                              \
                        }                                                                          \
                        w += nr * nw;                                                              \
                        i2 += nr - 1;                                                              \
                        run_off += (nr - 1) * t2;                                                  \
                    } else {                                                                       \
                        long m = min((blocklen - b) / (W), bend - w);                              \
                        __global T *tp = (__global T *)(typed + run_off + b);                      \
                        __global T *pp = (__global T *)(packed + packed_off + w * (W));            \
                        for (long i = 0; i < m; i++)                                               \
                            MOVE;                                                                  \
                        w += m;                                                                    \
                        b = 0;                                                                     \
                    }                                                                              \
                    MG_SUB_NEXT                                                                    \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#define MG_MULTI_W(W, T)                                                                           \
    MG_MULTI(W, T, mg_multi_pack_w##W, __global const, __global, pp[i] = tp[i])                    \
    MG_MULTI(W, T, mg_multi_unpack_w##W, __global, __global const, tp[i] = pp[i])

MG_MULTI_W(1, uchar)
MG_MULTI_W(2, ushort)
MG_MULTI_W(4, uint)
MG_MULTI_W(8, ulong)
MG_MULTI_W(16, uint4)
