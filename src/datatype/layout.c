/*
 * The layouts of MPI's predefined datatypes (size, extent, true extent), read
 * from MPI once at mgdt_init, so that the interposed calls classify a buffer
 * of a predefined type without querying MPI on every call (issue 31: host
 * traffic pays nothing).  A predefined type's handle is a constant that
 * names no other type while MPI is initialized, and its layout never
 * changes, so the table answers exactly what the PMPI queries would.
 *
 * The table is written by mgdt_init and mgdt_finalize only (MPI_Init and
 * MPI_Finalize, one thread) and read without a lock in between, inline
 * (mgdt.h: mgdt_predefined and mgdt_predefined_dense look at a type's first
 * slot; mgdt_predefined_probe here walks on).  The common types are entered
 * first, so they sit at their first slot.
 */
#include <stdint.h>
#include <string.h>

#include "mgdt_tree.h"

#define SLOTS MGDT_LAYOUT_SLOTS

/* An unused slot has used 0 (whatever its dt), so that no handle, not even
   MPI_DATATYPE_NULL or an invalid one, finds it.  Zero until mgdt_init. */
mgdt_layout_t mgdt_layout_table[MGDT_LAYOUT_SLOTS];
static int nused;

static void add(MPI_Datatype dt)
{
    mgdt_layout_t l = {.dt = dt, .used = 1};
    if (dt == MPI_DATATYPE_NULL || nused >= SLOTS / 2 ||
        PMPI_Type_size_x(dt, &l.size) != MPI_SUCCESS ||
        PMPI_Type_get_extent_x(dt, &l.lb, &l.extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent_x(dt, &l.true_lb, &l.true_extent) != MPI_SUCCESS)
        return;
    l.dense = l.true_lb == 0 && l.size > 0 && l.size < ((MPI_Count)1 << 31) && l.extent == l.size &&
              l.true_extent == l.size;
    unsigned i = mgdt_layout_slot(dt);
    while (mgdt_layout_table[i].used) {
        if (mgdt_layout_table[i].dt == dt)
            return; /* an alias (MPI_LONG_LONG is MPI_LONG_LONG_INT) */
        i = (i + 1) & (SLOTS - 1);
    }
    mgdt_layout_table[i] = l;
    nused++;
}

void mgdt_layout_init(void)
{
    static const MPI_Datatype predefined[] = {MPI_CHAR,
                                              MPI_SIGNED_CHAR,
                                              MPI_UNSIGNED_CHAR,
                                              MPI_BYTE,
                                              MPI_WCHAR,
                                              MPI_SHORT,
                                              MPI_UNSIGNED_SHORT,
                                              MPI_INT,
                                              MPI_UNSIGNED,
                                              MPI_LONG,
                                              MPI_UNSIGNED_LONG,
                                              MPI_LONG_LONG_INT,
                                              MPI_LONG_LONG,
                                              MPI_UNSIGNED_LONG_LONG,
                                              MPI_FLOAT,
                                              MPI_DOUBLE,
                                              MPI_LONG_DOUBLE,
                                              MPI_C_BOOL,
                                              MPI_INT8_T,
                                              MPI_INT16_T,
                                              MPI_INT32_T,
                                              MPI_INT64_T,
                                              MPI_UINT8_T,
                                              MPI_UINT16_T,
                                              MPI_UINT32_T,
                                              MPI_UINT64_T,
                                              MPI_AINT,
                                              MPI_OFFSET,
                                              MPI_COUNT,
                                              MPI_C_COMPLEX,
                                              MPI_C_FLOAT_COMPLEX,
                                              MPI_C_DOUBLE_COMPLEX,
                                              MPI_C_LONG_DOUBLE_COMPLEX,
                                              MPI_PACKED,
                                              MPI_FLOAT_INT,
                                              MPI_DOUBLE_INT,
                                              MPI_LONG_INT,
                                              MPI_2INT,
                                              MPI_SHORT_INT,
                                              MPI_LONG_DOUBLE_INT};
    mgdt_layout_finalize();
    for (size_t i = 0; i < sizeof(predefined) / sizeof(predefined[0]); i++)
        add(predefined[i]);
}

void mgdt_layout_finalize(void)
{
    for (unsigned i = 0; i < SLOTS; i++)
        mgdt_layout_table[i] = (mgdt_layout_t){.dt = MPI_DATATYPE_NULL};
    nused = 0;
}

const mgdt_layout_t *mgdt_predefined_probe(MPI_Datatype dt)
{
    if (nused == 0 || dt == MPI_DATATYPE_NULL)
        return NULL;
    for (unsigned i = mgdt_layout_slot(dt);; i = (i + 1) & (SLOTS - 1)) {
        if (!mgdt_layout_table[i].used)
            return NULL;
        if (mgdt_layout_table[i].dt == dt)
            return &mgdt_layout_table[i];
    }
}
