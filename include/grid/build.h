/* Building a generated robot source into robot.so through the content-addressed cache (docs/cache.md). */
#ifndef GRID_BUILD_H
#define GRID_BUILD_H

#include <stddef.h>
#include <stdint.h>
#include "grid/error.h"
#include "grid/emit.h"
#include "grid/sha256.h" /* the keys are SHA-256 */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- build targets: grid_target (GRID_TARGET_C, GRID_TARGET_CUDA) comes from grid/abi.h ---- */

/* Produces the generated source: *source is malloc'd (grid_build frees it), *len its length.
   Return 0, or a grid_status with err set. */
typedef int (*grid_generate_fn)(void *ctx, char **source, size_t *len, grid_error *err);

/* One request to register a robot. Strings may be NULL where noted. */
typedef struct {
    const char *cache_dir;        /* NULL: $GRID_RBD_CACHE_DIR, $XDG_CACHE_HOME/grid-rbd, ~/.cache/grid-rbd */
    const char *name;             /* robot name for manifest.json and messages (NULL: "robot") */
    const void *urdf;             /* the URDF bytes, exactly as read */
    size_t urdf_len;
    const char *options_json;     /* canonical JSON of every option that changes generation (NULL: "{}") */
    const char *package_version;  /* grid-rbd version (NULL: "") */
    const char *generator_hash;   /* hash of the generator sources (NULL: "") */
    int target;                   /* a grid_target */
    const char *cuda_arch;        /* "90", "sm_90", "9.0" ...; NULL: $GRID_RBD_CUDA_ARCH, else nvidia-smi */
    int force_rebuild;            /* skip every reuse: always generate and compile */
    int verbose;                  /* 1: progress lines on stderr while generating/compiling (a hit is silent);
                                     2: also report hits. $GRID_RBD_VERBOSE=N raises it to N */
    grid_generate_fn generate;    /* called only on a stage-1 miss ... */
    void *generate_ctx;
    const char *source;           /* ... or, when generate is NULL, these bytes are the source */
    size_t source_len;
    int (*cancel)(void *ctx);     /* NULL, or checked about every 0.1 s while the build waits (for another
                                     builder's lock, for the compiler): nonzero stops it, the compilers are
                                     killed, the temporary removed, and grid_build returns GRID_ERR_CANCELLED */
    void *cancel_ctx;
    int (*check)(void *ctx, const char *so_path, grid_error *err); /* NULL, or run on a freshly compiled
                                     robot.so (in the temporary entry, before meta.json): nonzero refuses it, the
                                     temporary is removed and grid_build returns that status (a hit is not
                                     checked again) */
    void *check_ctx;
    int keep_so_fd;               /* 1: res->so_fd is the open descriptor of the robot.so that was verified,
                                     for grid_lib_open_fd (a concurrent clear cannot remove it in between) */
} grid_build_request;

/* What grid_build did. Paths are absolute. */
typedef struct {
    char so_path[4096];           /* <root>/store/<content_key>/robot.so */
    char entry_dir[4096];         /* <root>/store/<content_key> */
    char content_key[65];
    char input_key[65];
    int cache_hit;                /* 1: stage-1 hit, nothing generated or compiled */
    int compiled;                 /* 1: this call ran the compiler */
    double seconds_total;
    double seconds_generate;
    double seconds_compile;
    int so_fd;                    /* with req->keep_so_fd: the verified robot.so, open read-only (the caller
                                     closes it); -1 otherwise and on any error */
} grid_build_result;

/* Look up, generate and compile as needed; res->so_path names a verified robot.so.
   Errors: GRID_ERR_BUILD (compiler missing or failing, message holds the log tail),
   GRID_ERR_CACHE (cache directory unusable, message names path and errno),
   GRID_ERR_ARG, GRID_ERR_NOMEM, GRID_ERR_CANCELLED, or the status of the generate callback.
   err->path names the kept compiler log (GRID_ERR_BUILD after a failing compile) or the path that failed
   (GRID_ERR_CACHE); err->hint says how to fix a missing compiler or an unusable cache.
   Compilers run under a supervisor process and never outlive the caller (docs/cache.md, "Processes"). */
int grid_build(const grid_build_request *req, grid_build_result *res, grid_error *err);

/* ---- build identity ---- */

/* The canonical JSON of the toolchain identity for a target (what build_inputs.json holds):
   compiler path + version, flags, host arch (CPU model when -march=native), nvcc + CUDA arch.
   *json is malloc'd; free with grid_build_free. */
int grid_build_identity_json(int target, const char *cuda_arch, char **json, grid_error *err);

/* The resolved cache root (no directory is created). */
int grid_cache_root(const char *cache_dir, char *out, size_t cap, grid_error *err);

/* ---- cache administration (results are JSON strings, free with grid_build_free) ---- */

/* JSON array, one object per store entry:
   {"content_key","names":[...],"name","path","size_bytes","so_bytes","target","dtype","created","complete"} */
int grid_cache_list_json(const char *cache_dir, char **json, grid_error *err);

/* JSON object for the entry a manifest name (or a unique content-key prefix of 8+ hex digits) names:
   the list fields plus "meta" (meta.json), "build_inputs" (build_inputs.json) and "input_keys".
   GRID_ERR_ARG when nothing matches. */
int grid_cache_info_json(const char *cache_dir, const char *name_or_key, char **json, grid_error *err);

/* Remove one name (its manifest entry, and its store entry plus pointers when no other name uses it),
   or everything when name is NULL. *removed (may be NULL) = store entries removed. */
int grid_cache_clear(const char *cache_dir, const char *name, int *removed, grid_error *err);

void grid_build_free(void *p);

/* ---- environment knobs: the one table of every variable the library reads ---- */

typedef enum {
    GRID_KNOB_BUILD = 0,      /* changes the compile: reflected in the build identity */
    GRID_KNOB_GENERATE = 1,   /* changes generated bytes: its value is part of the stage-1 key */
    GRID_KNOB_LOCATION = 2,   /* where the cache lives: not part of any key */
    GRID_KNOB_RUNTIME = 3     /* messages or run-time behaviour only: not part of any key */
} grid_env_knob_kind;

typedef struct {
    const char *name;
    int kind;                 /* a grid_env_knob_kind */
    const char *doc;
} grid_env_knob;

int grid_env_knob_count(void);
const grid_env_knob *grid_env_knob_at(int i);
/* getenv(name) for a name in the table, NULL for an unset, empty or unlisted name */
const char *grid_env(const char *name);

#ifdef __cplusplus
}
#endif
#endif
