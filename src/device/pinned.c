/*
 * Host ranges known to be page-locked: the buffers of the staging pool and
 * what the application declares with MPIX_Gpu_host_register().  The pack
 * engine reads and writes such memory straight from and into device staging
 * (mgpk_buf_t.pinned) instead of bouncing it through its own pinned ring and
 * a host copy.  A small unsorted array under its own lock: the staging pool
 * holds at most a few dozen buffers, applications a handful.  This lock is
 * taken last (under the p2p lock from the staging pool), and takes no other.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "mgdev.h"
#include "mgerr.h"

typedef struct pin_range {
    const char *lo;
    size_t len;
    int user; /* MPIX_Gpu_host_register, not the library's own */
} pin_range_t;

static struct {
    pthread_mutex_t lock;
    pin_range_t *r;
    size_t n, cap;
} pins = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int pin_add(const void *ptr, size_t len, int user)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&pins.lock);
    if (pins.n == pins.cap) {
        size_t cap = pins.cap ? 2 * pins.cap : 16;
        pin_range_t *r = realloc(pins.r, cap * sizeof(*r));
        if (!r)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: out of host memory (pinned ranges)");
        pins.r = r;
        pins.cap = cap;
    }
    pins.r[pins.n++] = (pin_range_t){.lo = ptr, .len = len, .user = user};
fn_exit:
    pthread_mutex_unlock(&pins.lock);
    return rc;
fn_fail:
    goto fn_exit;
}

/* The application can neither remove the library's ranges nor the
   library the application's. */
static int pin_remove(const void *ptr, int user)
{
    int found = 0;
    pthread_mutex_lock(&pins.lock);
    for (size_t i = 0; i < pins.n; i++)
        if (pins.r[i].lo == (const char *)ptr && pins.r[i].user == user) {
            pins.r[i] = pins.r[--pins.n];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&pins.lock);
    return found;
}

int mgdev_pinned_add(const void *ptr, size_t len)
{
    return pin_add(ptr, len, 0);
}

int mgdev_pinned_remove(const void *ptr)
{
    return pin_remove(ptr, 0);
}

int mgdev_pinned_add_user(const void *ptr, size_t len)
{
    return pin_add(ptr, len, 1);
}

int mgdev_pinned_remove_user(const void *ptr)
{
    return pin_remove(ptr, 1);
}

int mgdev_pinned(const void *ptr, size_t len)
{
    const char *p = ptr;
    int in = 0;
    pthread_mutex_lock(&pins.lock);
    for (size_t i = 0; i < pins.n && !in; i++)
        in = p >= pins.r[i].lo && len <= pins.r[i].len &&
             (size_t)(p - pins.r[i].lo) <= pins.r[i].len - len;
    pthread_mutex_unlock(&pins.lock);
    return in;
}

void mgdev_pinned_finalize(void)
{
    pthread_mutex_lock(&pins.lock);
    free(pins.r);
    pins.r = NULL;
    pins.n = pins.cap = 0;
    pthread_mutex_unlock(&pins.lock);
}
