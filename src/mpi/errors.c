/* Raising errors on an error handler, and MPI_Error_string for our classes. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "mgdev.h"
#include "mgerr.h"
#include "mgmpi.h"
#include "mglog.h"

int mgmpi_error(MPI_Comm comm, int rc)
{
    int init = 0, fin = 0;
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;

    if (rc == MPI_SUCCESS)
        return rc;
    PMPI_Initialized(&init);
    PMPI_Finalized(&fin);
    if (!init || fin)
        return rc;
    if (comm == MPI_COMM_NULL)
        comm = MPI_COMM_WORLD;
    if (PMPI_Comm_get_errhandler(comm, &eh) == MPI_SUCCESS) {
        /* MPICH's abort prints only the class text; say why first. */
        if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT) {
            const char *msg = mgerr_get(rc);
            if (msg)
                MGLOG_ERROR(MGLOG_MPI, "%s", msg);
        }
        PMPI_Errhandler_free(&eh);
    }
    PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

MPIGPU_EXPORT
int MPI_Error_string(int errorcode, char *string, int *resultlen)
{
    int errclass = -1;
    const char *msg = NULL;

    /* Only a bare class value can carry our text: MPICH's own codes encode
       more than the class and keep MPICH's strings. */
    if (errorcode != MPI_SUCCESS && PMPI_Error_class(errorcode, &errclass) == MPI_SUCCESS &&
        errclass == errorcode)
        msg = mgerr_get(errorcode);
    if (!msg || !string || !resultlen)
        return PMPI_Error_string(errorcode, string, resultlen);
    size_t len = strnlen(msg, MPI_MAX_ERROR_STRING - 1);
    memcpy(string, msg, len);
    string[len] = '\0';
    *resultlen = (int)len;
    return MPI_SUCCESS;
}
