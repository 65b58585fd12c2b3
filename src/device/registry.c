/* Device addresses: sub-ranges of one reserved PROT_NONE mapping; see registry.h. */
#define _GNU_SOURCE /* writer-preferring rwlock initializer */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
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

/* A freed range in quarantine (doc/design.md, "Device addresses"). */
typedef struct mgdev_reg_freed {
    uintptr_t base;
    size_t size; /* the buffer's bytes, for messages */
    size_t span;
    int owned;
} mgdev_reg_freed_t;

/* The reservation is mapped by the first mgdev_reg_init(), before other
   threads use the library, and never unmapped: after mgdev_reg_finalize() it
   stays PROT_NONE, so an old device address still faults on the host instead
   of becoming a wild host pointer, and no later mapping can take its place.
   mgdev_reg_in_range() therefore reads it without the lock. */
mgdev_res_t mgdev_res;

/* Lookups come from every MPI call; glibc's default rwlock prefers readers
   and would starve MPIX_Gpu_malloc/free under a steady stream of them. */
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
#else
static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
#endif
/* Between mgdev_reg_init() and mgdev_reg_finalize(), every byte of the
   reservation past its first unit lies in exactly one of: the span of a live
   entry (sorted by base), a hole (free and not quarantined; sorted by
   offset, never adjacent, since they are merged), or a quarantined range (a
   ring in free order, the oldest at quar_head). */
static int reg_live;
static mgdev_reg_entry_t *entries;
static size_t nentries, entries_cap;
static mgdev_reg_hole_t *holes;
static size_t nholes, holes_cap;
static mgdev_reg_freed_t *quar;
static size_t quar_head, quar_len, quar_cap, quar_bytes;
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

/* Map the reservation, falling back to smaller sizes where the address space
   or the vm.overcommit policy refuses a terabyte. */
static int reserve(void)
{
    void *p = MAP_FAILED;
    size_t size = (size_t)1 << 40;
    for (; size >= ((size_t)1 << 30); size >>= 2) {
        p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED)
            break;
    }
    if (p == MAP_FAILED)
        return mgerr_set(MPI_ERR_NO_MEM,
                         "mpigpu: cannot reserve 1 GiB of address space for device addresses");
    mgdev_res.base = (uintptr_t)p;
    mgdev_res.size = size;
    return MPI_SUCCESS;
}

int mgdev_reg_init(void)
{
    int rc = MPI_SUCCESS;

    pthread_rwlock_wrlock(&reg_lock);
    if (reg_live)
        goto fn_exit;
    if (!mgdev_res.base) {
        rc = reserve();
        MG_CHECK(rc, fn_fail);
    }
    rc = grow((void **)&holes, &holes_cap, 1, sizeof(*holes));
    MG_CHECK(rc, fn_fail);
    /* Offset 0 stays unused so that a pointer just before the first
       allocation is still inside the range, never a host address. */
    holes[0].off = MGDEV_REG_ALIGN;
    holes[0].len = mgdev_res.size - MGDEV_REG_ALIGN;
    nholes = 1;
    used_bytes = high_water = 0;
    reg_live = 1;

fn_exit:
    pthread_rwlock_unlock(&reg_lock);
    return rc;
fn_fail:
    goto fn_exit;
}

void mgdev_reg_finalize(void)
{
    pthread_rwlock_wrlock(&reg_lock);
    for (size_t i = 0; i < nentries; i++)
        if (entries[i].mem)
            clReleaseMemObject(entries[i].mem);
    free(entries);
    free(holes);
    free(quar);
    entries = NULL;
    holes = NULL;
    quar = NULL;
    nentries = entries_cap = nholes = holes_cap = 0;
    quar_head = quar_len = quar_cap = quar_bytes = 0;
    used_bytes = high_water = 0;
    reg_live = 0;
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

/* Take span bytes from the start of hole i. */
static size_t hole_cut(size_t i, size_t span)
{
    size_t off = holes[i].off;
    holes[i].off += span;
    holes[i].len -= span;
    if (holes[i].len == 0) {
        memmove(&holes[i], &holes[i + 1], (nholes - i - 1) * sizeof(*holes));
        nholes--;
    }
    return off;
}

/* Return [off, off + len) to the holes, merging it with its neighbours, and
   give the index of the hole that holds it.  The caller made room for one
   more hole. */
static size_t hole_give(size_t off, size_t len)
{
    size_t i = 0, hi = nholes;
    while (i < hi) {
        size_t mid = i + (hi - i) / 2;
        if (holes[mid].off < off)
            i = mid + 1;
        else
            hi = mid;
    }
    int merge_prev = i > 0 && holes[i - 1].off + holes[i - 1].len == off;
    int merge_next = i < nholes && off + len == holes[i].off;
    if (merge_prev && merge_next) {
        holes[i - 1].len += len + holes[i].len;
        memmove(&holes[i], &holes[i + 1], (nholes - i - 1) * sizeof(*holes));
        nholes--;
        return i - 1;
    }
    if (merge_prev) {
        holes[i - 1].len += len;
        return i - 1;
    }
    if (merge_next) {
        holes[i].off = off;
        holes[i].len += len;
        return i;
    }
    memmove(&holes[i + 1], &holes[i], (nholes - i) * sizeof(*holes));
    holes[i].off = off;
    holes[i].len = len;
    nholes++;
    return i;
}

/* End the quarantine of the oldest freed range: its space becomes a hole.
   The caller made room for one more hole. */
static size_t quar_release(void)
{
    const mgdev_reg_freed_t *f = &quar[quar_head];
    quar_head = (quar_head + 1) % quar_cap;
    quar_len--;
    quar_bytes -= f->span;
    return hole_give(f->base - mgdev_res.base, f->span);
}

/* Room in the ring for one more range (quar_len < MGDEV_REG_QUARANTINE_RANGES). */
static int quar_grow(void)
{
    if (quar_len < quar_cap)
        return MPI_SUCCESS;
    size_t ncap = quar_cap ? 2 * quar_cap : 64;
    if (ncap > MGDEV_REG_QUARANTINE_RANGES)
        ncap = MGDEV_REG_QUARANTINE_RANGES;
    mgdev_reg_freed_t *q = malloc(ncap * sizeof(*q));
    if (!q)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory for the address registry");
    for (size_t k = 0; k < quar_len; k++)
        q[k] = quar[(quar_head + k) % quar_cap];
    free(quar);
    quar = q;
    quar_cap = ncap;
    quar_head = 0;
    return MPI_SUCCESS;
}

/* Take span bytes starting at an align-aligned offset inside hole i, when
   it fits: the bytes before the aligned start stay a hole of their own.
   The caller made room for one more hole. */
static int hole_fit(size_t i, size_t span, size_t align, size_t *off)
{
    size_t start = (holes[i].off + align - 1) & ~(align - 1);
    size_t pad = start - holes[i].off;
    if (holes[i].len < pad || holes[i].len - pad < span)
        return 0;
    if (pad == 0) {
        *off = hole_cut(i, span);
        return 1;
    }
    size_t rest = holes[i].len - pad - span;
    holes[i].len = pad;
    if (rest) {
        memmove(&holes[i + 2], &holes[i + 1], (nholes - i - 1) * sizeof(*holes));
        holes[i + 1].off = start + span;
        holes[i + 1].len = rest;
        nholes++;
    }
    *off = start;
    return 1;
}

/* Free and not quarantined space first (first fit); only when no hole fits,
   quarantined space, oldest first.  Releasing a range grows one hole only,
   so that hole is the only one that may newly fit. */
static int hole_take(size_t span, size_t align, size_t *off)
{
    int rc = grow((void **)&holes, &holes_cap, nholes + 2, sizeof(*holes));
    if (rc != MPI_SUCCESS)
        return rc;
    for (size_t i = 0; i < nholes; i++)
        if (hole_fit(i, span, align, off))
            return MPI_SUCCESS;
    while (quar_len > 0) {
        rc = grow((void **)&holes, &holes_cap, nholes + 2, sizeof(*holes));
        if (rc != MPI_SUCCESS)
            return rc;
        size_t i = quar_release();
        if (hole_fit(i, span, align, off))
            return MPI_SUCCESS;
    }
    return mgerr_set(MPI_ERR_NO_MEM,
                     "mpigpu: device address range exhausted (%zu bytes requested, %zu of %zu "
                     "reserved bytes in use)",
                     span, used_bytes, mgdev_res.size);
}

static int insert(cl_mem mem, cl_context context, size_t size, int owned, size_t align,
                  struct mgdev_shared *sh, void **ptr)
{
    int rc = MPI_SUCCESS;
    size_t off = 0;
    /* A size-0 entry still takes one aligned unit so its address is unique;
       the extra unit is the guard that keeps one-past-the-end of this entry
       out of the next one. */
    size_t body = size ? size : 1;

    pthread_rwlock_wrlock(&reg_lock);
    if (!reg_live)
        MG_FAIL(rc, fn_fail, MPI_ERR_OTHER, "mpigpu: device address registry not initialized");
    if (body > mgdev_res.size - 4 * align)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM,
                "mpigpu: %zu bytes exceed the reserved device address range (%zu bytes)", size,
                mgdev_res.size);
    size_t span = (body + align - 1) / align * align;
    span += align;
    rc = grow((void **)&entries, &entries_cap, nentries + 1, sizeof(*entries));
    MG_CHECK(rc, fn_fail);
    rc = hole_take(span, align, &off);
    MG_CHECK(rc, fn_fail);

    mgdev_reg_entry_t e = {.base = mgdev_res.base + off,
                           .size = size,
                           .span = span,
                           .mem = mem,
                           .context = context,
                           .owned = owned,
                           .shared = sh};
    size_t pos = (size_t)(find_le(e.base) + 1);
    memmove(&entries[pos + 1], &entries[pos], (nentries - pos) * sizeof(*entries));
    entries[pos] = e;
    nentries++;
    if (mem)
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

/* What p is, for a message (reg_lock held); see mgdev_reg_why(). */
static void why_locked(uintptr_t p, char *buf, size_t len)
{
    if (!mgdev_res.base || p < mgdev_res.base || p - mgdev_res.base >= mgdev_res.size) {
        snprintf(buf, len, "%p is a host address, not a device address", (void *)p);
        return;
    }
    if (!reg_live) {
        snprintf(buf, len, "device address %p is void: MPI_Finalize released every device address",
                 (void *)p);
        return;
    }
    ptrdiff_t i = find_le(p);
    if (i >= 0 && p - entries[i].base < entries[i].span) {
        const mgdev_reg_entry_t *e = &entries[i];
        snprintf(buf, len, "device address %p lies %s the device allocation [%p, %p) (%zu bytes)",
                 (void *)p, p - e->base < e->size ? "in" : "past the end of", (void *)e->base,
                 (void *)(e->base + e->size), e->size);
        return;
    }
    for (size_t k = quar_len; k-- > 0;) {
        const mgdev_reg_freed_t *f = &quar[(quar_head + k) % quar_cap];
        if (p - f->base < f->span) {
            snprintf(buf, len, "device address %p lies in a freed range (%zu bytes at %p, %s)",
                     (void *)p, f->size, (void *)f->base,
                     f->owned ? "freed by MPIX_Gpu_free" : "deregistered by MPIX_Gpu_deregister");
            return;
        }
    }
    snprintf(buf, len,
             "device address %p lies in no allocation (never allocated, or freed and out of "
             "quarantine)",
             (void *)p);
}

int mgdev_reg_insert(cl_mem mem, cl_context context, size_t size, int owned, void **ptr)
{
    return insert(mem, context, size, owned, MGDEV_REG_ALIGN, NULL, ptr);
}

int mgdev_reg_insert_aligned(cl_mem mem, cl_context context, size_t size, size_t align,
                             struct mgdev_shared *sh, void **ptr)
{
    if (align < MGDEV_REG_ALIGN || (align & (align - 1)))
        return mgerr_set(MPI_ERR_INTERN, "mpigpu: alignment %zu is not a power of two", align);
    return insert(mem, context, size, 1, align, sh, ptr);
}

const char *mgdev_reg_why(const void *ptr, char *buf, size_t len)
{
    pthread_rwlock_rdlock(&reg_lock);
    why_locked((uintptr_t)ptr, buf, len);
    pthread_rwlock_unlock(&reg_lock);
    return buf;
}

int mgdev_reg_remove(const void *ptr, int expect_owned, mgdev_reg_entry_t *entry)
{
    int rc = MPI_SUCCESS;
    uintptr_t p = (uintptr_t)ptr;
    const char *want = expect_owned ? "MPIX_Gpu_malloc" : "MPIX_Gpu_register";
    const char *fn = expect_owned ? "MPIX_Gpu_free" : "MPIX_Gpu_deregister";
    char why[MGDEV_REG_WHY_LEN];

    if (!mgdev_reg_in_range(ptr, 1))
        return mgerr_set(MPI_ERR_BUFFER, "mpigpu: %p is not a device address from %s", ptr, want);
    pthread_rwlock_wrlock(&reg_lock);
    ptrdiff_t i = find_le(p);
    if (i < 0 || p >= entries[i].base + (entries[i].size ? entries[i].size : 1)) {
        why_locked(p, why, sizeof(why));
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER, "mpigpu: %s: %p is not a live device address: %s", fn,
                ptr, why);
    }
    if (entries[i].base != p)
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER,
                "mpigpu: %p is inside the device allocation [%p, %p) but not its base", ptr,
                (void *)entries[i].base, (void *)(entries[i].base + entries[i].size));
    if (entries[i].owned != expect_owned)
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER, "mpigpu: %p comes from %s, not from %s", ptr,
                entries[i].owned ? "MPIX_Gpu_malloc" : "MPIX_Gpu_register", want);
    /* Make room first, so that nothing below can fail. */
    if (quar_len == MGDEV_REG_QUARANTINE_RANGES)
        rc = grow((void **)&holes, &holes_cap, nholes + 1, sizeof(*holes));
    else
        rc = quar_grow();
    MG_CHECK(rc, fn_fail);

    mgdev_reg_entry_t e = entries[i];
    if (quar_len == MGDEV_REG_QUARANTINE_RANGES)
        quar_release();
    quar[(quar_head + quar_len) % quar_cap] =
        (mgdev_reg_freed_t){.base = e.base, .size = e.size, .span = e.span, .owned = e.owned};
    quar_len++;
    quar_bytes += e.span;
    memmove(&entries[i], &entries[i + 1], (nentries - (size_t)i - 1) * sizeof(*entries));
    nentries--;
    used_bytes -= e.span;
    if (e.mem)
        clReleaseMemObject(e.mem);
    if (entry)
        *entry = e;

fn_exit:
    pthread_rwlock_unlock(&reg_lock);
    return rc;
fn_fail:
    goto fn_exit;
}

void mgdev_reg_attach(void *ptr, cl_mem mem, char *host)
{
    uintptr_t p = (uintptr_t)ptr;
    pthread_rwlock_wrlock(&reg_lock);
    ptrdiff_t i = find_le(p);
    if (i >= 0 && entries[i].base == p && !entries[i].mem) {
        clRetainMemObject(mem);
        entries[i].mem = mem;
        entries[i].host = host;
    }
    pthread_rwlock_unlock(&reg_lock);
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

void mgdev_reg_usage(size_t *in_use, size_t *hw, size_t *reserved)
{
    pthread_rwlock_rdlock(&reg_lock);
    if (in_use)
        *in_use = used_bytes;
    if (hw)
        *hw = high_water;
    if (reserved)
        *reserved = mgdev_res.size;
    pthread_rwlock_unlock(&reg_lock);
}

void mgdev_reg_quarantine(size_t *ranges, size_t *bytes)
{
    pthread_rwlock_rdlock(&reg_lock);
    if (ranges)
        *ranges = quar_len;
    if (bytes)
        *bytes = quar_bytes;
    pthread_rwlock_unlock(&reg_lock);
}

/* mgdev_buf_is_device beyond its common case: exactly, in 128 bits, which
   hold every product and sum of these int64s (kept out of line, so that the
   common case stays short). */
static __attribute__((noinline)) int buf_classify_wide(const void *buf, MPI_Count count,
                                                       MPI_Count ext, MPI_Count tlb, MPI_Count tex)
{
    __int128 step = (__int128)(count - 1) * ext;
    __int128 lo = (step < 0 ? step : 0) + tlb, hi = (step > 0 ? step : 0) + tlb + tex;
    __int128 first = (__int128)(uintptr_t)buf + lo, end = (__int128)(uintptr_t)buf + hi;
    /* Bytes beyond either end of the address space wrap around in MPI's own
       pointer arithmetic: they could be anywhere. */
    if (first < 0 || end > (__int128)UINTPTR_MAX)
        return MGDEV_BUF_SPAN;
    int touches = mgdev_res.base && first < (__int128)(mgdev_res.base + mgdev_res.size) &&
                  end > (__int128)mgdev_res.base;
    if (lo >= INT64_MIN && hi <= INT64_MAX)
        return touches ? MGDEV_BUF_DEVICE : MGDEV_BUF_HOST;
    /* A span no int64 holds touches the device whenever its origin is in the
       reserved range; a host one goes to MPI only if it cannot reach it. */
    return touches || mgdev_reg_in_range(buf, 1) ? MGDEV_BUF_SPAN : MGDEV_BUF_HOST;
}

int mgdev_buf_classify(const void *buf, MPI_Count count, MPI_Datatype dt, MPI_Count tlb,
                       MPI_Count tex, MPI_Count ext)
{
    MPI_Count size = 0;
    if (buf == MPI_IN_PLACE)
        return MGDEV_BUF_HOST;
    if (tex <= 0) {
        /* MPICH reports a negative true extent for some empty types; for a
           type that moves bytes its arithmetic wrapped (issue 22). */
        if (tex == 0 || (PMPI_Type_size_x(dt, &size) == MPI_SUCCESS && size == 0))
            return mgdev_reg_in_range(buf, 1);
        return MGDEV_BUF_SPAN;
    }
    if (MGDEV_BUF_SMALL(buf, count, tlb, tex, ext)) {
        int64_t span = (count - 1) * ext, lo = (span < 0 ? span : 0) + tlb;
        int64_t first = (int64_t)(uintptr_t)buf + lo;
        if (first >= 0)
            return mgdev_reg_in_range((const void *)(uintptr_t)first,
                                      (size_t)((span > 0 ? span : 0) + tlb + tex - lo));
    }
    return buf_classify_wide(buf, count, ext, tlb, tex);
}

int mgdev_buf_is_device_any(const void *buf, MPI_Count count, MPI_Datatype dt)
{
    MPI_Count tlb, tex, lb, ext;
    if (buf == MPI_IN_PLACE)
        return MGDEV_BUF_HOST;
    /* A predefined type's layout without asking MPI (every host call comes
       here: issue 31). */
    const mgdt_layout_t *p = count > 0 ? mgdt_predefined(dt) : NULL;
    if (p)
        return mgdev_buf_is_device_layout(buf, count, p);
    if (count <= 0 || dt == MPI_DATATYPE_NULL ||
        PMPI_Type_get_true_extent_x(dt, &tlb, &tex) != MPI_SUCCESS ||
        PMPI_Type_get_extent_x(dt, &lb, &ext) != MPI_SUCCESS)
        return mgdev_reg_in_range(buf, 1);
    return mgdev_buf_classify(buf, count, dt, tlb, tex, ext);
}
