/*
 * The default device by hwloc locality: the GPU nearest the cores this rank
 * runs on, ranks of one node spread over the GPUs they share, and staging
 * memory bound to the chosen GPU's NUMA node.
 *
 * A device is placed through its PCI address: hwloc's OpenCL helper asks the
 * AMD and NVIDIA attribute extensions, and cl_khr_pci_bus_info (which hwloc
 * 2.9 does not query) covers the rest.  The address is looked up among the
 * PCI objects of the topology, and the device's locality is the cpuset and
 * nodeset of its first non-I/O ancestor.  hwloc's own OpenCL component is not
 * needed for that, and is left out with the other GPU runtimes so that
 * loading the topology initializes none of them.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl_ext.h>
#include <hwloc.h>
#include <hwloc/opencl.h>
#include <mpi.h>

#include "locality.h"
#include "mglog.h"

/* ------------------------------------------------------------------------ */
/* Pure selection                                                           */

/* Lower is nearer: 0 when the locality holds the whole binding (then the
   smaller locality, the more specific), 1 when it meets the binding or is
   unknown, 2 when it is elsewhere. */
static void dev_rate(const mgdev_loc_dev_t *d, hwloc_const_cpuset_t binding, int *cls, int *weight)
{
    *weight = 0;
    if (!d->cpuset || !binding)
        *cls = 1;
    else if (hwloc_bitmap_isincluded(binding, d->cpuset)) {
        int w = hwloc_bitmap_weight(d->cpuset);
        *cls = 0;
        *weight = w < 0 ? INT_MAX : w;
    } else
        *cls = hwloc_bitmap_intersects(binding, d->cpuset) ? 1 : 2;
}

static int gpu_repeats(const mgdev_loc_dev_t *devs, int i)
{
    if (devs[i].pci == MGDEV_LOC_PCI_NONE)
        return 0;
    for (int j = 0; j < i; j++)
        if (devs[j].is_gpu && devs[j].pci == devs[i].pci)
            return 1;
    return 0;
}

static uint64_t fnv1a(uint64_t h, uint64_t v)
{
    for (int b = 0; b < 8; b++) {
        h ^= (v >> (8 * b)) & 0xff;
        h *= 0x100000001b3ULL;
    }
    return h;
}

void mgdev_loc_candidates(const mgdev_loc_dev_t *devs, int ndevs, hwloc_const_cpuset_t binding,
                          int *cand, mgdev_loc_choice_t *c)
{
    int best_cls = INT_MAX, best_w = INT_MAX, ngpu = 0, located = 0;

    memset(c, 0, sizeof(*c));
    c->index = -1;
    c->why = MGDEV_LOC_NO_DEVICE;
    if (ndevs <= 0)
        return;
    for (int i = 0; i < ndevs && i < MGDEV_LOC_MAX_DEVICES; i++) {
        int cls, w;
        if (!devs[i].is_gpu || gpu_repeats(devs, i))
            continue;
        ngpu++;
        located |= devs[i].cpuset != NULL;
        dev_rate(&devs[i], binding, &cls, &w);
        if (cls < best_cls || (cls == best_cls && w < best_w)) {
            best_cls = cls;
            best_w = w;
            c->n = 0;
        }
        if (cls == best_cls && w == best_w)
            cand[c->n++] = i;
    }
    if (ngpu == 0) {
        c->why = MGDEV_LOC_NO_GPU;
        cand[0] = 0;
        c->n = 1;
    } else
        c->why = located ? MGDEV_LOC_HWLOC : MGDEV_LOC_NO_LOCALITY;
    /* Device indices differ between ranks that see different device lists
       (CUDA_VISIBLE_DEVICES), PCI addresses do not. */
    uint64_t h = fnv1a(0xcbf29ce484222325ULL, (uint64_t)c->why);
    for (int k = 0; k < c->n; k++) {
        uint64_t pci = devs[cand[k]].pci;
        h = fnv1a(h, pci != MGDEV_LOC_PCI_NONE ? pci : (1ULL << 63) | (uint64_t)cand[k]);
    }
    c->key = h;
}

mgdev_loc_choice_t mgdev_loc_select(const mgdev_loc_dev_t *devs, int ndevs,
                                    hwloc_const_cpuset_t binding, int slot)
{
    int cand[MGDEV_LOC_MAX_DEVICES];
    mgdev_loc_choice_t c;
    mgdev_loc_candidates(devs, ndevs, binding, cand, &c);
    if (c.n > 0) {
        c.k = (slot < 0 ? 0 : slot) % c.n;
        c.index = cand[c.k];
    }
    return c;
}

/* ------------------------------------------------------------------------ */
/* The machine: topology, node ranks, OpenCL devices                        */

static struct {
    hwloc_topology_t topo; /* NULL when hwloc could not load one */
    hwloc_nodeset_t nodes; /* staging binding, NULL: none */
    MPI_Comm node;         /* the ranks sharing this node */
    int local_rank, local_size;
    int bind_reported;
    cl_device_id chosen; /* NULL: none chosen */
    char why[256];
    char *on_node; /* per world rank: 1 on this node (mgdev_loc_on_node, built lazily) */
    int world_size;
} loc = {.node = MPI_COMM_NULL, .local_size = 1};

static int world_rank(void)
{
    int r = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static void topology_load(void)
{
    /* Components that would initialize GPU runtimes (or open X displays)
       while the PCI objects already say where devices sit. */
    static const char *const skip[] = {"opencl", "cuda", "nvml", "rsmi", "levelzero", "gl"};

    if (hwloc_topology_init(&loc.topo) != 0) {
        loc.topo = NULL;
        goto no_topology;
    }
    for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
        (void)hwloc_topology_set_components(loc.topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                            skip[i]);
    if (hwloc_topology_set_io_types_filter(loc.topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0 ||
        hwloc_topology_load(loc.topo) != 0) {
        hwloc_topology_destroy(loc.topo);
        loc.topo = NULL;
        goto no_topology;
    }
    return;
no_topology:
    MGLOG_INFO(MGLOG_DEVICE, "rank %d: hwloc topology not loaded (%s): no device locality",
               world_rank(), strerror(errno));
}

static uint64_t pci_pack(unsigned domain, unsigned bus, unsigned dev, unsigned func)
{
    return ((uint64_t)domain << 16) | ((bus & 0xffu) << 8) | ((dev & 0x1fu) << 3) | (func & 7u);
}

/* The device's PCI address: cl_khr_pci_bus_info where the driver has it,
   since hwloc 2.9's helper reads NVIDIA's CL_DEVICE_PCI_SLOT_ID_NV as
   device << 3 | function while driver 580 returns the device number alone
   (an H200 at 00:06.0 came out as 00:00.6); else hwloc's helper (AMD and
   older NVIDIA drivers). */
static uint64_t dev_pci(cl_device_id dev)
{
    unsigned domain, bus, slot, func;
    cl_device_pci_bus_info_khr khr;

    if (clGetDeviceInfo(dev, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof(khr), &khr, NULL) == CL_SUCCESS)
        return pci_pack(khr.pci_domain, khr.pci_bus, khr.pci_device, khr.pci_function);
    if (hwloc_opencl_get_device_pci_busid(dev, &domain, &bus, &slot, &func) == 0)
        return pci_pack(domain, bus, slot, func);
    return MGDEV_LOC_PCI_NONE;
}

/* The first non-I/O ancestor of the device's PCI object, NULL if hwloc does
   not know the device. */
static hwloc_obj_t pci_locality(uint64_t pci)
{
    if (!loc.topo || pci == MGDEV_LOC_PCI_NONE)
        return NULL;
    hwloc_obj_t obj =
        hwloc_get_pcidev_by_busid(loc.topo, (unsigned)(pci >> 16), (unsigned)(pci >> 8) & 0xff,
                                  (unsigned)(pci >> 3) & 0x1f, (unsigned)pci & 7);
    return obj ? hwloc_get_non_io_ancestor_obj(loc.topo, obj) : NULL;
}

/* Every device of every platform, in platform order; at most
   MGDEV_LOC_MAX_DEVICES. */
static int devices_list(cl_platform_id *plats, cl_uint np, cl_device_id *ids, mgdev_loc_dev_t *devs)
{
    int n = 0;
    for (cl_uint p = 0; p < np && n < MGDEV_LOC_MAX_DEVICES; p++) {
        cl_uint got = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, (cl_uint)(MGDEV_LOC_MAX_DEVICES - n),
                           ids + n, &got) != CL_SUCCESS)
            continue;
        if (got > (cl_uint)(MGDEV_LOC_MAX_DEVICES - n))
            got = (cl_uint)(MGDEV_LOC_MAX_DEVICES - n);
        for (cl_uint i = 0; i < got; i++, n++) {
            cl_device_type type = 0;
            clGetDeviceInfo(ids[n], CL_DEVICE_TYPE, sizeof(type), &type, NULL);
            devs[n].is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
            devs[n].pci = devs[n].is_gpu ? dev_pci(ids[n]) : MGDEV_LOC_PCI_NONE;
            hwloc_obj_t anc = devs[n].is_gpu ? pci_locality(devs[n].pci) : NULL;
            devs[n].cpuset = anc ? anc->cpuset : NULL;
        }
    }
    return n;
}

/* Ranks of the node with the same candidate set, numbered by local rank:
   a split by key needs no buffer of node size, so it cannot fail midway on
   one rank while the others wait in it. */
static int slot_by_key(uint64_t key)
{
    MPI_Comm same;
    int slot = loc.local_rank;
    if (loc.node == MPI_COMM_NULL)
        return slot;
    int color = (int)((key ^ (key >> 32)) & INT_MAX);
    if (PMPI_Comm_split(loc.node, color, loc.local_rank, &same) == MPI_SUCCESS) {
        PMPI_Comm_rank(same, &slot);
        PMPI_Comm_free(&same);
    }
    return slot;
}

static void why_format(const mgdev_loc_choice_t *c, const mgdev_loc_dev_t *d, char *why, size_t len)
{
    char cores[128] = "?", nodes[64] = "?";
    hwloc_obj_t anc = pci_locality(d->pci);

    switch (c->why) {
    case MGDEV_LOC_HWLOC:
        if (anc) {
            hwloc_bitmap_list_snprintf(cores, sizeof(cores), anc->cpuset);
            hwloc_bitmap_list_snprintf(nodes, sizeof(nodes), anc->nodeset);
        }
        snprintf(why, len, "hwloc locality: GPU %d of %d near cores %s, NUMA node %s", c->k, c->n,
                 cores, nodes);
        break;
    case MGDEV_LOC_NO_LOCALITY:
        /* Say what hwloc saw, so that a missing PCI plugin or sysfs shows. */
        snprintf(why, len,
                 "first GPU: no PCI locality from hwloc (device at %04x:%02x:%02x.%x, %d PCI "
                 "devices in the topology), GPU %d of %d by local rank",
                 (unsigned)(d->pci >> 16), (unsigned)(d->pci >> 8) & 0xff,
                 (unsigned)(d->pci >> 3) & 0x1f, (unsigned)d->pci & 7,
                 loc.topo ? hwloc_get_nbobjs_by_type(loc.topo, HWLOC_OBJ_PCI_DEVICE) : -1, c->k,
                 c->n);
        break;
    case MGDEV_LOC_NO_GPU:
        snprintf(why, len, "first device: no GPU found");
        break;
    default:
        snprintf(why, len, "no device");
    }
}

static void device_choose(cl_device_id *ids, mgdev_loc_dev_t *devs, int *cand,
                          mgdev_loc_choice_t *c)
{
    cl_platform_id plats[MGDEV_LOC_MAX_DEVICES];
    cl_uint np = 0;
    hwloc_bitmap_t binding = NULL;

    /* CL_PLATFORM_NOT_FOUND_KHR with no ICD installed: no device. */
    if (clGetPlatformIDs(MGDEV_LOC_MAX_DEVICES, plats, &np) != CL_SUCCESS)
        np = 0;
    if (np > MGDEV_LOC_MAX_DEVICES)
        np = MGDEV_LOC_MAX_DEVICES;
    int n = devices_list(plats, np, ids, devs);
    if (loc.topo && (binding = hwloc_bitmap_alloc()) &&
        hwloc_get_cpubind(loc.topo, binding, 0) != 0)
        hwloc_bitmap_copy(binding, hwloc_topology_get_topology_cpuset(loc.topo));
    mgdev_loc_candidates(devs, n, binding, cand, c);
    hwloc_bitmap_free(binding);
}

void mgdev_loc_init(int want)
{
    cl_device_id ids[MGDEV_LOC_MAX_DEVICES];
    mgdev_loc_dev_t devs[MGDEV_LOC_MAX_DEVICES];
    int cand[MGDEV_LOC_MAX_DEVICES];
    mgdev_loc_choice_t c = {.index = -1, .why = MGDEV_LOC_NO_DEVICE, .key = MGDEV_LOC_PCI_NONE};

    loc.bind_reported = 0;
    loc.chosen = NULL;
    loc.why[0] = '\0';
    loc.local_rank = 0;
    loc.local_size = 1;
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &loc.node) ==
        MPI_SUCCESS) {
        PMPI_Comm_rank(loc.node, &loc.local_rank);
        PMPI_Comm_size(loc.node, &loc.local_size);
    } else
        loc.node = MPI_COMM_NULL;
    topology_load(); /* staging binding needs it whoever chose the device */
    if (want)
        device_choose(ids, devs, cand, &c);
    /* Collective: every rank of the node, wanting or not. */
    int slot = slot_by_key(c.key);
    if (want && c.n > 0) {
        c.k = slot % c.n;
        c.index = cand[c.k];
        loc.chosen = ids[c.index];
        why_format(&c, &devs[c.index], loc.why, sizeof(loc.why));
    }
}

int mgdev_loc_preview(int nranks, mgdev_loc_preview_fn fn, void *arg)
{
    cl_device_id ids[MGDEV_LOC_MAX_DEVICES];
    mgdev_loc_dev_t devs[MGDEV_LOC_MAX_DEVICES];
    int cand[MGDEV_LOC_MAX_DEVICES];
    mgdev_loc_choice_t c = {.index = -1, .why = MGDEV_LOC_NO_DEVICE, .key = MGDEV_LOC_PCI_NONE};
    char why[256];

    device_choose(ids, devs, cand, &c);
    if (nranks <= 0)
        nranks = c.n > 0 ? c.n : 1;
    for (int r = 0; r < nranks; r++) {
        mgdev_loc_choice_t rc = c;
        if (c.n <= 0) {
            fn(arg, r, NULL, "no OpenCL device");
            continue;
        }
        /* As mgdev_loc_init: ranks that share a candidate set take it in turn. */
        rc.k = r % c.n;
        rc.index = cand[rc.k];
        why_format(&rc, &devs[rc.index], why, sizeof(why));
        fn(arg, r, ids[rc.index], why);
    }
    return nranks;
}

cl_device_id mgdev_loc_chosen(char *why, size_t why_len)
{
    snprintf(why, why_len, "%s", loc.why);
    return loc.chosen;
}

void mgdev_loc_use(cl_device_id dev)
{
    hwloc_obj_t anc = NULL;

    hwloc_bitmap_free(loc.nodes);
    loc.nodes = NULL;
    loc.bind_reported = 0;
    if (!loc.topo || !dev)
        return;
    cl_device_type type = 0;
    clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
    if (type & CL_DEVICE_TYPE_GPU)
        anc = pci_locality(dev_pci(dev));
    /* Binding to every node would change nothing. */
    if (anc && anc->nodeset && !hwloc_bitmap_iszero(anc->nodeset) &&
        !hwloc_bitmap_isequal(anc->nodeset, hwloc_topology_get_topology_nodeset(loc.topo)))
        loc.nodes = hwloc_bitmap_dup(anc->nodeset);
}

void mgdev_staging_bind(void *ptr, size_t len)
{
    if (!loc.nodes || !ptr || !len)
        return;
    if (hwloc_set_area_membind(loc.topo, ptr, len, loc.nodes, HWLOC_MEMBIND_BIND,
                               HWLOC_MEMBIND_BYNODESET) == 0 ||
        !mglog_enabled(MGLOG_LEVEL_INFO) || loc.bind_reported)
        return;
    char nodes[64];
    int err = errno;
    loc.bind_reported = 1;
    hwloc_bitmap_list_snprintf(nodes, sizeof(nodes), loc.nodes);
    mglog_write(MGLOG_LEVEL_INFO, MGLOG_DEVICE,
                "rank %d: staging memory not bound to NUMA node %s: %s", world_rank(), nodes,
                strerror(err));
}

int mgdev_loc_sharers(cl_device_id dev)
{
    uint64_t key = 0;
    cl_device_type type = 0;
    if (dev && clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type, NULL) == CL_SUCCESS &&
        (type & CL_DEVICE_TYPE_GPU)) {
        key = dev_pci(dev);
        if (key == MGDEV_LOC_PCI_NONE) {
            char name[256] = "";
            clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name) - 1, name, NULL);
            key = 0xcbf29ce484222325ull;
            for (const char *p = name; *p; p++)
                key = fnv1a(key, (unsigned char)*p);
        }
        key |= 1; /* never 0, which stands for "no GPU" */
    }
    if (loc.node == MPI_COMM_NULL || loc.local_size <= 1)
        return 1;
    /* Ranks of one device form one color; the split allocates nothing here
       that a failure could leave half done on some ranks. */
    MPI_Comm same = MPI_COMM_NULL;
    int n = 1, color = key ? (int)(key % (uint64_t)INT_MAX) : MPI_UNDEFINED;
    if (PMPI_Comm_split(loc.node, color, 0, &same) != MPI_SUCCESS || same == MPI_COMM_NULL)
        return 1;
    PMPI_Comm_size(same, &n);
    PMPI_Comm_free(&same);
    return n > 0 ? n : 1;
}

void mgdev_loc_local(int *local_rank, int *local_size)
{
    *local_rank = loc.local_rank;
    *local_size = loc.local_size;
}

int mgdev_loc_on_node(int wrank)
{
    if (loc.node == MPI_COMM_NULL)
        return 0;
    if (!loc.on_node) {
        MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
        int n = loc.local_size, ok = 0;
        int *in = malloc((size_t)n * 2 * sizeof(int));
        PMPI_Comm_size(MPI_COMM_WORLD, &loc.world_size);
        loc.on_node = calloc((size_t)loc.world_size, 1);
        if (in && loc.on_node && PMPI_Comm_group(loc.node, &g) == MPI_SUCCESS &&
            PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS) {
            for (int i = 0; i < n; i++)
                in[i] = i;
            ok = PMPI_Group_translate_ranks(g, n, in, wg, in + n) == MPI_SUCCESS;
        }
        for (int i = 0; ok && i < n; i++)
            if (in[n + i] >= 0 && in[n + i] < loc.world_size)
                loc.on_node[in[n + i]] = 1;
        if (g != MPI_GROUP_NULL)
            PMPI_Group_free(&g);
        if (wg != MPI_GROUP_NULL)
            PMPI_Group_free(&wg);
        free(in);
        if (!loc.on_node)
            return 0;
    }
    return wrank >= 0 && wrank < loc.world_size && loc.on_node[wrank];
}

void mgdev_loc_finalize(void)
{
    free(loc.on_node);
    loc.on_node = NULL;
    hwloc_bitmap_free(loc.nodes);
    loc.nodes = NULL;
    if (loc.topo)
        hwloc_topology_destroy(loc.topo);
    loc.topo = NULL;
    if (loc.node != MPI_COMM_NULL)
        PMPI_Comm_free(&loc.node);
    loc.node = MPI_COMM_NULL;
    loc.local_rank = 0;
    loc.local_size = 1;
    loc.chosen = NULL;
}
