/* The library's MPI_T performance variables by name (mpit_read.h). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpit_read.h"

#define MPIT_READ_MAX 64

static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
static struct {
    char name[64];
    MPI_T_pvar_handle h;
} handles[MPIT_READ_MAX];
static int nhandles;

int mpit_read_init(void)
{
    int provided = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return -1;
    if (MPI_T_pvar_session_create(&session) != MPI_SUCCESS) {
        MPI_T_finalize();
        return -1;
    }
    nhandles = 0;
    return 0;
}

/* The handle of name, allocated at its first read. */
static int handle_of(const char *name, MPI_T_pvar_handle *h)
{
    static const int classes[] = {MPI_T_PVAR_CLASS_COUNTER, MPI_T_PVAR_CLASS_LEVEL,
                                  MPI_T_PVAR_CLASS_HIGHWATERMARK};
    for (int i = 0; i < nhandles; i++)
        if (!strcmp(handles[i].name, name)) {
            *h = handles[i].h;
            return 0;
        }
    if (nhandles == MPIT_READ_MAX || strlen(name) >= sizeof(handles[0].name))
        return -1;
    int idx = -1, count = 0;
    for (size_t c = 0; c < sizeof(classes) / sizeof(classes[0]) && idx < 0; c++)
        if (MPI_T_pvar_get_index(name, classes[c], &idx) != MPI_SUCCESS)
            idx = -1;
    if (idx < 0 || MPI_T_pvar_handle_alloc(session, idx, NULL, h, &count) != MPI_SUCCESS ||
        count != 1)
        return -1;
    snprintf(handles[nhandles].name, sizeof(handles[0].name), "%s", name);
    handles[nhandles++].h = *h;
    return 0;
}

int mpit_read(const char *name, unsigned long long *v)
{
    MPI_T_pvar_handle h;
    if (session == MPI_T_PVAR_SESSION_NULL || handle_of(name, &h) ||
        MPI_T_pvar_read(session, h, v) != MPI_SUCCESS)
        return -1;
    return 0;
}

unsigned long long mpit_value(const char *name)
{
    unsigned long long v = 0;
    if (mpit_read(name, &v)) {
        fprintf(stderr, "mpit_read: no performance variable %s\n", name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return v;
}

long long mpit_setting_bytes(const char *name)
{
    int idx = -1, count = 0;
    MPI_T_cvar_handle h;
    char v[256] = "", *end = NULL;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS)
        return -1;
    int ok = count > 0 && count <= (int)sizeof(v) && MPI_T_cvar_read(h, v) == MPI_SUCCESS;
    MPI_T_cvar_handle_free(&h);
    long long n = ok ? strtoll(v, &end, 10) : -1;
    if (!ok || end == v)
        return -1;
    switch (*end) {
    case 'K':
    case 'k':
        return n << 10;
    case 'M':
    case 'm':
        return n << 20;
    case 'G':
    case 'g':
        return n << 30;
    default:
        return *end ? -1 : n;
    }
}

void mpit_read_finalize(void)
{
    if (session == MPI_T_PVAR_SESSION_NULL)
        return;
    MPI_T_pvar_session_free(&session); /* its handles with it */
    nhandles = 0;
    MPI_T_finalize();
}
