/*
 * MPI_Init and MPI_Finalize: after PMPI_Init the library's modules start in
 * the order of the table below, and before PMPI_Finalize they stop in the
 * reverse order.  A module's fini must be safe after its own init failed.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "config.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "mgparam.h"

#include "mgerr.h"
#include "mgmpi.h"
#include "p2p.h"
#include "coll.h"
#include "mglog.h"

typedef struct mgmpi_module {
    const char *name;
    int (*init)(void); /* NULL: nothing to start; returns an MPI error code */
    void (*fini)(void);
} mgmpi_module_t;

/* Order matters: the device (settings, locality, datatype engine, registry,
   default context and pack engines) comes first; the point-to-point engine
   borrows its staging pool and contexts, and stops before them so that
   operations still active finish while the device is there; the
   collectives' kernels and scratch go before both. */
static const mgmpi_module_t modules[] = {
    {.name = "device", .init = mgdev_setup, .fini = mgdev_teardown},
    {.name = "point-to-point", .init = mgp2p_init, .fini = mgp2p_finalize},
    {.name = "collectives", .init = NULL, .fini = mgcoll_finalize},
    {.name = "enqueue", .init = mgmpi_enq_init, .fini = mgmpi_enq_fini},
};
#define NMODULES (sizeof(modules) / sizeof(modules[0]))

/* Modules started and not yet stopped (calls of MPI_Init and MPI_Finalize
   come from one thread, as MPI requires). */
static size_t modules_up;

static void modules_stop(void)
{
    while (modules_up > 0) {
        const mgmpi_module_t *m = &modules[--modules_up];
        if (m->fini)
            m->fini();
    }
}

/* After PMPI_Init succeeded a start failure (a bad MPIGPU_DEVICE or
   MPIGPU_PACK) is returned as MPI_ERR_OTHER with MPI left initialized: the
   message goes to stderr because no error handler can be relied on yet, and
   the program should call MPI_Abort or MPI_Finalize. */
static int modules_start(void)
{
    int rc = MPI_SUCCESS;
    for (size_t i = 0; i < NMODULES; i++) {
        modules_up = i + 1; /* a failed module is stopped too */
        if (modules[i].init)
            rc = modules[i].init();
        MG_CHECK(rc, fn_fail);
    }
fn_exit:
    return rc;
fn_fail:
    MGLOG_ERROR(MGLOG_MPI, "%s", mgerr_get(rc) ? mgerr_get(rc) : "initialization failed");
    modules_stop();
    goto fn_exit;
}

/* Whether the dynamic relocations of obj name fn as an undefined symbol:
   obj calls one of the enqueue calls (or takes its address). */
static int refers_enqueue(const ElfW(Sym) * sym, const char *str, const ElfW(Rela) * rel,
                          size_t bytes)
{
    for (size_t i = 0; i < bytes / sizeof(*rel); i++) {
        const ElfW(Sym) *s = &sym[ELF64_R_SYM(rel[i].r_info)];
        const char *name = str + s->st_name;
        if (s->st_shndx == SHN_UNDEF && s->st_name &&
            (!strncmp(name, "MPIX_Enqueue_", 13) || !strcmp(name, "MPIX_Event_from_request")))
            return 1;
    }
    return 0;
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *found)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
            continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        const ElfW(Sym) *sym = NULL;
        const char *str = NULL;
        const ElfW(Rela) *rela = NULL, *jmprel = NULL;
        size_t relasz = 0, pltsz = 0;
        int pltrela = 0;
        for (; dyn->d_tag != DT_NULL; dyn++) {
            switch (dyn->d_tag) {
            case DT_SYMTAB:
                sym = (const ElfW(Sym) *)dyn->d_un.d_ptr;
                break;
            case DT_STRTAB:
                str = (const char *)dyn->d_un.d_ptr;
                break;
            case DT_RELA:
                rela = (const ElfW(Rela) *)dyn->d_un.d_ptr;
                break;
            case DT_RELASZ:
                relasz = dyn->d_un.d_val;
                break;
            case DT_JMPREL:
                jmprel = (const ElfW(Rela) *)dyn->d_un.d_ptr;
                break;
            case DT_PLTRELSZ:
                pltsz = dyn->d_un.d_val;
                break;
            case DT_PLTREL:
                pltrela = dyn->d_un.d_val == DT_RELA;
                break;
            }
        }
        if (!sym || !str)
            continue;
        if ((rela && refers_enqueue(sym, str, rela, relasz)) ||
            (jmprel && pltrela && refers_enqueue(sym, str, jmprel, pltsz))) {
            *(int *)found = 1;
            return 1;
        }
    }
    return 0;
}

/* The level MPI itself runs at.  The enqueue calls' thread calls MPI
   while the application's threads may, which takes MPI_THREAD_MULTIPLE
   whatever the application asked for; the application is told the level it
   asked for (MPI_Init_thread's provided, MPI_Query_thread).  Under
   MPIGPU_ENQUEUE_PROGRESS=auto (the default) only a program one of whose
   loaded objects refers to an enqueue call pays for it (glibc's loader has
   relocated those objects already, so their dynamic tables hold run-time
   addresses). */
static int level_asked(int required)
{
    mgparam_value_t v;
    int found = 0;
    if (mgparam_read(MGPARAM_ENQUEUE_PROGRESS, &v, NULL, 0) != 0)
        v.num = mgparam_default(MGPARAM_ENQUEUE_PROGRESS); /* reported at mgdev_setup */
    if (v.num == 0)
        dl_iterate_phdr(scan_object, &found);
    return v.num == 1 || found ? MPI_THREAD_MULTIPLE : required;
}

MPIGPU_EXPORT
int MPI_Init(int *argc, char ***argv)
{
    int got = MPI_THREAD_SINGLE, ask = level_asked(MPI_THREAD_SINGLE);
    int rc =
        ask == MPI_THREAD_SINGLE ? PMPI_Init(argc, argv) : PMPI_Init_thread(argc, argv, ask, &got);
    if (rc != MPI_SUCCESS)
        return rc;
    PMPI_Query_thread(&got);
    /* MPI_Init's level when MPI ran at the one it chose, else the lowest. */
    mgdev_state.app_level = ask == MPI_THREAD_SINGLE ? got : MPI_THREAD_SINGLE;
    return modules_start();
}

MPIGPU_EXPORT
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int got = MPI_THREAD_SINGLE;
    int ask = level_asked(required);
    int rc = PMPI_Init_thread(argc, argv, ask > required ? ask : required, &got);
    if (rc != MPI_SUCCESS)
        return rc;
    /* What MPI gave, down to what the application asked for when MPI was
       asked for more. */
    mgdev_state.app_level = ask > required && got > required ? required : got;
    if (provided)
        *provided = mgdev_state.app_level;
    return modules_start();
}

/* The application's level, which may be below MPI's (level_asked). */
MPIGPU_EXPORT
int MPI_Query_thread(int *provided)
{
    int init = 0, fin = 0;
    PMPI_Initialized(&init);
    PMPI_Finalized(&fin);
    if (!init || fin || !provided)
        return PMPI_Query_thread(provided);
    *provided = mgdev_state.app_level;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_Finalize(void)
{
    /* Before PMPI_Finalize: the datatype engine frees its attribute keyval
       through MPI. */
    modules_stop();
    return PMPI_Finalize();
}
