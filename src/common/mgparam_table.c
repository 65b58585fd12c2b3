/*
 * Every setting of libmpigpu, the virtual ICD and mpigpu-proxy (mgparam.h).
 * The user guide's settings tables list the same names and defaults, and
 * make check compares them (test/tools/params.sh); the measured reason for
 * each default is in the guide, not here.
 */
#include "config.h"

#include "mgparam.h"

#define KIB (1LL << 10)
#define GIB (1LL << 30)

static const char *const pack_values[] = {"auto", "kernel", "copy", "host", NULL};
static const char *const dma_values[] = {"auto", "on", "off", NULL};
static const char *const calibrate_values[] = {"1", "0", "force", NULL};
static const char *const protocol_values[] = {"plain", "chunked", "auto", NULL};
static const char *const host_recv_values[] = {"pieces", "message", NULL};
static const char *const enqueue_values[] = {"auto", "thread", "off", NULL};
static const char *const coll_reduce_values[] = {"auto", "device", "stage", NULL};
static const char *const coll_pipeline_values[] = {"off", "on", "all", NULL};
static const char *const coll_packed_values[] = {"auto", "fused", "blocks", "model", NULL};
static const char *const cma_copy_values[] = {"auto", "map", "pinned", "staging", NULL};
static const char *const cipher_values[] = {"auto", "aes256gcm", "chacha20poly1305", NULL};

const mgparam_t mgparam_table[MGPARAM_COUNT] = {
    [MGPARAM_VERBOSE] = {.name = "MPIGPU_VERBOSE",
                         .type = MGPARAM_T_INT,
                         .def = "0",
                         .min = 0,
                         .max = 9,
                         .unit = "a level",
                         .help = "1: one line on stderr per chosen device and per method decision"},
    [MGPARAM_FORCE_PIPELINE] = {.name = "MPIGPU_FORCE_PIPELINE",
                                .type = MGPARAM_T_BOOL,
                                .flags = MGPARAM_F_TEST,
                                .def = "0",
                                .help = "the pipelined device-staging path even where the device "
                                        "shares host memory"},
    [MGPARAM_FORCE_SHARED] = {.name = "MPIGPU_FORCE_SHARED",
                              .type = MGPARAM_T_BOOL,
                              .flags = MGPARAM_F_TEST,
                              .def = "0",
                              .help =
                                  "treat the default device as a GPU that other processes of "
                                  "the node use (MPIGPU_KERNEL_SWITCH, MPIGPU_INLINE_MAX), even "
                                  "a CPU device or a rank alone"},
    [MGPARAM_DEVICE] = {.name = "MPIGPU_DEVICE",
                        .type = MGPARAM_T_DEVICE,
                        .def_doc = "the GPU nearest the rank's cores (hwloc), spread by local "
                                   "rank; else the first device",
                        .help = "device N (from 0) of the first platform whose name contains "
                                "SUBSTRING"},
    [MGPARAM_PACK] = {.name = "MPIGPU_PACK",
                      .type = MGPARAM_T_ENUM,
                      .def = "auto",
                      .values = pack_values,
                      .help = "pack method: auto (the fastest per call, from the calibration), "
                              "or force kernel, copy or host"},
    [MGPARAM_HOST_DMA] = {.name = "MPIGPU_HOST_DMA",
                          .type = MGPARAM_T_ENUM,
                          .def = "auto",
                          .values = dma_values,
                          .help = "packs into host memory move straight by DMA: for pinned "
                                  "ranges (auto), always (on), never (off)"},
    [MGPARAM_CALIBRATE] = {.name = "MPIGPU_CALIBRATE",
                           .type = MGPARAM_T_ENUM,
                           .def = "1",
                           .values = calibrate_values,
                           .help = "how auto decides: the cached or measured method table (1), "
                                   "measure again (force), the kernel method (0)"},
    [MGPARAM_SPAN] = {.name = "MPIGPU_SPAN",
                      .type = MGPARAM_T_SIZE,
                      .def_doc = "chosen per device",
                      .min = 1,
                      .max = MGPARAM_NO_MAX,
                      .help = "packed bytes each kernel work-item copies"},
    [MGPARAM_GRID] = {.name = "MPIGPU_GRID",
                      .type = MGPARAM_T_INT,
                      .flags = MGPARAM_F_OFF,
                      .def_doc = "1 for words of 4 bytes and more, 4 below, on GPUs",
                      .min = 1,
                      .max = 4,
                      .unit = "a number of words per work-item",
                      .help = "words each work-item of the grid kernels moves; off: the span "
                              "kernels"},
    [MGPARAM_LOCAL] = {.name = "MPIGPU_LOCAL",
                       .type = MGPARAM_T_INT,
                       .def_doc = "256 on GPUs",
                       .min = 1,
                       .max = 1024,
                       .unit = "a work-group size",
                       .help = "work-group size of the pack kernels on GPUs"},
    [MGPARAM_KERNEL_SWITCH] = {.name = "MPIGPU_KERNEL_SWITCH",
                               .type = MGPARAM_T_INT,
                               .def = "80",
                               .min = 0,
                               .max = 100000,
                               .unit = "microseconds",
                               .help = "what a pack kernel costs beyond its calibrated time on a "
                                       "GPU that other processes of the node also use (a context "
                                       "switch), when auto compares it with copies; 0: ignore"},
    [MGPARAM_INLINE_MAX] = {.name = "MPIGPU_INLINE_MAX",
                            .type = MGPARAM_T_SIZE,
                            .def = "256K",
                            .min = 0,
                            .max = 64 * GIB,
                            .unit = "bytes",
                            .help = "on a GPU that other processes of the node also use: "
                                    "host-to-device writes shorter than this go as two-row "
                                    "rectangles, which keep off the compute channel; packs this "
                                    "long or shorter between device and host memory by the copy "
                                    "method move by rectangles straight to or from the host (on "
                                    "a GPU of the process's own too, where one rectangle covers "
                                    "them); 0: neither"},
    [MGPARAM_CHUNK] = {.name = "MPIGPU_CHUNK",
                       .type = MGPARAM_T_SIZE,
                       .def = "4M",
                       .min = 1,
                       .max = MGPARAM_NO_MAX,
                       .help = "chunk of the pipelined pack and copy on devices without "
                               "host-unified memory"},
    [MGPARAM_STAGING_MAX] = {.name = "MPIGPU_STAGING_MAX",
                             .type = MGPARAM_T_SIZE,
                             .def = "64M",
                             .min = 16 * KIB, /* four 4 KiB buffers */
                             .max = MGPARAM_NO_MAX,
                             .help = "cap on the pinned host memory of point-to-point "
                                     "staging; a quarter of it is the chunk"},
    [MGPARAM_STAGING_KEEP] = {.name = "MPIGPU_STAGING_KEEP",
                              .type = MGPARAM_T_SIZE,
                              .def = "256M",
                              .min = 0,
                              .max = MGPARAM_NO_MAX,
                              .help = "host memory of long messages kept for the next ones; 0 "
                                      "frees each after its message"},
    [MGPARAM_P2P_PROTOCOL] = {.name = "MPIGPU_P2P_PROTOCOL",
                              .type = MGPARAM_T_ENUM,
                              .def = "auto",
                              .values = protocol_values,
                              .help = "device messages: in pieces to processes of the node from "
                                      "MPIGPU_P2P_AUTO_MIN (auto), one MPI message (plain), in "
                                      "pieces (chunked)"},
    [MGPARAM_P2P_FIRST] = {.name = "MPIGPU_P2P_FIRST",
                           .type = MGPARAM_T_SIZE,
                           .def = "64K",
                           .min = 4 * KIB,
                           .max = GIB,
                           .help = "bytes of a message's first piece, which goes by MPI"},
    [MGPARAM_P2P_AUTO_MIN] = {.name = "MPIGPU_P2P_AUTO_MIN",
                              .type = MGPARAM_T_SIZE,
                              .def = "1M",
                              .min = 1,
                              .max = MGPARAM_NO_MAX,
                              .help = "under auto: the packed bytes from which a device message "
                                      "to the node goes in pieces"},
    [MGPARAM_P2P_HOST_RECV] = {.name = "MPIGPU_P2P_HOST_RECV",
                               .type = MGPARAM_T_ENUM,
                               .def = "pieces",
                               .values = host_recv_values,
                               .help = "a host receive offered a node lane takes the rest "
                                       "through it (pieces) or as one MPI message (message)"},
    [MGPARAM_P2P_DEPTH] = {.name = "MPIGPU_P2P_DEPTH",
                           .type = MGPARAM_T_INT,
                           .def = "3",
                           .min = 1,
                           .max = 8,
                           .unit = "a number of pieces",
                           .help = "pieces of one chunked message in flight at once"},
    [MGPARAM_P2P_SHM] = {.name = "MPIGPU_P2P_SHM",
                         .type = MGPARAM_T_BOOL,
                         .def = "on",
                         .help = "chunked messages between processes of a node through "
                                 "shared-memory rings (node lanes)"},
    [MGPARAM_P2P_SHM_PIECE] = {.name = "MPIGPU_P2P_SHM_PIECE",
                               .type = MGPARAM_T_SIZE,
                               .def = "8M",
                               .min = 4 * KIB,
                               .max = GIB,
                               .help = "bytes of one slot of a node lane"},
    [MGPARAM_P2P_SHM_SLOTS] = {.name = "MPIGPU_P2P_SHM_SLOTS",
                               .type = MGPARAM_T_INT,
                               .def = "2",
                               .min = 2,
                               .max = 64,
                               .unit = "a number of slots",
                               .help = "slots of one node lane"},
    [MGPARAM_P2P_TEST_GRANTED] = {.name = "MPIGPU_P2P_TEST_GRANTED",
                                  .type = MGPARAM_T_BOOL,
                                  .flags = MGPARAM_F_TEST,
                                  .def = "0",
                                  .help = "every process starts as granted by every peer: device "
                                          "messages go in pieces from the first, and host "
                                          "receives read headers from the start"},
    [MGPARAM_CACHE_DIR] = {.name = "MPIGPU_CACHE_DIR",
                           .type = MGPARAM_T_STRING,
                           .flags = MGPARAM_F_EMPTY,
                           .def_doc = "$XDG_CACHE_HOME/mpigpu, else ~/.cache/mpigpu",
                           .help = "directory of cached kernel binaries and method tables; "
                                   "empty: no cache"},
    [MGPARAM_ENQUEUE_PROGRESS] = {.name = "MPIGPU_ENQUEUE_PROGRESS",
                                  .type = MGPARAM_T_ENUM,
                                  .def = "auto",
                                  .values = enqueue_values,
                                  .help = "thread: MPI runs at MPI_THREAD_MULTIPLE, whatever "
                                          "level the application asked for, so that a thread "
                                          "moves enqueued operations; auto: the same when a "
                                          "loaded object calls an MPIX_Enqueue_ function; off: "
                                          "MPI at the level asked for (enqueue calls only under "
                                          "MPI_THREAD_MULTIPLE)"},
    [MGPARAM_ENQUEUE_QUEUE_MAX] = {.name = "MPIGPU_ENQUEUE_QUEUE_MAX",
                                   .type = MGPARAM_T_SIZE,
                                   .def = "1M",
                                   .min = 0,
                                   .max = GIB,
                                   .help = "packed bytes up to which an enqueued send packs, "
                                           "and an enqueued receive unpacks, on the caller's "
                                           "queue through host staging; longer messages move "
                                           "through the point-to-point engine's pipeline on a "
                                           "queue of its own; 0: never on the caller's queue"},
    [MGPARAM_SHARED_BLOCK] = {.name = "MPIGPU_SHARED_BLOCK",
                              .type = MGPARAM_T_SIZE,
                              .def = "1M",
                              .min = 4 * KIB,
                              .max = GIB,
                              .help = "block of host-coherent memory (MPIX_Gpu_malloc_shared) "
                                      "that one fault fetches and one flush writes; rounded up "
                                      "to whole pages"},
    [MGPARAM_SHARED_DIRTY] = {.name = "MPIGPU_SHARED_DIRTY",
                              .type = MGPARAM_T_INT,
                              .def = "4",
                              .min = 1,
                              .max = 1 << 20,
                              .unit = "a number of blocks",
                              .help = "dirty blocks of one shared allocation held before the "
                                      "oldest is written to the device in the background "
                                      "(rolling update)"},
    [MGPARAM_SHARED_ZERO_COPY] = {.name = "MPIGPU_SHARED_ZERO_COPY",
                                  .type = MGPARAM_T_BOOL,
                                  .def = "1",
                                  .help = "shared allocations are the device buffer's own "
                                          "storage where the device demonstrably shares host "
                                          "memory; 0: page protection and copies everywhere"},
    [MGPARAM_COLL_REDUCE] =
        {.name = "MPIGPU_COLL_REDUCE",
         .type = MGPARAM_T_ENUM,
         .def = "auto",
         .values = coll_reduce_values,
         .help = "blocking MPI_Allreduce, MPI_Reduce and MPI_Reduce_scatter(_block) "
                 "of a basic type and a built-in operation: auto combines on "
                 "the device from MPIGPU_COLL_REDUCE_MIN bytes when every "
                 "process's buffers are device buffers that do not share host "
                 "memory; device: whenever every buffer is a device buffer; "
                 "stage: always through host memory around MPI's own "
                 "collective. The same on every process"},
    [MGPARAM_COLL_REDUCE_MIN] = {.name = "MPIGPU_COLL_REDUCE_MIN",
                                 .type = MGPARAM_T_SIZE,
                                 .def = "1M",
                                 .min = 0,
                                 .max = MGPARAM_NO_MAX,
                                 .help = "under MPIGPU_COLL_REDUCE=auto: the bytes of the reduced "
                                         "vector from which a reduction combines on the device; "
                                         "the same on every process"},
    [MGPARAM_COLL_REDUCE_CHUNK] = {.name = "MPIGPU_COLL_REDUCE_CHUNK",
                                   .type = MGPARAM_T_SIZE,
                                   .def = "4M",
                                   .min = 4 * KIB,
                                   .max = GIB,
                                   .help = "bytes of one message of a reduction on the device; "
                                           "the combine of one overlaps the next ones' transfer"},
    [MGPARAM_COLL_PIPELINE] =
        {.name = "MPIGPU_COLL_PIPELINE",
         .type = MGPARAM_T_ENUM,
         .def = "on",
         .values = coll_pipeline_values,
         .help = "on: blocking MPI_Bcast, MPI_Reduce and MPI_Allreduce of at least "
                 "MPIGPU_COLL_PIPELINE_MIN bytes run as one nonblocking collective per chunk, "
                 "overlapped with the copies of the next and previous chunks, where a process "
                 "has a device buffer that does not share host memory; all: MPI_Gather, "
                 "MPI_Scatter, MPI_Allgather and MPI_Alltoall too (MPICH 4.0.2 moves their "
                 "chunks, strided, slower than the whole call); off: never. The same on every "
                 "process"},
    [MGPARAM_COLL_PIPELINE_MIN] = {.name = "MPIGPU_COLL_PIPELINE_MIN",
                                   .type = MGPARAM_T_SIZE,
                                   .def = "16M",
                                   .min = 0,
                                   .max = MGPARAM_NO_MAX,
                                   .help = "bytes of a collective's message (all the blocks of "
                                           "a gather, scatter, allgather or all-to-all) from "
                                           "which every process votes on pipelining it (one small "
                                           "MPI_Allreduce); the same on every process"},
    [MGPARAM_COLL_PIPELINE_CHUNK] = {.name = "MPIGPU_COLL_PIPELINE_CHUNK",
                                     .type = MGPARAM_T_SIZE,
                                     .def = "4M",
                                     .min = 1 * KIB,
                                     .max = GIB,
                                     .help = "bytes of one chunk of a pipelined collective "
                                             "(whole elements of a reduction); the same on every "
                                             "process"},
    [MGPARAM_COLL_PACKED] =
        {.name = "MPIGPU_COLL_PACKED",
         .type = MGPARAM_T_ENUM,
         .def = "auto",
         .values = coll_packed_values,
         .help = "how a device side of MPI_Alltoallv, MPI_Alltoallw and the neighborhood v and w "
                 "forms packs its blocks to host memory and unpacks them back, on a device that "
                 "does not share host memory: fused (one pack engine call for every block, one "
                 "kernel launch), blocks (one call per block, each with its own method, copies "
                 "where auto prefers them), model: per call, whichever the pack engine's model "
                 "predicts faster, kernel switches of a shared GPU counted "
                 "(MPIGPU_KERNEL_SWITCH), or auto: the model's choice first, then the calls "
                 "that pack the same blocks run each way twice, timed, and keep the faster. "
                 "Each process decides alone"},

    [MGPARAM_VCL_SERVERS] = {.name = "MPIGPU_VCL_SERVERS",
                             .type = MGPARAM_T_STRING,
                             .reader = MGPARAM_ICD,
                             .help = "HOST:PORT[,HOST:PORT...]: the proxies whose devices the "
                                     "virtual platform shows"},
    [MGPARAM_VCL_KEY_FILE] = {.name = "MPIGPU_VCL_KEY_FILE",
                              .type = MGPARAM_T_STRING,
                              .reader = MGPARAM_ICD,
                              .help = "the shared key file (mode 600)"},
    [MGPARAM_VCL_STATS] = {.name = "MPIGPU_VCL_STATS",
                           .type = MGPARAM_T_BOOL,
                           .reader = MGPARAM_ICD,
                           .def = "0",
                           .help = "1: the ICD's message and byte counts on stderr at exit"},
    [MGPARAM_VCL_SHM] = {.name = "MPIGPU_VCL_SHM",
                         .type = MGPARAM_T_BOOL,
                         .reader = MGPARAM_ICD,
                         .def = "1",
                         .help = "the shared-memory lane with a proxy on the same host"},
    [MGPARAM_VCL_CMA] = {.name = "MPIGPU_VCL_CMA",
                         .type = MGPARAM_T_BOOL,
                         .reader = MGPARAM_ICD,
                         .def = "1",
                         .help = "the one-copy lane (cross-memory attach) with a proxy on the "
                                 "same host"},
    [MGPARAM_VCL_PEER_EVENTS] = {.name = "MPIGPU_VCL_PEER_EVENTS",
                                 .type = MGPARAM_T_BOOL,
                                 .reader = MGPARAM_ICD,
                                 .def = "1",
                                 .help = "an event's proxy tells another proxy itself when the "
                                         "event completes (contexts over several proxies)"},
    [MGPARAM_VCL_TIMEOUT] = {.name = "MPIGPU_VCL_TIMEOUT",
                             .type = MGPARAM_T_INT,
                             .reader = MGPARAM_ICD,
                             .def = "60",
                             .min = 1,
                             .max = 1 << 30,
                             .unit = "a number of seconds",
                             .help = "seconds a proxy may stay silent before its devices are "
                                     "given up"},
    [MGPARAM_VCL_STREAMS] = {.name = "MPIGPU_VCL_STREAMS",
                             .type = MGPARAM_T_INT,
                             .reader = MGPARAM_ICD,
                             .def_doc = "half the online CPUs, 1 to 4",
                             .min = 1,
                             .max = 16,
                             .unit = "a number",
                             .help = "TCP connections (stripes) of the bulk lane to each proxy"},
    [MGPARAM_VCL_SPIN] = {.name = "MPIGPU_VCL_SPIN",
                          .type = MGPARAM_T_INT,
                          .reader = MGPARAM_ICD,
                          .def_doc = "100 on hosts of 8 CPUs or more, else 0",
                          .min = 0,
                          .max = 100000,
                          .unit = "a number of microseconds",
                          .help = "microseconds a thread waiting for the proxy polls before it "
                                  "sleeps"},
    [MGPARAM_VCL_ENCRYPT] = {.name = "MPIGPU_VCL_ENCRYPT",
                             .type = MGPARAM_T_BOOL,
                             .reader = MGPARAM_ICD,
                             .def = "1",
                             .help = "encrypt and authenticate every frame of the TCP lanes; "
                                     "the proxy reads it too, and both sides must agree"},
    [MGPARAM_VCL_CIPHER] = {.name = "MPIGPU_VCL_CIPHER",
                            .type = MGPARAM_T_ENUM,
                            .reader = MGPARAM_ICD,
                            .def = "auto",
                            .values = cipher_values,
                            .help = "the ciphers the client offers: auto (AES-256-GCM where both "
                                    "sides have AES-NI, else ChaCha20-Poly1305), or force one"},

    [MGPARAM_PROXY_CMA_COPY] = {.name = "MPIGPU_PROXY_CMA_COPY",
                                .type = MGPARAM_T_ENUM,
                                .reader = MGPARAM_PROXY,
                                .def = "auto",
                                .values = cma_copy_values,
                                .help = "the one-copy lane's copy method: auto, or force map, "
                                        "pinned or staging"},
    [MGPARAM_PROXY_CMA_THREADS] = {.name = "MPIGPU_PROXY_CMA_THREADS",
                                   .type = MGPARAM_T_INT,
                                   .reader = MGPARAM_PROXY,
                                   .def_doc = "online CPUs - 1, at most 7",
                                   .min = 0,
                                   .max = 1 << 20,
                                   .unit = "a number of threads",
                                   .help = "helper threads of the one-copy lane's copies (at most "
                                           "7 are used)"},
    [MGPARAM_PROXY_SPIN] = {.name = "MPIGPU_PROXY_SPIN",
                            .type = MGPARAM_T_INT,
                            .reader = MGPARAM_PROXY,
                            .def_doc = "100 on hosts of 8 CPUs or more, else 0",
                            .min = 0,
                            .max = 100000,
                            .unit = "a number of microseconds",
                            .help = "microseconds a session thread polls for the next message "
                                    "before it sleeps"},
    [MGPARAM_PROXY_SESSION_MEM] = {.name = "MPIGPU_PROXY_SESSION_MEM",
                                   .type = MGPARAM_T_SIZE,
                                   .reader = MGPARAM_PROXY,
                                   .def = "0",
                                   .min = 0,
                                   .max = MGPARAM_NO_MAX,
                                   .help = "bytes of device buffers one session may hold (0: no "
                                           "limit but the device's)"},
    [MGPARAM_PROXY_TOTAL_MEM] = {.name = "MPIGPU_PROXY_TOTAL_MEM",
                                 .type = MGPARAM_T_SIZE,
                                 .reader = MGPARAM_PROXY,
                                 .def_doc = "each device's CL_DEVICE_GLOBAL_MEM_SIZE",
                                 .min = 0,
                                 .max = MGPARAM_NO_MAX,
                                 .help = "bytes of buffers all sessions together may hold on one "
                                         "device (never more than its global memory)"},
    [MGPARAM_PROXY_HANDSHAKE_TIMEOUT] = {.name = "MPIGPU_PROXY_HANDSHAKE_TIMEOUT",
                                         .type = MGPARAM_T_INT,
                                         .reader = MGPARAM_PROXY,
                                         .def = "10",
                                         .min = 1,
                                         .max = 3600,
                                         .unit = "a number of seconds",
                                         .help = "seconds a new connection has for its whole "
                                                 "handshake before it is closed"},
    [MGPARAM_PROXY_PENDING_MAX] = {.name = "MPIGPU_PROXY_PENDING_MAX",
                                   .type = MGPARAM_T_INT,
                                   .reader = MGPARAM_PROXY,
                                   .def = "512",
                                   .min = 1,
                                   .max = 1 << 20,
                                   .unit = "a number of connections",
                                   .help = "connections in their handshake at once, all peers "
                                           "together"},
    [MGPARAM_PROXY_PENDING_PER_PEER] = {.name = "MPIGPU_PROXY_PENDING_PER_PEER",
                                        .type = MGPARAM_T_INT,
                                        .reader = MGPARAM_PROXY,
                                        .def = "128",
                                        .min = 1,
                                        .max = 1 << 20,
                                        .unit = "a number of connections",
                                        .help = "connections in their handshake at once from one "
                                                "peer address"},
    [MGPARAM_PROXY_LOG_RATE] = {.name = "MPIGPU_PROXY_LOG_RATE",
                                .type = MGPARAM_T_INT,
                                .reader = MGPARAM_PROXY,
                                .def = "10",
                                .min = 1,
                                .max = 1 << 20,
                                .unit = "a number of lines",
                                .help = "refusal and session-error log lines a second; the rest "
                                        "are counted in a \"suppressed\" line"},
    [MGPARAM_PROXY_MAX_CONTEXTS] = {.name = "MPIGPU_PROXY_MAX_CONTEXTS",
                                    .type = MGPARAM_T_INT,
                                    .reader = MGPARAM_PROXY,
                                    .def = "256",
                                    .min = 0,
                                    .max = 1 << 30,
                                    .unit = "a number of objects",
                                    .help = "contexts one session may hold at once (0: no limit)"},
    [MGPARAM_PROXY_MAX_QUEUES] = {.name = "MPIGPU_PROXY_MAX_QUEUES",
                                  .type = MGPARAM_T_INT,
                                  .reader = MGPARAM_PROXY,
                                  .def = "1024",
                                  .min = 0,
                                  .max = 1 << 30,
                                  .unit = "a number of objects",
                                  .help =
                                      "command queues one session may hold at once (0: no limit)"},
    [MGPARAM_PROXY_MAX_MEM_OBJECTS] =
        {.name = "MPIGPU_PROXY_MAX_MEM_OBJECTS",
         .type = MGPARAM_T_INT,
         .reader = MGPARAM_PROXY,
         .def = "65536",
         .min = 0,
         .max = 1 << 30,
         .unit = "a number of objects",
         .help = "buffers, sub-buffers and images one session may hold at once (0: no limit)"},
    [MGPARAM_PROXY_MAX_PROGRAMS] = {.name = "MPIGPU_PROXY_MAX_PROGRAMS",
                                    .type = MGPARAM_T_INT,
                                    .reader = MGPARAM_PROXY,
                                    .def = "4096",
                                    .min = 0,
                                    .max = 1 << 30,
                                    .unit = "a number of objects",
                                    .help = "programs one session may hold at once (0: no limit)"},
    [MGPARAM_PROXY_MAX_KERNELS] = {.name = "MPIGPU_PROXY_MAX_KERNELS",
                                   .type = MGPARAM_T_INT,
                                   .reader = MGPARAM_PROXY,
                                   .def = "65536",
                                   .min = 0,
                                   .max = 1 << 30,
                                   .unit = "a number of objects",
                                   .help = "kernels one session may hold at once (0: no limit)"},
    [MGPARAM_PROXY_MAX_EVENTS] =
        {.name = "MPIGPU_PROXY_MAX_EVENTS",
         .type = MGPARAM_T_INT,
         .reader = MGPARAM_PROXY,
         .def = "262144",
         .min = 0,
         .max = 1 << 30,
         .unit = "a number of objects",
         .help =
             "events (of commands, and user events) one session may hold at once (0: no limit)"},
    [MGPARAM_PROXY_MAX_SAMPLERS] = {.name = "MPIGPU_PROXY_MAX_SAMPLERS",
                                    .type = MGPARAM_T_INT,
                                    .reader = MGPARAM_PROXY,
                                    .def = "4096",
                                    .min = 0,
                                    .max = 1 << 30,
                                    .unit = "a number of objects",
                                    .help = "samplers one session may hold at once (0: no limit)"},
    [MGPARAM_PROXY_TEST_DROP_CALLBACKS] = {.name = "MPIGPU_PROXY_TEST_DROP_CALLBACKS",
                                           .type = MGPARAM_T_BOOL,
                                           .reader = MGPARAM_PROXY,
                                           .flags = MGPARAM_F_TEST,
                                           .def = "0",
                                           .help = "no completion from the runtime's callbacks: "
                                                   "clients learn of each from FINISH requests"},
};
