/*
 * Jacobi iteration on a 2D grid split by columns over the ranks, with its
 * halo exchange enqueued on OpenCL queues (MPIX_Enqueue_sendrecv): the
 * pattern of Listing 4 of the clDataTransfer paper.  The host thread
 * enqueues an iteration and waits only at its end (clFinish); the interior
 * columns are computed on one queue while the halo columns, a vector
 * datatype, move on the other, and the two edge columns are computed there
 * once they have arrived.
 *
 * Build:  mpicc jacobi.c $(pkg-config --cflags --libs mpigpu) -o jacobi
 * Run:    mpiexec -n 2 ./jacobi [NX NY ITERS]
 * The result is checked against the same iteration on the host; the last
 * line starts with "verified" and the exit status is 0 when every cell
 * matches.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpigpu.h>

static const char *src =
    "__kernel void jacobi(__global const float *old, __global float *new,\n"
    "                     int pitch, int ny, int x0) {\n"
    "    int x = x0 + get_global_id(0), y = 1 + get_global_id(1);\n"
    "    if (y >= ny - 1) return;\n"
    "    int i = y * pitch + x;\n"
    "    new[i] = 0.25f * (old[i - 1] + old[i + 1] + old[i - pitch] + old[i + pitch]);\n"
    "}\n";

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        MPI_Abort(MPI_COMM_WORLD, 2);                                                              \
    } while (0)

/* The starting grid: 1 on the top edge, 0 elsewhere. */
static float start(int gx, int y)
{
    (void)gx;
    return y == 0 ? 1.0f : 0.0f;
}

int main(int argc, char **argv)
{
    int rank, size, nx = 64, ny = 48, iters = 50;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 3) {
        nx = atoi(argv[1]);
        ny = atoi(argv[2]);
        iters = atoi(argv[3]);
    }
    if (!MPIX_Query_opencl_support()) {
        if (rank == 0)
            printf("no OpenCL device: skipped\n");
        MPI_Finalize();
        return 77;
    }
    if (nx % size || nx / size < 3 || ny < 3)
        DIE("jacobi: NX must split into at least 3 columns per rank, NY >= 3\n");

    /* Local columns 1..nxl, ghosts 0 and nxl + 1; the global edges stay. */
    int nxl = nx / size, pitch = nxl + 2, x_off = rank * nxl - 1;
    size_t bytes = (size_t)pitch * ny * sizeof(float);
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL,
        right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    cl_context ctx;
    cl_device_id dev;
    cl_int e;
    MPIX_Gpu_get_device(&ctx, &dev, NULL);
    cl_command_queue cmd1 = clCreateCommandQueue(ctx, dev, 0, &e);
    cl_command_queue cmd2 = clCreateCommandQueue(ctx, dev, 0, &e);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
    if (clBuildProgram(prog, 1, &dev, "", NULL, NULL) != CL_SUCCESS)
        DIE("jacobi: kernel build failed\n");
    cl_kernel k = clCreateKernel(prog, "jacobi", &e);

    /* Two grids in cl_mem objects of the application's, registered so
       that MPI calls take their device addresses. */
    float *host = malloc(bytes);
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < pitch; x++)
            host[y * pitch + x] = start(x_off + x, y);
    cl_mem mem[2];
    float *dptr[2];
    for (int i = 0; i < 2; i++) {
        mem[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, host, &e);
        MPIX_Gpu_register(mem[i], (void **)&dptr[i]);
    }

    /* A column of the grid: ny floats, one per row. */
    MPI_Datatype col;
    MPI_Type_vector(ny, 1, pitch, MPI_FLOAT, &col);
    MPI_Type_commit(&col);

    double t0 = MPI_Wtime();
    int cur = 0;
    for (int it = 0; it < iters; it++) {
        int nw = 1 - cur;
        float *old = dptr[cur];
        cl_event halo;
        /* halos of old on cmd2, while cmd1 computes the interior */
        MPIX_Enqueue_sendrecv(old + 1, 1, col, left, 0, old + nxl + 1, 1, col, right, 0,
                              MPI_COMM_WORLD, cmd2, 0, NULL, NULL);
        MPIX_Enqueue_sendrecv(old + nxl, 1, col, right, 1, old, 1, col, left, 1, MPI_COMM_WORLD,
                              cmd2, 0, NULL, &halo);
        clSetKernelArg(k, 0, sizeof(cl_mem), &mem[cur]);
        clSetKernelArg(k, 1, sizeof(cl_mem), &mem[nw]);
        clSetKernelArg(k, 2, sizeof(int), &pitch);
        clSetKernelArg(k, 3, sizeof(int), &ny);
        int x0 = 2;
        size_t gi[2] = {(size_t)nxl - 2, (size_t)ny - 2};
        clSetKernelArg(k, 4, sizeof(int), &x0);
        if (gi[0] > 0)
            clEnqueueNDRangeKernel(cmd1, k, 2, NULL, gi, NULL, 0, NULL, NULL);
        /* the two edge columns, after the halos (cmd2 is in order); the
           global edges, never written, keep their values in both grids */
        size_t ge[2] = {1, (size_t)ny - 2};
        for (int s = 0; s < 2; s++) {
            x0 = s == 0 ? 1 : nxl;
            int gx = x_off + x0;
            if (gx == 0 || gx == nx - 1)
                continue;
            clSetKernelArg(k, 4, sizeof(int), &x0);
            clEnqueueNDRangeKernel(cmd2, k, 2, NULL, ge, NULL, 0, NULL, NULL);
        }
        clFinish(cmd1);
        clFinish(cmd2);
        if (clWaitForEvents(1, &halo) != CL_SUCCESS)
            DIE("jacobi: halo exchange failed\n");
        clReleaseEvent(halo);
        cur = nw;
    }
    double t = MPI_Wtime() - t0;

    /* the same on the host, over the whole grid */
    int gp = nx;
    float *a = malloc(sizeof(float) * gp * ny), *b = malloc(sizeof(float) * gp * ny);
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++)
            a[y * gp + x] = b[y * gp + x] = start(x, y);
    for (int it = 0; it < iters; it++) {
        for (int y = 1; y < ny - 1; y++)
            for (int x = 1; x < nx - 1; x++) {
                int i = y * gp + x;
                b[i] = 0.25f * (a[i - 1] + a[i + 1] + a[i - gp] + a[i + gp]);
            }
        float *tmp = a;
        a = b;
        b = tmp;
    }
    clEnqueueReadBuffer(cmd1, mem[cur], CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    int bad = 0;
    for (int y = 0; y < ny; y++)
        for (int x = 1; x <= nxl; x++)
            bad += fabsf(host[y * pitch + x] - a[y * gp + x_off + x]) > 1e-5f;
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# %d x %d grid, %d ranks, %d iterations: %.1f us per iteration\n", nx, ny, size,
               iters, 1e6 * t / iters);
        if (all)
            printf("%d cells differ from the host computation\n", all);
        else
            printf("verified\n");
    }

    MPI_Type_free(&col);
    for (int i = 0; i < 2; i++) {
        MPIX_Gpu_deregister(dptr[i]);
        clReleaseMemObject(mem[i]);
    }
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(cmd1);
    clReleaseCommandQueue(cmd2);
    free(host);
    free(a);
    free(b);
    MPI_Finalize();
    return all != 0;
}
