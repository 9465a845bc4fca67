/* The CUDA host runtime object: the embedded sources (src/runtime) written out and compiled once per toolchain into <root>/cuda-runtime/<key>/, which every CUDA robot.so includes (-I) and links. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "grid/runtime.h"
#include "build_internal.h"

#define RT_SOURCE "cuda_runtime.cu"
#define RT_OBJECT "cuda_runtime.o"
#define RT_STAMP "object.sha256"   /* written last: the entry is complete when it names the object's hash */

/* 1 when dir holds a complete runtime entry */
static int entry_ok(const char *dir)
{
    char path[GRID_PATH_CAP], have[65], *stamp = NULL;
    size_t len = 0;
    if (grid_pathf(path, sizeof path, "%s/%s", dir, RT_STAMP) || grid_fs_read(path, &stamp, &len)) return 0;
    int ok = len >= 64 && grid_pathf(path, sizeof path, "%s/%s", dir, RT_OBJECT) == 0 &&
             grid_fs_sha256_file(path, have, NULL) == 0 && memcmp(stamp, have, 64) == 0;
    free(stamp);
    return ok;
}

/* the embedded sources into dir (grid/abi.h in its subdirectory) */
static int write_sources(const char *dir, grid_error *err)
{
    const grid_source_file *f;
    const int n = grid_cuda_runtime_sources(&f);
    for (int i = 0; i < n; i++) {
        char path[GRID_PATH_CAP];
        if (grid_pathf(path, sizeof path, "%s/%s", dir, f[i].path))
            return grid_cache_error(err, "write the CUDA runtime into", dir, ENAMETOOLONG);
        char *slash = strrchr(path, '/');
        *slash = '\0';
        int rc = grid_fs_mkdirs(path, err);
        *slash = '/';
        if (rc || (rc = grid_fs_write(path, f[i].text, f[i].len, err))) return rc;
    }
    return GRID_OK;
}

/* the compile of the runtime, from tc's robot command: -shared -> -c, robot.so -> the object, robot.cu -> the
   runtime source, -I. before -o; NULL when out of memory (free with free_argv) */
static char **runtime_argv(const grid_toolchain *tc)
{
    char **a = calloc((size_t)tc->argc + 3, sizeof *a);
    if (!a) return NULL;
    int k = 0, bad = 0;
    for (int i = 0; i < tc->argc; i++) {
        const char *w = tc->argv[i];
        if (strcmp(w, "-o") == 0) bad |= !(a[k++] = strdup("-I."));
        if (strcmp(w, "-shared") == 0) w = "-c";
        else if (i > 0 && strcmp(tc->argv[i - 1], "-o") == 0) w = RT_OBJECT;
        else if (strcmp(w, tc->source_name) == 0) w = RT_SOURCE;
        bad |= !(a[k++] = strdup(w));
    }
    if (bad) {
        grid_cuda_runtime_free_argv(a);
        return NULL;
    }
    return a;
}

void grid_cuda_runtime_free_argv(char **argv)
{
    for (int i = 0; argv && argv[i]; i++) free(argv[i]);
    free(argv);
}

char **grid_cuda_runtime_link_argv(const grid_toolchain *tc, const char *dir, int *argc)
{
    char **a = calloc((size_t)tc->argc + 3, sizeof *a);
    if (!a) return NULL;
    int k = 0, bad = 0;
    char word[GRID_PATH_CAP + 8];
    for (int i = 0; i < tc->argc; i++) {
        if (strcmp(tc->argv[i], "-o") == 0) {
            snprintf(word, sizeof word, "-I%s", dir);
            bad |= !(a[k++] = strdup(word));
        }
        bad |= !(a[k++] = strdup(tc->argv[i]));
        if (strcmp(tc->argv[i], tc->source_name) == 0) {
            snprintf(word, sizeof word, "%s/%s", dir, RT_OBJECT);
            bad |= !(a[k++] = strdup(word));
        }
    }
    if (bad) {
        grid_cuda_runtime_free_argv(a);
        return NULL;
    }
    *argc = k;
    return a;
}

/* the last bytes of a log, for the message */
static void log_tail(const char *log, char *out, size_t cap)
{
    char *text = NULL;
    size_t len = 0;
    out[0] = '\0';
    if (grid_fs_read(log, &text, &len) != 0) return;
    const size_t keep = len < cap - 1 ? len : cap - 1;
    snprintf(out, cap, "%s", text + (len - keep));
    free(text);
}

/* compile into a fresh directory beside dir and publish it as dir (the caller holds the key's lock) */
static int build(const char *root, const char *key, const char *dir, const grid_toolchain *tc, grid_cancel_fn cancel,
                 void *cancel_ctx, grid_error *err)
{
    char tmp[GRID_PATH_CAP], log[GRID_PATH_CAP], path[GRID_PATH_CAP], failed[GRID_PATH_CAP];
    if (grid_pathf(tmp, sizeof tmp, "%s/.tmp-%s-%ld-XXXXXX", root, key, (long)getpid()) ||
        grid_pathf(failed, sizeof failed, "%s/%s.failed.log", root, key))
        return grid_cache_error(err, "create a directory in", root, ENAMETOOLONG);
    if (!mkdtemp(tmp)) return grid_cache_error(err, "create a directory in", root, errno);
    chmod(tmp, 0755);
    int rc = write_sources(tmp, err);
    char **argv = rc ? NULL : runtime_argv(tc);
    if (!rc && !argv) rc = grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory preparing the CUDA runtime compile");
    int fd = -1;
    if (!rc) {
        grid_pathf(log, sizeof log, "%s/build.log", tmp);
        fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) rc = grid_cache_error(err, "create build log", log, errno);
    }
    if (!rc) {
        grid_buf note;
        grid_buf_init(&note);
        grid_buf_puts(&note, "# grid-rbd CUDA host runtime, once per toolchain; command (run in this directory):\n#");
        for (int i = 0; argv[i]; i++) {
            grid_buf_puts(&note, " ");
            grid_buf_puts(&note, argv[i]);
        }
        grid_buf_puts(&note, "\n");
        grid_step step = {argv, note.data};
        grid_job job;
        memset(&job, 0, sizeof job);
        job.steps = &step;
        job.nstages = 1;
        job.stage_len[0] = 1;
        job.jobs = 1;
        job.cwd = tmp;
        job.out_fd = fd;
        job.cancel = cancel;
        job.cancel_ctx = cancel_ctx;
        grid_job_result jr;
        memset(&jr, 0, sizeof jr);
        int e = note.oom ? ENOMEM : grid_run_job(&job, &jr);
        if (!e) e = jr.start_errno;
        grid_buf_free(&note);
        close(fd);
        if (jr.cancelled) {
            rc = grid_error_set(err, GRID_ERR_CANCELLED, 0, 0, "compiling the CUDA host runtime was cancelled");
        } else if (e) {
            rc = grid_error_set(err, GRID_ERR_BUILD, 0, 0, "could not run the compiler '%s' for the CUDA host runtime: %s",
                                tc->compiler, strerror(e));
        } else if (!WIFEXITED(jr.status) || WEXITSTATUS(jr.status) != 0) {
            char tail[700];
            grid_fs_copy(log, failed);
            log_tail(log, tail, sizeof tail);
            rc = grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                                "compiling the CUDA host runtime (src/runtime/cuda_runtime.cu) with %s failed (%s %d); "
                                "full log: %s; last lines:\n%s", tc->display, WIFEXITED(jr.status) ? "exit status" : "signal",
                                WIFEXITED(jr.status) ? WEXITSTATUS(jr.status) : WTERMSIG(jr.status), failed, tail);
            grid_error_path(err, failed);
        }
    }
    grid_cuda_runtime_free_argv(argv);
    /* the stamp last, then the rename publishes the entry */
    char hex[65];
    if (!rc) {
        grid_pathf(path, sizeof path, "%s/%s", tmp, RT_OBJECT);
        int e = grid_fs_sha256_file(path, hex, NULL);
        if (e) rc = grid_cache_error(err, "read", path, e);
    }
    if (!rc) {
        grid_pathf(path, sizeof path, "%s/%s", tmp, RT_STAMP);
        rc = grid_fs_write(path, hex, 64, err);
    }
    if (!rc) {
        grid_fs_rmtree(dir); /* an incomplete entry */
        if (rename(tmp, dir) != 0) rc = grid_cache_error(err, "publish the CUDA runtime", dir, errno);
        else unlink(failed);
    }
    if (rc) grid_fs_rmtree(tmp);
    return rc;
}

int grid_cuda_runtime_ensure(const grid_cache_dirs *d, const grid_toolchain *tc, char *dir, size_t cap, int *compiled,
                             grid_cancel_fn cancel, void *cancel_ctx, grid_error *err)
{
    *compiled = 0;
    /* the key: the toolchain identity, which names the runtime's sources by their hash */
    unsigned char digest[32];
    char key[65], root[GRID_PATH_CAP], lock_path[GRID_PATH_CAP];
    grid_sha256_ctx c;
    grid_sha256_init(&c);
    grid_sha256_update(&c, "grid-rbd cuda runtime entry v1\n", 31);
    grid_sha256_update(&c, tc->identity_json, strlen(tc->identity_json));
    grid_sha256_final(&c, digest);
    grid_sha256_hex(digest, key);
    if (grid_pathf(root, sizeof root, "%s/cuda-runtime", d->root) || grid_pathf(dir, cap, "%s/%s", root, key) ||
        grid_pathf(lock_path, sizeof lock_path, "%s/%s.lock", root, key))
        return grid_cache_error(err, "use", d->root, ENAMETOOLONG);
    if (entry_ok(dir)) return GRID_OK;
    int rc = grid_fs_mkdirs(root, err);
    if (rc) return rc;
    /* one builder per key; the others wait (checking cancel every 0.1 s) and find it built */
    int lock;
    while ((lock = grid_fs_lock(lock_path, 1)) < 0 && (errno == EWOULDBLOCK || errno == EAGAIN)) {
        if (cancel && cancel(cancel_ctx))
            return grid_error_set(err, GRID_ERR_CANCELLED, 0, 0, "cancelled while waiting for the CUDA host runtime");
        struct timespec tick = {0, 100000000L};
        nanosleep(&tick, NULL);
    }
    if (lock < 0) return grid_cache_error(err, "lock", lock_path, errno);
    if (!entry_ok(dir)) {
        rc = build(root, key, dir, tc, cancel, cancel_ctx, err);
        *compiled = rc == GRID_OK;
    }
    grid_fs_unlock(lock);
    return rc;
}
