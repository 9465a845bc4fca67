/* The build identity: which compiler, version, flags, host CPU and CUDA arch a robot.so is built with. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include "grid/runtime.h"
#include "build_internal.h"
#include "json.h"

/* ---- every compiler flag lives here ---- */

/* CPU: cc <tuning> <required> -o robot.so robot.c <libs>; GRID_RBD_CFLAGS replaces the tuning part */
static const char *const c_tuning_default[] = {"-O2", "-march=native", "-ffp-contract=fast", "-fno-math-errno",
                                               "-fopenmp", NULL};
/* gcc only: these cut its compile time of long straight-line functions by about a quarter at no run-time
   cost (docs/emitter.md); skipped for clang */
static const char *const c_tuning_gcc_extra[] = {"-fno-schedule-insns2", "--param=max-combine-insns=2",
                                                 "-fno-tree-pre", "-fno-dse", "-fno-tree-dse", NULL};
static const char *const c_required[] = {"-std=gnu11", "-fPIC", "-shared", NULL};
/* the output size from which a batch call streams its outputs past the caches (src/emit/lane_store.h), per CPU
   vendor, from bench/stream_ab.py: on Intel (Sapphire Rapids, 2 MiB L2) streaming wins from about 0.5 MiB (B = 256
   of go2's M: 0.80x the cached time; 0.4 MiB of atlas: 1.46x), on AMD (Zen 3) only past 8 MiB (2.5 MiB of g1: 1.2x,
   10 MiB: 0.7x), the header's default; added to the default tuning flags only */
static const struct {
    const char *vendor;
    const char *flag;
} c_stream_threshold[] = {{"GenuineIntel", "-DGRID_STREAM_MIN_BYTES=524288"}, {NULL, NULL}};
static const char *const c_libs[] = {"-lm", NULL};
/* CUDA: nvcc -ccbin <cc> -arch=sm_XX <tuning> <required> -o robot.so robot.cu; GRID_RBD_NVCC_FLAGS replaces
   the tuning part (no --use_fast_math: accuracy first) */
static const char *const cuda_tuning_default[] = {"-O3", NULL};
static const char *const cuda_required[] = {"-shared", "-Xcompiler", "-fPIC", NULL};

/* ---- per-process memo of slow probes (the one piece of global mutable state, mutex-guarded):
   a compiler's --version keyed by its path and file identity, the CPU description, the GPU arch ---- */

typedef struct {
    char path[GRID_PATH_CAP];
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
    char version[512];
} version_memo;

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static version_memo memo_versions[8];
static int memo_versions_n, memo_versions_next;
static int memo_cpu_done;
static char memo_cpu[256], memo_cpu_flags[65];
static int memo_arch_done;
static char memo_arch[16];

static int same_file(const version_memo *m, const char *path, const struct stat *st)
{
    return strcmp(m->path, path) == 0 && m->dev == st->st_dev && m->ino == st->st_ino &&
           m->size == st->st_size && m->mtime.tv_sec == st->st_mtim.tv_sec &&
           m->mtime.tv_nsec == st->st_mtim.tv_nsec && m->ctime.tv_sec == st->st_ctim.tv_sec &&
           m->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* first (or last) non-empty line of text into out */
static void pick_line(const char *text, int last, char *out, size_t cap)
{
    out[0] = '\0';
    const char *p = text;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' ')) n--;
        if (n) {
            snprintf(out, cap, "%.*s", (int)n, p);
            if (!last) return;
        }
        p = nl ? nl + 1 : NULL;
    }
}

/* set the hint of the GRID_ERR_BUILD just set and return that status */
static int with_hint(grid_error *err, const char *hint)
{
    grid_error_hint(err, hint);
    return GRID_ERR_BUILD;
}

/* how long a probe may run and what stops it (Ctrl-C in Python) */
typedef struct {
    long timeout_ms;
    grid_cancel_fn cancel;
    void *cancel_ctx;
} probe_ctl;

/* "<path> --version": first line (cc) or last line (nvcc), memoised per file identity; env names the variable
   that picks this compiler. A probe that runs past the time limit (a ccache or distcc wrapper stuck on a lock, a
   licence server, NFS) is killed with everything it started and is a GRID_ERR_BUILD naming the compiler. */
static int program_version(const char *path, int last_line, const char *env, const probe_ctl *pc, char *out,
                           size_t cap, grid_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return grid_error_set(err, GRID_ERR_BUILD, 0, 0, "cannot stat compiler '%s': %s", path, strerror(errno));
    pthread_mutex_lock(&memo_lock);
    for (int i = 0; i < memo_versions_n; i++) {
        if (same_file(&memo_versions[i], path, &st)) {
            snprintf(out, cap, "%s", memo_versions[i].version);
            pthread_mutex_unlock(&memo_lock);
            return GRID_OK;
        }
    }
    pthread_mutex_unlock(&memo_lock);

    /* run it with LC_ALL=C so the text does not depend on the locale */
    char *argv[] = {(char *)path, "--version", NULL};
    grid_buf text;
    grid_buf_init(&text);
    grid_job_result jr;
    int rc = grid_spawn(argv, &text, pc->timeout_ms, pc->cancel, pc->cancel_ctx, &jr);
    if (!rc && jr.cancelled) {
        grid_buf_free(&text);
        return grid_error_set(err, GRID_ERR_CANCELLED, 0, 0, "cancelled while running '%s --version'", path);
    }
    if (!rc && jr.timed_out) {
        grid_buf_free(&text);
        grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                       "'%s --version' did not finish within %g s (GRID_RBD_PROBE_TIMEOUT), so it was killed: the "
                       "compiler, or a wrapper around it (ccache, distcc) or a licence server or network file system "
                       "it waits on, seems stuck; fix it, set %s to a working compiler, or raise GRID_RBD_PROBE_TIMEOUT",
                       path, (double)pc->timeout_ms / 1000, env);
        char hint[200];
        snprintf(hint, sizeof hint, "set %s to a working compiler, or raise GRID_RBD_PROBE_TIMEOUT (seconds)", env);
        return with_hint(err, hint);
    }
    if (rc || !WIFEXITED(jr.status) || WEXITSTATUS(jr.status) != 0 || text.oom) {
        grid_buf_free(&text);
        grid_error_set(err, GRID_ERR_BUILD, 0, 0, "'%s --version' failed (%s); is it a working compiler? Set %s to one",
                       path, rc ? strerror(rc) : "nonzero exit status", env);
        char hint[200];
        snprintf(hint, sizeof hint, "set %s to a working compiler", env);
        return with_hint(err, hint);
    }
    pick_line(text.data ? text.data : "", last_line, out, cap);
    grid_buf_free(&text);
    if (!out[0]) snprintf(out, cap, "unknown");

    pthread_mutex_lock(&memo_lock);
    version_memo *m = &memo_versions[memo_versions_next];
    memo_versions_next = (memo_versions_next + 1) % 8;
    if (memo_versions_n < 8) memo_versions_n++;
    snprintf(m->path, sizeof m->path, "%s", path);
    m->dev = st.st_dev;
    m->ino = st.st_ino;
    m->size = st.st_size;
    m->mtime = st.st_mtim;
    m->ctime = st.st_ctim;
    snprintf(m->version, sizeof m->version, "%s", out);
    pthread_mutex_unlock(&memo_lock);
    return GRID_OK;
}

/* the value of "key<ws>: value" when line starts with key */
static const char *cpuinfo_value(const char *line, const char *key)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0) return NULL;
    const char *p = line + n;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

/* CPU model and a hash of its feature flags: what -march=native resolves from (first processor) */
static void cpu_identity(const char *compiler, const probe_ctl *pc, char cpu[256], char flags_hex[65])
{
    pthread_mutex_lock(&memo_lock);
    if (memo_cpu_done) {
        memcpy(cpu, memo_cpu, 256);
        memcpy(flags_hex, memo_cpu_flags, 65);
        pthread_mutex_unlock(&memo_lock);
        return;
    }
    pthread_mutex_unlock(&memo_lock);

    grid_buf desc, feats;
    grid_buf_init(&desc);
    grid_buf_init(&feats);
    char *info = NULL;
    size_t len = 0;
    if (grid_fs_read("/proc/cpuinfo", &info, &len) == 0) {
        static const char *const desc_keys[] = {"vendor_id", "cpu family", "model", "model name",
                                                "CPU implementer", "CPU architecture", "CPU variant",
                                                "CPU part", "isa", "uarch", NULL};
        char *save = NULL;
        int processors_seen = 0;
        for (char *line = strtok_r(info, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            /* the first processor block only (strtok skips blank lines, so stop at the second "processor") */
            if (cpuinfo_value(line, "processor")) {
                if (processors_seen++) break;
                continue;
            }
            const char *v;
            for (int k = 0; desc_keys[k]; k++)
                if ((v = cpuinfo_value(line, desc_keys[k]))) grid_buf_printf(&desc, "%s%s", desc.len ? "; " : "", v);
            if ((v = cpuinfo_value(line, "flags")) || (v = cpuinfo_value(line, "Features")))
                grid_buf_puts(&feats, v);
        }
        free(info);
    }
    /* no /proc/cpuinfo: ask the compiler what native means */
    if (!desc.len && !feats.len) {
        char *argv[] = {(char *)compiler, "-march=native", "-Q", "--help=target", NULL};
        grid_buf text;
        grid_buf_init(&text);
        grid_job_result jr;
        if (grid_spawn(argv, &text, pc->timeout_ms, pc->cancel, pc->cancel_ctx, &jr) == 0 && !jr.cancelled &&
            !jr.timed_out && text.data) {
            const char *m = strstr(text.data, "-march=");
            if (m) {
                char line[200];
                pick_line(m, 0, line, sizeof line);
                grid_buf_puts(&desc, line);
            }
            grid_buf_put(&feats, text.data, text.len);
        }
        grid_buf_free(&text);
    }
    snprintf(cpu, 256, "%s", desc.len && desc.data ? desc.data : "unknown");
    unsigned char d[32];
    grid_sha256(feats.data ? feats.data : "", feats.len, d);
    grid_sha256_hex(d, flags_hex);
    grid_buf_free(&desc);
    grid_buf_free(&feats);

    pthread_mutex_lock(&memo_lock);
    memcpy(memo_cpu, cpu, 256);
    memcpy(memo_cpu_flags, flags_hex, 65);
    memo_cpu_done = 1;
    pthread_mutex_unlock(&memo_lock);
}

int grid_cuda_arch_normalize(const char *in, char out[16])
{
    if (!in) return -1;
    while (*in == ' ') in++;
    if (strncmp(in, "sm_", 3) == 0) in += 3;
    else if (strncmp(in, "compute_", 8) == 0) in += 8;
    char digits[8];
    size_t n = 0;
    const char *p = in;
    /* "9.0" / "12.0" style (nvidia-smi compute_cap) or "90" / "120" */
    for (; *p && n < 4; p++) {
        if (*p >= '0' && *p <= '9') digits[n++] = *p;
        else if (*p != '.') break;
    }
    if (n < 2 || n > 3) return -1;
    digits[n] = '\0';
    char suffix = 0;
    if (*p == 'a' || *p == 'f') suffix = *p++;
    while (*p == ' ' || *p == '\n' || *p == '\r') p++;
    if (*p) return -1;
    snprintf(out, 16, "%s%s", digits, suffix == 'a' ? "a" : suffix == 'f' ? "f" : "");
    return 0;
}

/* the compute capability of GPU 0 from nvidia-smi, memoised; -1 when there is none, -2 when nvidia-smi ran past the
   time limit, -3 when cancelled (neither memoised) */
static int detect_cuda_arch(const probe_ctl *pc, char out[16])
{
    pthread_mutex_lock(&memo_lock);
    if (memo_arch_done) {
        memcpy(out, memo_arch, 16);
        pthread_mutex_unlock(&memo_lock);
        return out[0] ? 0 : -1;
    }
    pthread_mutex_unlock(&memo_lock);

    char smi[GRID_PATH_CAP];
    out[0] = '\0';
    if (grid_find_program("nvidia-smi", smi, sizeof smi) == 0 ||
        grid_find_program("/usr/bin/nvidia-smi", smi, sizeof smi) == 0) {
        char *argv[] = {smi, "--query-gpu=compute_cap", "--format=csv,noheader", NULL};
        grid_buf text;
        grid_buf_init(&text);
        grid_job_result jr;
        int rc = grid_spawn(argv, &text, pc->timeout_ms, pc->cancel, pc->cancel_ctx, &jr);
        if (rc == 0 && (jr.timed_out || jr.cancelled)) {
            grid_buf_free(&text);
            return jr.cancelled ? -3 : -2;
        }
        if (rc == 0 && WIFEXITED(jr.status) && WEXITSTATUS(jr.status) == 0 && text.data) {
            char line[64];
            pick_line(text.data, 0, line, sizeof line);
            if (grid_cuda_arch_normalize(line, out) != 0) out[0] = '\0';
        }
        grid_buf_free(&text);
    }
    pthread_mutex_lock(&memo_lock);
    memcpy(memo_arch, out, 16);
    memo_arch_done = 1;
    pthread_mutex_unlock(&memo_lock);
    return out[0] ? 0 : -1;
}

/* the C compiler: $GRID_RBD_CC, else cc on PATH */
static int resolve_c_compiler(char *out, size_t cap, grid_error *err)
{
    const char *env = grid_env("GRID_RBD_CC");
    int e = grid_find_program(env ? env : "cc", out, cap);
    if (e == 0) return GRID_OK;
    if (env) {
        grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                       "C compiler '%s' (from GRID_RBD_CC) not found or not executable: %s; set "
                       "GRID_RBD_CC to a working C compiler (gcc or clang) or unset it to use cc on PATH",
                       env, strerror(e));
        return with_hint(err, "set GRID_RBD_CC to a working C compiler (gcc or clang) or unset it");
    }
    const char *path = grid_env("PATH");
    grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                   "C compiler 'cc' not found on PATH (%.200s); install gcc or clang (e.g. apt-get "
                   "install gcc) or set GRID_RBD_CC=/path/to/compiler", path ? path : "unset");
    return with_hint(err, "install gcc or clang (e.g. apt-get install gcc) or set GRID_RBD_CC=/path/to/compiler");
}

/* nvcc: $GRID_RBD_NVCC, else nvcc on PATH, else /usr/local/cuda/bin/nvcc */
static int resolve_nvcc(char *out, size_t cap, grid_error *err)
{
    const char *env = grid_env("GRID_RBD_NVCC");
    if (env) {
        int e = grid_find_program(env, out, cap);
        if (e == 0) return GRID_OK;
        grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                       "nvcc '%s' (from GRID_RBD_NVCC) not found or not executable: %s; set "
                       "GRID_RBD_NVCC to the CUDA compiler or unset it", env, strerror(e));
        return with_hint(err, "set GRID_RBD_NVCC to the CUDA compiler or unset it");
    }
    if (grid_find_program("nvcc", out, cap) == 0 || grid_find_program("/usr/local/cuda/bin/nvcc", out, cap) == 0)
        return GRID_OK;
    grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                   "nvcc not found (looked on PATH and at /usr/local/cuda/bin/nvcc); install the CUDA "
                   "toolkit or set GRID_RBD_NVCC=/path/to/nvcc");
    return with_hint(err, "install the CUDA toolkit or set GRID_RBD_NVCC=/path/to/nvcc");
}

/* nvcc's host compiler: $GRID_RBD_NVCC_CCBIN, else g++, c++ or clang++ on PATH */
static int resolve_cuda_host(char *out, size_t cap, grid_error *err)
{
    const char *env = grid_env("GRID_RBD_NVCC_CCBIN");
    if (env) {
        int e = grid_find_program(env, out, cap);
        if (e == 0) return GRID_OK;
        return grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                              "host compiler '%s' (from GRID_RBD_NVCC_CCBIN) not found or not executable: %s",
                              env, strerror(e));
    }
    static const char *const drivers[] = {"g++", "c++", "clang++", NULL};
    for (int i = 0; drivers[i]; i++)
        if (grid_find_program(drivers[i], out, cap) == 0) return GRID_OK;
    grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                   "no C++ host compiler for nvcc (looked for g++, c++, clang++ on PATH); install g++ or "
                   "set GRID_RBD_NVCC_CCBIN=/path/to/g++");
    return with_hint(err, "install g++ or set GRID_RBD_NVCC_CCBIN=/path/to/g++");
}

/* append a NULL-terminated list, or the whitespace-separated words of override when it is set */
static int argv_add(char ***argv, int *argc, const char *word)
{
    char **a = realloc(*argv, (size_t)(*argc + 2) * sizeof *a);
    if (!a) return -1;
    *argv = a;
    if (!(a[*argc] = strdup(word))) return -1;
    a[++*argc] = NULL;
    return 0;
}

static int argv_add_flags(char ***argv, int *argc, const char *const *defaults, const char *override)
{
    if (!override) {
        for (int i = 0; defaults[i]; i++)
            if (argv_add(argv, argc, defaults[i])) return -1;
        return 0;
    }
    const char *p = override;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
        size_t n = strcspn(p, " \t\n");
        if (!n) break;
        char word[1024];
        snprintf(word, sizeof word, "%.*s", (int)(n < sizeof word ? n : sizeof word - 1), p);
        if (argv_add(argv, argc, word)) return -1;
        p += n;
    }
    return 0;
}

/* the most words GRID_RBD_CFLAGS / GRID_RBD_NVCC_FLAGS may hold (the compile steps pass at most 128 words in
   all) and the longest word */
#define GRID_MAX_FLAG_WORDS 64
#define GRID_MAX_FLAG_CHARS 1000

/* flags that let the compiler change floating-point results (matched anywhere in a word, so
   -Xcompiler=-ffast-math is caught too), and why each is refused */
static const struct {
    const char *pattern, *why;
} unsafe_flags[] = {
    {"fast-math", "reorders and contracts floating-point operations and assumes no NaN or infinity"},
    {"fast_math", "(nvcc) approximate division, square root and transcendentals, flushed denormals"},
    {"-Ofast", "implies -ffast-math"},
    {"associative-math", "reassociates sums, breaking the exact cancellations the generated code relies on"},
    {"reciprocal-math", "replaces divisions by approximate reciprocals"},
    {"finite-math-only", "assumes no NaN or infinity, so NaN inputs no longer give NaN outputs"},
    {"unsafe-math-optimizations", "implies -fassociative-math and -freciprocal-math"},
    {"no-signed-zeros", "folds x * 0 and x - x to 0, which turns NaN and infinity into finite numbers"},
    {"prec-div=false", "(nvcc) approximate division"},
    {"prec-sqrt=false", "(nvcc) approximate square root"},
};

/* GRID_OK, or GRID_ERR_ARG when the override (env's value) is too long or holds a flag that breaks the numbers */
static int check_flags(const char *env, const char *value, grid_error *err)
{
    if (!value) return GRID_OK;
    int words = 0;
    for (const char *p = value; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
        const size_t n = strcspn(p, " \t\n");
        if (!n) break;
        if (++words > GRID_MAX_FLAG_WORDS)
            return grid_error_set(err, GRID_ERR_ARG, 0, 0, "%s has more than %d words; pass at most %d flags", env,
                                  GRID_MAX_FLAG_WORDS, GRID_MAX_FLAG_WORDS);
        if (n > GRID_MAX_FLAG_CHARS)
            return grid_error_set(err, GRID_ERR_ARG, 0, 0, "%s has a word of %zu characters; the limit is %d", env, n,
                                  GRID_MAX_FLAG_CHARS);
        for (size_t u = 0; u < sizeof unsafe_flags / sizeof unsafe_flags[0]; u++) {
            const char *hit = strstr(p, unsafe_flags[u].pattern);
            if (hit && hit < p + n)
                return grid_error_set(err, GRID_ERR_ARG, 0, 0,
                                      "%s contains '%.*s', which %s: the generated dynamics would return wrong numbers; "
                                      "remove it (the default flags are already the fastest safe ones, docs/emitter.md)",
                                      env, (int)n, p, unsafe_flags[u].why);
        }
        p += n;
    }
    return GRID_OK;
}

static int argv_uses_native(char *const *argv)
{
    for (int i = 0; argv[i]; i++)
        if (strstr(argv[i], "=native")) return 1;
    return 0;
}

/* the JSON object with the canonical identity of tc */
static char *identity_json(const grid_toolchain *tc, const probe_ctl *pc)
{
    grid_json_obj o;
    grid_json_obj_init(&o);
    grid_buf arr;
    grid_buf_init(&arr);
    grid_buf_put(&arr, "[", 1);
    for (int i = 0; i < tc->argc; i++) {
        if (i) grid_buf_put(&arr, ",", 1);
        grid_json_put_string(&arr, tc->argv[i], strlen(tc->argv[i]));
    }
    grid_buf_put(&arr, "]", 1);
    char *argv_json = grid_buf_take(&arr);
    struct utsname un;
    const char *machine = uname(&un) == 0 ? un.machine : "unknown";

    grid_json_obj_int(&o, "format", GRID_CACHE_FORMAT);
    grid_json_obj_str(&o, "target", tc->target == GRID_TARGET_CUDA ? "cuda" : "c");
    grid_json_obj_raw(&o, "argv", argv_json);
    grid_json_obj_str(&o, "compiler_version", tc->compiler_version);
    grid_json_obj_str(&o, "machine", machine);
    if (tc->target == GRID_TARGET_CUDA) {
        grid_json_obj_str(&o, "cuda_arch", tc->cuda_arch);
        grid_json_obj_str(&o, "ccbin_version", tc->ccbin_version);
        /* the host runtime every CUDA robot.so links (src/runtime/cuda_runtime.cu) */
        grid_json_obj_str(&o, "cuda_runtime_sha256", grid_cuda_runtime_hash());
    }
    /* -march=native and friends: the code depends on this CPU */
    if (argv_uses_native(tc->argv)) {
        char cpu[256], flags[65];
        cpu_identity(tc->target == GRID_TARGET_CUDA ? tc->ccbin : tc->compiler, pc, cpu, flags);
        grid_json_obj_str(&o, "cpu", cpu);
        grid_json_obj_str(&o, "cpu_flags_sha256", flags);
    }
    free(argv_json);
    return grid_json_obj_finish(&o);
}

/* the values of the generation-time knobs that are set */
static char *generation_env_json(void)
{
    grid_json_obj o;
    grid_json_obj_init(&o);
    for (int i = 0; i < grid_env_knob_count(); i++) {
        const grid_env_knob *k = grid_env_knob_at(i);
        const char *v = k->kind == GRID_KNOB_GENERATE ? grid_env(k->name) : NULL;
        if (v) grid_json_obj_str(&o, k->name, v);
    }
    return grid_json_obj_finish(&o);
}

/* the streaming threshold of this CPU's vendor, when the table has one (the CPU is in the build identity) */
static int add_stream_threshold(grid_toolchain *tc, const probe_ctl *pc)
{
    char cpu[256], flags[65];
    cpu_identity(tc->compiler, pc, cpu, flags);
    for (int k = 0; c_stream_threshold[k].vendor; k++)
        if (strstr(cpu, c_stream_threshold[k].vendor))
            return argv_add(&tc->argv, &tc->argc, c_stream_threshold[k].flag);
    return 0;
}

int grid_toolchain_resolve(int target, const char *cuda_arch, grid_cancel_fn cancel, void *cancel_ctx,
                           grid_toolchain *tc, grid_error *err)
{
    memset(tc, 0, sizeof *tc);
    tc->target = target;
    int rc;
    if (target != GRID_TARGET_C && target != GRID_TARGET_CUDA)
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "unknown build target %d (0 = C, 1 = CUDA)", target);
    /* the numeric knobs are checked before anything runs, like the flags below */
    probe_ctl pc = {0, cancel, cancel_ctx};
    int jobs;
    if ((rc = grid_env_build_jobs(&jobs, err)) || (rc = grid_env_probe_timeout_ms(&pc.timeout_ms, err))) return rc;

    if ((rc = check_flags("GRID_RBD_CFLAGS", target == GRID_TARGET_C ? grid_env("GRID_RBD_CFLAGS") : NULL, err)) ||
        (rc = check_flags("GRID_RBD_NVCC_FLAGS", target == GRID_TARGET_CUDA ? grid_env("GRID_RBD_NVCC_FLAGS") : NULL, err)))
        return rc;
    if (target == GRID_TARGET_C) {
        /* cc <tuning> <required> -o robot.so robot.c -lm */
        if ((rc = resolve_c_compiler(tc->compiler, sizeof tc->compiler, err))) return rc;
        if ((rc = program_version(tc->compiler, 0, "GRID_RBD_CC", &pc, tc->compiler_version,
                                  sizeof tc->compiler_version, err)))
            return rc;
        snprintf(tc->source_name, sizeof tc->source_name, "robot.c");
        int bad = argv_add(&tc->argv, &tc->argc, tc->compiler) ||
                  argv_add_flags(&tc->argv, &tc->argc, c_tuning_default, grid_env("GRID_RBD_CFLAGS")) ||
                  (!grid_env("GRID_RBD_CFLAGS") && !strstr(tc->compiler_version, "clang") &&
                   argv_add_flags(&tc->argv, &tc->argc, c_tuning_gcc_extra, NULL)) ||
                  (!grid_env("GRID_RBD_CFLAGS") && add_stream_threshold(tc, &pc)) ||
                  argv_add_flags(&tc->argv, &tc->argc, c_required, NULL) ||
                  argv_add(&tc->argv, &tc->argc, "-o") || argv_add(&tc->argv, &tc->argc, "robot.so") ||
                  argv_add(&tc->argv, &tc->argc, tc->source_name) ||
                  argv_add_flags(&tc->argv, &tc->argc, c_libs, NULL);
        if (bad) goto oom;
    } else {
        /* the arch: explicit, else $GRID_RBD_CUDA_ARCH, else the first GPU's compute capability */
        const char *arch = cuda_arch && *cuda_arch ? cuda_arch : grid_env("GRID_RBD_CUDA_ARCH");
        if (arch) {
            if (grid_cuda_arch_normalize(arch, tc->cuda_arch))
                return grid_error_set(err, GRID_ERR_ARG, 0, 0,
                                      "CUDA arch '%s' is not an architecture such as 90, sm_90 or 9.0", arch);
        } else if ((rc = detect_cuda_arch(&pc, tc->cuda_arch)) == -3) {
            return grid_error_set(err, GRID_ERR_CANCELLED, 0, 0, "cancelled while running nvidia-smi");
        } else if (rc == -2) {
            grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                           "cannot tell the CUDA architecture: nvidia-smi did not finish within %g s "
                           "(GRID_RBD_PROBE_TIMEOUT), so it was killed; pass cuda_arch= or set GRID_RBD_CUDA_ARCH "
                           "(e.g. 90 for an H100)", (double)pc.timeout_ms / 1000);
            return with_hint(err, "pass cuda_arch= or set GRID_RBD_CUDA_ARCH (e.g. 90 for an H100)");
        } else if (rc) {
            grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                           "cannot tell the CUDA architecture: nvidia-smi found no GPU; pass cuda_arch= "
                           "or set GRID_RBD_CUDA_ARCH (e.g. 90 for an H100)");
            return with_hint(err, "pass cuda_arch= or set GRID_RBD_CUDA_ARCH (e.g. 90 for an H100)");
        }
        if ((rc = resolve_nvcc(tc->compiler, sizeof tc->compiler, err))) return rc;
        if ((rc = program_version(tc->compiler, 1, "GRID_RBD_NVCC", &pc, tc->compiler_version,
                                  sizeof tc->compiler_version, err)))
            return rc;
        /* host compiler: $GRID_RBD_NVCC_CCBIN, else a C++ driver on PATH (nvcc links with it) */
        if ((rc = resolve_cuda_host(tc->ccbin, sizeof tc->ccbin, err))) return rc;
        if ((rc = program_version(tc->ccbin, 0, "GRID_RBD_NVCC_CCBIN", &pc, tc->ccbin_version,
                                  sizeof tc->ccbin_version, err)))
            return rc;
        snprintf(tc->source_name, sizeof tc->source_name, "robot.cu");
        char archflag[32];
        snprintf(archflag, sizeof archflag, "-arch=sm_%s", tc->cuda_arch);
        int bad = argv_add(&tc->argv, &tc->argc, tc->compiler) || argv_add(&tc->argv, &tc->argc, "-ccbin") ||
                  argv_add(&tc->argv, &tc->argc, tc->ccbin) || argv_add(&tc->argv, &tc->argc, archflag) ||
                  argv_add_flags(&tc->argv, &tc->argc, cuda_tuning_default, grid_env("GRID_RBD_NVCC_FLAGS")) ||
                  argv_add_flags(&tc->argv, &tc->argc, cuda_required, NULL) ||
                  argv_add(&tc->argv, &tc->argc, "-o") || argv_add(&tc->argv, &tc->argc, "robot.so") ||
                  argv_add(&tc->argv, &tc->argc, tc->source_name);
        if (bad) goto oom;
    }

    /* a short form for progress lines: compiler name and the tuning flags */
    const char *base = strrchr(tc->compiler, '/');
    base = base ? base + 1 : tc->compiler;
    size_t used = (size_t)snprintf(tc->display, sizeof tc->display, "%s", base);
    for (int i = 1; i < tc->argc && used < sizeof tc->display; i++) {
        if (strcmp(tc->argv[i], "-o") == 0) break;
        if (strcmp(tc->argv[i], "-ccbin") == 0) { i++; continue; }
        used += (size_t)snprintf(tc->display + used, sizeof tc->display - used, " %s", tc->argv[i]);
    }

    tc->identity_json = identity_json(tc, &pc);
    tc->generation_env_json = generation_env_json();
    if (!tc->identity_json || !tc->generation_env_json) goto oom;
    return GRID_OK;
oom:
    grid_toolchain_free(tc);
    return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory resolving the toolchain");
}

void grid_toolchain_free(grid_toolchain *tc)
{
    for (int i = 0; tc->argv && i < tc->argc; i++) free(tc->argv[i]);
    free(tc->argv);
    free(tc->identity_json);
    free(tc->generation_env_json);
    tc->argv = NULL;
    tc->argc = 0;
    tc->identity_json = tc->generation_env_json = NULL;
}

int grid_build_identity_json(int target, const char *cuda_arch, char **json, grid_error *err)
{
    grid_toolchain tc;
    *json = NULL;
    int rc = grid_toolchain_resolve(target, cuda_arch, NULL, NULL, &tc, err);
    if (rc) return rc;
    *json = tc.identity_json;
    tc.identity_json = NULL;
    grid_toolchain_free(&tc);
    return GRID_OK;
}
