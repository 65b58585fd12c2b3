/*
 * mgparam: every environment variable that libmpigpu, the virtual ICD
 * (libmpigpu-vcl) and mpigpu-proxy read, declared once in one table
 * (mgparam_table.c) and read by one parser (mgparam.c); libfabric's
 * fi_param_define and UCX's ucs_config_field_t are the models.
 *
 * The table is constant and the parser keeps no state, so any thread may
 * read a setting at any time; each layer reads its own once, where it starts
 * (the device layer at MPI_Init, the ICD at its first call, the proxy in
 * main).  Nothing here depends on MPI or OpenCL: the ICD and the proxy use
 * it too.  Errors are 0 / -1 with a message in the caller's buffer, since
 * each reader reports in its own terms (an MPI error class at MPI_Init, a
 * line on stderr in the ICD, an exit status in the proxy).
 *
 * Ownership: strings in an mgparam_value_t point into the environment or
 * into the table; they stay valid while the environment is not changed.
 */
#ifndef MGPARAM_H
#define MGPARAM_H

#include <limits.h>
#include <stddef.h>

/* Every setting, in the order libmpigpu reads its own (the first malformed
   one is the one reported). */
typedef enum mgparam_id {
    /* libmpigpu, at MPI_Init (the device layer) */
    MGPARAM_VERBOSE,
    MGPARAM_FORCE_PIPELINE,
    MGPARAM_FORCE_SHARED,
    MGPARAM_DEVICE,
    MGPARAM_PACK,
    MGPARAM_HOST_DMA,
    MGPARAM_CALIBRATE,
    MGPARAM_SPAN,
    MGPARAM_GRID,
    MGPARAM_LOCAL,
    MGPARAM_KERNEL_SWITCH,
    MGPARAM_INLINE_MAX,
    MGPARAM_CHUNK,
    MGPARAM_STAGING_MAX,
    MGPARAM_STAGING_KEEP,
    MGPARAM_P2P_PROTOCOL,
    MGPARAM_P2P_FIRST,
    MGPARAM_P2P_AUTO_MIN,
    MGPARAM_P2P_HOST_RECV,
    MGPARAM_P2P_DEPTH,
    MGPARAM_P2P_SHM,
    MGPARAM_P2P_SHM_PIECE,
    MGPARAM_P2P_SHM_SLOTS,
    MGPARAM_P2P_TEST_GRANTED,
    MGPARAM_CACHE_DIR,
    MGPARAM_ENQUEUE_PROGRESS,
    MGPARAM_ENQUEUE_QUEUE_MAX,
    MGPARAM_SHARED_BLOCK,
    MGPARAM_SHARED_DIRTY,
    MGPARAM_SHARED_ZERO_COPY,
    MGPARAM_COLL_REDUCE,
    MGPARAM_COLL_REDUCE_MIN,
    MGPARAM_COLL_REDUCE_CHUNK,
    MGPARAM_COLL_PIPELINE,
    MGPARAM_COLL_PIPELINE_MIN,
    MGPARAM_COLL_PIPELINE_CHUNK,
    MGPARAM_COLL_PACKED,
    /* the virtual ICD, at its first call */
    MGPARAM_VCL_SERVERS,
    MGPARAM_VCL_KEY_FILE,
    MGPARAM_VCL_STATS,
    MGPARAM_VCL_SHM,
    MGPARAM_VCL_CMA,
    MGPARAM_VCL_PEER_EVENTS,
    MGPARAM_VCL_TIMEOUT,
    MGPARAM_VCL_STREAMS,
    MGPARAM_VCL_SPIN,
    MGPARAM_VCL_ENCRYPT, /* the proxy reads it too, at start */
    MGPARAM_VCL_CIPHER,
    /* mpigpu-proxy, at start */
    MGPARAM_PROXY_CMA_COPY,
    MGPARAM_PROXY_CMA_THREADS,
    MGPARAM_PROXY_SPIN,
    MGPARAM_PROXY_SESSION_MEM,
    MGPARAM_PROXY_TOTAL_MEM,
    MGPARAM_PROXY_HANDSHAKE_TIMEOUT,
    MGPARAM_PROXY_PENDING_MAX,
    MGPARAM_PROXY_PENDING_PER_PEER,
    MGPARAM_PROXY_LOG_RATE,
    MGPARAM_PROXY_MAX_CONTEXTS,
    MGPARAM_PROXY_MAX_QUEUES,
    MGPARAM_PROXY_MAX_MEM_OBJECTS,
    MGPARAM_PROXY_MAX_PROGRAMS,
    MGPARAM_PROXY_MAX_KERNELS,
    MGPARAM_PROXY_MAX_EVENTS,
    MGPARAM_PROXY_MAX_SAMPLERS,
    MGPARAM_PROXY_TEST_DROP_CALLBACKS,
    MGPARAM_COUNT
} mgparam_id_t;

typedef enum mgparam_type {
    MGPARAM_T_BOOL,   /* 1 or on, 0 or off; read as 1 or 0 */
    MGPARAM_T_INT,    /* a whole number from min to max (MGPARAM_F_OFF: or off, read as -1) */
    MGPARAM_T_SIZE,   /* bytes from min to max, with an optional K, M or G suffix */
    MGPARAM_T_ENUM,   /* one of values[]; read as its index */
    MGPARAM_T_STRING, /* any text */
    MGPARAM_T_DEVICE  /* SUBSTRING[:N]: a non-empty platform name substring, N >= 0 */
} mgparam_type_t;

typedef enum mgparam_reader {
    MGPARAM_LIB,  /* libmpigpu */
    MGPARAM_ICD,  /* libmpigpu-vcl */
    MGPARAM_PROXY /* mpigpu-proxy */
} mgparam_reader_t;

/* flags */
#define MGPARAM_F_TEST 0x1  /* a switch for tests: out of the user table and the guide */
#define MGPARAM_F_OFF 0x2   /* MGPARAM_T_INT: "off" is a value too */
#define MGPARAM_F_EMPTY 0x4 /* set but empty is a value of its own, not "unset" */

/* max of a MGPARAM_T_SIZE without an upper bound */
#define MGPARAM_NO_MAX LLONG_MAX

typedef struct mgparam {
    const char *name;
    mgparam_type_t type;
    mgparam_reader_t reader;
    unsigned flags;
    /* The default, written as a value the parser accepts; NULL where unset
       has a meaning no value spells (a choice per device, a path from HOME),
       told by def_doc. */
    const char *def;
    const char *def_doc;       /* the default as the user guide shows it, when def is NULL */
    long long min, max;        /* MGPARAM_T_INT and MGPARAM_T_SIZE */
    const char *unit;          /* MGPARAM_T_INT: what the number counts, for messages */
    const char *const *values; /* MGPARAM_T_ENUM: the accepted words, NULL-terminated */
    const char *help;          /* one line, for mpigpu-info --params */
} mgparam_t;

typedef struct mgparam_value {
    int set;          /* 1: from the environment; 0: the default */
    long long num;    /* BOOL, INT, SIZE, ENUM (the index), DEVICE (N); 0 when unset
                         without a default */
    const char *text; /* the text read (the default's when unset), NULL when there is
                         none; DEVICE: the substring starts here and is len long */
    size_t len;       /* strlen of text, or DEVICE's substring length */
} mgparam_value_t;

extern const mgparam_t mgparam_table[MGPARAM_COUNT];

/* Parse text as a value of p.  0, or -1 with a message naming the variable
   and the value in err (errlen may be 0). */
int mgparam_parse(const mgparam_t *p, const char *text, mgparam_value_t *v, char *err,
                  size_t errlen);
/* The setting from the environment, else its default.  Unset means absent,
   or empty unless MGPARAM_F_EMPTY.  0, or -1 with a message as above. */
int mgparam_read(mgparam_id_t id, mgparam_value_t *v, char *err, size_t errlen);
/* The parsed default of a setting that has one (its num), else 0. */
long long mgparam_default(mgparam_id_t id);
/* The setting, or on a malformed value its default after a warning
   "<message>; using the default" of the logger's subsystem who (MGLOG_VCL,
   MGLOG_PROXY).  For readers that must not stop on a bad setting (the ICD
   inside someone's program). */
mgparam_value_t mgparam_read_or_default(mgparam_id_t id, int who);
/* The setting's type as the user sees it ("bool", "size", "on|off|auto"). */
void mgparam_type_text(const mgparam_t *p, char *buf, size_t len);
/* The setting's default as the user guide shows it. */
const char *mgparam_default_text(const mgparam_t *p);

#endif /* MGPARAM_H */
