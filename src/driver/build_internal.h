/* Private interfaces between the files of src/driver: files and locks, processes, toolchain, store. */
#ifndef GRID_BUILD_INTERNAL_H
#define GRID_BUILD_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>
#include "grid/build.h"
#include "buf.h"

#define GRID_PATH_CAP 4096
#define GRID_CACHE_FORMAT 1
/* a .tmp directory whose builder is gone is removed once it is this old (seconds) */
#define GRID_STALE_TMP_SECONDS 3600

/* the cache root is at most this long, so every path under it fits GRID_PATH_CAP */
#define GRID_ROOT_MAX 3800

/* ---- time ---- */
double grid_now(void);   /* monotonic seconds */

/* ---- numeric environment knobs (env_knobs.c) ---- */

/* *out = the value of the knob `name` (dflt when unset); GRID_ERR_ARG naming the variable, its value and the valid
   ones (what: what it sets) when it is not a number (whole: digits only; else digits[.digits]) in [lo, hi] */
int grid_env_number(const char *name, int whole, double lo, double hi, double dflt, const char *what, double *out,
                    grid_error *err);
/* GRID_RBD_BUILD_JOBS (0 when unset) and GRID_RBD_PROBE_TIMEOUT in ms (default GRID_PROBE_TIMEOUT_S) */
#define GRID_BUILD_JOBS_MAX 1024
#define GRID_PROBE_TIMEOUT_S 30
#define GRID_PROBE_TIMEOUT_MAX_S 3600
int grid_env_build_jobs(int *jobs, grid_error *err);
int grid_env_probe_timeout_ms(long *ms, grid_error *err);

/* ---- files (fsutil.c); failures set GRID_ERR_CACHE naming the path, errno text and the override hint ---- */

#define GRID_CACHE_HINT "set GRID_RBD_CACHE_DIR or pass cache_dir= to use a writable directory"
int grid_cache_error(grid_error *err, const char *what, const char *path, int errnum);
/* snprintf for paths: 0, or -1 when the result did not fit */
int grid_pathf(char *out, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* mkdir -p */
int grid_fs_mkdirs(const char *path, grid_error *err);
/* open a regular file for reading without ever blocking (O_NONBLOCK, then fstat of the open descriptor):
   the fd (O_NONBLOCK cleared, st filled when not NULL), or -errno; a FIFO, device or socket is -EINVAL,
   a directory -EISDIR */
struct stat;
int grid_fs_open_regular(const char *path, struct stat *st);
/* read caps (bytes): what a file of each kind may hold; a larger file is EFBIG, read at most cap + 1 bytes.
   meta.json, build_inputs.json and bykey pointers are small; the manifest grows with the names */
#define GRID_FS_META_MAX (1u << 20)
#define GRID_FS_MANIFEST_MAX (16u << 20)
#define GRID_FS_READ_MAX (64u << 20)   /* anything else read whole (logs, /proc files) */
/* a regular file, at most max bytes, into a malloc'd NUL-terminated buffer; 0 or an errno value
   (EINVAL: not a regular file, EFBIG: larger than max) */
int grid_fs_read_max(const char *path, size_t max, char **data, size_t *len);
/* grid_fs_read_max with GRID_FS_READ_MAX */
int grid_fs_read(const char *path, char **data, size_t *len);
/* create/truncate path with data, fsync, close */
int grid_fs_write(const char *path, const void *data, size_t len, grid_error *err);
/* write dir/.<name>.tmp-<pid>-<rand> then rename it over dir/name */
int grid_fs_write_atomic(const char *dir, const char *name, const void *data, size_t len, grid_error *err);
/* rm -rf; returns 0 or an errno value (a missing path is fine) */
int grid_fs_rmtree(const char *path);
/* SHA-256 of a regular file's bytes; returns 0 or an errno value; *size may be NULL */
int grid_fs_sha256_file(const char *path, char hex[65], long long *size);
/* the same from an open fd's position to its end, reading at most max + 1 bytes (EFBIG beyond max; max < 0:
   no cap) */
int grid_fs_sha256_fd(int fd, long long max, char hex[65], long long *size);
/* fsync a directory so a rename in it is durable (best effort) */
void grid_fs_sync_dir(const char *dir);
/* total bytes of the regular files under path (not following links) */
long long grid_fs_tree_bytes(const char *path);
/* open (creating) path and flock it; returns the fd or -1 with errno set; nonblock: -1/EWOULDBLOCK when held */
int grid_fs_lock(const char *path, int nonblock);
void grid_fs_unlock(int fd);
/* copy a file (best effort, for keeping a failed build's log) */
int grid_fs_copy(const char *from, const char *to);

/* ---- processes (spawn.c) ---- */

/* nonzero asks a waiting build to stop (checked about every 0.1 s) */
typedef int (*grid_cancel_fn)(void *ctx);

#define GRID_JOB_MAX_STEPS 32
#define GRID_JOB_MAX_STAGES 4

/* one program to run: argv[0] an absolute path, no shell; note is written to the output just before it starts */
typedef struct {
    char *const *argv;
    const char *note;
} grid_step;

/* Steps run in stages: the stage_len[0] first steps at most `jobs` at a time, the next stage only after every
   step of the one before exited 0, and so on. Every step runs in cwd (NULL: inherit) with stdin from /dev/null;
   stdout and stderr go to out_fd when >= 0, else into capture when not NULL (up to 1 MiB), else /dev/null.
   c_locale: LC_ALL=C. The steps run under a supervisor process: when the caller dies, cancels or the job ends,
   every process they started is killed and reaped (docs/cache.md, "Processes"). */
typedef struct {
    const grid_step *steps;
    int nstages;
    int stage_len[GRID_JOB_MAX_STAGES];
    int jobs;
    const char *cwd;
    int out_fd;
    grid_buf *capture;
    int c_locale;
    grid_cancel_fn cancel;  /* NULL: never cancelled */
    void *cancel_ctx;
    long timeout_ms;        /* > 0: stopped like a cancel once it has run this long (result.timed_out) */
} grid_job;

typedef struct {
    int start_errno;      /* a step could not be started: its errno (0: every step started) */
    int status;           /* wait status of the first step that failed; 0 when all exited 0 */
    int cancelled;        /* the cancel callback stopped the job */
    int timed_out;        /* the job ran past timeout_ms and was stopped */
    int supervisor_died;  /* the supervisor was killed from outside; status is its wait status */
} grid_job_result;

/* run a job; 0 with *r filled, or the errno of a failed set-up (no process is left running either way) */
int grid_run_job(const grid_job *job, grid_job_result *r);
/* run a probe (a job of one step, LC_ALL=C, output into capture): stopped with every process it started when cancel
   returns nonzero or after timeout_ms (> 0); 0 with *r filled (status, cancelled, timed_out), or the errno of a
   failed set-up or start */
int grid_spawn(char *const argv[], grid_buf *capture, long timeout_ms, grid_cancel_fn cancel, void *cancel_ctx,
               grid_job_result *r);
/* the absolute path of an executable: name with a '/' is checked as is (made absolute),
   a bare name is searched on $PATH; returns 0 or an errno value */
int grid_find_program(const char *name, char *out, size_t cap);

/* ---- toolchain (toolchain.c) ---- */

typedef struct {
    int target;                 /* grid_target */
    char compiler[GRID_PATH_CAP];       /* cc (C) or nvcc (CUDA): argv[0] */
    char compiler_version[512];
    char ccbin[GRID_PATH_CAP];          /* CUDA: host compiler passed to -ccbin */
    char ccbin_version[512];
    char cuda_arch[16];                 /* CUDA: "90", "90a", "120" */
    char source_name[16];               /* robot.c or robot.cu */
    char **argv;                        /* full compiler command, NULL-terminated */
    int argc;
    char *identity_json;                /* canonical JSON: what build_inputs.json holds */
    char *generation_env_json;          /* canonical JSON of the GRID_KNOB_GENERATE values */
    char display[256];                  /* short command for progress lines */
} grid_toolchain;

/* cancel (may be NULL) stops the compiler probes; GRID_ERR_CANCELLED then */
int grid_toolchain_resolve(int target, const char *cuda_arch, grid_cancel_fn cancel, void *cancel_ctx,
                           grid_toolchain *tc, grid_error *err);
void grid_toolchain_free(grid_toolchain *tc);
/* normalise "sm_90", "compute_90", "9.0", "90a" to "90"/"90a"; -1 when not an arch */
int grid_cuda_arch_normalize(const char *in, char out[16]);

/* ---- compiling (compile.c) ---- */

/* Compile dir/<source_name> into dir/robot.so, output to dir/robot.build.log; a split source compiles its
   parts at most grid_build_jobs() at a time. On failure copies the log to failed_log (when not NULL) and sets
   GRID_ERR_BUILD with the log tail (err->path: the kept log); GRID_ERR_CANCELLED when cancel stopped it. */
int grid_compile(const grid_toolchain *tc, const char *dir, const char *failed_log, double *seconds,
                 grid_cancel_fn cancel, void *cancel_ctx, grid_error *err);
/* compiler processes a build of `parts` parts runs at once: $GRID_RBD_BUILD_JOBS, else
   min(parts, usable CPUs, available memory / GRID_BUILD_JOB_BYTES), at least 1 */
#define GRID_BUILD_JOB_BYTES (512ll << 20)
int grid_build_jobs(int parts);

/* ---- the store (cache.c) ---- */

typedef struct {
    char root[GRID_PATH_CAP];
    char store[GRID_PATH_CAP];
    char bykey[GRID_PATH_CAP];
} grid_cache_dirs;

/* resolve the root and create root, store/ and bykey/ (a file or dangling link in the place of store/ or bykey/ is
   removed first) */
int grid_cache_open(const char *cache_dir, grid_cache_dirs *d, grid_error *err);
/* unlink path when it is neither a directory nor a link to one (never following a link): 1 removed, 0 nothing to do,
   -1 with errno */
int grid_cache_drop_non_directory(const char *path);
int grid_is_key(const char *s);   /* 64 lowercase hex digits */
/* content key of a stage-1 pointer, or -1 when absent or malformed */
int grid_cache_bykey_read(const grid_cache_dirs *d, const char *input_key, char content_key[65]);
int grid_cache_bykey_write(const grid_cache_dirs *d, const char *input_key, const char *content_key,
                           grid_error *err);
/* 0 when store/<key> is complete: build_inputs.json equals identity (when not NULL), meta.json
   records the SHA-256 of robot.so and the file matches; -1 otherwise */
int grid_cache_entry_verify(const grid_cache_dirs *d, const char *content_key, const char *identity);
/* the same; when complete and so_fd is not NULL, *so_fd is the open descriptor of the robot.so that was
   verified (at offset 0, the caller closes it), else -1 */
int grid_cache_entry_verify_fd(const grid_cache_dirs *d, const char *content_key, const char *identity, int *so_fd);
/* move store/<key> aside and delete it, whatever it is (a link is moved, not followed; caller holds the entry lock);
   0 or an errno value (a missing entry is 0) */
int grid_cache_entry_remove(const grid_cache_dirs *d, const char *content_key);
/* manifest.json: read a name's content key (-1 when absent); set or delete under manifest.lock */
int grid_cache_manifest_get(const grid_cache_dirs *d, const char *name, char content_key[65]);
int grid_cache_manifest_set(const grid_cache_dirs *d, const char *name, const char *content_key,
                            grid_error *err);
/* remove .tmp-* directories in store/ whose builder is gone and that are older than the limit */
void grid_cache_clean_stale(const grid_cache_dirs *d, double max_age_seconds);
/* remove the .tmp-<key>-<pid>-* directories of a killed builder of this key, whatever their age: the caller
   holds the key's lock, so no one else builds it, and the pid in the name is not a live process */
void grid_cache_clean_abandoned(const grid_cache_dirs *d, const char *content_key);
/* the manifest as parallel arrays (names[i] -> keys[i]); caller frees with grid_cache_manifest_free */
typedef struct {
    char **names;
    char **keys;
    int n;
} grid_manifest;
int grid_cache_manifest_load(const grid_cache_dirs *d, grid_manifest *m);
void grid_cache_manifest_free(grid_manifest *m);
int grid_cache_manifest_save(const grid_cache_dirs *d, const grid_manifest *m, grid_error *err);
int grid_cache_manifest_lock(const grid_cache_dirs *d, grid_error *err);

/* ---- the CUDA host runtime object (cuda_rt.c) ---- */

/* <root>/cuda-runtime/<key>/ holding the runtime's sources (src/runtime) and cuda_runtime.o compiled under tc,
   built once per toolchain (under <key>.lock; *compiled = 1 when this call compiled it). dir gets the path.
   GRID_ERR_BUILD with the log's tail (err->path: the kept log), GRID_ERR_CACHE, GRID_ERR_CANCELLED. */
int grid_cuda_runtime_ensure(const grid_cache_dirs *d, const grid_toolchain *tc, char *dir, size_t cap, int *compiled,
                             grid_cancel_fn cancel, void *cancel_ctx, grid_error *err);
/* tc's command for a CUDA robot.so that includes and links the runtime in dir (-I<dir> before -o,
   <dir>/cuda_runtime.o after the source), NULL-terminated, *argc words; NULL when out of memory */
char **grid_cuda_runtime_link_argv(const grid_toolchain *tc, const char *dir, int *argc);
void grid_cuda_runtime_free_argv(char **argv);

#endif
