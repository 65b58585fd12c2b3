/*
 * Host receives that may meet a chunked message (doc/design.md, "Host
 * receives in place").  Under a protocol that chunks, a receive into host
 * memory whose capacity is at least one first piece could match a chunked
 * message's first piece, which plain MPI would deliver as a short message
 * with a header.  Such a receive runs as an operation too: it starts under
 * the plain protocol like any receive, and the protocol its first piece
 * chooses lands the message here.
 *
 * A dense receive (the packed bytes are one run in the caller's buffer)
 * takes the message in place; otherwise the message lands in host memory of
 * the operation's own (after a header's room) and is copied or unpacked into
 * the caller's buffer at the end.  A header in the caller's buffer can be
 * overwritten before it is read by another receive pending on the same
 * buffer (osu_bw's window does that), so a receive goes in place only while
 * no other active host receive overlaps its buffer.  MPICH 4.0.2 (ch4:ucx)
 * fails some typed receives of bytes (MPI_ERR_TRUNCATE for a padded struct
 * of 13 in 24 bytes), so a receive lands in bytes, never in the caller's
 * datatype.
 */
#include "config.h"

#include <string.h>

#include "mgerr.h"
#include "p2p_impl.h"

int mgp2p_host_watch_type(int count, MPI_Datatype dt, int peer)
{
    MPI_Count size = 0;
    if (count <= 0 || peer == MPI_PROC_NULL || dt == MPI_DATATYPE_NULL)
        return 0;
    const mgdt_layout_t *p = mgdt_predefined(dt);
    if (p)
        size = p->size;
    else if (PMPI_Type_size_x(dt, &size) != MPI_SUCCESS)
        return 0; /* PMPI reports what is wrong */
    if (size <= 0)
        return 0;
    return mgp2p_host_watch_bytes((int64_t)count * size, peer);
}

int mgp2p_op_init_host(mgp2p_op_t *op, const char *fn, void *buf, int count, MPI_Datatype dt,
                       int peer, int tag, MPI_Comm comm)
{
    int64_t lo, hi;
    mgp2p_op_call(op, MGP2P_OP_RECV, fn, count, peer, tag, comm);
    op->host = buf;
    op->buf = buf;
    /* The message lands in bytes (see the top), never in dt: op keeps the
       decoded type (held by mgp2p_op_check), not the handle, which
       MPI_Type_free may end. */
    int rc = mgp2p_op_check(op, count, dt, &lo, &hi);
    if (rc != MPI_SUCCESS)
        return rc;
    op->dense = mgpk_contig(op->type, count);
    return MPI_SUCCESS;
}

int mgp2p_host_overlap(const mgp2p_op_t *op)
{
    int64_t lo = 0, hi = 0;
    (void)mgp2p_type_span(op->type, op->count, &lo, &hi); /* checked at init */
    return mgp2p_active_overlap(op, op->host + lo, op->host + hi);
}

char *mgp2p_host_run(const mgp2p_op_t *op)
{
    return op->host + op->type->shape.offset;
}

char *mgp2p_host_payload(mgp2p_op_t *op)
{
    return op->inplace ? mgp2p_host_run(op) : op->big + MGP2P_HDR;
}

int mgp2p_host_first_buffer(mgp2p_op_t *op, char **buf)
{
    int rc = MPI_SUCCESS;
    mgp2p_grant_t *g = &mgp2p_engine.grant;
    op->inplace = 0;
    if (op->dense && !g->hdr) {
        /* No device sender asked this process for a grant, so no chunked
           message can match: in place, overlap or not, and no header is
           read.  Grants wait until no such receive is pending (grant.c). */
        op->inplace = 1;
        op->bare = 1;
        g->bare++;
        mgp2p_engine.stats.host_bare++;
        *buf = mgp2p_host_run(op);
        goto fn_exit;
    }
    if (op->dense && !mgp2p_host_overlap(op)) {
        /* A plain message needs nothing more; a chunked one's header is read
           and its first piece moved down over it before anything else
           arrives. */
        op->inplace = 1;
        mgp2p_engine.stats.host_inplace++;
        *buf = mgp2p_host_run(op);
        goto fn_exit;
    }
    /* The landing buffer takes a chunked message's whole payload after its
       header. */
    mgp2p_engine.stats.host_landed++;
    rc = mgp2p_op_big(op, (size_t)op->n + (size_t)MGP2P_HDR, "a receive", op->n);
    MG_CHECK(rc, fn_fail);
    *buf = op->big;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int mgp2p_host_superseded(const mgp2p_op_t *op)
{
    int64_t lo = 0, hi = 0;
    if (!op->dense)
        return 0;
    (void)mgp2p_type_span(op->type, op->count, &lo, &hi); /* checked at init */
    return mgp2p_active_covers(op, op->host + lo, op->host + hi);
}

int mgp2p_host_land_end(mgp2p_op_t *op, const char *src, int64_t len)
{
    if (mgp2p_host_superseded(op)) {
        mgp2p_engine.stats.host_superseded++;
        return MPI_SUCCESS;
    }
    return mgp2p_host_unpack(op, src, len);
}

/* A dense layout is one memcpy; else the pack engine's host walk (the bytes
   MPI_Unpack would write). */
int mgp2p_host_unpack(mgp2p_op_t *op, const char *src, int64_t len)
{
    if (op->dense) {
        memcpy(mgp2p_host_run(op), src, (size_t)len);
        return MPI_SUCCESS;
    }
    return mgpk_host_pack(op->pk, op->type, op->host, (void *)(uintptr_t)src, 0, len, 1);
}
