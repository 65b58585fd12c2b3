/* The library's MPI_T performance variables read by name, as a tool reads
   them (MPI_T_pvar_get_index, a session, one handle per variable), for the
   tests that check its counters.  Every variable of the library is a
   continuous unsigned long long bound to no object (src/mpi/mpit.c). */
#ifndef MPIT_READ_H
#define MPIT_READ_H

/* Start MPI_T and a session (after MPI_Init).  Returns 0, or -1 when MPI_T
   cannot start. */
int mpit_read_init(void);
/* The current value of the variable called name (a counter, level or
   high-water mark).  Returns 0 and sets *v, or -1 when no such variable
   exists. */
int mpit_read(const char *name, unsigned long long *v);
/* The same, or MPI_Abort for a name that does not exist: a value of 0
   would pass a check that a counter did not move. */
unsigned long long mpit_value(const char *name);
/* The value the library read for one of its settings, as a byte count
   (its MPI_T control variable, e.g. "MPIGPU_STAGING_MAX" = "64M"), or -1. */
long long mpit_setting_bytes(const char *name);
/* End the session and MPI_T (before MPI_Finalize). */
void mpit_read_finalize(void);

#endif
