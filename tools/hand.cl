/*
 * Hand-written pack kernels, one layout each: the baseline that
 * mpigpu-packbench holds the library's generic engine against.  Built twice,
 * with T = ulong (layouts of 8-byte words) and T = uchar (the rest).  Offsets,
 * strides and counts are in units of T; one work-item copies one T.
 */

/* nblk blocks of wpb words every stride words: contiguous, vector, faces, struct. */
kernel void hand_vect(global const T *src, ulong src_off, global T *dst, ulong wpb, ulong stride,
                      ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    ulong b = i / wpb;
    dst[i] = src[src_off + b * stride + (i - b * wpb)];
}

/* hand_vect with 32-bit index math (n < 2^32) and nwi (1 to 4) words per
   work-item, strided by the grid: all loads, then all stores
   (PERF_HAND_WPI, see packbench.c). */
#define HX_LOAD(j)                                                                                 \
    if ((j) < nwi && i0 + (j)*g < n) {                                                             \
        uint i = i0 + (j)*g, b = i / wb;                                                           \
        v##j = src[src_off + (ulong)b * st + (i - b * wb)];                                        \
    }
#define HX_STORE(j)                                                                                \
    if ((j) < nwi && i0 + (j)*g < n)                                                               \
        dst[i0 + (j)*g] = v##j;

kernel void hand_vect_x(global const T *src, ulong src_off, global T *dst, ulong wpb, ulong stride,
                        ulong n, uint nwi)
{
    uint g = (uint)get_global_size(0), i0 = (uint)get_global_id(0), wb = (uint)wpb;
    uint st = (uint)stride;
    T v0, v1, v2, v3;
    HX_LOAD(0) HX_LOAD(1) HX_LOAD(2) HX_LOAD(3) HX_STORE(0) HX_STORE(1) HX_STORE(2) HX_STORE(3)
}

/* Blocks of wpb words at the displacements displ[] (the user's index list). */
kernel void hand_indexed(global const T *src, ulong src_off, global T *dst,
                         global const ulong *displ, ulong wpb, ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    ulong b = i / wpb;
    dst[i] = src[src_off + displ[b] + (i - b * wpb)];
}

/* The s^4 corner hypercube of a 64^4 array of T. */
kernel void hand_sub4(global const T *src, ulong src_off, global T *dst, ulong s, ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    ulong d = i % s, c = (i / s) % s, b = (i / (s * s)) % s, a = i / (s * s * s);
    dst[i] = src[src_off + ((a * 64 + b) * 64 + c) * 64 + d];
}

/* Nothing: with a read of the packed bytes, the floor of a small pack. */
kernel void hand_empty(void) {}

/* A user kernel that keeps the compute units busy for `iters` steps of a
   dependent multiply-add chain per work-item (packbench --contend). */
kernel void hand_busy(global float *out, uint iters)
{
    float x = (float)get_global_id(0) * 1e-6f, y = 1.0f;
    for (uint i = 0; i < iters; i++) {
        y = mad(y, 0.9999f, x);
        x = mad(x, 1.0001f, -y * 1e-3f);
    }
    out[get_global_id(0)] = x + y;
}
