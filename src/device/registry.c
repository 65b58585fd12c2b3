/* Device addresses: sub-ranges of one reserved PROT_NONE mapping; see registry.h. */
#define _GNU_SOURCE /* writer-preferring rwlock initializer */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mgdt.h"
#include "mgerr.h"
#include "registry.h"

typedef struct mgdev_reg_hole {
    size_t off; /* offset from the reservation start */
    size_t len;
} mgdev_reg_hole_t;

/* The reservation is set once by mgdev_reg_init() before other threads use the
   library and cleared by mgdev_reg_finalize(), so mgdev_reg_in_range() reads
   it without the lock. */
static uintptr_t res_base;
static size_t res_size;

/* Lookups come from every MPI call; glibc's default rwlock prefers readers
   and would starve MPIX_Gpu_malloc/free under a steady stream of them. */
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
#else
static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
#endif
/* Live entries sorted by base; holes sorted by offset, never adjacent (they
   are merged on free), so the free list stays as short as the fragmentation. */
static mgdev_reg_entry_t *entries;
static size_t nentries, entries_cap;
static mgdev_reg_hole_t *holes;
static size_t nholes, holes_cap;
static size_t used_bytes, high_water;

static int grow(void **array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return MPI_SUCCESS;
    size_t ncap = *cap ? *cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*array, ncap * elem);
    if (!p)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory for the address registry");
    *array = p;
    *cap = ncap;
    return MPI_SUCCESS;
}

int mgdev_reg_init(void)
{
    int rc = MPI_SUCCESS;
    void *p = MAP_FAILED;
    size_t size = (size_t)1 << 40;

    if (res_base)
        goto fn_exit;
    /* Fall back to smaller reservations where the address space or
       vm.overcommit policy refuses a terabyte. */
    for (; size >= ((size_t)1 << 30); size >>= 2) {
        p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED)
            break;
    }
    if (p == MAP_FAILED)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM,
                "mpigpu: cannot reserve 1 GiB of address space for device addresses");
    rc = grow((void **)&holes, &holes_cap, 1, sizeof(*holes));
    MG_CHECK(rc, unmap);
    /* Offset 0 stays unused so that a pointer just before the first
       allocation is still inside the range, never a host address. */
    holes[0].off = MGDEV_REG_ALIGN;
    holes[0].len = size - MGDEV_REG_ALIGN;
    nholes = 1;
    used_bytes = high_water = 0;
    res_base = (uintptr_t)p;
    res_size = size;

fn_exit:
    return rc;
unmap:
    munmap(p, size);
fn_fail:
    goto fn_exit;
}

void mgdev_reg_finalize(void)
{
    pthread_rwlock_wrlock(&reg_lock);
    for (size_t i = 0; i < nentries; i++)
        clReleaseMemObject(entries[i].mem);
    free(entries);
    free(holes);
    entries = NULL;
    holes = NULL;
    nentries = entries_cap = nholes = holes_cap = 0;
    if (res_base)
        munmap((void *)res_base, res_size);
    res_base = 0;
    res_size = 0;
    pthread_rwlock_unlock(&reg_lock);
}

/* Index of the last entry with base <= p, or -1. */
static ptrdiff_t find_le(uintptr_t p)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)nentries - 1, found = -1;
    while (lo <= hi) {
        ptrdiff_t mid = lo + (hi - lo) / 2;
        if (entries[mid].base <= p) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

static int hole_take(size_t span, size_t *off)
{
    for (size_t i = 0; i < nholes; i++) {
        if (holes[i].len < span)
            continue;
        *off = holes[i].off;
        holes[i].off += span;
        holes[i].len -= span;
        if (holes[i].len == 0) {
            memmove(&holes[i], &holes[i + 1], (nholes - i - 1) * sizeof(*holes));
            nholes--;
        }
        return MPI_SUCCESS;
    }
    return mgerr_set(MPI_ERR_NO_MEM,
                     "mpigpu: device address range exhausted (%zu bytes requested, %zu of %zu "
                     "reserved bytes in use)",
                     span, used_bytes, res_size);
}

/* Return [off, off + len) to the free list, merging with its neighbours. */
static int hole_give(size_t off, size_t len)
{
    size_t i = 0;
    while (i < nholes && holes[i].off < off)
        i++;
    int merge_prev = i > 0 && holes[i - 1].off + holes[i - 1].len == off;
    int merge_next = i < nholes && off + len == holes[i].off;
    if (merge_prev && merge_next) {
        holes[i - 1].len += len + holes[i].len;
        memmove(&holes[i], &holes[i + 1], (nholes - i - 1) * sizeof(*holes));
        nholes--;
    } else if (merge_prev) {
        holes[i - 1].len += len;
    } else if (merge_next) {
        holes[i].off = off;
        holes[i].len += len;
    } else {
        int rc = grow((void **)&holes, &holes_cap, nholes + 1, sizeof(*holes));
        if (rc != MPI_SUCCESS)
            return rc;
        memmove(&holes[i + 1], &holes[i], (nholes - i) * sizeof(*holes));
        holes[i].off = off;
        holes[i].len = len;
        nholes++;
    }
    return MPI_SUCCESS;
}

int mgdev_reg_insert(cl_mem mem, cl_context context, size_t size, int owned, void **ptr)
{
    int rc = MPI_SUCCESS;
    size_t off = 0;
    /* A size-0 entry still takes one aligned unit so its address is unique;
       the extra unit is the guard that keeps one-past-the-end of this entry
       out of the next one. */
    size_t body = size ? size : 1;

    pthread_rwlock_wrlock(&reg_lock);
    if (!res_base)
        MG_FAIL(rc, fn_fail, MPI_ERR_OTHER, "mpigpu: device address registry not initialized");
    if (body > res_size)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM,
                "mpigpu: %zu bytes exceed the reserved device address range (%zu bytes)", size,
                res_size);
    size_t span = (body + MGDEV_REG_ALIGN - 1) / MGDEV_REG_ALIGN * MGDEV_REG_ALIGN;
    span += MGDEV_REG_ALIGN;
    rc = grow((void **)&entries, &entries_cap, nentries + 1, sizeof(*entries));
    MG_CHECK(rc, fn_fail);
    rc = hole_take(span, &off);
    MG_CHECK(rc, fn_fail);

    mgdev_reg_entry_t e = {.base = res_base + off,
                           .size = size,
                           .span = span,
                           .mem = mem,
                           .context = context,
                           .owned = owned};
    size_t pos = (size_t)(find_le(e.base) + 1);
    memmove(&entries[pos + 1], &entries[pos], (nentries - pos) * sizeof(*entries));
    entries[pos] = e;
    nentries++;
    clRetainMemObject(mem);
    used_bytes += span;
    if (off + span > high_water)
        high_water = off + span;
    *ptr = (void *)e.base;

fn_exit:
    pthread_rwlock_unlock(&reg_lock);
    return rc;
fn_fail:
    goto fn_exit;
}

int mgdev_reg_remove(const void *ptr, int expect_owned, mgdev_reg_entry_t *entry)
{
    int rc = MPI_SUCCESS;
    uintptr_t p = (uintptr_t)ptr;
    const char *want = expect_owned ? "MPIX_Gpu_malloc" : "MPIX_Gpu_register";

    if (!mgdev_reg_in_range(ptr, 1))
        return mgerr_set(MPI_ERR_BUFFER, "mpigpu: %p is not a device address from %s", ptr, want);
    pthread_rwlock_wrlock(&reg_lock);
    ptrdiff_t i = find_le(p);
    if (i < 0 || p >= entries[i].base + (entries[i].size ? entries[i].size : 1))
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER,
                "mpigpu: %p is not a live device address (already freed or never allocated)", ptr);
    if (entries[i].base != p)
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER,
                "mpigpu: %p is inside the device allocation [%p, %p) but not its base", ptr,
                (void *)entries[i].base, (void *)(entries[i].base + entries[i].size));
    if (entries[i].owned != expect_owned)
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER, "mpigpu: %p comes from %s, not from %s", ptr,
                entries[i].owned ? "MPIX_Gpu_malloc" : "MPIX_Gpu_register", want);

    mgdev_reg_entry_t e = entries[i];
    rc = hole_give(e.base - res_base, e.span);
    MG_CHECK(rc, fn_fail);
    memmove(&entries[i], &entries[i + 1], (nentries - (size_t)i - 1) * sizeof(*entries));
    nentries--;
    used_bytes -= e.span;
    clReleaseMemObject(e.mem);
    if (entry)
        *entry = e;

fn_exit:
    pthread_rwlock_unlock(&reg_lock);
    return rc;
fn_fail:
    goto fn_exit;
}

void mgdev_reg_set_host(void *ptr, char *host)
{
    uintptr_t p = (uintptr_t)ptr;
    pthread_rwlock_wrlock(&reg_lock);
    ptrdiff_t i = find_le(p);
    if (i >= 0 && entries[i].base == p)
        entries[i].host = host;
    pthread_rwlock_unlock(&reg_lock);
}

int mgdev_reg_lookup(const void *ptr, mgdev_reg_entry_t *entry, size_t *offset)
{
    uintptr_t p = (uintptr_t)ptr;
    int found = 0;

    if (!mgdev_reg_in_range(ptr, 1))
        return 0;
    pthread_rwlock_rdlock(&reg_lock);
    ptrdiff_t i = find_le(p);
    if (i >= 0) {
        const mgdev_reg_entry_t *e = &entries[i];
        found = e->size ? p < e->base + e->size : p == e->base;
        if (found && entry)
            *entry = *e;
        if (found && offset)
            *offset = p - e->base;
    }
    pthread_rwlock_unlock(&reg_lock);
    return found;
}

int mgdev_reg_in_range(const void *ptr, size_t len)
{
    uintptr_t p = (uintptr_t)ptr;
    if (!res_base || len == 0)
        return 0;
    uintptr_t last = p + len - 1 < p ? UINTPTR_MAX : p + len - 1;
    return p < res_base + res_size && last >= res_base;
}

void mgdev_reg_usage(size_t *in_use, size_t *hw, size_t *reserved)
{
    pthread_rwlock_rdlock(&reg_lock);
    if (in_use)
        *in_use = used_bytes;
    if (hw)
        *hw = high_water;
    if (reserved)
        *reserved = res_size;
    pthread_rwlock_unlock(&reg_lock);
}

int mgdev_buf_is_device(const void *buf, MPI_Count count, MPI_Datatype dt)
{
    MPI_Count tlb, tex, lb, ext;
    if (buf == MPI_IN_PLACE)
        return 0;
    /* A predefined type's layout without asking MPI (every host call comes
       here: issue 31). */
    const mgdt_layout_t *p = count > 0 ? mgdt_predefined(dt) : NULL;
    if (p) {
        tlb = p->true_lb;
        tex = p->true_extent;
        ext = p->extent;
    } else if (count <= 0 || dt == MPI_DATATYPE_NULL ||
               PMPI_Type_get_true_extent_x(dt, &tlb, &tex) != MPI_SUCCESS ||
               PMPI_Type_get_extent_x(dt, &lb, &ext) != MPI_SUCCESS) {
        return mgdev_reg_in_range(buf, 1);
    }
    MPI_Count span = (count - 1) * ext;
    MPI_Count lo = (span < 0 ? span : 0) + tlb, hi = (span > 0 ? span : 0) + tlb + tex;
    if (hi <= lo)
        return mgdev_reg_in_range(buf, 1);
    return mgdev_reg_in_range((const char *)buf + lo, (size_t)(hi - lo));
}
