/* libmpigpu-vcl.so: buffers and the commands that move their data.  Writes
 * stream on the bulk lane from the caller's thread; reads come back on the
 * bulk lane straight into the destination.  On the one-copy lane (a proxy
 * on this host that may attach to this process) a plain write or read
 * sends only the host range and the proxy copies it itself, in queue
 * order: as OpenCL says, the host memory stays the caller's to keep valid
 * until the command's event completes.  A map is a host copy: read on
 * map, written back on unmap of a write mapping. */
#include <stdlib.h>
#include <string.h>

#include "vcl.h"

#define HOST_FLAGS (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)
#define HOST_ACCESS (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)

/* Host access flags are the client's business: the proxy's buffer takes
 * the client's writes and reads whatever they say. */
static int access_bad(cl_mem_flags f)
{
    cl_mem_flags a = f & HOST_ACCESS,
                 rw = f & (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY);
    return (a & (a - 1)) || (rw & (rw - 1));
}

/* Live buffers, to tell a buffer from a value when a kernel argument's kind
 * is unknown without dereferencing an arbitrary value. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static cl_mem *live;
static size_t nlive, caplive;

static void live_add(cl_mem m)
{
    pthread_mutex_lock(&live_lock);
    if (nlive == caplive) {
        size_t cap = caplive ? caplive * 2 : 64;
        cl_mem *n = realloc(live, cap * sizeof *n);
        if (n) {
            live = n;
            caplive = cap;
        }
    }
    if (nlive < caplive)
        live[nlive++] = m;
    pthread_mutex_unlock(&live_lock);
}

static void live_del(cl_mem m)
{
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < nlive; i++)
        if (live[i] == m) {
            live[i] = live[--nlive];
            break;
        }
    pthread_mutex_unlock(&live_lock);
}

int mgvcl_mem_live(const void *p)
{
    int found = 0;
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < nlive && !found; i++)
        found = live[i] == p;
    pthread_mutex_unlock(&live_lock);
    return found;
}

static cl_mem mem_new(cl_context ctx, cl_mem_flags flags, size_t size)
{
    cl_mem m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->dispatch = &mgvcl_dispatch;
    atomic_init(&m->refs, 1);
    m->ctx = ctx;
    m->flags = flags;
    m->size = size;
    m->id = mgvcl_id(ctx->conn);
    m->made = 1; /* made on ctx->conn, ctx->conns[0] */
    return m;
}

cl_mem mgvcl_mem_new(cl_context ctx, cl_mem_flags flags, size_t size)
{
    return mem_new(ctx, flags, size);
}

void mgvcl_mem_made(cl_mem m)
{
    live_add(m);
}

cl_mem CL_API_CALL mgvcl_clCreateBuffer(cl_context ctx, cl_mem_flags flags, size_t size, void *host,
                                        cl_int *err)
{
    cl_mem m = NULL;
    cl_int rc = CL_SUCCESS;
    mgw_buf_t b;
    if (!flags)
        flags = CL_MEM_READ_WRITE;
    if (!mgvcl_is(ctx))
        rc = CL_INVALID_CONTEXT;
    else if (!size)
        rc = CL_INVALID_BUFFER_SIZE;
    else if (access_bad(flags) ||
             ((flags & CL_MEM_USE_HOST_PTR) &&
              (flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR))) ||
             (flags & ~(cl_mem_flags)(HOST_FLAGS | HOST_ACCESS | CL_MEM_ALLOC_HOST_PTR |
                                      CL_MEM_READ_WRITE | CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY)))
        rc = CL_INVALID_VALUE;
    else if (((flags & HOST_FLAGS) != 0) != (host != NULL))
        rc = CL_INVALID_HOST_PTR;
    else if (!(m = mem_new(ctx, flags, size)))
        rc = CL_OUT_OF_HOST_MEMORY;
    if (rc)
        goto fn_exit;
    if (flags & CL_MEM_USE_HOST_PTR)
        m->host_ptr = host;
    m->fresh = !host;
    mgw_buffer_create_encode(
        &b, 0,
        &(mgw_buffer_create_t){.id = m->id,
                               .ctx = ctx->id,
                               .flags = flags & ~(cl_mem_flags)(HOST_FLAGS | HOST_ACCESS),
                               .size = size});
    rc = mgvcl_call(ctx->conn, &b, NULL, NULL);
    mgw_buf_free(&b);
    for (size_t off = 0; rc == CL_SUCCESS && host && off < size; off += 16u << 20) {
        size_t n = size - off < (16u << 20) ? size - off : 16u << 20;
        mgw_buffer_init_encode(
            &b, 0,
            &(mgw_buffer_init_t){.id = m->id, .off = off, .data = {(const char *)host + off, n}});
        rc = mgvcl_call(ctx->conn, &b, NULL, NULL);
        mgw_buf_free(&b);
    }
    if (rc) {
        free(m);
        m = NULL;
    } else {
        mgvcl_clRetainContext(ctx);
        live_add(m);
    }
fn_exit:
    if (err)
        *err = rc;
    return m;
}

/* A sub-buffer's flags: its own access flags, or else its parent's; the
 * host-pointer flags of its parent. */
static cl_mem_flags sub_flags(cl_mem_flags parent, cl_mem_flags own)
{
    const cl_mem_flags rw = CL_MEM_READ_WRITE | CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY;
    return (own & rw ? own & rw : parent & rw) | (parent & (HOST_FLAGS | CL_MEM_ALLOC_HOST_PTR)) |
           (own & HOST_ACCESS ? own & HOST_ACCESS : parent & HOST_ACCESS);
}

cl_mem CL_API_CALL mgvcl_clCreateSubBuffer(cl_mem parent, cl_mem_flags flags,
                                           cl_buffer_create_type type, const void *info,
                                           cl_int *err)
{
    const cl_buffer_region *r = info;
    cl_mem m = NULL;
    cl_int rc = CL_SUCCESS;
    mgw_buf_t b;
    if (!mgvcl_is(parent) || parent->parent || mgvcl_is_image(parent))
        rc = CL_INVALID_MEM_OBJECT;
    else if (type != CL_BUFFER_CREATE_TYPE_REGION || !r || flags & HOST_FLAGS ||
             flags & CL_MEM_ALLOC_HOST_PTR)
        rc = CL_INVALID_VALUE;
    else if (!r->size)
        rc = CL_INVALID_BUFFER_SIZE;
    else if (access_bad(flags) ||
             ((flags & HOST_ACCESS) && (parent->flags & HOST_ACCESS) &&
              (flags & HOST_ACCESS) != (parent->flags & HOST_ACCESS) &&
              !(flags & CL_MEM_HOST_NO_ACCESS)) ||
             ((parent->flags & CL_MEM_WRITE_ONLY) &&
              (flags & (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY))) ||
             ((parent->flags & CL_MEM_READ_ONLY) &&
              (flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY))))
        rc = CL_INVALID_VALUE;
    else if (r->origin > parent->size || r->size > parent->size - r->origin)
        rc = CL_INVALID_VALUE;
    else if (!(m = mem_new(parent->ctx, sub_flags(parent->flags, flags), r->size)))
        rc = CL_OUT_OF_HOST_MEMORY;
    if (rc)
        goto fn_exit;
    m->parent = parent;
    m->origin = r->origin;
    if (parent->host_ptr)
        m->host_ptr = (char *)parent->host_ptr + r->origin;
    mgw_subbuffer_create_encode(
        &b, 0,
        &(mgw_subbuffer_create_t){.id = m->id,
                                  .parent = parent->id,
                                  .flags = flags & ~(cl_mem_flags)(HOST_FLAGS | HOST_ACCESS),
                                  .origin = r->origin,
                                  .size = r->size});
    rc = mgvcl_call(parent->ctx->conn, &b, NULL, NULL);
    mgw_buf_free(&b);
    if (rc) {
        free(m);
        m = NULL;
    } else {
        mgvcl_clRetainMemObject(parent);
        mgvcl_clRetainContext(parent->ctx);
        live_add(m);
    }
fn_exit:
    if (err)
        *err = rc;
    return m;
}

cl_int CL_API_CALL mgvcl_clRetainMemObject(cl_mem m)
{
    if (!mgvcl_is(m))
        return CL_INVALID_MEM_OBJECT;
    atomic_fetch_add(&m->refs, 1);
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clReleaseMemObject(cl_mem m)
{
    if (!mgvcl_is(m))
        return CL_INVALID_MEM_OBJECT;
    if (atomic_fetch_sub(&m->refs, 1) == 1) {
        live_del(m);
        mgvcl_mem_unmake(m); /* on each proxy that has it */
        while (m->cbs) {
            mem_cb_t *cb = m->cbs;
            m->cbs = cb->next;
            cb->fn(m, cb->data);
            free(cb);
        }
        if (m->parent)
            mgvcl_clReleaseMemObject(m->parent);
        mgvcl_clReleaseContext(m->ctx);
        free(m);
    }
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clSetMemObjectDestructorCallback(cl_mem m,
                                                          void(CL_CALLBACK *fn)(cl_mem, void *),
                                                          void *data)
{
    mem_cb_t *cb;
    if (!mgvcl_is(m))
        return CL_INVALID_MEM_OBJECT;
    if (!fn)
        return CL_INVALID_VALUE;
    if (!(cb = malloc(sizeof *cb)))
        return CL_OUT_OF_HOST_MEMORY;
    cb->fn = fn;
    cb->data = data;
    cb->next = m->cbs; /* called in reverse order of registration */
    m->cbs = cb;
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clGetMemObjectInfo(cl_mem m, cl_mem_info p, size_t size, void *value,
                                            size_t *size_ret)
{
    cl_uint u;
    cl_mem_object_type t = CL_MEM_OBJECT_BUFFER;
    if (!mgvcl_is(m))
        return CL_INVALID_MEM_OBJECT;
    if (m->type)
        t = m->type;
    switch (p) {
    case CL_MEM_TYPE:
        return mgvcl_ret(&t, sizeof t, size, value, size_ret);
    case CL_MEM_FLAGS:
        return mgvcl_ret(&m->flags, sizeof m->flags, size, value, size_ret);
    case CL_MEM_SIZE:
        return mgvcl_ret(&m->size, sizeof m->size, size, value, size_ret);
    case CL_MEM_HOST_PTR:
        return mgvcl_ret(&m->host_ptr, sizeof m->host_ptr, size, value, size_ret);
    case CL_MEM_MAP_COUNT:
        u = (cl_uint)atomic_load(&m->maps);
        return mgvcl_ret(&u, sizeof u, size, value, size_ret);
    case CL_MEM_REFERENCE_COUNT:
        u = (cl_uint)atomic_load(&m->refs);
        return mgvcl_ret(&u, sizeof u, size, value, size_ret);
    case CL_MEM_CONTEXT:
        return mgvcl_ret(&m->ctx, sizeof m->ctx, size, value, size_ret);
    case CL_MEM_ASSOCIATED_MEMOBJECT:
        return mgvcl_ret(&m->parent, sizeof m->parent, size, value, size_ret);
    case CL_MEM_OFFSET:
        return mgvcl_ret(&m->origin, sizeof m->origin, size, value, size_ret);
    }
    return CL_INVALID_VALUE;
}

/* access: 1 the host reads, 2 the host writes (0: no check) */
static cl_int mem_check(cl_command_queue q, cl_mem m, size_t off, size_t n, int access)
{
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    if (!mgvcl_is(m) || mgvcl_is_image(m))
        return CL_INVALID_MEM_OBJECT;
    if (m->ctx != q->ctx)
        return CL_INVALID_CONTEXT;
    if (((access & 1) && (m->flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS))) ||
        ((access & 2) && (m->flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS))))
        return CL_INVALID_OPERATION;
    if (off > m->size || n > m->size - off)
        return CL_INVALID_VALUE;
    return CL_SUCCESS;
}

/* The head of a transfer of n bytes of m, e made. */
static mgw_xfer_head_t xfer_head(cl_mem m, size_t n, const mgvcl_enq_t *e)
{
    return (mgw_xfer_head_t){.xfer = e->ev->id, .size = n, .head = e->head, .mem = m->id};
}

/* A rect's buffer side, from rect_args' packing. */
static mgw_rect_t rect_of(const size_t *rect)
{
    mgw_rect_t r = {.row_pitch = rect[6], .slice_pitch = rect[7]};
    memcpy(r.origin, rect, sizeof r.origin);
    memcpy(r.region, rect + 3, sizeof r.region);
    return r;
}

/* A read into dst (or a packed temp unpacked into a host rect). */
static cl_int read_common(cl_command_queue q, cl_mem m, cl_bool blocking, size_t off, size_t n,
                          void *dst, cl_uint nw, const cl_event *w, cl_event *out, int op,
                          const size_t *rect, cl_command_type type, int access)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    unsigned char *tmp = NULL;
    cl_int rc =
        mem_check(q, m, op == MGW_OP_ENQ_READ ? off : 0, op == MGW_OP_ENQ_READ ? n : 0, access);
    if (!rc && (!dst || (!n && op == MGW_OP_ENQ_READ)))
        rc = CL_INVALID_VALUE;
    if (rc)
        return rc;
    if (rect && !(tmp = malloc(n ? n : 1)))
        return CL_OUT_OF_HOST_MEMORY;
    int cma = op == MGW_OP_ENQ_READ && q->conn->cma;
    if ((rc = mgvcl_enq_begin(q, nw, w, type, &e))) {
        free(tmp);
        return rc;
    }
    if ((rc = mgvcl_mem_use(&e, q, m))) {
        mgvcl_enq_abort(&e, rc);
        free(tmp);
        return rc;
    }
    mgw_xfer_head_t x = xfer_head(m, n, &e);
    if (rect) {
        mgw_enq_read_rect_encode(&b, 0, &(mgw_enq_read_rect_t){.x = x, .rect = rect_of(rect)});
    } else if (cma) {
        mgw_enq_read_cma_encode(
            &b, 0, &(mgw_enq_read_cma_t){.x = x, .off = off, .addr = (uint64_t)(uintptr_t)dst});
        mgvcl_cma_in += n;
    } else {
        mgw_enq_read_encode(&b, 0, &(mgw_enq_read_t){.x = x, .off = off});
    }
    cl_event ev = e.ev;
    ev->data = 1;
    ev->dsize = n;
    ev->dst = dst;
    if (rect) {
        ev->host = dst;
        memcpy(ev->reg, rect + 3, sizeof ev->reg);
        ev->hrp = rect[8];
        ev->hsp = rect[9];
        ev->dst = ev->free_after = tmp;
    }
    rc = mgvcl_enq_end(q, &e, &b, out, blocking, 0, NULL, 0);
    mgw_buf_free(&b);
    return rc;
}

cl_int CL_API_CALL mgvcl_clEnqueueReadBuffer(cl_command_queue q, cl_mem m, cl_bool blocking,
                                             size_t off, size_t n, void *dst, cl_uint nw,
                                             const cl_event *w, cl_event *out)
{
    return read_common(q, m, blocking, off, n, dst, nw, w, out, MGW_OP_ENQ_READ, NULL,
                       CL_COMMAND_READ_BUFFER, 1);
}

cl_int mgvcl_read_any(cl_command_queue q, cl_mem m, cl_bool blocking, size_t off, size_t n,
                      void *dst, cl_uint nw, const cl_event *w, cl_event *out)
{
    return read_common(q, m, blocking, off, n, dst, nw, w, out, MGW_OP_ENQ_READ, NULL,
                       CL_COMMAND_MAP_BUFFER, 0);
}

/* now: the data must have left src when the call returns (no one-copy
 * lane). */
static cl_int write_common(cl_command_queue q, cl_mem m, cl_bool blocking, size_t off, size_t n,
                           const void *src, cl_uint nw, const cl_event *w, cl_event *out, int op,
                           const size_t *rect, cl_command_type type, int now)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    cl_int rc =
        mem_check(q, m, op == MGW_OP_ENQ_WRITE ? off : 0, op == MGW_OP_ENQ_WRITE ? n : 0, 2);
    if (!rc && (!src || (!n && op == MGW_OP_ENQ_WRITE)))
        rc = CL_INVALID_VALUE;
    if (rc)
        return rc;
    int cma = op == MGW_OP_ENQ_WRITE && !now && q->conn->cma;
    if ((rc = mgvcl_enq_begin(q, nw, w, type, &e)))
        return rc;
    if ((rc = mgvcl_mem_use(&e, q, m))) {
        mgvcl_enq_abort(&e, rc);
        return rc;
    }
    mgw_xfer_head_t x = xfer_head(m, n, &e);
    uint64_t xfer = x.xfer;
    if (rect) {
        mgw_enq_write_rect_encode(&b, 0, &(mgw_enq_write_rect_t){.x = x, .rect = rect_of(rect)});
    } else if (cma) {
        mgw_enq_write_cma_encode(
            &b, 0, &(mgw_enq_write_cma_t){.x = x, .off = off, .addr = (uint64_t)(uintptr_t)src});
        mgvcl_cma_out += n;
    } else {
        mgw_enq_write_encode(&b, 0, &(mgw_enq_write_t){.x = x, .off = off});
    }
    rc = cma ? mgvcl_enq_end(q, &e, &b, out, blocking, 0, NULL, 0)
             : mgvcl_enq_end(q, &e, &b, out, blocking, xfer, src, n);
    mgw_buf_free(&b);
    return rc;
}

cl_int CL_API_CALL mgvcl_clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, cl_bool blocking,
                                              size_t off, size_t n, const void *src, cl_uint nw,
                                              const cl_event *w, cl_event *out)
{
    return write_common(q, m, blocking, off, n, src, nw, w, out, MGW_OP_ENQ_WRITE, NULL,
                        CL_COMMAND_WRITE_BUFFER, 0);
}

cl_int mgvcl_write_now(cl_command_queue q, cl_mem m, size_t off, size_t n, const void *src,
                       cl_uint nw, const cl_event *w, cl_event *out)
{
    return write_common(q, m, CL_FALSE, off, n, src, nw, w, out, MGW_OP_ENQ_WRITE, NULL,
                        CL_COMMAND_WRITE_BUFFER, 1);
}

/* Packed rect parameters: buffer origin[3], region[3], buffer pitches, then
 * (client only) host pitches. */
static int rect_args(const size_t *bo, const size_t *ho, const size_t *reg, size_t *brp,
                     size_t *bsp, size_t *hrp, size_t *hsp, size_t rect[10], size_t *n,
                     size_t *hoff)
{
    if (!bo || !ho || !reg || !reg[0] || !reg[1] || !reg[2])
        return -1;
    if (!*brp)
        *brp = reg[0];
    if (!*bsp)
        *bsp = reg[1] * *brp;
    if (!*hrp)
        *hrp = reg[0];
    if (!*hsp)
        *hsp = reg[1] * *hrp;
    if (*brp < reg[0] || *hrp < reg[0] || *bsp < reg[1] * *brp || *hsp < reg[1] * *hrp)
        return -1;
    memcpy(rect, bo, 3 * sizeof *bo);
    memcpy(rect + 3, reg, 3 * sizeof *reg);
    rect[6] = *brp;
    rect[7] = *bsp;
    rect[8] = *hrp;
    rect[9] = *hsp;
    *n = reg[0] * reg[1] * reg[2];
    *hoff = ho[2] * *hsp + ho[1] * *hrp + ho[0];
    return 0;
}

static cl_int rect_bounds(cl_mem m, const size_t *o, const size_t *reg, size_t rp, size_t sp)
{
    if (!mgvcl_is(m))
        return CL_INVALID_MEM_OBJECT;
    size_t last = (o[2] + reg[2] - 1) * sp + (o[1] + reg[1] - 1) * rp + o[0] + reg[0];
    return last > m->size ? CL_INVALID_VALUE : CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clEnqueueReadBufferRect(cl_command_queue q, cl_mem m, cl_bool blocking,
                                                 const size_t *bo, const size_t *ho,
                                                 const size_t *reg, size_t brp, size_t bsp,
                                                 size_t hrp, size_t hsp, void *dst, cl_uint nw,
                                                 const cl_event *w, cl_event *out)
{
    size_t rect[10], n, hoff;
    if (rect_args(bo, ho, reg, &brp, &bsp, &hrp, &hsp, rect, &n, &hoff))
        return CL_INVALID_VALUE;
    cl_int rc = rect_bounds(m, bo, reg, brp, bsp);
    if (rc || !dst)
        return rc ? rc : CL_INVALID_VALUE;
    return read_common(q, m, blocking, 0, n, (char *)dst + hoff, nw, w, out, MGW_OP_ENQ_READ_RECT,
                       rect, CL_COMMAND_READ_BUFFER_RECT, 1);
}

cl_int CL_API_CALL mgvcl_clEnqueueWriteBufferRect(cl_command_queue q, cl_mem m, cl_bool blocking,
                                                  const size_t *bo, const size_t *ho,
                                                  const size_t *reg, size_t brp, size_t bsp,
                                                  size_t hrp, size_t hsp, const void *src,
                                                  cl_uint nw, const cl_event *w, cl_event *out)
{
    size_t rect[10], n, hoff;
    if (rect_args(bo, ho, reg, &brp, &bsp, &hrp, &hsp, rect, &n, &hoff))
        return CL_INVALID_VALUE;
    cl_int rc = rect_bounds(m, bo, reg, brp, bsp);
    if (rc || !src)
        return rc ? rc : CL_INVALID_VALUE;
    unsigned char *packed = malloc(n);
    if (!packed)
        return CL_OUT_OF_HOST_MEMORY;
    const unsigned char *h = (const unsigned char *)src + hoff;
    for (size_t z = 0; z < reg[2]; z++)
        for (size_t y = 0; y < reg[1]; y++)
            memcpy(packed + (z * reg[1] + y) * reg[0], h + z * hsp + y * hrp, reg[0]);
    rc = write_common(q, m, blocking, 0, n, packed, nw, w, out, MGW_OP_ENQ_WRITE_RECT, rect,
                      CL_COMMAND_WRITE_BUFFER_RECT, 1);
    free(packed); /* the data is on the wire once the call returns */
    return rc;
}
