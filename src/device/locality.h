/*
 * mgdev_loc: the choice of the default device by hwloc locality, and the
 * NUMA binding of staging memory to the chosen device's node.
 *
 * The selection itself (mgdev_loc_candidates, mgdev_loc_select) is pure: it sees
 * devices as records with locality cpusets and touches neither OpenCL, MPI
 * nor the topology, so that unit tests drive it with made-up machines.
 *
 * Ownership: locality.c owns the hwloc topology and the device nodeset from
 * mgdev_loc_init() to mgdev_loc_finalize(); nothing it hands out is the
 * caller's to free.  Records passed to the pure functions stay the caller's.
 */
#ifndef MGDEV_LOCALITY_H
#define MGDEV_LOCALITY_H

#include <CL/cl.h>
#include <hwloc.h>
#include <stddef.h>
#include <stdint.h>

#define MGDEV_LOC_PCI_NONE UINT64_MAX
#define MGDEV_LOC_MAX_DEVICES 64

/* One OpenCL device as the selection sees it. */
typedef struct mgdev_loc_dev {
    int is_gpu;
    uint64_t pci;                /* domain:bus:dev.func packed, MGDEV_LOC_PCI_NONE: unknown */
    hwloc_const_cpuset_t cpuset; /* cores near the device, NULL: hwloc cannot tell */
} mgdev_loc_dev_t;

typedef enum mgdev_loc_why {
    MGDEV_LOC_NO_DEVICE,   /* empty list */
    MGDEV_LOC_HWLOC,       /* a GPU nearest the rank's cores */
    MGDEV_LOC_NO_LOCALITY, /* GPUs, but none with PCI locality: spread over all */
    MGDEV_LOC_NO_GPU       /* no GPU: the first device */
} mgdev_loc_why_t;

typedef struct mgdev_loc_choice {
    int index; /* into the device list, -1 with MGDEV_LOC_NO_DEVICE */
    mgdev_loc_why_t why;
    int k, n;     /* the chosen one is candidate k of n (GPUs nearest, or all GPUs) */
    uint64_t key; /* names the candidate set: ranks with equal keys share it */
} mgdev_loc_choice_t;

/* Candidates for a rank bound to `binding` (the whole machine when unbound):
   GPUs whose locality contains the binding, the smallest such localities
   first; else GPUs whose locality meets it, or whose locality is unknown;
   else every GPU.  A GPU whose PCI address repeats an earlier one (the same
   board under two platforms) is skipped.  Fills *c except index and k; the
   candidate list (at most MGDEV_LOC_MAX_DEVICES) goes to cand. */
void mgdev_loc_candidates(const mgdev_loc_dev_t *devs, int ndevs, hwloc_const_cpuset_t binding,
                          int *cand, mgdev_loc_choice_t *c);
/* The whole choice: candidates, then candidate slot % n, where slot is the
   rank's position among the node's ranks with the same candidate key
   (numbered by local rank), so that ranks sharing a candidate set spread
   over it whatever the binding order of the node. */
mgdev_loc_choice_t mgdev_loc_select(const mgdev_loc_dev_t *devs, int ndevs,
                                    hwloc_const_cpuset_t binding, int slot);

/* Collective over MPI_COMM_WORLD: every rank calls it once in MPI_Init,
   whatever its settings and even when they are bad, so that no rank waits
   for another.  Learns the node's ranks, loads the topology and, with want
   (MPIGPU_DEVICE unset), chooses the default device.  Never fails: without
   hwloc the choice falls back to spreading over the GPUs by local rank. */
void mgdev_loc_init(int want);
/* The device mgdev_loc_init chose (NULL: none, or not wanted) and, in why,
   the reason for MPIGPU_VERBOSE.  OpenCL device ids need no release. */
cl_device_id mgdev_loc_chosen(char *why, size_t why_len);
/* What local ranks 0 to nranks - 1 would take, each bound as this process
   is and all sharing its candidate set, with the reason mgdev_loc_chosen
   gives (mpigpu-info).  nranks <= 0: one per candidate.  Needs the topology
   of mgdev_loc_init; makes no MPI call.  Returns the ranks reported. */
typedef void (*mgdev_loc_preview_fn)(void *arg, int local_rank, cl_device_id dev, const char *why);
int mgdev_loc_preview(int nranks, mgdev_loc_preview_fn fn, void *arg);
/* Staging memory from now on goes to dev's NUMA node (device_open and
   MPIX_Gpu_set_queue call it). */
void mgdev_loc_use(cl_device_id dev);
/* Collective over the node (every rank of mgdev_loc_init calls it once, also
   after a failed setup, with dev NULL): the number of the node's processes
   whose device is dev, this one included.  Only GPUs are counted (a CPU
   device's kernels switch no context): 1 for a CPU device, NULL, or without a
   node communicator.  A GPU whose PCI address is unknown counts by name. */
int mgdev_loc_sharers(cl_device_id dev);
/* This rank's place on its node, for messages. */
void mgdev_loc_local(int *local_rank, int *local_size);
/* 1 when the process of MPI_COMM_WORLD rank wrank shares this node (MPI's
   MPI_COMM_TYPE_SHARED split of mgdev_loc_init); 0 when unknown. */
int mgdev_loc_on_node(int wrank);
void mgdev_loc_finalize(void);

/* Bind [ptr, ptr + len) to the NUMA node of the device in use; a failure is
   reported once under MPIGPU_VERBOSE and otherwise ignored (binding is an
   optimization).  Called where staging memory is first mapped. */
void mgdev_staging_bind(void *ptr, size_t len);

#endif /* MGDEV_LOCALITY_H */
