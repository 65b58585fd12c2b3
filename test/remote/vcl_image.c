/*
 * Images and samplers through the "mpigpu virtual" platform, against the
 * host's own computation and against the native PoCL platform (plain
 * OpenCL, no mpigpu).  For each of the formats CL_RGBA/CL_UNORM_INT8,
 * CL_R/CL_FLOAT and CL_RGBA/CL_FLOAT, on both platforms:
 *   - a 2D image written with a padded row pitch (non-blocking, event),
 *     a kernel that reads it through a sampler argument (clamp to edge,
 *     one pixel to the right) and writes another image, read back with a
 *     padded pitch and compared with the host's result;
 *   - a 3D image made from padded host memory (CL_MEM_COPY_HOST_PTR), a
 *     sub-region read back; a 3D write of a sub-region;
 *   - copies image -> image, image -> buffer -> image;
 *   - maps (read, write) of a plain image and of a CL_MEM_USE_HOST_PTR one;
 *   - a fill;
 *   - clGetImageInfo, clGetMemObjectInfo (type, size), clGetSamplerInfo and
 *     the device's image limits: the same values on both platforms;
 *   - errors: a region out of bounds, copies of mismatched formats.
 * Usage: vcl_image [native-platform-name]  (default "Portable Computing
 * Language"; the native side is skipped with a note if it is not there).
 */
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vcl_test.h"

static const char *src =
    "kernel void shift(read_only image2d_t in, sampler_t s, write_only image2d_t out) {\n"
    "    int2 p = (int2)(get_global_id(0), get_global_id(1));\n"
    "    float4 v = read_imagef(in, s, p + (int2)(1, 0));\n"
    "    write_imagef(out, p, v * 0.5f + (float4)(0.25f));\n"
    "}\n";

/* What one platform says, compared between the two. */
#define NFMT 3
#define NDEVP 11
#define NIMGP 9
typedef struct info {
    int have;
    cl_ulong dev[NDEVP];
    cl_uint nformats;
    size_t img2d[NFMT][NIMGP], img3d[NFMT][NIMGP];
    cl_uint smp[4];
    cl_int err_region, err_mismatch, err_arg, err_bufop[2];
    size_t shape[4][NIMGP];
} info_t;

static const cl_image_format fmts[NFMT] = {
    {CL_RGBA, CL_UNORM_INT8}, {CL_R, CL_FLOAT}, {CL_RGBA, CL_FLOAT}};
static const size_t esize[NFMT] = {4, 4, 16};
static const int nch[NFMT] = {4, 1, 4};

/* Pixel channel c of format f from bytes p, as a float (unorm: 0..1). */
static float chan(int f, const unsigned char *p, int c)
{
    if (f == 0)
        return p[c] / 255.0f;
    float v;
    memcpy(&v, p + 4 * c, 4);
    return v;
}

/* Host data of n pixels of format f (values in 0..1). */
static void fill_data(int f, unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < nch[f]; c++) {
            unsigned x = (unsigned)(i * 31 + c * 7 + seed) % 251;
            if (f == 0)
                p[i * 4 + c] = (unsigned char)x;
            else {
                float v = (float)x / 250.0f;
                memcpy(p + i * esize[f] + 4 * c, &v, 4);
            }
        }
}

static int pix_eq(int f, const unsigned char *a, const unsigned char *b, float tol)
{
    for (int c = 0; c < nch[f]; c++)
        if (fabsf(chan(f, a, c) - chan(f, b, c)) > tol)
            return 0;
    return 1;
}

/* clGetImageInfo's sizes, then CL_MEM_TYPE and CL_MEM_SIZE, of m. */
static void image_info(cl_mem m, size_t *v)
{
    static const cl_image_info ip[NIMGP - 2] = {
        CL_IMAGE_ELEMENT_SIZE, CL_IMAGE_ROW_PITCH, CL_IMAGE_SLICE_PITCH, CL_IMAGE_WIDTH,
        CL_IMAGE_HEIGHT,       CL_IMAGE_DEPTH,     CL_IMAGE_ARRAY_SIZE};
    cl_mem_object_type mt;
    for (int i = 0; i < NIMGP - 2; i++)
        CL_OK(clGetImageInfo(m, ip[i], sizeof(size_t), &v[i], NULL));
    CL_OK(clGetMemObjectInfo(m, CL_MEM_TYPE, sizeof mt, &mt, NULL));
    v[NIMGP - 2] = mt;
    CL_OK(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof(size_t), &v[NIMGP - 1], NULL));
}

/* 1D, 1D array, 2D array and 1D buffer images (CL_RGBA/CL_UNORM_INT8):
 * made from padded host memory, sub-regions written and read with pitches;
 * a 1D buffer image reads its buffer; a 2 MiB 2D image (several bulk
 * chunks) round-trips. */
static void shapes(const char *P, cl_context ctx, cl_command_queue q, info_t *inf)
{
    const cl_image_format f = {CL_RGBA, CL_UNORM_INT8};
    const size_t E = 4;
    cl_int err;
    int bad;
    /* 1D: write [3, 43) of 50, read all */
    {
        unsigned char h[200], b[200];
        for (int i = 0; i < 200; i++)
            h[i] = (unsigned char)(i * 3 + 1);
        cl_image_desc d = {.image_type = CL_MEM_OBJECT_IMAGE1D, .image_width = 50};
        cl_mem m = clCreateImage(ctx, CL_MEM_READ_WRITE, &f, &d, NULL, &err);
        CL_OK(err);
        size_t o[3] = {3, 0, 0}, r[3] = {40, 1, 1}, o0[3] = {0, 0, 0}, ra[3] = {50, 1, 1};
        unsigned char z[200] = {0};
        CL_OK(clEnqueueWriteImage(q, m, CL_TRUE, o0, ra, 0, 0, z, 0, NULL, NULL));
        CL_OK(clEnqueueWriteImage(q, m, CL_TRUE, o, r, 0, 0, h, 0, NULL, NULL));
        CL_OK(clEnqueueReadImage(q, m, CL_TRUE, o0, ra, 0, 0, b, 0, NULL, NULL));
        CHECK(!memcmp(b + 3 * E, h, 40 * E) && !b[0] && !b[199], "%s: 1D image", P);
        image_info(m, inf->shape[0]);
        CL_OK(clReleaseMemObject(m));
    }
    /* 1D array of 6 layers of 20, from host memory with a slice pitch.  The
       row pitch equals it: OpenCL 1.2 puts a 1D array's layers a slice pitch
       apart, PoCL 3.1 a row pitch apart (the virtual platform follows
       OpenCL) */
    {
        const size_t W = 20, L = 6, sp = 2 * W * E;
        unsigned char *h = calloc(L, sp), b[4][64];
        for (size_t l = 0; l < L; l++)
            for (size_t i = 0; i < W * E; i++)
                h[l * sp + i] = (unsigned char)(l * 40 + i);
        cl_image_desc d = {.image_type = CL_MEM_OBJECT_IMAGE1D_ARRAY,
                           .image_width = W,
                           .image_array_size = L,
                           .image_row_pitch = sp,
                           .image_slice_pitch = sp};
        cl_mem m = clCreateImage(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &f, &d, h, &err);
        CL_OK(err);
        size_t o[3] = {2, 1, 0}, r[3] = {10, 4, 1};
        CL_OK(clEnqueueReadImage(q, m, CL_TRUE, o, r, sizeof b[0], sizeof b[0], b, 0, NULL, NULL));
        bad = 0;
        for (size_t l = 0; l < 4; l++)
            bad += memcmp(b[l], h + (l + 1) * sp + 2 * E, 10 * E) != 0;
        CHECK(!bad, "%s: 1D array sub-region: %d layers wrong", P, bad);
        image_info(m, inf->shape[1]);
        CL_OK(clReleaseMemObject(m));
        free(h);
    }
    /* 2D array 8x5, 4 layers, from host memory; layer 2's middle read back */
    {
        const size_t W = 8, H = 5, L = 4, rp = W * E + 4, sp = rp * H;
        unsigned char *h = calloc(L, sp), b[3 * 4 * 4];
        for (size_t i = 0; i < L * sp; i++)
            h[i] = (unsigned char)(i * 13 + 5);
        cl_image_desc d = {.image_type = CL_MEM_OBJECT_IMAGE2D_ARRAY,
                           .image_width = W,
                           .image_height = H,
                           .image_array_size = L,
                           .image_row_pitch = rp,
                           .image_slice_pitch = sp};
        cl_mem m = clCreateImage(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &f, &d, h, &err);
        CL_OK(err);
        size_t o[3] = {2, 1, 2}, r[3] = {4, 3, 1};
        CL_OK(clEnqueueReadImage(q, m, CL_TRUE, o, r, 0, 0, b, 0, NULL, NULL));
        bad = 0;
        for (size_t y = 0; y < 3; y++)
            bad += memcmp(b + y * 4 * E, h + 2 * sp + (1 + y) * rp + 2 * E, 4 * E) != 0;
        CHECK(!bad, "%s: 2D array sub-region: %d rows wrong", P, bad);
        image_info(m, inf->shape[2]);
        CL_OK(clReleaseMemObject(m));
        free(h);
    }
    /* 1D buffer image over a buffer */
    {
        unsigned char h[256], b[256];
        for (int i = 0; i < 256; i++)
            h[i] = (unsigned char)(255 - i);
        cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 256, h, &err);
        CL_OK(err);
        cl_image_desc d = {
            .image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER, .image_width = 64, .buffer = buf};
        cl_mem m = clCreateImage(ctx, CL_MEM_READ_WRITE, &f, &d, NULL, &err);
        CL_OK(err);
        size_t o[3] = {0, 0, 0}, r[3] = {64, 1, 1};
        CL_OK(clEnqueueReadImage(q, m, CL_TRUE, o, r, 0, 0, b, 0, NULL, NULL));
        CHECK(!memcmp(b, h, 256), "%s: 1D buffer image", P);
        cl_mem ib = NULL, am = NULL;
        CL_OK(clGetImageInfo(m, CL_IMAGE_BUFFER, sizeof ib, &ib, NULL));
        CL_OK(clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof am, &am, NULL));
        CHECK(ib == buf && am == buf, "%s: 1D buffer image's buffer", P);
        image_info(m, inf->shape[3]);
        CL_OK(clReleaseMemObject(m));
        CL_OK(clReleaseMemObject(buf));
    }
    /* 2 MiB: several bulk chunks each way */
    {
        const size_t W = 1024, H = 512, rp = W * E + 64;
        unsigned char *h = malloc(rp * H), *b = malloc(W * E * H);
        for (size_t i = 0; i < rp * H; i++)
            h[i] = (unsigned char)(i * 7 + (i >> 12));
        cl_mem m = clCreateImage2D(ctx, CL_MEM_READ_WRITE, &f, W, H, 0, NULL, &err);
        CL_OK(err);
        size_t o[3] = {0, 0, 0}, r[3] = {W, H, 1};
        CL_OK(clEnqueueWriteImage(q, m, CL_FALSE, o, r, rp, 0, h, 0, NULL, NULL));
        CL_OK(clEnqueueReadImage(q, m, CL_TRUE, o, r, 0, 0, b, 0, NULL, NULL));
        bad = 0;
        for (size_t y = 0; y < H; y++)
            bad += memcmp(b + y * W * E, h + y * rp, W * E) != 0;
        CHECK(!bad, "%s: 2 MiB image: %d rows wrong", P, bad);
        CL_OK(clReleaseMemObject(m));
        free(h);
        free(b);
    }
}

static void run(const char *pname, cl_platform_id plat, info_t *inf)
{
    cl_device_id dev;
    cl_int err;
    const char *P = pname;
    CL_OK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    static const cl_device_info dp[NDEVP] = {
        CL_DEVICE_IMAGE_SUPPORT,       CL_DEVICE_IMAGE2D_MAX_WIDTH,
        CL_DEVICE_IMAGE2D_MAX_HEIGHT,  CL_DEVICE_IMAGE3D_MAX_WIDTH,
        CL_DEVICE_IMAGE3D_MAX_HEIGHT,  CL_DEVICE_IMAGE3D_MAX_DEPTH,
        CL_DEVICE_MAX_READ_IMAGE_ARGS, CL_DEVICE_MAX_WRITE_IMAGE_ARGS,
        CL_DEVICE_MAX_SAMPLERS,        CL_DEVICE_IMAGE_MAX_BUFFER_SIZE,
        CL_DEVICE_IMAGE_MAX_ARRAY_SIZE};
    for (int i = 0; i < NDEVP; i++) {
        size_t sz = 0;
        CL_OK(clGetDeviceInfo(dev, dp[i], 0, NULL, &sz));
        CHECK(sz <= sizeof(cl_ulong), "%s: device param %#x of %zu bytes", P, dp[i], sz);
        CL_OK(clGetDeviceInfo(dev, dp[i], sizeof inf->dev[i], &inf->dev[i], NULL));
    }
    CHECK(inf->dev[0], "%s: no image support", P);
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CL_OK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CL_OK(err);
    cl_program prog = vt_build(ctx, src, 1, &dev);
    cl_kernel k = clCreateKernel(prog, "shift", &err);
    CL_OK(err);

    /* formats */
    CL_OK(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL,
                                     &inf->nformats));
    cl_image_format *all = calloc(inf->nformats + 1, sizeof *all);
    CL_OK(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, inf->nformats,
                                     all, NULL));
    for (int f = 0; f < NFMT; f++) {
        int found = 0;
        for (cl_uint i = 0; i < inf->nformats; i++)
            found |= all[i].image_channel_order == fmts[f].image_channel_order &&
                     all[i].image_channel_data_type == fmts[f].image_channel_data_type;
        CHECK(found, "%s: format %d not listed", P, f);
    }
    free(all);

    /* sampler */
    cl_sampler smp =
        clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST, &err);
    CL_OK(err);
    CL_OK(clRetainSampler(smp));
    CL_OK(clGetSamplerInfo(smp, CL_SAMPLER_REFERENCE_COUNT, sizeof(cl_uint), &inf->smp[0], NULL));
    CL_OK(clReleaseSampler(smp));
    cl_bool nb;
    CL_OK(clGetSamplerInfo(smp, CL_SAMPLER_NORMALIZED_COORDS, sizeof nb, &nb, NULL));
    inf->smp[1] = nb;
    CL_OK(clGetSamplerInfo(smp, CL_SAMPLER_ADDRESSING_MODE, sizeof(cl_uint), &inf->smp[2], NULL));
    CL_OK(clGetSamplerInfo(smp, CL_SAMPLER_FILTER_MODE, sizeof(cl_uint), &inf->smp[3], NULL));
    cl_context sc = NULL;
    CL_OK(clGetSamplerInfo(smp, CL_SAMPLER_CONTEXT, sizeof sc, &sc, NULL));
    CHECK(sc == ctx, "%s: sampler's context", P);

    for (int f = 0; f < NFMT; f++) {
        const size_t W = 37, H = 23, E = esize[f], rp = W * E + 3 * E, hrp = W * E + 5;
        unsigned char *in = calloc(H, rp), *out = calloc(H, hrp), *ref = malloc(W * H * E);
        cl_image_desc d2 = {
            .image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = W, .image_height = H};
        cl_mem a = clCreateImage(ctx, CL_MEM_READ_ONLY, &fmts[f], &d2, NULL, &err);
        CL_OK(err);
        cl_mem b = clCreateImage(ctx, CL_MEM_WRITE_ONLY, &fmts[f], &d2, NULL, &err);
        CL_OK(err);
        unsigned char *packed = malloc(W * H * E);
        fill_data(f, packed, W * H, (unsigned)f);
        for (size_t y = 0; y < H; y++)
            memcpy(in + y * rp, packed + y * W * E, W * E);
        size_t o0[3] = {0, 0, 0}, r2[3] = {W, H, 1};
        cl_event ev;
        CL_OK(clEnqueueWriteImage(q, a, CL_FALSE, o0, r2, rp, 0, in, 0, NULL, &ev));
        CL_OK(clWaitForEvents(1, &ev));
        cl_command_type ct = 0;
        CL_OK(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof ct, &ct, NULL));
        CHECK(ct == CL_COMMAND_WRITE_IMAGE, "%s: write event type %#x", P, ct);
        clReleaseEvent(ev);
        CL_OK(clSetKernelArg(k, 0, sizeof a, &a));
        CL_OK(clSetKernelArg(k, 1, sizeof smp, &smp));
        CL_OK(clSetKernelArg(k, 2, sizeof b, &b));
        CL_OK(clEnqueueNDRangeKernel(q, k, 2, NULL, r2, NULL, 0, NULL, NULL));
        CL_OK(clEnqueueReadImage(q, b, CL_TRUE, o0, r2, hrp, 0, out, 0, NULL, NULL));
        int bad = 0;
        for (size_t y = 0; y < H; y++)
            for (size_t x = 0; x < W; x++) {
                size_t sx = x + 1 < W ? x + 1 : W - 1;
                unsigned char want[16];
                for (int c = 0; c < nch[f]; c++) {
                    float v = chan(f, packed + (y * W + sx) * E, c) * 0.5f + 0.25f;
                    if (f == 0)
                        want[c] = (unsigned char)lrintf(v * 255.0f);
                    else
                        memcpy(want + 4 * c, &v, 4);
                }
                bad += !pix_eq(f, out + y * hrp + x * E, want, f == 0 ? 1.5f / 255 : 1e-6f);
            }
        CHECK(!bad, "%s fmt %d: kernel through the sampler: %d pixels wrong", P, f, bad);

        /* image -> image: a's (3,2) 10x9 to b at (20,11) */
        size_t so[3] = {3, 2, 0}, dof[3] = {20, 11, 0}, cr[3] = {10, 9, 1};
        CL_OK(clEnqueueCopyImage(q, a, b, so, dof, cr, 0, NULL, NULL));
        CL_OK(clEnqueueReadImage(q, b, CL_TRUE, o0, r2, 0, 0, ref, 0, NULL, NULL));
        bad = 0;
        for (size_t y = 0; y < cr[1]; y++)
            bad += memcmp(ref + ((dof[1] + y) * W + dof[0]) * E,
                          packed + ((so[1] + y) * W + so[0]) * E, cr[0] * E) != 0;
        CHECK(!bad, "%s fmt %d: copy image to image: %d rows wrong", P, f, bad);

        /* image -> buffer at 16 -> another image */
        cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 16 + W * H * E, NULL, &err);
        CL_OK(err);
        CL_OK(clEnqueueCopyImageToBuffer(q, a, buf, o0, r2, 16, 0, NULL, NULL));
        unsigned char *bb = malloc(W * H * E);
        CL_OK(clEnqueueReadBuffer(q, buf, CL_TRUE, 16, W * H * E, bb, 0, NULL, NULL));
        CHECK(!memcmp(bb, packed, W * H * E), "%s fmt %d: copy image to buffer", P, f);
        cl_mem c2 = clCreateImage2D(ctx, CL_MEM_READ_WRITE, &fmts[f], W, H, 0, NULL, &err);
        CL_OK(err);
        CL_OK(clEnqueueCopyBufferToImage(q, buf, c2, 16, o0, r2, 0, NULL, NULL));
        memset(bb, 0, W * H * E);
        CL_OK(clEnqueueReadImage(q, c2, CL_TRUE, o0, r2, 0, 0, bb, 0, NULL, NULL));
        CHECK(!memcmp(bb, packed, W * H * E), "%s fmt %d: copy buffer to image", P, f);

        /* map for reading a region of c2, then for writing */
        size_t mo[3] = {5, 4, 0}, mr[3] = {7, 6, 1}, mrp = 0, msp = 1;
        unsigned char *mp =
            clEnqueueMapImage(q, c2, CL_TRUE, CL_MAP_READ, mo, mr, &mrp, &msp, 0, NULL, NULL, &err);
        CL_OK(err);
        CHECK(mrp >= mr[0] * E && msp == 0, "%s fmt %d: map pitches %zu %zu", P, f, mrp, msp);
        bad = 0;
        for (size_t y = 0; y < mr[1]; y++)
            bad += memcmp(mp + y * mrp, packed + ((mo[1] + y) * W + mo[0]) * E, mr[0] * E) != 0;
        CHECK(!bad, "%s fmt %d: mapped region: %d rows wrong", P, f, bad);
        cl_uint mc = 0;
        CL_OK(clGetMemObjectInfo(c2, CL_MEM_MAP_COUNT, sizeof mc, &mc, NULL));
        CHECK(mc == 1, "%s: map count %u", P, mc);
        CL_OK(clEnqueueUnmapMemObject(q, c2, mp, 0, NULL, NULL));
        mp = clEnqueueMapImage(q, c2, CL_TRUE, CL_MAP_WRITE, mo, mr, &mrp, NULL, 0, NULL, NULL,
                               &err);
        CL_OK(err);
        for (size_t y = 0; y < mr[1]; y++)
            memset(mp + y * mrp, (int)(0x40 + y), mr[0] * E);
        CL_OK(clEnqueueUnmapMemObject(q, c2, mp, 0, NULL, NULL));
        CL_OK(clEnqueueReadImage(q, c2, CL_TRUE, o0, r2, 0, 0, bb, 0, NULL, NULL));
        bad = 0;
        for (size_t y = 0; y < H; y++)
            for (size_t x = 0; x < W; x++) {
                int in_r = x >= mo[0] && x < mo[0] + mr[0] && y >= mo[1] && y < mo[1] + mr[1];
                for (size_t i = 0; i < E; i++) {
                    unsigned char want =
                        in_r ? (unsigned char)(0x40 + y - mo[1]) : packed[(y * W + x) * E + i];
                    bad += bb[(y * W + x) * E + i] != want;
                }
            }
        CHECK(!bad, "%s fmt %d: after a write mapping: %d bytes wrong", P, f, bad);

        /* fill a region of c2 */
        cl_float4 color = {{0.25f, 0.5f, 0.75f, 1.0f}};
        size_t fo[3] = {1, 1, 0}, fr[3] = {4, 3, 1};
        CL_OK(clEnqueueFillImage(q, c2, &color, fo, fr, 0, NULL, NULL));
        CL_OK(clEnqueueReadImage(q, c2, CL_TRUE, o0, r2, 0, 0, bb, 0, NULL, NULL));
        bad = 0;
        for (size_t y = fo[1]; y < fo[1] + fr[1]; y++)
            for (size_t x = fo[0]; x < fo[0] + fr[0]; x++)
                for (int c = 0; c < nch[f]; c++)
                    bad += fabsf(chan(f, bb + (y * W + x) * E, c) - color.s[c]) > 1.0f / 255;
        CHECK(!bad, "%s fmt %d: fill: %d channels wrong", P, f, bad);

        /* 3D from padded host memory; a sub-region read back with pitches */
        const size_t X = 9, Y = 7, Z = 5, trp = X * E + E, tsp = trp * (Y + 1);
        unsigned char *h3 = calloc(Z, tsp), *p3 = malloc(X * Y * Z * E);
        fill_data(f, p3, X * Y * Z, 77u + (unsigned)f);
        for (size_t z = 0; z < Z; z++)
            for (size_t y = 0; y < Y; y++)
                memcpy(h3 + z * tsp + y * trp, p3 + ((z * Y + y) * X) * E, X * E);
        cl_mem t = clCreateImage3D(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &fmts[f], X, Y, Z,
                                   trp, tsp, h3, &err);
        CL_OK(err);
        size_t to[3] = {1, 2, 1}, tr[3] = {5, 4, 3}, orp = tr[0] * E + 7, osp = orp * tr[1] + 9;
        unsigned char *o3 = calloc(tr[2], osp);
        CL_OK(clEnqueueReadImage(q, t, CL_TRUE, to, tr, orp, osp, o3, 0, NULL, NULL));
        bad = 0;
        for (size_t z = 0; z < tr[2]; z++)
            for (size_t y = 0; y < tr[1]; y++)
                bad += memcmp(o3 + z * osp + y * orp,
                              p3 + (((to[2] + z) * Y + to[1] + y) * X + to[0]) * E, tr[0] * E) != 0;
        CHECK(!bad, "%s fmt %d: 3D sub-region: %d rows wrong", P, f, bad);
        /* a 3D write of that region from o3 with its pitches (rows reversed), read whole */
        for (size_t z = 0; z < tr[2]; z++)
            for (size_t y = 0; y < tr[1]; y++)
                memset(o3 + z * osp + y * orp, (int)(z * 16 + y), tr[0] * E);
        CL_OK(clEnqueueWriteImage(q, t, CL_TRUE, to, tr, orp, osp, o3, 0, NULL, NULL));
        unsigned char *w3 = malloc(X * Y * Z * E);
        size_t r3[3] = {X, Y, Z};
        CL_OK(clEnqueueReadImage(q, t, CL_TRUE, o0, r3, 0, 0, w3, 0, NULL, NULL));
        bad = 0;
        for (size_t z = 0; z < Z; z++)
            for (size_t y = 0; y < Y; y++)
                for (size_t x = 0; x < X; x++) {
                    int in_r = x >= to[0] && x < to[0] + tr[0] && y >= to[1] && y < to[1] + tr[1] &&
                               z >= to[2] && z < to[2] + tr[2];
                    size_t i = ((z * Y + y) * X + x) * E;
                    for (size_t c = 0; c < E; c++)
                        bad += w3[i + c] !=
                               (in_r ? (unsigned char)((z - to[2]) * 16 + y - to[1]) : p3[i + c]);
                }
        CHECK(!bad, "%s fmt %d: 3D write of a sub-region: %d bytes wrong", P, f, bad);

        /* CL_MEM_USE_HOST_PTR: a map reads into the host image */
        unsigned char *uh = calloc(H, rp);
        cl_mem u = clCreateImage2D(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, &fmts[f], W, H, rp,
                                   uh, &err);
        CL_OK(err);
        CL_OK(clEnqueueWriteImage(q, u, CL_TRUE, o0, r2, rp, 0, in, 0, NULL, NULL));
        mp = clEnqueueMapImage(q, u, CL_TRUE, CL_MAP_READ, o0, r2, &mrp, NULL, 0, NULL, NULL, &err);
        CL_OK(err);
        CHECK(mrp == rp, "%s fmt %d: USE_HOST_PTR map row pitch %zu, not %zu", P, f, mrp, rp);
        bad = 0;
        for (size_t y = 0; y < H; y++)
            bad += memcmp(mp + y * mrp, packed + y * W * E, W * E) != 0;
        CHECK(!bad, "%s fmt %d: USE_HOST_PTR map: %d rows wrong", P, f, bad);
        CL_OK(clEnqueueUnmapMemObject(q, u, mp, 0, NULL, NULL));

        /* info, compared between the platforms */
        cl_mem im[2] = {a, t};
        for (int w = 0; w < 2; w++) {
            image_info(im[w], w ? inf->img3d[f] : inf->img2d[f]);
            cl_image_format gf;
            CL_OK(clGetImageInfo(im[w], CL_IMAGE_FORMAT, sizeof gf, &gf, NULL));
            CHECK(gf.image_channel_order == fmts[f].image_channel_order &&
                      gf.image_channel_data_type == fmts[f].image_channel_data_type,
                  "%s: CL_IMAGE_FORMAT", P);
        }
        CHECK(inf->img2d[f][0] == E, "%s: element size %zu", P, inf->img2d[f][0]);
        CHECK(inf->img3d[f][NIMGP - 2] == CL_MEM_OBJECT_IMAGE3D, "%s: 3D type", P);

        /* errors */
        size_t big[3] = {W, H + 1, 1};
        inf->err_region = clEnqueueReadImage(q, a, CL_TRUE, o0, big, 0, 0, out, 0, NULL, NULL);
        CHECK(inf->err_region == CL_INVALID_VALUE, "%s: read past the image: %d", P,
              inf->err_region);
        cl_mem other =
            clCreateImage(ctx, CL_MEM_READ_WRITE, &fmts[(f + 1) % NFMT], &d2, NULL, &err);
        CL_OK(err);
        inf->err_mismatch = clEnqueueCopyImage(q, a, other, o0, o0, cr, 0, NULL, NULL);
        CHECK(inf->err_mismatch == CL_IMAGE_FORMAT_MISMATCH, "%s: format mismatch: %d", P,
              inf->err_mismatch);
        inf->err_bufop[0] = clEnqueueReadBuffer(q, a, CL_TRUE, 0, 4, out, 0, NULL, NULL);
        inf->err_bufop[1] = clEnqueueCopyBuffer(q, buf, a, 0, 0, 4, 0, NULL, NULL);
        /* PoCL 3.1 reads an image as a buffer; the virtual platform refuses
           it, as OpenCL says */
        CHECK((strcmp(P, "virtual") || inf->err_bufop[0] == CL_INVALID_MEM_OBJECT) &&
                  inf->err_bufop[1] == CL_INVALID_MEM_OBJECT,
              "%s: buffer commands on an image: %d %d", P, inf->err_bufop[0], inf->err_bufop[1]);
        cl_sampler none = NULL;
        inf->err_arg = clSetKernelArg(k, 1, sizeof none, &none);
        /* PoCL 3.1 takes a NULL sampler; the virtual platform refuses it, as
           the specification says */
        CHECK(strcmp(P, "virtual") || inf->err_arg == CL_INVALID_SAMPLER, "%s: a NULL sampler: %d",
              P, inf->err_arg);
        CL_OK(clFinish(q));

        cl_mem rel[] = {a, b, buf, c2, t, u, other};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
            CL_OK(clReleaseMemObject(rel[i]));
        free(in);
        free(out);
        free(ref);
        free(packed);
        free(bb);
        free(h3);
        free(p3);
        free(o3);
        free(w3);
        free(uh);
    }
    CL_OK(clReleaseSampler(smp));
    shapes(P, ctx, q, inf);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    inf->have = 1;
}

int main(int argc, char **argv)
{
    static info_t v, n;
    const char *native = argc > 1 ? argv[1] : "Portable Computing Language";
    cl_platform_id pv = vt_need_platform("mpigpu virtual"), pn = vt_find_platform(native);
    run("virtual", pv, &v);
    if (pn)
        run("native", pn, &n);
    else
        fprintf(stderr, "note: no platform \"%s\": no comparison with native\n", native);
    if (pn) {
        CHECK(!memcmp(v.dev, n.dev, sizeof v.dev), "device image limits differ");
        for (int i = 0; i < NDEVP; i++)
            if (v.dev[i] != n.dev[i])
                fprintf(stderr, "  device param %d: virtual %llu, native %llu\n", i,
                        (unsigned long long)v.dev[i], (unsigned long long)n.dev[i]);
        CHECK(v.nformats == n.nformats, "formats: virtual %u, native %u", v.nformats, n.nformats);
        for (int f = 0; f < NFMT; f++)
            for (int i = 0; i < NIMGP; i++) {
                CHECK(v.img2d[f][i] == n.img2d[f][i], "fmt %d: 2D image info %d: %zu vs %zu", f, i,
                      v.img2d[f][i], n.img2d[f][i]);
                CHECK(v.img3d[f][i] == n.img3d[f][i], "fmt %d: 3D image info %d: %zu vs %zu", f, i,
                      v.img3d[f][i], n.img3d[f][i]);
            }
        CHECK(!memcmp(v.smp, n.smp, sizeof v.smp), "sampler info: %u %u %#x %#x vs %u %u %#x %#x",
              v.smp[0], v.smp[1], v.smp[2], v.smp[3], n.smp[0], n.smp[1], n.smp[2], n.smp[3]);
        for (int sh = 0; sh < 4; sh++)
            for (int i = 0; i < NIMGP; i++)
                CHECK(v.shape[sh][i] == n.shape[sh][i], "shape %d: image info %d: %zu vs %zu", sh,
                      i, v.shape[sh][i], n.shape[sh][i]);
        CHECK(v.err_region == n.err_region && v.err_mismatch == n.err_mismatch,
              "errors differ: %d %d vs %d %d", v.err_region, v.err_mismatch, n.err_region,
              n.err_mismatch);
    }
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("PASS: images and samplers (%u 2D formats; %s)\n", v.nformats,
           pn ? "the same as native" : "no native platform");
    return 0;
}
