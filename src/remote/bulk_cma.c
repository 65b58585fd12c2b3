/* The one-copy (cross-memory attach) lane of a client on this host: the
 * proxy copies straight between the client's memory and its own with
 * process_vm_readv / process_vm_writev.  See bulk.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "bulk.h"

int mgrm_cma_range_ok(uint64_t addr, uint64_t size)
{
    return addr != 0 && size <= MGRM_CMA_MAX && addr <= UINT64_MAX - size &&
           (uintptr_t)addr == addr && (uintptr_t)(addr + size) == addr + size;
}

int mgrm_cma_copy(long pid, int to_client, uint64_t addr, void *local, size_t n)
{
    size_t done = 0;
    while (done < n) {
        struct iovec l = {(char *)local + done, n - done};
        struct iovec r = {(void *)(uintptr_t)(addr + done), n - done};
        ssize_t k = to_client ? process_vm_writev((pid_t)pid, &l, 1, &r, 1, 0)
                              : process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}
