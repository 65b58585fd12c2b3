/*
 * The C library's I/O calls on shared memory (MPIX_Gpu_malloc_shared), as
 * GMAC interposes them: under page protection a block that the host may not
 * write (clean or invalid) or read (invalid) is a fault for a load or store,
 * which the library's SIGSEGV handler serves, but a system call that reads
 * into it or writes from it fails with EFAULT instead, and so do fread and
 * fwrite of more than stdio's buffer.  libmpigpu therefore exports read,
 * pread, pread64, readv, write, pwrite, pwrite64, writev, fread and fwrite:
 * while a protocol-mode allocation lives (one atomic load otherwise), the
 * blocks of the buffer are fetched, and made writable for a read, before the
 * real call (dlsym(RTLD_NEXT)) runs.  A buffer that starts outside shared
 * memory is passed through untouched.  Other calls that take buffers
 * (recv, getline's, aio_*) are not interposed: use MPIX_Gpu_sync and a host
 * buffer there (user guide, "Host-coherent device memory").
 */
#include "config.h"

#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shared.h"

/* The definitions below are exported (test/layers/exports.sh lists them
   from this file): each line that defines one starts with its return type. */
#pragma GCC visibility push(default)
ssize_t read(int fd, void *buf, size_t count);
ssize_t pread(int fd, void *buf, size_t count, off_t offset);
ssize_t pread64(int fd, void *buf, size_t count, off64_t offset);
ssize_t readv(int fd, const struct iovec *iov, int iovcnt);
ssize_t write(int fd, const void *buf, size_t count);
ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset);
ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset);
ssize_t writev(int fd, const struct iovec *iov, int iovcnt);
size_t fread(void *ptr, size_t size, size_t nmemb, FILE *stream);
size_t fwrite(const void *ptr, size_t size, size_t nmemb, FILE *stream);
#pragma GCC visibility pop

/* The next definition of a name (libc's), found once; the constructor
   finds them all before main, the first call of a name before that. */
enum {
    F_READ,
    F_PREAD,
    F_PREAD64,
    F_READV,
    F_WRITE,
    F_PWRITE,
    F_PWRITE64,
    F_WRITEV,
    F_FREAD,
    F_FWRITE,
    F_N
};
static const char *const names[F_N] = {"read",   "pread",    "pread64", "readv", "write",
                                       "pwrite", "pwrite64", "writev",  "fread", "fwrite"};
static _Atomic(void *) next[F_N];

static void *real(int f)
{
    void *p = atomic_load_explicit(&next[f], memory_order_acquire);
    if (!p) {
        p = dlsym(RTLD_NEXT, names[f]);
        atomic_store_explicit(&next[f], p, memory_order_release);
    }
    return p;
}

__attribute__((constructor)) static void hostio_init(void)
{
    for (int f = 0; f < F_N; f++)
        real(f);
}

/* Whether the call may go on: [p, p + len) made accessible (host_writes:
   writable) where it is shared memory, else errno EFAULT as the kernel
   would set it. */
static int host_use(const void *p, size_t len, int host_writes)
{
    if (!mgdev_shared_active() || !p || len == 0)
        return 1;
    if (mgdev_shared_host_use(p, len, host_writes) == MPI_SUCCESS)
        return 1;
    errno = EFAULT;
    return 0;
}

/* The vectored calls need every part accessible at once: the span from the
   lowest to the highest byte first, in one step (its blocks, all of them in
   one allocation, are not evicted by the rolling update's bound while they
   are made writable), then each part (a part in another allocation). */
static int iov_use(const struct iovec *iov, int iovcnt, int host_writes)
{
    if (!mgdev_shared_active() || !iov || iovcnt <= 0)
        return 1;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < iovcnt; i++) {
        uintptr_t b = (uintptr_t)iov[i].iov_base;
        if (!iov[i].iov_len || b > UINTPTR_MAX - iov[i].iov_len)
            continue;
        lo = b < lo ? b : lo;
        hi = b + iov[i].iov_len > hi ? b + iov[i].iov_len : hi;
    }
    if (hi > lo && !host_use((const void *)lo, hi - lo, host_writes))
        return 0;
    for (int i = 0; i < iovcnt; i++)
        if (!host_use(iov[i].iov_base, iov[i].iov_len, host_writes))
            return 0;
    return 1;
}

/* The number of bytes of nmemb items of size bytes, saturated. */
static size_t items(size_t size, size_t nmemb)
{
    size_t n;
    return __builtin_mul_overflow(size, nmemb, &n) ? SIZE_MAX : n;
}

/* The next definition of a name, or NULL with errno ENOSYS when there is
   none. */
static void *next_of(int f)
{
    void *p = real(f);
    if (!p)
        errno = ENOSYS;
    return p;
}

ssize_t read(int fd, void *buf, size_t count)
{
    __typeof__(read) *fn = next_of(F_READ);
    if (!fn || !host_use(buf, count, 1))
        return -1;
    return fn(fd, buf, count);
}

ssize_t pread(int fd, void *buf, size_t count, off_t offset)
{
    __typeof__(pread) *fn = next_of(F_PREAD);
    if (!fn || !host_use(buf, count, 1))
        return -1;
    return fn(fd, buf, count, offset);
}

ssize_t pread64(int fd, void *buf, size_t count, off64_t offset)
{
    __typeof__(pread64) *fn = next_of(F_PREAD64);
    if (!fn || !host_use(buf, count, 1))
        return -1;
    return fn(fd, buf, count, offset);
}

ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    __typeof__(readv) *fn = next_of(F_READV);
    if (!fn || !iov_use(iov, iovcnt, 1))
        return -1;
    return fn(fd, iov, iovcnt);
}

ssize_t write(int fd, const void *buf, size_t count)
{
    __typeof__(write) *fn = next_of(F_WRITE);
    if (!fn || !host_use(buf, count, 0))
        return -1;
    return fn(fd, buf, count);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset)
{
    __typeof__(pwrite) *fn = next_of(F_PWRITE);
    if (!fn || !host_use(buf, count, 0))
        return -1;
    return fn(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset)
{
    __typeof__(pwrite64) *fn = next_of(F_PWRITE64);
    if (!fn || !host_use(buf, count, 0))
        return -1;
    return fn(fd, buf, count, offset);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    __typeof__(writev) *fn = next_of(F_WRITEV);
    if (!fn || !iov_use(iov, iovcnt, 0))
        return -1;
    return fn(fd, iov, iovcnt);
}

size_t fread(void *ptr, size_t size, size_t nmemb, FILE *stream)
{
    __typeof__(fread) *fn = next_of(F_FREAD);
    if (!fn || !host_use(ptr, items(size, nmemb), 1))
        return 0;
    return fn(ptr, size, nmemb, stream);
}

size_t fwrite(const void *ptr, size_t size, size_t nmemb, FILE *stream)
{
    __typeof__(fwrite) *fn = next_of(F_FWRITE);
    if (!fn || !host_use(ptr, items(size, nmemb), 0))
        return 0;
    return fn(ptr, size, nmemb, stream);
}
