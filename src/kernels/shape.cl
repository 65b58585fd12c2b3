/*
 * Specialized kernels for the common shapes (mgdt_shape_t), with the shape's
 * parameters as kernel arguments instead of a tree in memory: no tree loads,
 * no switch, two or four divisions per word.  typed_off already includes the
 * shape's offset of the first run.  They must produce exactly the bytes of
 * the generic kernels.
 */

#define MG_SHAPE_ARGS long typed_off, long packed_off, long first, long nwords, long extent

/* VECTOR: count runs of blocklen bytes, stride bytes apart, per instance. */
#define MG_VEC_LOCATE(W)                                                                           \
    long pos = first + w * (W);                                                                    \
    long k = pos / size;                                                                           \
    long r = pos - k * size;                                                                       \
    long run = r / blocklen;                                                                       \
    long off = typed_off + k * extent + run * stride + (r - run * blocklen)

#define MG_VECTOR(W, T)                                                                            \
    __kernel void mg_vec_pack_w##W(MG_SHAPE_ARGS, long blocklen, long count, long stride,          \
                                   __global const uchar *typed, __global uchar *packed)            \
    {                                                                                              \
        long size = blocklen * count;                                                              \
        for (long w = get_global_id(0); w < nwords; w += get_global_size(0)) {                     \
            MG_VEC_LOCATE(W);                                                                      \
            *(__global T *)(packed + packed_off + w * (W)) = *(__global const T *)(typed + off);   \
        }                                                                                          \
    }                                                                                              \
    __kernel void mg_vec_unpack_w##W(MG_SHAPE_ARGS, long blocklen, long count, long stride,        \
                                     __global uchar *typed, __global const uchar *packed)          \
    {                                                                                              \
        long size = blocklen * count;                                                              \
        for (long w = get_global_id(0); w < nwords; w += get_global_size(0)) {                     \
            MG_VEC_LOCATE(W);                                                                      \
            *(__global T *)(typed + off) = *(__global const T *)(packed + packed_off + w * (W));   \
        }                                                                                          \
    }

MG_VECTOR(1, uchar)
MG_VECTOR(2, ushort)
MG_VECTOR(4, uint)
MG_VECTOR(8, ulong)
MG_VECTOR(16, uint4)

/* SUBARRAY: runs of blocklen bytes over a box of s0 x s1 x s2 runs (s2
   fastest), t0/t1/t2 bytes apart; unused dimensions have s = 1. */
#define MG_SUB_LOCATE(W)                                                                           \
    long pos = first + w * (W);                                                                    \
    long k = pos / size;                                                                           \
    long r = pos - k * size;                                                                       \
    long run = r / blocklen;                                                                       \
    long b = r - run * blocklen;                                                                   \
    long i2 = run % s2;                                                                            \
    run /= s2;                                                                                     \
    long i1 = run % s1;                                                                            \
    long off = typed_off + k * extent + (run / s1) * t0 + i1 * t1 + i2 * t2 + b

#define MG_SUB_PARAMS long blocklen, long s0, long s1, long s2, long t0, long t1, long t2

#define MG_SUBARRAY(W, T)                                                                          \
    __kernel void mg_sub_pack_w##W(MG_SHAPE_ARGS, MG_SUB_PARAMS, __global const uchar *typed,      \
                                   __global uchar *packed)                                         \
    {                                                                                              \
        long size = blocklen * s0 * s1 * s2;                                                       \
        for (long w = get_global_id(0); w < nwords; w += get_global_size(0)) {                     \
            MG_SUB_LOCATE(W);                                                                      \
            *(__global T *)(packed + packed_off + w * (W)) = *(__global const T *)(typed + off);   \
        }                                                                                          \
    }                                                                                              \
    __kernel void mg_sub_unpack_w##W(MG_SHAPE_ARGS, MG_SUB_PARAMS, __global uchar *typed,          \
                                     __global const uchar *packed)                                 \
    {                                                                                              \
        long size = blocklen * s0 * s1 * s2;                                                       \
        for (long w = get_global_id(0); w < nwords; w += get_global_size(0)) {                     \
            MG_SUB_LOCATE(W);                                                                      \
            *(__global T *)(typed + off) = *(__global const T *)(packed + packed_off + w * (W));   \
        }                                                                                          \
    }

MG_SUBARRAY(1, uchar)
MG_SUBARRAY(2, ushort)
MG_SUBARRAY(4, uint)
MG_SUBARRAY(8, ulong)
MG_SUBARRAY(16, uint4)
