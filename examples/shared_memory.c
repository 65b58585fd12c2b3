/*
 * Host-coherent device memory (MPIX_Gpu_malloc_shared): one pointer that the
 * host, OpenCL kernels and MPI all use, with no explicit copy.
 *
 * Rank 0 reads its input with fread() straight into a shared allocation,
 * doubles it with a kernel, prints an element from the host and sends the
 * buffer to rank 1 with MPI_Send.  Rank 1 receives into its own shared
 * allocation, adds one to every element with a kernel and checks the result
 * with a host loop.  The library keeps host and device coherent at the MPI
 * calls and at the OpenCL calls that use the buffer (user guide,
 * "Host-coherent device memory").
 *
 * Build:  mpicc shared_memory.c $(pkg-config --cflags --libs mpigpu) -o shared_memory
 * Run:    mpiexec -n 2 ./shared_memory [N]
 * The last line starts with "verified" and the exit status is 0 when every
 * element is right.
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpigpu.h>

static const char *src = "__kernel void axpb(__global int *a, int mul, int add) {\n"
                         "    size_t i = get_global_id(0);\n"
                         "    a[i] = a[i] * mul + add;\n"
                         "}\n";

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        MPI_Abort(MPI_COMM_WORLD, 2);                                                              \
    } while (0)

/* a[i] = a[i] * mul + add on the device, then wait for it. */
static void axpb(cl_command_queue q, cl_kernel k, int *a, size_t n, int mul, int add)
{
    int isdev = 0;
    cl_mem mem = NULL;
    if (MPIX_Gpu_query(a, &isdev, &mem, NULL) != MPI_SUCCESS || !isdev)
        DIE("shared: MPIX_Gpu_query failed\n");
    cl_int e = clSetKernelArg(k, 0, sizeof(mem), &mem);
    e |= clSetKernelArg(k, 1, sizeof(int), &mul);
    e |= clSetKernelArg(k, 2, sizeof(int), &add);
    e |= clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
    e |= clFinish(q); /* the kernel's writes are the host's from here */
    if (e != CL_SUCCESS)
        DIE("shared: the kernel failed\n");
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2)
        DIE("shared: run on 2 ranks\n");
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : (size_t)1 << 20;
    if (n == 0)
        DIE("shared: N must be positive\n");

    /* The library's OpenCL context and device; a queue and the kernel. */
    cl_context ctx;
    cl_device_id dev;
    cl_int e;
    if (MPIX_Gpu_get_device(&ctx, &dev, NULL) != MPI_SUCCESS)
        DIE("shared: no device\n");
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
    if (e != CL_SUCCESS || clBuildProgram(prog, 1, &dev, NULL, NULL, NULL) != CL_SUCCESS)
        DIE("shared: kernel build failed\n");
    cl_kernel k = clCreateKernel(prog, "axpb", &e);

    int *a = NULL;
    if (MPIX_Gpu_malloc_shared(n * sizeof(int), (void **)&a) != MPI_SUCCESS)
        DIE("shared: MPIX_Gpu_malloc_shared of %zu ints failed\n", n);
    long bad = 0;
    if (rank == 0) {
        /* Input through stdio: fread() stores into device memory. */
        FILE *f = tmpfile();
        if (!f)
            DIE("shared: tmpfile failed\n");
        for (size_t i = 0; i < n; i++) {
            int v = (int)(i % 1000);
            fwrite(&v, sizeof v, 1, f);
        }
        rewind(f);
        if (fread(a, sizeof(int), n, f) != n)
            DIE("shared: fread failed\n");
        fclose(f);
        axpb(q, k, a, n, 2, 0); /* the kernel sees what fread stored */
        printf("rank 0: a[%zu] = %d after the kernel (host read)\n", n - 1, a[n - 1]);
        MPI_Send(a, (int)n, MPI_INT, 1, 0, MPI_COMM_WORLD); /* sends the kernel's bytes */
    } else {
        MPI_Recv(a, (int)n, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        axpb(q, k, a, n, 1, 1);        /* the kernel sees what MPI received */
        for (size_t i = 0; i < n; i++) /* and the host sees the kernel's */
            bad += a[i] != (int)(i % 1000) * 2 + 1;
    }
    MPI_Bcast(&bad, 1, MPI_LONG, 1, MPI_COMM_WORLD);
    MPIX_Gpu_free(a);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    if (rank == 0) {
        if (bad)
            printf("FAILED: %ld of %zu elements wrong\n", bad, n);
        else
            printf("verified: %zu elements through fread, two kernels and MPI on shared "
                   "allocations\n",
                   n);
    }
    MPI_Finalize();
    return bad != 0;
}
