/* Every MPIX_ call before MPI_Init and after MPI_Finalize returns an error
   whose MPI_Error_string names the call and the cause, and never aborts; after
   MPI_Finalize the device address range stays reserved and inaccessible, so an
   old device address is never host memory.  One rank. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mgtest_check.h"
#include "mpigpu.h"

/* rc is MPI_ERR_OTHER and its text names fn and when ("before MPI_Init").
   MPI-4.0 lets MPI_Error_string and MPI_Error_class be called outside
   MPI_Init .. MPI_Finalize, and MPICH 4.0.2 answers them there. */
static void check_out(int rc, const char *fn, const char *when, int line)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0, cls = -1;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (rc == MPI_SUCCESS || cls != MPI_ERR_OTHER || !strstr(msg, fn) || !strstr(msg, when)) {
        errs++;
        fprintf(stderr, "lifecycle.c:%d: %s: rc %d class %d \"%s\" (want MPI_ERR_OTHER, \"%s\")\n",
                line, fn, rc, cls, msg, when);
    }
}
#define CHECK_OUT(call_, fn_) check_out((call_), (fn_), when, __LINE__)

/* Every function of mpigpu.h, outside MPI_Init .. MPI_Finalize. */
static void check_every_call(const char *when, void *dev)
{
    char host[64] = {0}, other[64] = {0};
    void *p = NULL;
    cl_context c = NULL;
    cl_device_id d = NULL;
    cl_command_queue q = NULL;
    cl_mem mem = NULL;
    cl_event ev = NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    int is_dev = -1, kv = 0;
    size_t off = 0;

    CHECK(MPIX_Query_opencl_support() == 0);
    CHECK_OUT(MPIX_Gpu_get_device(&c, &d, &q), "MPIX_Gpu_get_device");
    CHECK(c == NULL && d == NULL && q == NULL);
    CHECK_OUT(MPIX_Gpu_set_queue(q), "MPIX_Gpu_set_queue");
    CHECK_OUT(MPIX_Gpu_malloc(64, &p), "MPIX_Gpu_malloc");
    CHECK(p == NULL);
    CHECK_OUT(MPIX_Gpu_free(NULL), "MPIX_Gpu_free");
    CHECK_OUT(MPIX_Gpu_free(host), "MPIX_Gpu_free");
    CHECK_OUT(MPIX_Gpu_register(NULL, &p), "MPIX_Gpu_register");
    CHECK_OUT(MPIX_Gpu_deregister(host), "MPIX_Gpu_deregister");
    CHECK_OUT(MPIX_Gpu_query(host, &is_dev, &mem, &off), "MPIX_Gpu_query");
    CHECK_OUT(MPIX_Gpu_host_register(host, sizeof(host)), "MPIX_Gpu_host_register");
    CHECK_OUT(MPIX_Gpu_host_deregister(host), "MPIX_Gpu_host_deregister");
    CHECK_OUT(MPIX_Gpu_pack_keyval(&kv), "MPIX_Gpu_pack_keyval");
    memset(host, 7, sizeof(host));
    CHECK_OUT(MPIX_Gpu_memcpy(other, host, sizeof(host)), "MPIX_Gpu_memcpy");
    CHECK(other[0] == 0); /* nothing was copied */
    CHECK_OUT(MPIX_Enqueue_send(host, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL, 0, NULL, &ev),
              "MPIX_Enqueue_send");
    CHECK_OUT(MPIX_Enqueue_recv(host, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL, 0, NULL, &ev),
              "MPIX_Enqueue_recv");
    CHECK_OUT(MPIX_Event_from_request(NULL, &req, &ev), "MPIX_Event_from_request");
    CHECK_OUT(MPIX_Enqueue_sendrecv(host, 1, MPI_INT, 0, 0, other, 1, MPI_INT, 0, 0, MPI_COMM_WORLD,
                                    NULL, 0, NULL, &ev),
              "MPIX_Enqueue_sendrecv");
    CHECK_OUT(MPIX_Enqueue_start(&req, NULL, 0, NULL, &ev), "MPIX_Enqueue_start");
    CHECK_OUT(MPIX_Enqueue_file_write_at(MPI_FILE_NULL, 0, host, 1, MPI_INT, NULL, 0, NULL, &ev),
              "MPIX_Enqueue_file_write_at");
    CHECK_OUT(MPIX_Enqueue_file_read_at(MPI_FILE_NULL, 0, host, 1, MPI_INT, NULL, 0, NULL, &ev),
              "MPIX_Enqueue_file_read_at");
    if (dev) {
        CHECK_OUT(MPIX_Gpu_memcpy(host, dev, 8), "MPIX_Gpu_memcpy");
        CHECK_OUT(MPIX_Gpu_memcpy(dev, host, 8), "MPIX_Gpu_memcpy");
        CHECK_OUT(MPIX_Gpu_query(dev, &is_dev, &mem, &off), "MPIX_Gpu_query");
        CHECK_OUT(MPIX_Gpu_free(dev), "MPIX_Gpu_free");
    }
}

/* The protection of the mapping that holds p in /proc/self/maps ("---p"),
   or "" when none does. */
static void maps_perms(const void *p, char perms[5])
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long lo, hi;
    char pr[5];
    perms[0] = '\0';
    if (!f)
        return;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, pr) == 3 && (uintptr_t)p >= lo &&
            (uintptr_t)p < hi) {
            memcpy(perms, pr, 5);
            break;
        }
    fclose(f);
}

int main(int argc, char **argv)
{
    char *old = NULL;
    char perms[5];
    int have_dev;

    check_every_call("called before MPI_Init", NULL);

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    have_dev = MPIX_Query_opencl_support();
    if (have_dev) {
        unsigned char h[64];
        for (int i = 0; i < 64; i++)
            h[i] = (unsigned char)i;
        CHECK(MPIX_Gpu_malloc(64, (void **)&old) == MPI_SUCCESS && old);
        CHECK(MPIX_Gpu_memcpy(old, h, sizeof(h)) == MPI_SUCCESS);
        maps_perms(old, perms);
        CHECK(strcmp(perms, "---p") == 0);
    }
    /* Left allocated: MPI_Finalize releases it. */
    MPI_Finalize();

    check_every_call("called after MPI_Finalize", old);
    if (old) {
        /* The range is still reserved and inaccessible: the old address is not
           host memory, and a new mapping asked for at that very address goes
           elsewhere. */
        maps_perms(old, perms);
        CHECK(strcmp(perms, "---p") == 0);
        uintptr_t page = (uintptr_t)old & ~(uintptr_t)4095;
        void *m =
            mmap((void *)page, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(m != MAP_FAILED);
        CHECK((uintptr_t)m + (1 << 20) <= page || (uintptr_t)m >= page + 4096);
        if (m != MAP_FAILED)
            munmap(m, 1 << 20);
    }
    if (errs)
        printf(" Found %d errors\n", errs);
    else
        printf(" No Errors%s\n",
               have_dev ? "" : " (no OpenCL device: device address checks skipped)");
    return errs != 0;
}
