/* Host-coherent device memory: zero copy, or page protection with lazy and
   rolling update (GMAC); see shared.h and doc/design.md, "Shared allocations". */
#define _GNU_SOURCE /* memfd_create, RTLD_NEXT, REG_ERR */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "mgdev.h"
#include "mgerr.h"
#include "mglog.h"
#include "shared.h"

/* Block states.  The application's view of a block has the protection in
   brackets; the alias is always readable and writable. */
enum {
    BLK_CLEAN = 0,  /* host copy equals the device's [PROT_READ] */
    BLK_DIRTY = 1,  /* host copy is newer, on the dirty list [read-write] */
    BLK_INVALID = 2 /* device copy is newer [PROT_NONE] */
};

#define NIL SIZE_MAX

struct mgdev_shared {
    uintptr_t base; /* the device address, page aligned */
    size_t size;    /* bytes asked for */
    size_t map_len; /* bytes mapped at base: size rounded up to pages */
    cl_mem mem;     /* the buffer (the registry holds the reference) */
    int zero_copy;  /* 1: mem's storage is the pages at base */
    /* protocol mode */
    cl_command_queue q; /* private in-order queue of the transfers (ours) */
    int fd;             /* memfd behind both views */
    char *alias;        /* the library's read-write view */
    size_t block;       /* bytes of a block, whole pages */
    size_t nblocks;
    unsigned char *state;
    size_t *prev, *next; /* the dirty list, oldest first (FIFO) */
    size_t head, tail, ndirty, bound;
    size_t ra, ra_end; /* read-ahead: blocks the next fetch takes, and the
                          block after the last fetch (a fault there is
                          sequential and doubles ra) */
    int pending;       /* a device command may have written it since the last
                          invalidation (cleared by mgdev_shared_device_done) */
    pthread_mutex_t lock;
    atomic_int live;
    struct mgdev_shared *link; /* the list of every allocation */
};

/* Append-only while the library runs: the fault handler walks it without a
   lock (each node is published by a release store after it is complete). */
static _Atomic(mgdev_shared_t *) sh_head;
static pthread_mutex_t sh_list_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int sh_protocol_live;
static atomic_ulong sh_fetches, sh_flushes;
static struct sigaction sh_old; /* the application's handler before ours */
static int sh_installed;
static size_t sh_page;

/* ----- the real OpenCL entry points ----- */

static mgdev_cl_real_t cl_real;
static pthread_once_t cl_real_once = PTHREAD_ONCE_INIT;

static void *real_sym(const char *name)
{
    static void *lib;
    void *p = dlsym(RTLD_NEXT, name);
    if (p)
        return p;
    /* libOpenCL comes before libmpigpu in the lookup order (linked first,
       or loaded by an earlier object): RTLD_NEXT from here misses it. */
    if (!lib)
        lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_GLOBAL);
    return lib ? dlsym(lib, name) : NULL;
}

static void cl_real_resolve(void)
{
#define R(field, name) cl_real.field = (__typeof__(cl_real.field))real_sym(name)
    R(SetKernelArg, "clSetKernelArg");
    R(EnqueueNDRangeKernel, "clEnqueueNDRangeKernel");
    R(EnqueueTask, "clEnqueueTask");
    R(EnqueueReadBuffer, "clEnqueueReadBuffer");
    R(EnqueueWriteBuffer, "clEnqueueWriteBuffer");
    R(EnqueueCopyBuffer, "clEnqueueCopyBuffer");
    R(EnqueueFillBuffer, "clEnqueueFillBuffer");
    R(EnqueueReadBufferRect, "clEnqueueReadBufferRect");
    R(EnqueueWriteBufferRect, "clEnqueueWriteBufferRect");
    R(EnqueueCopyBufferRect, "clEnqueueCopyBufferRect");
    R(EnqueueMapBuffer, "clEnqueueMapBuffer");
    R(EnqueueUnmapMemObject, "clEnqueueUnmapMemObject");
    R(Finish, "clFinish");
    R(WaitForEvents, "clWaitForEvents");
#undef R
}

const mgdev_cl_real_t *mgdev_cl_real(void)
{
    pthread_once(&cl_real_once, cl_real_resolve);
    return &cl_real;
}

/* ----- blocks (sh->lock held) ----- */

static size_t blk_off(const mgdev_shared_t *sh, size_t b)
{
    return b * sh->block;
}

/* Bytes of block b mapped at base (whole pages). */
static size_t blk_map(const mgdev_shared_t *sh, size_t b)
{
    size_t off = blk_off(sh, b);
    return sh->map_len - off < sh->block ? sh->map_len - off : sh->block;
}

/* Bytes of block b that the buffer has (the tail of the last page has none). */
static size_t blk_bytes(const mgdev_shared_t *sh, size_t b)
{
    size_t off = blk_off(sh, b);
    if (off >= sh->size)
        return 0;
    return sh->size - off < sh->block ? sh->size - off : sh->block;
}

static int blk_protect(mgdev_shared_t *sh, size_t b, int prot)
{
    return mprotect((void *)(sh->base + blk_off(sh, b)), blk_map(sh, b), prot);
}

static void list_remove(mgdev_shared_t *sh, size_t b)
{
    if (sh->prev[b] != NIL)
        sh->next[sh->prev[b]] = sh->next[b];
    else
        sh->head = sh->next[b];
    if (sh->next[b] != NIL)
        sh->prev[sh->next[b]] = sh->prev[b];
    else
        sh->tail = sh->prev[b];
    sh->prev[b] = sh->next[b] = NIL;
    sh->ndirty--;
}

static void list_push(mgdev_shared_t *sh, size_t b)
{
    sh->prev[b] = sh->tail;
    sh->next[b] = NIL;
    if (sh->tail != NIL)
        sh->next[sh->tail] = b;
    else
        sh->head = b;
    sh->tail = b;
    sh->ndirty++;
}

/* Dirty block b goes to the device in the background (a non-blocking write
   from the alias on the private queue) and becomes clean with protection
   prot (PROT_READ, or PROT_NONE where it is invalidated next).  A host store
   that comes while the write is in flight faults, dirties the block again,
   and a later flush on the same in-order queue writes the newer bytes. */
static cl_int blk_flush(mgdev_shared_t *sh, size_t b, int prot)
{
    list_remove(sh, b);
    sh->state[b] = BLK_CLEAN;
    if (blk_protect(sh, b, prot) != 0)
        return CL_OUT_OF_HOST_MEMORY;
    size_t n = blk_bytes(sh, b);
    atomic_fetch_add_explicit(&sh_flushes, 1, memory_order_relaxed);
    if (!n)
        return CL_SUCCESS;
    return cl_real.EnqueueWriteBuffer(sh->q, sh->mem, CL_FALSE, blk_off(sh, b), n,
                                      sh->alias + blk_off(sh, b), 0, NULL, NULL);
}

/* Lazy update: an invalid block is read from the device into the alias
   (blocking, on the private queue, which also orders it after every flush)
   and becomes clean.  The application's view stays PROT_NONE meanwhile, so
   no other thread sees a half-fetched block.  A fault at the block after the
   previous fetch doubles the read-ahead (up to 16 MiB): the invalid blocks
   that follow come with it, in one command. */
#define RA_BYTES ((size_t)16 << 20)
static cl_int blk_fetch(mgdev_shared_t *sh, size_t b)
{
    size_t ra_max = RA_BYTES / sh->block ? RA_BYTES / sh->block : 1;
    sh->ra = b == sh->ra_end ? (sh->ra * 2 < ra_max ? sh->ra * 2 : ra_max) : 1;
    size_t e = b + 1;
    while (e < sh->nblocks && e - b < sh->ra && sh->state[e] == BLK_INVALID)
        e++;
    sh->ra_end = e;
    size_t off = blk_off(sh, b), n = 0;
    for (size_t k = b; k < e; k++)
        n += blk_bytes(sh, k);
    atomic_fetch_add_explicit(&sh_fetches, 1, memory_order_relaxed);
    if (n) {
        cl_int err = cl_real.EnqueueReadBuffer(sh->q, sh->mem, CL_TRUE, off, n, sh->alias + off, 0,
                                               NULL, NULL);
        if (err != CL_SUCCESS)
            return err;
    }
    memset(sh->state + b, BLK_CLEAN, e - b);
    size_t len = blk_off(sh, e - 1) + blk_map(sh, e - 1) - off;
    return mprotect((void *)(sh->base + off), len, PROT_READ) == 0 ? CL_SUCCESS
                                                                   : CL_OUT_OF_HOST_MEMORY;
}

/* Rolling update: past the bound, the oldest dirty blocks outside
   [keep0, keep1] are flushed and write-protected. */
static cl_int roll(mgdev_shared_t *sh, size_t keep0, size_t keep1)
{
    size_t b = sh->head;
    while (sh->ndirty > sh->bound && b != NIL) {
        size_t nb = sh->next[b];
        if (b < keep0 || b > keep1) {
            cl_int err = blk_flush(sh, b, PROT_READ);
            if (err != CL_SUCCESS)
                return err;
        }
        b = nb;
    }
    return CL_SUCCESS;
}

static cl_int blk_dirty(mgdev_shared_t *sh, size_t b, size_t keep0, size_t keep1)
{
    if (blk_protect(sh, b, PROT_READ | PROT_WRITE) != 0)
        return CL_OUT_OF_HOST_MEMORY;
    sh->state[b] = BLK_DIRTY;
    list_push(sh, b);
    return roll(sh, keep0, keep1);
}

/* Blocks [b0, b1]: dirty ones reach the device (then the queue is
   finished); with invalidate, every one becomes invalid. */
static cl_int range_release(mgdev_shared_t *sh, size_t b0, size_t b1, int invalidate)
{
    cl_int err = CL_SUCCESS;
    int prot = invalidate ? PROT_NONE : PROT_READ;
    if (sh->ndirty) {
        /* Walk the shorter of the list and the range. */
        if (sh->ndirty < b1 - b0 + 1) {
            for (size_t b = sh->head; b != NIL && err == CL_SUCCESS;) {
                size_t nb = sh->next[b];
                if (b >= b0 && b <= b1)
                    err = blk_flush(sh, b, prot);
                b = nb;
            }
        } else {
            for (size_t b = b0; b <= b1 && err == CL_SUCCESS; b++)
                if (sh->state[b] == BLK_DIRTY)
                    err = blk_flush(sh, b, prot);
        }
    }
    if (err == CL_SUCCESS)
        err = cl_real.Finish(sh->q);
    if (err == CL_SUCCESS && invalidate) {
        size_t off = blk_off(sh, b0), end = blk_off(sh, b1) + blk_map(sh, b1);
        if (mprotect((void *)(sh->base + off), end - off, PROT_NONE) != 0)
            err = CL_OUT_OF_HOST_MEMORY;
        memset(sh->state + b0, BLK_INVALID, b1 - b0 + 1);
    }
    return err;
}

/* ----- the fault handler ----- */

/* Async-signal safety: the handler runs for a fault that the thread itself
   raised by a load or store of application code.  It takes sh->lock and
   calls OpenCL and mprotect, which POSIX does not list as safe in a
   handler; this relies on the faulting code holding neither that lock nor
   the OpenCL runtime's locks: the library touches shared pages only through
   the alias while it holds sh->lock, and a shared address passed to an
   interposed OpenCL command as its host pointer is made accessible before
   the runtime sees it (mgdev_shared_host_use).  A fatal error writes with
   write(2) only, after snprintf into a buffer on the stack. */

/* 1: the access was a store, 0: a load, -1: unknown (then a store shows as a
   second fault on the clean block). */
static int fault_is_write(void *uc)
{
#if defined(__x86_64__) && defined(REG_ERR)
    const ucontext_t *u = uc;
    return (u->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
    (void)uc;
    return -1;
#endif
}

static void fatal(uintptr_t a, const char *what)
{
    char why[MGDEV_REG_WHY_LEN], msg[MGDEV_REG_WHY_LEN + 256];
    int n;
    if (what)
        n = snprintf(msg, sizeof(msg), "mpigpu: fatal: host access to shared memory at %p: %s\n",
                     (void *)a, what);
    else
        n = snprintf(msg, sizeof(msg),
                     "mpigpu: fatal: host access to %p: %s; only live memory of "
                     "MPIX_Gpu_malloc_shared is host-accessible\n",
                     (void *)a, mgdev_reg_why((void *)a, why, sizeof(why)));
    if (n > 0) {
        size_t len = (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
        ssize_t w = write(STDERR_FILENO, msg, len);
        (void)w;
    }
    abort();
}

/* Returns 0 when the access may be retried, else a fatal message. */
static const char *fault_handle(mgdev_shared_t *sh, uintptr_t a, int w)
{
    const char *bad = NULL;
    pthread_mutex_lock(&sh->lock);
    if (!atomic_load(&sh->live)) {
        bad = ""; /* freed meanwhile: the registry explains */
        goto out;
    }
    size_t b = (a - sh->base) / sh->block;
    cl_int err = CL_SUCCESS;
    switch (sh->state[b]) {
    case BLK_INVALID:
        err = blk_fetch(sh, b);
        if (err == CL_SUCCESS && w == 1)
            err = blk_dirty(sh, b, b, b);
        break;
    case BLK_CLEAN:
        if (w != 0) /* a load on a clean block: another thread fetched it */
            err = blk_dirty(sh, b, b, b);
        break;
    default: /* dirty: another thread dirtied it first */
        break;
    }
    if (err != CL_SUCCESS)
        bad = "the transfer between host and device failed (OpenCL error)";
out:
    pthread_mutex_unlock(&sh->lock);
    return bad;
}

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn sh_sigaction; /* libc's (libc_sigaction), set before the handler */

static void on_fault(int sig, siginfo_t *si, void *uc);

/* The handler before ours may take itself out and put back the one it
   replaced (LLVM's, which PoCL installs at MPI_Init, does), which also
   removes ours: then the one now in place becomes the one we chain to, and
   ours goes back first.  sigaction is async-signal-safe. */
static void keep_first(int sig)
{
    struct sigaction cur, sa;
    if (sh_sigaction(sig, NULL, &cur) != 0 ||
        ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fault))
        return;
    sh_old = cur;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sh_sigaction(sig, &sa, NULL);
}

static void chain(int sig, siginfo_t *si, void *uc)
{
    if (sh_old.sa_flags & SA_SIGINFO) {
        if (sh_old.sa_sigaction) {
            sh_old.sa_sigaction(sig, si, uc);
            keep_first(sig);
            return;
        }
    } else if (sh_old.sa_handler != SIG_DFL && sh_old.sa_handler != SIG_IGN) {
        sh_old.sa_handler(sig);
        keep_first(sig);
        return;
    }
    /* The default action: with it restored, the faulting access runs again
       and ends the process as it would have without the library; a
       SIGSEGV sent by kill is raised again. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sh_sigaction(sig, &dfl, NULL);
    if (si->si_code <= 0)
        raise(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    uintptr_t a = (uintptr_t)si->si_addr;
    if (si->si_code > 0 && mgdev_reg_in_range((const void *)a, 1)) {
        mgdev_shared_t *sh = atomic_load_explicit(&sh_head, memory_order_acquire);
        for (; sh; sh = sh->link)
            if (atomic_load(&sh->live) && a - sh->base < sh->map_len)
                break;
        if (!sh || sh->zero_copy)
            fatal(a, NULL);
        const char *bad = fault_handle(sh, a, fault_is_write(uc));
        if (bad)
            fatal(a, *bad ? bad : NULL);
        errno = saved;
        return;
    }
    chain(sig, si, uc);
    errno = saved;
}

/* libc's own sigaction.  UCX (under MPICH's ch4:ucx) defines sigaction
   too, and ignores handlers for the signals it treats as errors
   (UCX_ERROR_SIGNALS, SIGSEGV among them): through it ours would silently
   never run.  Its handler is then the one ours chains to. */
static sigaction_fn libc_sigaction(void)
{
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    sigaction_fn f = libc ? (sigaction_fn)dlsym(libc, "sigaction") : NULL;
    if (libc)
        dlclose(libc);
    return f ? f : sigaction;
}

/* Once, at the first shared allocation; it stays installed after
   MPI_Finalize, so that a stale access is still explained. */
static int install(void)
{
    if (sh_installed)
        return MPI_SUCCESS;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sh_sigaction = libc_sigaction();
    if (sh_sigaction(SIGSEGV, &sa, &sh_old) != 0)
        return mgerr_set(MPI_ERR_OTHER, "mpigpu: MPIX_Gpu_malloc_shared: sigaction: %s",
                         strerror(errno));
    sh_installed = 1;
    return MPI_SUCCESS;
}

/* ----- allocations ----- */

/* Give [base, base + len) back to the reservation: PROT_NONE, no pages. */
static void unmap_view(uintptr_t base, size_t len)
{
    (void)mmap((void *)base, len, PROT_NONE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

static void sh_release(mgdev_shared_t *sh)
{
    if (sh->q) {
        cl_real.Finish(sh->q);
        clReleaseCommandQueue(sh->q);
        sh->q = NULL;
    }
    if (sh->base && sh->map_len)
        unmap_view(sh->base, sh->map_len);
    if (sh->alias)
        munmap(sh->alias, sh->map_len);
    if (sh->fd >= 0)
        close(sh->fd);
    sh->alias = NULL;
    sh->fd = -1;
    free(sh->state);
    free(sh->prev);
    free(sh->next);
    sh->state = NULL;
    sh->prev = sh->next = NULL;
}

static int protocol_setup(mgdev_shared_t *sh, cl_context context, cl_device_id dev)
{
    const mgdev_settings_t *st = &mgdev_state.settings;
    cl_int err;
    sh->block = (st->shared_block + sh_page - 1) / sh_page * sh_page;
    sh->nblocks = (sh->map_len + sh->block - 1) / sh->block;
    sh->bound = (size_t)st->shared_dirty;
    sh->head = sh->tail = NIL;
    sh->ra = 1;
    sh->ra_end = NIL;
    sh->state = malloc(sh->nblocks);
    sh->prev = malloc(sh->nblocks * sizeof(size_t));
    sh->next = malloc(sh->nblocks * sizeof(size_t));
    if (!sh->state || !sh->prev || !sh->next)
        return mgerr_set(MPI_ERR_NO_MEM,
                         "mpigpu: MPIX_Gpu_malloc_shared: out of host memory for %zu blocks",
                         sh->nblocks);
    /* The host pages start zero and clean: the contents are undefined until
       written, as those of MPIX_Gpu_malloc. */
    memset(sh->state, BLK_CLEAN, sh->nblocks);
    for (size_t b = 0; b < sh->nblocks; b++)
        sh->prev[b] = sh->next[b] = NIL;
    sh->fd = memfd_create("mpigpu-shared", MFD_CLOEXEC);
    if (sh->fd < 0 || ftruncate(sh->fd, (off_t)sh->map_len) != 0)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: MPIX_Gpu_malloc_shared: memfd of %zu bytes: %s",
                         sh->map_len, strerror(errno));
    void *alias = mmap(NULL, sh->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, sh->fd, 0);
    if (alias == MAP_FAILED)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: MPIX_Gpu_malloc_shared: mmap of %zu bytes: %s",
                         sh->map_len, strerror(errno));
    sh->alias = alias;
    if (mmap((void *)sh->base, sh->map_len, PROT_READ, MAP_SHARED | MAP_FIXED, sh->fd, 0) ==
        MAP_FAILED)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: MPIX_Gpu_malloc_shared: mmap at %p: %s",
                         (void *)sh->base, strerror(errno));
    sh->mem = clCreateBuffer(context, CL_MEM_READ_WRITE, sh->size ? sh->size : 1, NULL, &err);
    if (err != CL_SUCCESS)
        return mgerr_set(err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES
                             ? MPI_ERR_NO_MEM
                             : MPI_ERR_OTHER,
                         "mpigpu: MPIX_Gpu_malloc_shared: clCreateBuffer of %zu bytes: %s",
                         sh->size, mgerr_cl_name(err));
    sh->q = clCreateCommandQueue(context, dev, 0, &err);
    if (err != CL_SUCCESS)
        return mgerr_set(MPI_ERR_OTHER, "mpigpu: MPIX_Gpu_malloc_shared: clCreateCommandQueue: %s",
                         mgerr_cl_name(err));
    return MPI_SUCCESS;
}

static int zero_copy_setup(mgdev_shared_t *sh, cl_context context)
{
    cl_int err;
    if (mmap((void *)sh->base, sh->map_len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: MPIX_Gpu_malloc_shared: mmap at %p: %s",
                         (void *)sh->base, strerror(errno));
    sh->mem = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, sh->map_len,
                             (void *)sh->base, &err);
    if (err != CL_SUCCESS)
        return mgerr_set(MPI_ERR_NO_MEM,
                         "mpigpu: MPIX_Gpu_malloc_shared: clCreateBuffer of %zu bytes over host "
                         "memory: %s",
                         sh->map_len, mgerr_cl_name(err));
    return MPI_SUCCESS;
}

int mgdev_shared_alloc(cl_context context, cl_device_id dev, size_t size, size_t zc_align,
                       void **ptr)
{
    int rc = MPI_SUCCESS;
    void *base = NULL;
    mgdev_shared_t *sh = NULL;

    mgdev_cl_real();
    if (!cl_real.EnqueueReadBuffer || !cl_real.EnqueueWriteBuffer || !cl_real.Finish)
        MG_FAIL(rc, fn_fail, MPI_ERR_OTHER,
                "mpigpu: MPIX_Gpu_malloc_shared: the OpenCL entry points are not found");
    if (!sh_page)
        sh_page = (size_t)sysconf(_SC_PAGESIZE);
    size_t align = zc_align > sh_page ? zc_align : sh_page;
    if (size > SIZE_MAX - 2 * align)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM,
                "mpigpu: MPIX_Gpu_malloc_shared: %zu bytes is too many", size);
    sh = calloc(1, sizeof(*sh));
    if (!sh)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: out of host memory");
    sh->fd = -1;
    sh->size = size;
    sh->map_len = ((size ? size : 1) + sh_page - 1) / sh_page * sh_page;
    sh->zero_copy = zc_align && mgdev_state.settings.shared_zero_copy;
    pthread_mutex_init(&sh->lock, NULL);

    pthread_mutex_lock(&sh_list_lock);
    rc = install();
    pthread_mutex_unlock(&sh_list_lock);
    MG_CHECK(rc, fn_fail);
    rc = mgdev_reg_insert_aligned(NULL, context, size, align, sh, &base);
    MG_CHECK(rc, fn_fail);
    sh->base = (uintptr_t)base;
    rc = sh->zero_copy ? zero_copy_setup(sh, context) : protocol_setup(sh, context, dev);
    MG_CHECK(rc, fn_fail);
    mgdev_reg_attach(base, sh->mem, sh->zero_copy ? (char *)base : NULL);
    clReleaseMemObject(sh->mem); /* the registry holds it */
    atomic_store(&sh->live, 1);
    if (!sh->zero_copy)
        atomic_fetch_add(&sh_protocol_live, 1);
    pthread_mutex_lock(&sh_list_lock);
    sh->link = atomic_load(&sh_head);
    atomic_store_explicit(&sh_head, sh, memory_order_release);
    pthread_mutex_unlock(&sh_list_lock);
    MGLOG_INFO(MGLOG_DEVICE, "shared allocation of %zu bytes at %p: %s", size, base,
               sh->zero_copy ? "zero copy (the device uses the host pages)"
                             : "page protection, lazy and rolling update");
    *ptr = base;
    return MPI_SUCCESS;

fn_fail:
    if (sh) {
        if (base)
            (void)mgdev_reg_remove(base, 1, NULL);
        if (sh->mem) /* not attached to the registry yet */
            clReleaseMemObject(sh->mem);
        sh_release(sh);
        pthread_mutex_destroy(&sh->lock);
        free(sh);
    }
    return rc;
}

int mgdev_shared_free(void *ptr)
{
    mgdev_reg_entry_t e;
    size_t off = 0;
    if (!mgdev_reg_lookup(ptr, &e, &off) || !e.shared || off != 0)
        return mgdev_reg_remove(ptr, 1, NULL);
    mgdev_shared_t *sh = e.shared;
    pthread_mutex_lock(&sh->lock);
    atomic_store(&sh->live, 0);
    if (sh->q)
        cl_real.Finish(sh->q);
    pthread_mutex_unlock(&sh->lock);
    int rc = mgdev_reg_remove(ptr, 1, NULL);
    if (!sh->zero_copy)
        atomic_fetch_sub(&sh_protocol_live, 1);
    pthread_mutex_lock(&sh->lock);
    sh_release(sh);
    pthread_mutex_unlock(&sh->lock);
    return rc;
}

static void kargs_free(void);

void mgdev_shared_finalize(void)
{
    kargs_free();
    pthread_mutex_lock(&sh_list_lock);
    mgdev_shared_t *sh = atomic_exchange(&sh_head, NULL);
    pthread_mutex_unlock(&sh_list_lock);
    while (sh) {
        mgdev_shared_t *next = sh->link;
        if (atomic_exchange(&sh->live, 0) && !sh->zero_copy)
            atomic_fetch_sub(&sh_protocol_live, 1);
        sh_release(sh);
        pthread_mutex_destroy(&sh->lock);
        free(sh);
        sh = next;
    }
}

/* ----- coherence points ----- */

int mgdev_shared_active(void)
{
    return atomic_load_explicit(&sh_protocol_live, memory_order_relaxed) != 0;
}

mgdev_shared_t *mgdev_shared_by_mem(cl_mem mem)
{
    if (!mem || !mgdev_shared_active())
        return NULL;
    for (mgdev_shared_t *sh = atomic_load_explicit(&sh_head, memory_order_acquire); sh;
         sh = sh->link)
        if (atomic_load(&sh->live) && !sh->zero_copy && sh->mem == mem)
            return sh;
    return NULL;
}

static int cl_fail(cl_int err, const char *what)
{
    return mgerr_set(MPI_ERR_OTHER, "mpigpu: shared memory: %s: %s", what, mgerr_cl_name(err));
}

int mgdev_shared_device_use(mgdev_shared_t *sh, size_t off, size_t len, int writes, int pending)
{
    cl_int err = CL_SUCCESS;
    pthread_mutex_lock(&sh->lock);
    if (atomic_load(&sh->live) && !sh->zero_copy && off < sh->map_len && len) {
        size_t end = len > sh->map_len - off ? sh->map_len : off + len;
        err = range_release(sh, off / sh->block, (end - 1) / sh->block, writes);
        if (writes && pending)
            sh->pending = 1;
    }
    pthread_mutex_unlock(&sh->lock);
    return err == CL_SUCCESS ? MPI_SUCCESS : cl_fail(err, "flush to the device");
}

int mgdev_shared_entry_use(const mgdev_reg_entry_t *e, size_t off, size_t len, int writes)
{
    if (!e->shared || e->shared->zero_copy)
        return MPI_SUCCESS;
    return mgdev_shared_device_use(e->shared, off, len, writes, 0);
}

void mgdev_shared_device_done(void)
{
    for (mgdev_shared_t *sh = atomic_load_explicit(&sh_head, memory_order_acquire); sh;
         sh = sh->link) {
        if (sh->zero_copy || !atomic_load(&sh->live))
            continue;
        pthread_mutex_lock(&sh->lock);
        if (sh->pending && atomic_load(&sh->live)) {
            sh->pending = 0;
            (void)range_release(sh, 0, sh->nblocks - 1, 1);
        }
        pthread_mutex_unlock(&sh->lock);
    }
}

/* The live protocol allocation that holds byte a, else NULL. */
static mgdev_shared_t *by_addr(uintptr_t a)
{
    if (!mgdev_shared_active() || !mgdev_reg_in_range((const void *)a, 1))
        return NULL;
    for (mgdev_shared_t *sh = atomic_load_explicit(&sh_head, memory_order_acquire); sh;
         sh = sh->link)
        if (atomic_load(&sh->live) && !sh->zero_copy && a - sh->base < sh->map_len)
            return sh;
    return NULL;
}

int mgdev_shared_host_use(const void *p, size_t len, int host_writes)
{
    uintptr_t a = (uintptr_t)p;
    mgdev_shared_t *sh = len ? by_addr(a) : NULL;
    cl_int err = CL_SUCCESS;
    if (!sh)
        return MPI_SUCCESS;
    pthread_mutex_lock(&sh->lock);
    size_t off = a - sh->base, end = len > sh->map_len - off ? sh->map_len : off + len;
    size_t b0 = off / sh->block, b1 = (end - 1) / sh->block;
    for (size_t b = b0; b <= b1 && err == CL_SUCCESS && atomic_load(&sh->live); b++) {
        if (sh->state[b] == BLK_INVALID)
            err = blk_fetch(sh, b);
        if (err == CL_SUCCESS && host_writes && sh->state[b] == BLK_CLEAN)
            err = blk_dirty(sh, b, b0, b1);
    }
    pthread_mutex_unlock(&sh->lock);
    return err == CL_SUCCESS ? MPI_SUCCESS : cl_fail(err, "fetch from the device");
}

int mgdev_shared_sync(const void *p, size_t len)
{
    mgdev_reg_entry_t e;
    size_t off = 0;
    char why[MGDEV_REG_WHY_LEN];
    if (len == 0)
        return MPI_SUCCESS;
    if (!mgdev_reg_lookup(p, &e, &off))
        return mgerr_set(MPI_ERR_BUFFER, "mpigpu: MPIX_Gpu_sync: %s",
                         mgdev_reg_why(p, why, sizeof(why)));
    if (len > e.size - off)
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: MPIX_Gpu_sync: range [%p, %p + %zu) exceeds the device "
                         "allocation [%p, %p)",
                         p, p, len, (void *)e.base, (void *)(e.base + e.size));
    return mgdev_shared_entry_use(&e, off, len, 0);
}

void mgdev_shared_stats(unsigned long *fetches, unsigned long *flushes)
{
    if (fetches)
        *fetches = atomic_load(&sh_fetches);
    if (flushes)
        *flushes = atomic_load(&sh_flushes);
}

/* ----- kernel arguments ----- */

/* Which argument of which kernel is a shared buffer (clSetKernelArg), so
   that a launch knows what to flush and invalidate.  A record of a released
   kernel stays until its handle is set again (a reused handle at worst
   flushes once for nothing); one of a freed allocation is skipped. */
typedef struct karg {
    cl_kernel kernel;
    cl_uint index;
    mgdev_shared_t *sh;
} karg_t;

static pthread_mutex_t karg_lock = PTHREAD_MUTEX_INITIALIZER;
static karg_t *kargs;
static size_t nkargs, kargs_cap;

void mgdev_shared_kernel_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value)
{
    /* A cl_mem argument is pointer-sized; any other argument of that size
       compares unequal to every buffer. */
    mgdev_shared_t *sh = NULL;
    if (size == sizeof(cl_mem) && value) {
        cl_mem m;
        memcpy(&m, value, sizeof(m));
        sh = mgdev_shared_by_mem(m);
    }
    if (!sh && !atomic_load_explicit(&sh_protocol_live, memory_order_relaxed) && !nkargs)
        return;
    pthread_mutex_lock(&karg_lock);
    size_t i = 0;
    while (i < nkargs && !(kargs[i].kernel == kernel && kargs[i].index == index))
        i++;
    if (i < nkargs && !sh) {
        kargs[i] = kargs[--nkargs];
    } else if (i < nkargs) {
        kargs[i].sh = sh;
    } else if (sh) {
        if (nkargs == kargs_cap) {
            size_t ncap = kargs_cap ? 2 * kargs_cap : 16;
            karg_t *k = realloc(kargs, ncap * sizeof(*k));
            if (!k) {
                /* Out of memory: the launch will not know this argument;
                   say so once and carry on (coherence then needs
                   MPIX_Gpu_sync). */
                pthread_mutex_unlock(&karg_lock);
                MGLOG_INFO(MGLOG_DEVICE, "out of host memory recording a kernel argument");
                return;
            }
            kargs = k;
            kargs_cap = ncap;
        }
        kargs[nkargs++] = (karg_t){.kernel = kernel, .index = index, .sh = sh};
    }
    pthread_mutex_unlock(&karg_lock);
}

int mgdev_shared_kernel_use(cl_kernel kernel)
{
    int rc = MPI_SUCCESS;
    if (!mgdev_shared_active())
        return MPI_SUCCESS;
    /* Collected first: the flushes run outside karg_lock. */
    mgdev_shared_t *use[16];
    size_t n = 0, more = 0;
    pthread_mutex_lock(&karg_lock);
    for (size_t i = 0; i < nkargs; i++) {
        if (kargs[i].kernel != kernel || !atomic_load(&kargs[i].sh->live))
            continue;
        if (n < sizeof(use) / sizeof(use[0]))
            use[n++] = kargs[i].sh;
        else
            more = 1;
    }
    pthread_mutex_unlock(&karg_lock);
    /* A kernel may write any of its buffers: each is flushed and invalidated
       (and again at the next clFinish or clWaitForEvents). */
    for (size_t i = 0; i < n && rc == MPI_SUCCESS; i++)
        rc = mgdev_shared_device_use(use[i], 0, SIZE_MAX, 1, 1);
    if (more && rc == MPI_SUCCESS) {
        /* Over 16 shared arguments: every shared allocation. */
        for (mgdev_shared_t *sh = atomic_load_explicit(&sh_head, memory_order_acquire);
             sh && rc == MPI_SUCCESS; sh = sh->link)
            if (atomic_load(&sh->live) && !sh->zero_copy)
                rc = mgdev_shared_device_use(sh, 0, SIZE_MAX, 1, 1);
    }
    return rc;
}

static void kargs_free(void)
{
    pthread_mutex_lock(&karg_lock);
    free(kargs);
    kargs = NULL;
    nkargs = kargs_cap = 0;
    pthread_mutex_unlock(&karg_lock);
}
