/*
 * Shared by mpigpu-packbench and mpigpu-pingpong: the paper's datatypes
 * (-D), size and method flags, and the OpenCL baselines a user has without
 * mpigpu (rectangle or block-by-block copies, hand-written kernels).
 *
 * Ownership: perf_type_create() returns a committed datatype the caller frees
 * with MPI_Type_free(); perf_pinned_alloc() memory is released with
 * perf_pinned_free(); perf_hand_create() objects with perf_hand_free().
 */
#ifndef PERF_COMMON_H
#define PERF_COMMON_H

#include <mpi.h>
#include <stddef.h>

#include "mpigpu.h"

typedef enum perf_kind {
    PERF_CONT,
    PERF_VECT,
    PERF_SUBARRAY4D,
    PERF_INDEXED,
    PERF_STRUCT,
    PERF_FACE
} perf_kind_t;

/* A -D argument. */
typedef struct perf_spec {
    perf_kind_t kind;
    long stride, blocklen; /* vect, indexed (bytes) */
    int strided;           /* struct:strided: every other struct */
    long cube;             /* face: N of the N^3 cube of doubles, 0: 64..512 */
    char plane[3];         /* face: "xy", "xz" or "yz" */
    char name[64];         /* canonical -D text, e.g. "vect:512:8" */
} perf_spec_t;

/* The layout of one instance, as a user without datatypes sees it: nblk blocks
   of bl bytes every stride bytes (or, for the subarray, a side^4 hypercube in
   64^4 doubles).  w is the word size the hand-written kernels copy. */
typedef struct perf_layout {
    long nblk, bl, stride;
    long side;
    int w;
} perf_layout_t;

/* Parse a -D value; returns 0 or prints the cause and returns -1. */
int perf_spec_parse(const char *s, perf_spec_t *spec);
/* Build the type whose packed size is near want bytes (for faces: the face of
   the cube side want); fills *lay. */
MPI_Datatype perf_type_create(const perf_spec_t *spec, long want, perf_layout_t *lay);
/* Bytes to allocate for an instance of true extent span: rectangle copies
   are bounds-checked as whole rows and slices (NVIDIA's OpenCL does), so the
   buffer must reach the end of the last row or slice of the rectangle. */
size_t perf_alloc_bytes(const perf_layout_t *lay, size_t span);
/* Sizes to run: for faces the cube sides, else powers of two lo..hi. */
int perf_sizes(const perf_spec_t *spec, long lo, long hi, long *out, int max);

long perf_parse_size(const char *s);
/* -m MIN:MAX (or MAX alone, keeping *lo), sizes with K/M/G suffixes. */
void perf_parse_range(const char *s, long *lo, long *hi);
double perf_now(void);
/* --method: sets MPIGPU_PACK before MPI_Init; returns -1 on a bad value. */
int perf_method_set(const char *m);
/* A --method value as MPIX_GPU_PACK_* (the datatype attribute's value), -1
   for a bad one. */
int perf_method_value(const char *m);

/* What the library did, read through MPI_T (its performance variables, after
   MPI's own): pack and unpack calls per method that ran (kernel, copy,
   host) and device operations completed per point-to-point protocol (plain,
   chunked, lane, rest).  perf_used_init starts MPI_T after MPI_Init and
   returns -1 where the variables cannot be read (then every read is zero
   and labels say "?"). */
typedef struct perf_used {
    unsigned long long calls[3]; /* mpigpu_pack_calls_kernel, _copy, _host */
    unsigned long long ops[4];   /* mpigpu_p2p_ops_plain, _chunked, _lane, _rest */
} perf_used_t;
int perf_used_init(void);
void perf_used_read(perf_used_t *u);
/* What ran between two reads: the methods ("kernel", "copy", "host", joined
   by '+'; "-" when no pack ran), then '/' and the protocols ("plain",
   "chunked", "lane", "rest", joined by '+'), the latter only when with_ops.
   "-" alone when nothing of the library ran. */
void perf_used_label(const perf_used_t *before, const perf_used_t *after, int with_ops, char *buf,
                     size_t len);
/* The value the library read for one of its settings (an MPI_T control
   variable, e.g. "MPIGPU_PACK"), or "?" where it cannot be read. */
void perf_setting(const char *name, char *buf, size_t len);
void perf_used_finalize(void);

/* Pinned host memory of the library's context (CL_MEM_ALLOC_HOST_PTR, mapped). */
typedef struct perf_pinned {
    cl_mem mem;
    void *ptr;
} perf_pinned_t;
int perf_pinned_alloc(size_t n, perf_pinned_t *p);
void perf_pinned_free(perf_pinned_t *p);

/* The copy baseline: clEnqueue{Read,Write}BufferRect where the layout is a
   rectangle (cont, vect, face, subarray4d), else one clEnqueue{Read,Write}Buffer
   per block (indexed, struct).  dev is a device address from MPIX_Gpu_malloc at
   the type's true lower bound; host holds the packed bytes.  Blocking.  Returns
   the number of OpenCL commands, or -1 on an OpenCL error. */
long perf_copy_read(const perf_spec_t *spec, const perf_layout_t *lay, const void *dev, void *host);
long perf_copy_write(const perf_spec_t *spec, const perf_layout_t *lay, void *dev,
                     const void *host);

/* Hand-written kernels for one layout (tools/hand.cl, embedded). */
typedef struct perf_hand perf_hand_t;
perf_hand_t *perf_hand_create(void);
void perf_hand_free(perf_hand_t *h);
/* Pack one instance from dev (type origin) into the device buffer dst; blocking.
   Returns 0 or -1. */
int perf_hand_pack(perf_hand_t *h, const perf_spec_t *spec, const perf_layout_t *lay,
                   const void *dev, cl_mem dst);
/* An empty kernel on the same queue (the floor of a small pack). */
int perf_hand_empty(perf_hand_t *h);
/* Enqueue (and flush) the busy kernel on q: every compute unit runs a chain
   of `iters` multiply-adds per work-item; *ev (if ev) is its event, which
   the caller releases.  Returns 0 or -1. */
int perf_hand_busy(perf_hand_t *h, cl_command_queue q, unsigned iters, cl_event *ev);

#endif /* PERF_COMMON_H */
