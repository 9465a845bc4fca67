/* The output pool: fresh output arrays of batched calls take their memory from a small, bounded cache of recently freed
   large blocks (a numpy allocator handler set only around our own allocations), so a loop that drops its last result
   does not pay the kernel's page faults and zero-fill on every call. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "_core.h"
#define NO_IMPORT_ARRAY
#include "_numpy.h"

/* Every block of the handler starts with this header (64 bytes: the data stays 64-byte aligned). map_len 0: a malloc'd
   block (small; the handler also serves whatever numpy allocates while it is set, e.g. from a finalizer run by the GC
   inside our allocation); else an mmap'd block of map_len bytes, which is pooled on free. */
#define HDR 64
typedef struct {
    size_t map_len; /* 0: malloc'd */
    size_t size;    /* bytes asked for (what realloc copies) */
} pool_hdr;
_Static_assert(sizeof(pool_hdr) <= HDR, "header fits");

#define SLOTS 16                    /* cached blocks at most */
#define HUGE_MIN ((size_t)4 << 20)  /* blocks from this size are madvise(MADV_HUGEPAGE)d, as numpy's own */
#define HUGE_STEP ((size_t)2 << 20) /* ... and rounded up to whole huge pages */

typedef struct {
    char *map;
    size_t len;
    double put_at; /* CLOCK_MONOTONIC seconds when it was freed */
} slot;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* wakes the reaper when the settings change */
    slot s[SLOTS];
    int n;
    size_t cached;     /* sum of s[].len */
    size_t max_bytes;  /* bound on cached; 0: the pool is off (numpy's allocator serves every output) */
    size_t min_bytes;  /* outputs below this go to numpy's allocator */
    double idle_s;     /* a block unused this long is unmapped */
    int reaper;        /* the reaper thread runs */
    unsigned long long hits, misses, maps, unmaps;
} P = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .max_bytes = (size_t)256 << 20,
    .min_bytes = (size_t)256 << 10,
    .idle_s = 2.0,
};

static PyObject *handler_capsule; /* the PyDataMem_Handler capsule ("mem_handler"), made once */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* move the blocks idle past idle_s (all with force) into victims; under mu; returns their count */
static int take_expired(slot *victims, double now, int force)
{
    int nv = 0, keep = 0;
    for (int i = 0; i < P.n; i++) {
        if (force || now - P.s[i].put_at >= P.idle_s) {
            victims[nv++] = P.s[i];
            P.cached -= P.s[i].len;
        } else {
            P.s[keep++] = P.s[i];
        }
    }
    P.n = keep;
    P.unmaps += (unsigned long long)nv;
    return nv;
}

/* unmapping 80 MB takes a while: done outside the lock */
static void unmap_all(const slot *v, int n)
{
    for (int i = 0; i < n; i++) munmap(v[i].map, v[i].len);
}

/* The reaper: while the pool holds blocks, wakes when the oldest would expire and unmaps what has; exits when empty. */
static void *reaper_main(void *unused)
{
    (void)unused;
    slot victims[SLOTS];
    pthread_mutex_lock(&P.mu);
    while (P.n > 0) {
        double oldest = P.s[0].put_at;
        for (int i = 1; i < P.n; i++)
            if (P.s[i].put_at < oldest) oldest = P.s[i].put_at;
        const double due = oldest + P.idle_s + 1e-3;
        struct timespec ts = {(time_t)due, (long)((due - (double)(time_t)due) * 1e9)};
        pthread_cond_timedwait(&P.cv, &P.mu, &ts);
        const int nv = take_expired(victims, now_s(), 0);
        if (nv) {
            pthread_mutex_unlock(&P.mu);
            unmap_all(victims, nv);
            pthread_mutex_lock(&P.mu);
        }
    }
    P.reaper = 0;
    pthread_mutex_unlock(&P.mu);
    return NULL;
}

/* under mu: start the reaper when blocks are cached and none runs (no thread: the blocks wait for the next call) */
static void ensure_reaper(void)
{
    if (P.reaper || P.n == 0) return;
    pthread_attr_t a;
    pthread_t t;
    if (pthread_attr_init(&a) != 0) return;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, (size_t)64 << 10);
    if (pthread_create(&t, &a, reaper_main, NULL) == 0) P.reaper = 1;
    pthread_attr_destroy(&a);
}

/* the length of a fresh mapping for need bytes: whole pages, whole huge pages from HUGE_MIN */
static size_t map_length(size_t need)
{
    const size_t step = need >= HUGE_MIN ? HUGE_STEP : (size_t)sysconf(_SC_PAGESIZE);
    return (need + step - 1) / step * step;
}

/* a cached block of at least need bytes and at most a quarter more than a fresh mapping's (the smallest such), or
   NULL */
static char *pool_take(size_t need, size_t *len)
{
    const size_t fresh = map_length(need), most = fresh + fresh / 4;
    slot victims[SLOTS];
    char *got = NULL;
    pthread_mutex_lock(&P.mu);
    const int nv = take_expired(victims, now_s(), 0);
    int best = -1;
    for (int i = 0; i < P.n; i++)
        if (P.s[i].len >= need && P.s[i].len <= most && (best < 0 || P.s[i].len < P.s[best].len)) best = i;
    if (best >= 0) {
        got = P.s[best].map;
        *len = P.s[best].len;
        P.cached -= *len;
        P.s[best] = P.s[--P.n];
        P.hits++;
    } else {
        P.misses++;
    }
    pthread_mutex_unlock(&P.mu);
    unmap_all(victims, nv);
    return got;
}

/* a block freed by numpy: cached (the oldest evicted to stay within max_bytes and SLOTS), or unmapped */
static void pool_put(char *map, size_t len)
{
    slot victims[SLOTS + 1];
    pthread_mutex_lock(&P.mu);
    const double now = now_s();
    int nv = take_expired(victims, now, 0);
    if (len > P.max_bytes) {
        victims[nv++] = (slot){map, len, now};
        P.unmaps++;
    } else {
        while (P.n > 0 && (P.n == SLOTS || P.cached + len > P.max_bytes)) {
            int old = 0;
            for (int i = 1; i < P.n; i++)
                if (P.s[i].put_at < P.s[old].put_at) old = i;
            victims[nv++] = P.s[old];
            P.cached -= P.s[old].len;
            P.s[old] = P.s[--P.n];
            P.unmaps++;
        }
        P.s[P.n++] = (slot){map, len, now};
        P.cached += len;
        ensure_reaper();
    }
    pthread_mutex_unlock(&P.mu);
    unmap_all(victims, nv);
}

/* ---- the numpy handler ---- */

/* a block for size bytes; *zeroed says whether its data is known to be zero (a fresh mapping) */
static void *block_alloc(size_t size, int *zeroed)
{
    if (size > SIZE_MAX - HDR - HUGE_STEP) return NULL;
    const size_t need = size + HDR;
    pool_hdr *h;
    size_t len = 0;
    *zeroed = 0;
    if (need < __atomic_load_n(&P.min_bytes, __ATOMIC_RELAXED)) {
        if (!(h = malloc(need))) return NULL;
    } else {
        char *map = pool_take(need, &len);
        if (!map) {
            len = map_length(need);
            map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (map == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
            if (len >= HUGE_MIN) madvise(map, len, MADV_HUGEPAGE);
#endif
            *zeroed = 1;
            pthread_mutex_lock(&P.mu);
            P.maps++;
            pthread_mutex_unlock(&P.mu);
        }
        h = (pool_hdr *)map;
    }
    h->map_len = len;
    h->size = size;
    return (char *)h + HDR;
}

static void block_free(void *ptr)
{
    if (!ptr) return;
    pool_hdr *h = (pool_hdr *)((char *)ptr - HDR);
    if (h->map_len == 0) free(h);
    else pool_put((char *)h, h->map_len);
}

static void *h_malloc(void *ctx, size_t size)
{
    (void)ctx;
    int zeroed;
    return block_alloc(size, &zeroed);
}

static void *h_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    if (elsize && nelem > SIZE_MAX / elsize) return NULL;
    int zeroed;
    void *p = block_alloc(nelem * elsize, &zeroed);
    if (p && !zeroed) memset(p, 0, nelem * elsize);
    return p;
}

static void *h_realloc(void *ctx, void *ptr, size_t new_size)
{
    (void)ctx;
    int zeroed;
    void *p = block_alloc(new_size, &zeroed);
    if (p && ptr) {
        const size_t old = ((pool_hdr *)((char *)ptr - HDR))->size;
        memcpy(p, ptr, old < new_size ? old : new_size);
        block_free(ptr);
    }
    return p;
}

static void h_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    (void)size; /* the header knows (numpy passes the array's nbytes) */
    block_free(ptr);
}

static PyDataMem_Handler handler = {
    "grid_rbd_output_pool", 1, {NULL, h_malloc, h_calloc, h_realloc, h_free},
};

/* ---- fork: the child gets fresh locks and no reaper (its copies of the blocks stay valid and are reused) ---- */

static void fork_prepare(void) { pthread_mutex_lock(&P.mu); }
static void fork_parent(void) { pthread_mutex_unlock(&P.mu); }
static void fork_child(void)
{
    pthread_mutex_init(&P.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&P.cv, &ca);
    pthread_condattr_destroy(&ca);
    P.reaper = 0;
}

int grid_py_outpool_init(void)
{
    if (handler_capsule) return 0;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0 || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&P.cv, &ca) != 0 || pthread_atfork(fork_prepare, fork_parent, fork_child) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "output pool: pthread set-up failed");
        return -1;
    }
    pthread_condattr_destroy(&ca);
    handler_capsule = PyCapsule_New(&handler, "mem_handler", NULL);
    return handler_capsule ? 0 : -1;
}

PyObject *grid_py_outpool_new(int ndim, const npy_intp *dims, int type_num)
{
    size_t bytes = (size_t)PyArray_MultiplyList((npy_intp *)dims, ndim) * (size_t)(type_num == NPY_FLOAT32 ? 4 : 8);
    /* the settings are stored atomically under the lock: a call reads them without taking it */
    const int pooled = __atomic_load_n(&P.max_bytes, __ATOMIC_RELAXED) > 0 &&
                       bytes + HDR >= __atomic_load_n(&P.min_bytes, __ATOMIC_RELAXED);
    if (!pooled) return PyArray_SimpleNew(ndim, (npy_intp *)dims, type_num);
    /* a handler the user set in this context (not numpy's default) is left to serve our outputs too */
    PyObject *cur = PyDataMem_GetHandler();
    if (!cur) return NULL;
    const PyDataMem_Handler *ch = PyCapsule_GetPointer(cur, "mem_handler");
    const int user_handler = !ch || strcmp(ch->name, "default_allocator") != 0;
    Py_DECREF(cur);
    if (user_handler) {
        PyErr_Clear();
        return PyArray_SimpleNew(ndim, (npy_intp *)dims, type_num);
    }
    /* the handler is numpy's for this thread's context only while this one array is made */
    PyObject *old = PyDataMem_SetHandler(handler_capsule);
    if (!old) return NULL;
    PyObject *arr = PyArray_SimpleNew(ndim, (npy_intp *)dims, type_num);
    PyObject *mine = PyDataMem_SetHandler(old);
    Py_DECREF(old);
    if (!mine) {
        Py_XDECREF(arr);
        return NULL;
    }
    Py_DECREF(mine);
    return arr;
}

/* ---- _core.output_pool(): settings and counters ---- */

static PyObject *fn_output_pool(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    static char *kwlist[] = {"max_bytes", "min_bytes", "idle_s", "clear", NULL};
    Py_ssize_t max_bytes = -1, min_bytes = -1;
    double idle_s = -1;
    int clear = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$nndp:output_pool", kwlist, &max_bytes, &min_bytes, &idle_s,
                                     &clear))
        return NULL;
    slot victims[SLOTS];
    pthread_mutex_lock(&P.mu);
    if (max_bytes >= 0) __atomic_store_n(&P.max_bytes, (size_t)max_bytes, __ATOMIC_RELAXED);
    if (min_bytes >= 0) __atomic_store_n(&P.min_bytes, (size_t)min_bytes, __ATOMIC_RELAXED);
    if (idle_s >= 0) P.idle_s = idle_s < 1e6 ? idle_s : 1e6; /* the reaper's deadline stays a time_t */
    /* over the new bound, or cleared: everything goes (simple and rare) */
    const int nv = take_expired(victims, now_s(), clear || P.cached > P.max_bytes);
    pthread_cond_signal(&P.cv);
    PyObject *d = Py_BuildValue("{s:n,s:n,s:d,s:n,s:i,s:K,s:K,s:K,s:K,s:i}", "max_bytes", (Py_ssize_t)P.max_bytes,
                                "min_bytes", (Py_ssize_t)P.min_bytes, "idle_s", P.idle_s, "cached_bytes",
                                (Py_ssize_t)P.cached, "cached_blocks", P.n, "hits", P.hits, "misses", P.misses, "maps",
                                P.maps, "unmaps", P.unmaps, "reaper", P.reaper);
    pthread_mutex_unlock(&P.mu);
    unmap_all(victims, nv);
    return d;
}

PyMethodDef grid_py_outpool_functions[] = {
    {"output_pool", (PyCFunction)(void (*)(void))fn_output_pool, METH_VARARGS | METH_KEYWORDS,
     "output_pool(*, max_bytes=-1, min_bytes=-1, idle_s=-1, clear=False) -> dict\n\n"
     "The cache of freed output blocks behind fresh outputs of batched calls: sets what is given (>= 0) and returns\n"
     "the settings and counters (cached_bytes, cached_blocks, hits, misses, maps, unmaps, reaper). max_bytes bounds\n"
     "the cached bytes (0: off, outputs come from numpy's allocator); outputs below min_bytes always do; a block\n"
     "unused for idle_s seconds is unmapped; clear=True unmaps every cached block now."},
    {NULL, NULL, 0, NULL},
};
