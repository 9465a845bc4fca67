/* Tests of the build driver, the content-addressed cache and the runtime loader (docs/cache.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "grid/build.h"
#include "grid/runtime.h"
#include "../../src/driver/build_internal.h"
#include "../../src/driver/json.h"

static char test_root[512];   /* mkdtemp'd scratch directory for the whole run */
static char cc_wrapper[600];  /* compiler wrapper script that counts compiles */

/* ---- helpers ---- */

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    grid_buf b;
    grid_buf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) grid_buf_put(&b, chunk, n);
    fclose(f);
    return grid_buf_take(&b);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static int count_lines(const char *path)
{
    char *t = read_text(path);
    int n = 0;
    for (char *p = t; p && *p; p++) n += *p == '\n';
    free(t);
    return n;
}

/* a fresh cache directory under the scratch root */
static void fresh_dir(char *out, size_t cap, const char *tag)
{
    static int counter;
    snprintf(out, cap, "%s/%s-%d", test_root, tag, counter++);
}

/* the ABI structs of include/grid/abi.h, for hand-written test libraries */
#define TINY_ABI_STRUCTS \
    "typedef struct { const void *const *in; void *const *out; int n_in, n_out; long long batch; int attr[4];\n" \
    "  int num_threads; void *work; size_t work_bytes; void *stream; } grid_call;\n" \
    "typedef struct { const char *name; int rank; int shape[4]; long long width; int optional; } grid_arg_info;\n" \
    "typedef struct { const char *name; int n_in, n_out, n_attr; grid_arg_info in[8]; grid_arg_info out[4];\n" \
    "  const char *attr_name[4]; int attr_lo[4], attr_hi[4]; size_t work_bytes; int gpu_map; } grid_method_info;\n" \
    "typedef struct { int abi_version; int nq, nv, nb, nframes, nee; int dtype; int target; int n_methods;\n" \
    "  const grid_method_info *methods; size_t work_bytes; const char *model_hash; } grid_robot_meta_t;\n"

/* the rows a tiny library lists (bits of its `rows` argument) */
enum { TINY_RNEA = 1, TINY_NLE = 2, TINY_BAD_SHAPE = 4, TINY_UNKNOWN = 8 };

/* the method rows of a tiny library with nq = nv = nb = n: rnea (tau one wider with TINY_BAD_SHAPE), nle, and
   a row this grid-rbd does not know */
static void tiny_rows(char *s, size_t cap, int n, unsigned rows)
{
    size_t k = (size_t)snprintf(s, cap, "static const grid_method_info rows[] = {\n");
    if (rows & (TINY_RNEA | TINY_BAD_SHAPE))
        k += (size_t)snprintf(s + k, cap - k,
                              "  {\"rnea\", 4, 1, 0, {{\"q\", 1, {%d}, %d, 0}, {\"qd\", 1, {%d}, %d, 0}, {\"qdd\", 1, {%d}, %d, 1},\n"
                              "   {\"f_ext\", 1, {%d}, %d, 1}}, {{\"tau\", 1, {%d}, %d, 0}}, {0}, {0}, {0}, 0, 0},\n",
                              n, n, n, n, n, n, 6 * n, 6 * n, n + !!(rows & TINY_BAD_SHAPE), n + !!(rows & TINY_BAD_SHAPE));
    if (rows & TINY_NLE)
        k += (size_t)snprintf(s + k, cap - k,
                              "  {\"nle\", 2, 1, 0, {{\"q\", 1, {%d}, %d, 0}, {\"qd\", 1, {%d}, %d, 0}}, {{\"c\", 1, {%d}, %d, 0}},\n"
                              "   {0}, {0}, {0}, 0, 0},\n", n, n, n, n, n, n);
    if (rows & TINY_UNKNOWN)
        k += (size_t)snprintf(s + k, cap - k,
                              "  {\"warp_drive\", 1, 1, 0, {{\"q\", 1, {%d}, %d, 0}}, {{\"x\", 1, {1}, 1, 0}}, {0}, {0}, {0}, 0, 0},\n",
                              n, n);
    snprintf(s + k, cap - k, "};\n");
}

static int tiny_count(unsigned rows)
{
    return !!(rows & (TINY_RNEA | TINY_BAD_SHAPE)) + !!(rows & TINY_NLE) + !!(rows & TINY_UNKNOWN);
}

/* a tiny self-contained source implementing the ABI: rnea(q) = 2 q + tag; pad_bytes of read-only data */
static char *tiny_source(int abi_version, int nq, int tag, long pad_bytes, unsigned rows)
{
    char table[2048];
    tiny_rows(table, sizeof table, nq, rows);
    char *s = malloc(16384);
    snprintf(s, 16384,
             "/* hand-written test library for grid-rbd's ABI */\n"
             "#include <stddef.h>\n"
             TINY_ABI_STRUCTS
             "const unsigned char grid_test_pad[%ld] = {1};\n"
             "%s"
             "static const grid_robot_meta_t meta = {%d, %d, %d, %d, 1, 1, 8, 0, %d, rows, 0, \"hash-%d\"};\n"
             "const grid_robot_meta_t *grid_robot_meta(void) { return &meta; }\n"
             "int grid_rnea(const grid_call *c) {\n"
             "  const double *q = c->in[0]; double *o = c->out[0];\n"
             "  for (long long b = 0; b < c->batch; b++)\n"
             "    for (int i = 0; i < %d; i++) o[b * %d + i] = 2 * q[b * %d + i] + %d + grid_test_pad[0] - 1;\n"
             "  return 0;\n"
             "}\n",
             pad_bytes, table, abi_version, nq, nq, nq, tiny_count(rows), tag, nq, nq, nq, tag);
    return s;
}

typedef struct {
    const char *text;
    int calls;
} gen_ctx;

static int gen_copy(void *ctx, char **source, size_t *len, grid_error *err)
{
    (void)err;
    gen_ctx *g = ctx;
    g->calls++;
    *source = strdup(g->text);
    *len = strlen(g->text);
    return 0;
}

static grid_build_request request(const char *dir, const char *name, gen_ctx *g)
{
    static const char urdf[] = "<robot name=\"tiny\"><link name=\"base\"/></robot>";
    grid_build_request r;
    memset(&r, 0, sizeof r);
    r.cache_dir = dir;
    r.name = name;
    r.urdf = urdf;
    r.urdf_len = sizeof urdf - 1;
    r.options_json = "{\"dtype\":\"float64\"}";
    r.package_version = "0.1.0";
    r.generator_hash = "gen-1";
    r.target = GRID_TARGET_C;
    r.generate = gen_copy;
    r.generate_ctx = g;
    return r;
}

/* load so_path and check rnea(q) = 2 q + tag on a batch of 2 */
static int library_works(const char *so_path, int nq, int tag)
{
    grid_lib *lib = NULL;
    grid_error err;
    if (grid_lib_open(so_path, NULL, &lib, &err) != GRID_OK) {
        fprintf(stderr, "  load failed: %s\n", err.message);
        return 0;
    }
    grid_batch_fn rnea = grid_lib_fn(lib, GRID_ALGO_RNEA);
    double q[16], out[16];
    for (int i = 0; i < 2 * nq; i++) q[i] = 0.5 * i;
    const void *in[4] = {q, q, NULL, NULL};
    void *outs[1] = {out};
    grid_call call;
    memset(&call, 0, sizeof call);
    call.in = in;
    call.out = outs;
    call.n_in = 4;
    call.n_out = 1;
    call.batch = 2;
    int ok = rnea && rnea(&call) == 0;
    for (int i = 0; ok && i < 2 * nq; i++) ok = out[i] == 2 * q[i] + tag;
    grid_lib_close(lib);
    return ok;
}

/* number of finished entries (64-hex directories) and of .tmp-* directories in <dir>/store */
static void store_census(const char *dir, int *entries, int *tmps)
{
    char store[1024];
    snprintf(store, sizeof store, "%s/store", dir);
    *entries = *tmps = 0;
    DIR *dh = opendir(store);
    struct dirent *de;
    while (dh && (de = readdir(dh)) != NULL) {
        if (grid_is_key(de->d_name)) (*entries)++;
        else if (strncmp(de->d_name, ".tmp-", 5) == 0) (*tmps)++;
    }
    if (dh) closedir(dh);
}

static void clear_env(void)
{
    static const char *const vars[] = {"GRID_RBD_CC", "GRID_RBD_CFLAGS", "GRID_RBD_NVCC", "GRID_RBD_NVCC_FLAGS",
                                       "GRID_RBD_NVCC_CCBIN", "GRID_RBD_CUDA_ARCH", "GRID_RBD_CACHE_DIR",
                                       "GRID_RBD_VERBOSE", "GRID_RBD_BUILD_JOBS", NULL};
    for (int i = 0; vars[i]; i++) unsetenv(vars[i]);
}

/* field 22 of /proc/<pid>/stat (start time) and the state letter; -1 when the process is gone */
static long long proc_start(pid_t pid, char *state)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    char *t = read_text(path);
    if (!t) return -1;
    char *p = strrchr(t, ')');
    long long start = -1;
    if (p && p[1] == ' ') {
        if (state) *state = p[2];
        p += 2;
        for (int field = 3; p && field < 22; field++) {
            p = strchr(p, ' ');
            if (p) p++;
        }
        if (p) start = atoll(p);
    }
    free(t);
    return start;
}

/* parent pid from /proc/<pid>/stat, -1 when gone */
static pid_t proc_parent(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    char *t = read_text(path);
    if (!t) return -1;
    char *p = strrchr(t, ')');
    long ppid = -1;
    if (p) sscanf(p + 2, "%*c %ld", &ppid);
    free(t);
    return (pid_t)ppid;
}

/* 1 once the process that had this start time has ended (gone, a zombie, or its pid reused), within ms */
static int ends_within(pid_t pid, long long start, int ms)
{
    for (int t = 0; t <= ms; t += 20) {
        char state = 0;
        long long now = proc_start(pid, &state);
        if (now != start || state == 'Z' || state == 'X') return 1;
        usleep(20000);
    }
    return 0;
}

/* the pid written in a file, 0 when none */
static pid_t pid_in(const char *path)
{
    char *t = read_text(path);
    pid_t p = t ? (pid_t)atol(t) : 0;
    free(t);
    return p;
}

/* ---- SHA-256 and JSON ---- */

static void sha_hex(const void *p, size_t n, char hex[65])
{
    unsigned char d[32];
    grid_sha256(p, n, d);
    grid_sha256_hex(d, hex);
}

static void test_sha256_vectors(void)
{
    char hex[65];
    sha_hex("", 0, hex);
    CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
    sha_hex("abc", 3, hex);
    CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha_hex(m448, strlen(m448), hex);
    CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0);
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                       "mnopqrstnopqrstu";
    sha_hex(m896, strlen(m896), hex);
    CHECK(strcmp(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1") == 0);
    /* one million 'a' */
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    sha_hex(a, 1000000, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0);
    free(a);
    /* streaming in two pieces at every split point equals one shot */
    unsigned char msg[200], one[32], two[32];
    for (int i = 0; i < 200; i++) msg[i] = (unsigned char)(i * 7 + 3);
    grid_sha256(msg, sizeof msg, one);
    int same = 1;
    for (size_t cut = 0; cut <= sizeof msg; cut++) {
        grid_sha256_ctx c;
        grid_sha256_init(&c);
        grid_sha256_update(&c, msg, cut);
        grid_sha256_update(&c, msg + cut, sizeof msg - cut);
        grid_sha256_final(&c, two);
        same &= memcmp(one, two, 32) == 0;
    }
    CHECK(same);
}

static void test_json_canonical(void)
{
    grid_json_obj o;
    grid_json_obj_init(&o);
    grid_json_obj_str(&o, "b", "x\"y\\z\n\t\x01\x7f");
    grid_json_obj_str(&o, "a", "\xc3\xa9\xf0\x9f\x98\x80");
    grid_json_obj_int(&o, "c", 1);
    grid_json_obj_bool(&o, "A", 1);
    grid_json_obj_raw(&o, "\xc3\xa9", "null");
    char *s = grid_json_obj_finish(&o);
    /* the text Python's json.dumps(sort_keys=True, separators=(",", ":")) writes */
    const char *want = "{\"A\":true,\"a\":\"\\u00e9\\ud83d\\ude00\",\"b\":\"x\\\"y\\\\z\\n\\t\\u0001\\u007f\","
                       "\"c\":1,\"\\u00e9\":null}";
    CHECK_MSG(s && strcmp(s, want) == 0, "%s", s ? s : "(null)");
    /* and the reader decodes it back */
    char *b = s ? grid_json_get_string(s, strlen(s), "b") : NULL;
    CHECK(b && strcmp(b, "x\"y\\z\n\t\x01\x7f") == 0);
    char *e = s ? grid_json_get_string(s, strlen(s), "a") : NULL;
    CHECK(e && strcmp(e, "\xc3\xa9\xf0\x9f\x98\x80") == 0);
    long long c = 0;
    CHECK(s && grid_json_get_int(s, strlen(s), "c", &c) == 0 && c == 1);
    CHECK(s && grid_json_get_string(s, strlen(s), "zz") == NULL);
    free(b);
    free(e);
    free(s);
}

static void test_cache_root(void)
{
    char root[4096];
    grid_error err;
    clear_env();
    setenv("GRID_RBD_CACHE_DIR", "/tmp/from-env", 1);
    CHECK(grid_cache_root("/tmp/explicit/", root, sizeof root, &err) == 0 && strcmp(root, "/tmp/explicit") == 0);
    CHECK(grid_cache_root(NULL, root, sizeof root, &err) == 0 && strcmp(root, "/tmp/from-env") == 0);
    unsetenv("GRID_RBD_CACHE_DIR");
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    CHECK(grid_cache_root(NULL, root, sizeof root, &err) == 0 && strcmp(root, "/tmp/xdg/grid-rbd") == 0);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/tmp/home", 1);
    CHECK(grid_cache_root(NULL, root, sizeof root, &err) == 0 && strcmp(root, "/tmp/home/.cache/grid-rbd") == 0);
    if (old_xdg) setenv("XDG_CACHE_HOME", old_xdg, 1);
    if (old_home) setenv("HOME", old_home, 1);
    else unsetenv("HOME");
    free(old_xdg);
    free(old_home);
}

static void test_cuda_arch_normalize(void)
{
    char a[16];
    CHECK(grid_cuda_arch_normalize("sm_90", a) == 0 && strcmp(a, "90") == 0);
    CHECK(grid_cuda_arch_normalize("9.0", a) == 0 && strcmp(a, "90") == 0);
    CHECK(grid_cuda_arch_normalize("12.0", a) == 0 && strcmp(a, "120") == 0);
    CHECK(grid_cuda_arch_normalize("sm_90a", a) == 0 && strcmp(a, "90a") == 0);
    CHECK(grid_cuda_arch_normalize("compute_86", a) == 0 && strcmp(a, "86") == 0);
    CHECK(grid_cuda_arch_normalize("banana", a) != 0);
    CHECK(grid_cuda_arch_normalize("9", a) != 0);
    CHECK(grid_cuda_arch_normalize("90; rm -rf /", a) != 0);
}

/* ---- hostile files: never blocked on, never read past the cap ---- */

static void test_hostile_files(void)
{
    char path[1024], *data = NULL;
    size_t len = 0;
    /* a FIFO with no writer: refused at once (a blocking open would hang here; alarm() would end the run) */
    snprintf(path, sizeof path, "%s/fifo", test_root);
    CHECK(mkfifo(path, 0644) == 0);
    CHECK(grid_fs_read_max(path, GRID_FS_META_MAX, &data, &len) == EINVAL && data == NULL);
    CHECK(grid_fs_read(path, &data, &len) == EINVAL);
    char hex[65];
    CHECK(grid_fs_sha256_file(path, hex, NULL) == EINVAL);
    CHECK(grid_fs_open_regular(path, NULL) == -EINVAL);
    /* devices, directories */
    CHECK(grid_fs_read("/dev/zero", &data, &len) == EINVAL);
    CHECK(grid_fs_read_max("/dev/urandom", 16, &data, &len) == EINVAL);
    CHECK(grid_fs_read(test_root, &data, &len) == EISDIR);
    /* a sparse file over the cap is refused unread; exactly the cap is fine, one byte more is not */
    snprintf(path, sizeof path, "%s/sparse", test_root);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, 1LL << 30) == 0);
    close(fd);
    CHECK(grid_fs_read_max(path, GRID_FS_META_MAX, &data, &len) == EFBIG && data == NULL);
    CHECK(truncate(path, 100) == 0);
    CHECK(grid_fs_read_max(path, 100, &data, &len) == 0 && len == 100);
    free(data);
    CHECK(truncate(path, 101) == 0);
    CHECK(grid_fs_read_max(path, 100, &data, &len) == EFBIG);
    unlink(path);
    /* a relative HOME is not used for the cache root (the XDG rule); a relative XDG_CACHE_HOME is ignored */
    clear_env();
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    char root[4096];
    grid_error err;
    setenv("HOME", "relative-home", 1);
    unsetenv("XDG_CACHE_HOME");
    CHECK(grid_cache_root(NULL, root, sizeof root, &err) == GRID_ERR_CACHE && strstr(err.message, "HOME is a relative"));
    setenv("HOME", "/tmp/home", 1);
    setenv("XDG_CACHE_HOME", "relative-xdg", 1);
    CHECK(grid_cache_root(NULL, root, sizeof root, &err) == 0 && strcmp(root, "/tmp/home/.cache/grid-rbd") == 0);
    if (old_home) setenv("HOME", old_home, 1);
    else unsetenv("HOME");
    if (old_xdg) setenv("XDG_CACHE_HOME", old_xdg, 1);
    else unsetenv("XDG_CACHE_HOME");
    free(old_home);
    free(old_xdg);
}

/* what was verified is what is loaded: a clear between grid_build and the load does not matter */
static void test_load_the_verified_descriptor(void)
{
    clear_env();
    char dir[1024];
    fresh_dir(dir, sizeof dir, "fd");
    char *src = tiny_source(GRID_ABI_VERSION, 3, 6, 0, TINY_RNEA);
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "tiny", &g);
    grid_build_result res;
    grid_error err;
    CHECK(grid_build(&req, &res, &err) == GRID_OK && res.so_fd == -1);   /* not asked for: no descriptor */
    CHECK(grid_cache_clear(dir, NULL, NULL, &err) == GRID_OK);
    req.keep_so_fd = 1;
    for (int round = 0; round < 2; round++) {   /* a build, then a hit */
        int rc = grid_build(&req, &res, &err);
        CHECK_MSG(rc == GRID_OK && res.so_fd >= 0, "%s", err.message);
        CHECK(round == 0 ? res.compiled == 1 : res.cache_hit == 1);
        /* another process clears the cache in between */
        int removed = 0;
        CHECK(grid_cache_clear(dir, NULL, &removed, &err) == GRID_OK && removed == 1);
        grid_lib *lib = NULL, *again = NULL;
        CHECK(grid_lib_open(res.so_path, NULL, &lib, &err) == GRID_ERR_LOAD);   /* the path is gone ... */
        grid_lib_expect x = grid_lib_expect_any();
        x.nq = 3;
        rc = grid_lib_open_fd(res.so_fd, res.so_path, &x, &lib, &err);   /* ... the verified file is not */
        CHECK_MSG(rc == GRID_OK, "%s", err.message);
        CHECK(lib && grid_lib_meta(lib)->nq == 3 && strcmp(grid_lib_path(lib), res.so_path) == 0);
        /* the same file through another descriptor: the same mapping */
        int fd2 = dup(res.so_fd);
        CHECK(grid_lib_open_fd(fd2, res.so_path, &x, &again, &err) == GRID_OK);
        CHECK(again && lib && grid_lib_meta(again) == grid_lib_meta(lib));
        close(fd2);
        close(res.so_fd);
        grid_lib_close(again);
        grid_lib_close(lib);
        if (round == 0) {   /* built again, for the hit of round 1 */
            req.keep_so_fd = 0;
            CHECK(grid_build(&req, &res, &err) == GRID_OK && res.compiled == 1 && res.so_fd == -1);
            req.keep_so_fd = 1;
        }
    }
    free(src);
}

/* ---- the build flow ---- */

static void test_build_then_hit(void)
{
    clear_env();
    char dir[1024], path[2048];
    fresh_dir(dir, sizeof dir, "hit");
    char *src = tiny_source(GRID_ABI_VERSION, 3, 5, 1 << 20, TINY_RNEA);   /* 1 MiB of data: a robot.so of realistic size */
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "tiny", &g);
    grid_build_result res;
    grid_error err;

    /* cold: generate + compile */
    int rc = grid_build(&req, &res, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    CHECK(res.compiled == 1 && res.cache_hit == 0 && g.calls == 1);
    CHECK(library_works(res.so_path, 3, 5));

    /* the layout of the spec */
    static const char *const files[] = {"robot.c", "robot.so", "meta.json", "build_inputs.json", "robot.build.log", NULL};
    for (int i = 0; files[i]; i++) {
        snprintf(path, sizeof path, "%s/store/%s/%s", dir, res.content_key, files[i]);
        CHECK_MSG(exists(path), "%s", path);
    }
    snprintf(path, sizeof path, "%s/bykey/%s", dir, res.input_key);
    char *ptr = read_text(path);
    CHECK(ptr && strncmp(ptr, res.content_key, 64) == 0);
    free(ptr);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    char *man = read_text(path);
    char *named = man ? grid_json_get_string(man, strlen(man), "tiny") : NULL;
    CHECK(named && strcmp(named, res.content_key) == 0);
    free(named);
    free(man);
    /* meta.json records the hash of robot.so and what the library reports */
    snprintf(path, sizeof path, "%s/store/%s/meta.json", dir, res.content_key);
    char *meta = read_text(path);
    char *so_sha = meta ? grid_json_get_string(meta, strlen(meta), "so_sha256") : NULL;
    char *dtype = meta ? grid_json_get_string(meta, strlen(meta), "dtype") : NULL;
    char hex[65];
    long long so_bytes = 0, nq = 0;
    CHECK(grid_fs_sha256_file(res.so_path, hex, &so_bytes) == 0);
    CHECK(so_sha && strcmp(so_sha, hex) == 0);
    CHECK(dtype && strcmp(dtype, "float64") == 0);
    CHECK(meta && grid_json_get_int(meta, strlen(meta), "nq", &nq) == 0 && nq == 3);
    CHECK(so_bytes > (1 << 20));
    free(so_sha);
    free(dtype);
    free(meta);
    /* build_inputs.json is the identity */
    char *ident = NULL;
    CHECK(grid_build_identity_json(GRID_TARGET_C, NULL, &ident, &err) == 0);
    snprintf(path, sizeof path, "%s/store/%s/build_inputs.json", dir, res.content_key);
    char *inputs = read_text(path);
    CHECK(ident && inputs && strcmp(ident, inputs) == 0);
    CHECK(ident && strstr(ident, "\"-march=native\"") && strstr(ident, "\"cpu_flags_sha256\""));
    free(inputs);
    free(ident);

    /* warm: a stage-1 hit, nothing generated, well under 50 ms with the 1 MB hash */
    char first_key[65];
    memcpy(first_key, res.content_key, 65);
    double best = 1e9;
    for (int i = 0; i < 5; i++) {
        double t0 = grid_now();
        rc = grid_build(&req, &res, &err);
        double dt = grid_now() - t0;
        if (dt < best) best = dt;
        CHECK(rc == GRID_OK && res.cache_hit == 1 && res.compiled == 0);
    }
    CHECK(g.calls == 1);
    CHECK(strcmp(res.content_key, first_key) == 0);
    CHECK_MSG(best < 0.050, "hit took %.1f ms", best * 1e3);
    printf("  cache hit with a %lld-byte robot.so: %.2f ms (best of 5)\n", so_bytes, best * 1e3);

    /* the same robot under another name shares the entry and is named in the manifest */
    req.name = "tiny-alias";
    CHECK(grid_build(&req, &res, &err) == GRID_OK && res.cache_hit == 1);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    man = read_text(path);
    named = man ? grid_json_get_string(man, strlen(man), "tiny-alias") : NULL;
    CHECK(named && strcmp(named, first_key) == 0);
    free(named);
    free(man);

    /* the source can be given as bytes instead of a callback */
    grid_build_request by_bytes = request(dir, "tiny", NULL);
    by_bytes.generate = NULL;
    by_bytes.source = src;
    by_bytes.source_len = strlen(src);
    by_bytes.generator_hash = "bytes";
    CHECK(grid_build(&by_bytes, &res, &err) == GRID_OK && res.compiled == 0 && strcmp(res.content_key, first_key) == 0);
    free(src);
}

static void test_generator_change_same_bytes_no_compile(void)
{
    clear_env();
    char dir[1024];
    fresh_dir(dir, sizeof dir, "gen");
    char *src = tiny_source(GRID_ABI_VERSION, 2, 1, 16, TINY_RNEA);
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "tiny", &g);
    grid_build_result a, b;
    grid_error err;
    CHECK(grid_build(&req, &a, &err) == GRID_OK && a.compiled == 1);
    req.generator_hash = "gen-2";   /* the generator changed, its output did not */
    CHECK(grid_build(&req, &b, &err) == GRID_OK);
    CHECK(b.compiled == 0 && b.cache_hit == 0 && g.calls == 2);
    CHECK(strcmp(a.content_key, b.content_key) == 0 && strcmp(a.input_key, b.input_key) != 0);
    /* and now the new pointer hits */
    CHECK(grid_build(&req, &b, &err) == GRID_OK && b.cache_hit == 1 && g.calls == 2);
    /* every stage-1 field changes the input key */
    const char *before = b.input_key;
    char keep[65];
    memcpy(keep, before, 65);
    req.options_json = "{\"dtype\":\"float32\"}";
    CHECK(grid_build(&req, &b, &err) == GRID_OK && strcmp(b.input_key, keep) != 0 && b.compiled == 0);
    req.options_json = "{\"dtype\":\"float64\"}";
    req.package_version = "0.2.0";
    CHECK(grid_build(&req, &b, &err) == GRID_OK && strcmp(b.input_key, keep) != 0 && b.compiled == 0);
    free(src);
}

static void test_identity_change_rebuilds(void)
{
    clear_env();
    char dir[1024];
    fresh_dir(dir, sizeof dir, "ident");
    char *src = tiny_source(GRID_ABI_VERSION, 2, 2, 16, TINY_RNEA);
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "tiny", &g);
    grid_build_result a, b;
    grid_error err;
    CHECK(grid_build(&req, &a, &err) == GRID_OK && a.compiled == 1);
    setenv("GRID_RBD_CFLAGS", "-O1 -fno-math-errno", 1);
    CHECK(grid_build(&req, &b, &err) == GRID_OK);
    CHECK(b.compiled == 1 && strcmp(a.content_key, b.content_key) != 0 && strcmp(a.input_key, b.input_key) != 0);
    CHECK(library_works(b.so_path, 2, 2));
    char log[8192];
    snprintf(log, sizeof log, "%s/robot.build.log", b.entry_dir);
    char *text = read_text(log);
    CHECK(text && strstr(text, " -O1 -fno-math-errno ") && !strstr(text, "-march=native"));
    free(text);
    /* back to the defaults: the first entry is still there */
    unsetenv("GRID_RBD_CFLAGS");
    CHECK(grid_build(&req, &b, &err) == GRID_OK && b.cache_hit == 1 && strcmp(a.content_key, b.content_key) == 0);

    /* an entry whose build_inputs.json differs from the current identity is not used */
    char path[8192];
    snprintf(path, sizeof path, "%s/build_inputs.json", a.entry_dir);
    write_text(path, "{\"argv\":[\"some-other-cc\"]}");
    CHECK(grid_build(&req, &b, &err) == GRID_OK && b.compiled == 1 && strcmp(a.content_key, b.content_key) == 0);
    CHECK(library_works(b.so_path, 2, 2));
    free(src);
}

static void test_damaged_entries_rebuilt(void)
{
    clear_env();
    char dir[1024];
    fresh_dir(dir, sizeof dir, "damage");
    char *src = tiny_source(GRID_ABI_VERSION, 4, 3, 4096, TINY_RNEA);
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "tiny", &g);
    grid_build_result a, b;
    grid_error err;
    CHECK(grid_build(&req, &a, &err) == GRID_OK && a.compiled == 1);

    /* truncated robot.so: detected, rebuilt */
    struct stat st;
    stat(a.so_path, &st);
    CHECK(truncate(a.so_path, st.st_size / 2) == 0);
    CHECK(grid_build(&req, &b, &err) == GRID_OK && b.compiled == 1 && b.cache_hit == 0);
    CHECK(strcmp(a.content_key, b.content_key) == 0 && library_works(b.so_path, 4, 3));

    /* one byte altered, same size: detected by the hash, rebuilt */
    int fd = open(b.so_path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, "\x55", 1, 4000) == 1);
    close(fd);
    CHECK(grid_build(&req, &b, &err) == GRID_OK && b.compiled == 1 && library_works(b.so_path, 4, 3));

    /* meta.json missing (an entry that somehow lacks it): rebuilt */
    char path[8192];
    snprintf(path, sizeof path, "%s/meta.json", b.entry_dir);
    unlink(path);
    CHECK(grid_build(&req, &b, &err) == GRID_OK && b.compiled == 1 && library_works(b.so_path, 4, 3));

    /* corrupt stage-1 pointer: regenerated, the entry is reused without compiling, the pointer is repaired */
    snprintf(path, sizeof path, "%s/bykey/%s", dir, b.input_key);
    write_text(path, "garbage that is not a key\n");
    int calls = g.calls;
    CHECK(grid_build(&req, &b, &err) == GRID_OK && b.compiled == 0 && b.cache_hit == 0 && g.calls == calls + 1);
    char *ptr = read_text(path);
    CHECK(ptr && strncmp(ptr, b.content_key, 64) == 0);
    free(ptr);
    /* a pointer to a key with no entry */
    write_text(path, "0000000000000000000000000000000000000000000000000000000000000000\n");
    CHECK(grid_build(&req, &b, &err) == GRID_OK && b.compiled == 0 && strcmp(a.content_key, b.content_key) == 0);
    CHECK(grid_build(&req, &b, &err) == GRID_OK && b.cache_hit == 1);

    /* force_rebuild compiles again and the result still works */
    req.force_rebuild = 1;
    CHECK(grid_build(&req, &b, &err) == GRID_OK && b.compiled == 1 && library_works(b.so_path, 4, 3));
    int entries, tmps;
    store_census(dir, &entries, &tmps);
    CHECK(entries == 1 && tmps == 0);
    free(src);
}

static void test_unwritable_cache(void)
{
    clear_env();
    char file[1024], dir[1200];
    fresh_dir(file, sizeof file, "regular-file");
    write_text(file, "not a directory\n");
    snprintf(dir, sizeof dir, "%s/cache", file);
    char *src = tiny_source(GRID_ABI_VERSION, 2, 1, 16, TINY_RNEA);
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "tiny", &g);
    grid_build_result res;
    grid_error err;
    int rc = grid_build(&req, &res, &err);
    CHECK(rc == GRID_ERR_CACHE && err.code == GRID_ERR_CACHE);
    CHECK_MSG(strstr(err.message, dir) && strstr(err.message, strerror(ENOTDIR)) &&
              strstr(err.message, "GRID_RBD_CACHE_DIR") && strstr(err.message, "cache_dir="), "%s", err.message);
    CHECK(g.calls == 0 && res.so_path[0] == '\0');
    /* the structured fields: the path that failed and the fix */
    CHECK_MSG(strcmp(err.path, dir) == 0, "path '%s'", err.path);
    CHECK(strstr(err.hint, "GRID_RBD_CACHE_DIR") && strstr(err.hint, "cache_dir="));

    /* a read-only directory (root ignores modes, so only as a normal user) */
    if (geteuid() != 0) {
        char ro[1024];
        fresh_dir(ro, sizeof ro, "readonly");
        mkdir(ro, 0555);
        req.cache_dir = ro;
        rc = grid_build(&req, &res, &err);
        CHECK_MSG(rc == GRID_ERR_CACHE && strstr(err.message, ro) && strstr(err.message, "GRID_RBD_CACHE_DIR"),
                  "%s", err.message);
        chmod(ro, 0755);
    } else {
        printf("  (running as root: read-only mode test replaced by the ENOTDIR path)\n");
    }
    free(src);
}

static void test_missing_compiler(void)
{
    clear_env();
    char dir[1024];
    fresh_dir(dir, sizeof dir, "nocc");
    setenv("GRID_RBD_CC", "/nonexistent/cc", 1);
    char *src = tiny_source(GRID_ABI_VERSION, 2, 1, 16, TINY_RNEA);
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "tiny", &g);
    grid_build_result res;
    grid_error err;
    int rc = grid_build(&req, &res, &err);
    CHECK(rc == GRID_ERR_BUILD);
    CHECK_MSG(strstr(err.message, "/nonexistent/cc") && strstr(err.message, "GRID_RBD_CC"), "%s", err.message);
    CHECK(strstr(err.hint, "GRID_RBD_CC") && err.path[0] == '\0');
    /* nothing on PATH either */
    unsetenv("GRID_RBD_CC");
    char *old_path = strdup(getenv("PATH"));
    setenv("PATH", "/nonexistent-bin", 1);
    rc = grid_build(&req, &res, &err);
    CHECK_MSG(rc == GRID_ERR_BUILD && strstr(err.message, "'cc' not found") && strstr(err.message, "GRID_RBD_CC"),
              "%s", err.message);
    setenv("PATH", old_path, 1);
    free(old_path);
    free(src);
}

static void test_compile_error(void)
{
    clear_env();
    char dir[1024];
    fresh_dir(dir, sizeof dir, "broken");
    const char *src = "/* broken */\nint grid_rnea(void) { return missing_symbol_here + ; }\n";
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "broken", &g);
    grid_build_result res;
    grid_error err;
    int rc = grid_build(&req, &res, &err);
    CHECK(rc == GRID_ERR_BUILD);
    CHECK_MSG(strstr(err.message, "failed") && strstr(err.message, "robot.c") && strstr(err.message, "error") &&
              strstr(err.message, "missing_symbol_here") && strstr(err.message, ".failed.log"), "%s", err.message);
    /* err.path is the kept log, the one the message names */
    size_t pl = strlen(err.path);
    CHECK_MSG(pl > 11 && strcmp(err.path + pl - 11, ".failed.log") == 0 && exists(err.path) &&
              strstr(err.message, err.path), "path '%s'", err.path);
    int entries, tmps;
    store_census(dir, &entries, &tmps);
    CHECK(entries == 0 && tmps == 0);
    /* a library that compiles but breaks the ABI is refused at build time too */
    char *bad = tiny_source(999, 2, 1, 16, TINY_RNEA);
    g.text = bad;
    rc = grid_build(&req, &res, &err);
    CHECK_MSG(rc == GRID_ERR_BUILD && strstr(err.message, "abi_version"), "%s", err.message);
    store_census(dir, &entries, &tmps);
    CHECK(entries == 0 && tmps == 0);
    free(bad);
}

/* write the compiler wrapper: counts compiles, sleeps when <root>/slow or <root>/sleep exists */
static void make_wrapper(void)
{
    snprintf(cc_wrapper, sizeof cc_wrapper, "%s/cc wrapper 'quoted'.sh", test_root);
    char script[4096];
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "for a in \"$@\"; do\n"
             "  if [ \"$a\" = -shared ]; then\n"
             "    echo compile >> '%s/compiles'\n"
             "    if [ -f '%s/sleep' ]; then sleep 61 & echo $! > '%s/grandchild.pid'; echo $$ > '%s/sleeping.pid'; exec sleep 60; fi\n"
             "    if [ -f '%s/slow' ]; then sleep 1; fi\n"
             "  fi\n"
             "done\n"
             "exec cc \"$@\"\n",
             test_root, test_root, test_root, test_root, test_root);
    write_text(cc_wrapper, script);
    chmod(cc_wrapper, 0755);
}

static void test_concurrent_builds_compile_once(void)
{
    clear_env();
    make_wrapper();
    setenv("GRID_RBD_CC", cc_wrapper, 1);
    char dir[1024], path[2048];
    fresh_dir(dir, sizeof dir, "race");
    snprintf(path, sizeof path, "%s/compiles", test_root);
    unlink(path);
    char slow[1024];
    snprintf(slow, sizeof slow, "%s/slow", test_root);
    write_text(slow, "1");
    char *src = tiny_source(GRID_ABI_VERSION, 2, 9, 16, TINY_RNEA);

    /* two processes build the same robot at the same time */
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            gen_ctx g = {src, 0};
            grid_build_request req = request(dir, "race", &g);
            grid_build_result res;
            grid_error err;
            int rc = grid_build(&req, &res, &err);
            if (rc != GRID_OK) {
                fprintf(stderr, "  child build failed: %s\n", err.message);
                _exit(1);
            }
            _exit(library_works(res.so_path, 2, 9) ? 10 + res.compiled : 2);
        }
    }
    int compiled = 0, ok = 1;
    for (int k = 0; k < 2; k++) {
        int st = 0;
        waitpid(kids[k], &st, 0);
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        ok &= code == 10 || code == 11;
        compiled += code == 11;
    }
    CHECK(ok);
    CHECK_MSG(compiled == 1, "%d processes compiled", compiled);
    CHECK_MSG(count_lines(path) == 1, "%d compiles", count_lines(path));
    int entries, tmps;
    store_census(dir, &entries, &tmps);
    CHECK(entries == 1 && tmps == 0);
    unlink(slow);
    unsetenv("GRID_RBD_CC");
    free(src);
}

static void test_killed_build_leaves_no_entry(void)
{
    clear_env();
    make_wrapper();
    setenv("GRID_RBD_CC", cc_wrapper, 1);
    char dir[1024], sleep_flag[1024], started[1024], grandchild_file[1024];
    fresh_dir(dir, sizeof dir, "killed");
    snprintf(sleep_flag, sizeof sleep_flag, "%s/sleep", test_root);
    snprintf(started, sizeof started, "%s/sleeping.pid", test_root);
    snprintf(grandchild_file, sizeof grandchild_file, "%s/grandchild.pid", test_root);
    unlink(started);
    unlink(grandchild_file);
    write_text(sleep_flag, "1");
    char *src = tiny_source(GRID_ABI_VERSION, 2, 4, 16, TINY_RNEA);

    pid_t kid = fork();
    if (kid == 0) {
        gen_ctx g = {src, 0};
        grid_build_request req = request(dir, "killed", &g);
        grid_build_result res;
        grid_error err;
        grid_build(&req, &res, &err);
        _exit(0);
    }
    /* wait until the compiler runs, then kill the builder: the compiler and its child die with it */
    for (int i = 0; i < 300 && count_lines(started) == 0; i++) usleep(20000);
    CHECK(count_lines(started) == 1);
    pid_t sleeper = pid_in(started), grandchild = pid_in(grandchild_file);
    long long t_sleeper = proc_start(sleeper, NULL), t_grandchild = proc_start(grandchild, NULL);
    CHECK(sleeper > 0 && grandchild > 0 && t_sleeper >= 0 && t_grandchild >= 0);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    CHECK_MSG(ends_within(sleeper, t_sleeper, 2000), "the compiler %ld outlived the killed builder", (long)sleeper);
    CHECK_MSG(ends_within(grandchild, t_grandchild, 2000), "the compiler's child %ld outlived the killed builder",
              (long)grandchild);
    if (!ends_within(sleeper, t_sleeper, 0)) kill(sleeper, SIGKILL);
    if (!ends_within(grandchild, t_grandchild, 0)) kill(grandchild, SIGKILL);
    unlink(sleep_flag);

    /* only a temporary is left: no entry, no pointer */
    int entries, tmps;
    store_census(dir, &entries, &tmps);
    CHECK(entries == 0 && tmps == 1);
    char bykey[1100];
    snprintf(bykey, sizeof bykey, "%s/bykey", dir);
    DIR *dh = opendir(bykey);
    int pointers = 0;
    struct dirent *de;
    while (dh && (de = readdir(dh)) != NULL) pointers += de->d_name[0] != '.';
    if (dh) closedir(dh);
    CHECK(pointers == 0);

    /* a later build (the lock died with the builder) compiles a loadable entry and removes the dead
       builder's temporary (it holds the key's lock, and the pid in the name is gone) */
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "killed", &g);
    grid_build_result res;
    grid_error err;
    CHECK(grid_build(&req, &res, &err) == GRID_OK && res.compiled == 1);
    CHECK(library_works(res.so_path, 2, 4));
    store_census(dir, &entries, &tmps);
    CHECK(entries == 1 && tmps == 0);

    /* a temporary of a live process is left alone until it is older than an hour and its lock is free;
       then the build of another robot removes it */
    char store[1100], tmp_path[2048];
    snprintf(store, sizeof store, "%s/store", dir);
    snprintf(tmp_path, sizeof tmp_path, "%s/.tmp-%s-%ld-abcdef", store, res.content_key, (long)getppid());
    CHECK(mkdir(tmp_path, 0755) == 0);
    char inner[2100];
    snprintf(inner, sizeof inner, "%s/robot.c", tmp_path);
    write_text(inner, "partial");
    CHECK(grid_build(&req, &res, &err) == GRID_OK && res.cache_hit && exists(tmp_path));
    struct timespec old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    utimensat(AT_FDCWD, inner, old, AT_SYMLINK_NOFOLLOW);
    utimensat(AT_FDCWD, tmp_path, old, 0);
    char *other = tiny_source(GRID_ABI_VERSION, 2, 6, 16, TINY_RNEA);   /* another robot's build does the cleaning */
    gen_ctx g2 = {other, 0};
    grid_build_request req2 = request(dir, "other", &g2);
    req2.options_json = "{\"other\":1}";
    CHECK_MSG(grid_build(&req2, &res, &err) == GRID_OK && res.compiled == 1, "%s", err.message);
    CHECK(!exists(tmp_path));
    store_census(dir, &entries, &tmps);
    CHECK(entries == 2 && tmps == 0);
    unsetenv("GRID_RBD_CC");
    free(other);
    free(src);
}

/* cancel: stops within a tick of being asked, kills the compiler and its child, leaves nothing behind */
typedef struct {
    const char *flag;
    int calls;
} cancel_ctx;

static int cancel_once_started(void *ctx)
{
    cancel_ctx *c = ctx;
    c->calls++;
    return count_lines(c->flag) > 0;
}

static void test_cancelled_build(void)
{
    clear_env();
    make_wrapper();
    setenv("GRID_RBD_CC", cc_wrapper, 1);
    char dir[1024], sleep_flag[1024], started[1024], grandchild_file[1024];
    fresh_dir(dir, sizeof dir, "cancel");
    snprintf(sleep_flag, sizeof sleep_flag, "%s/sleep", test_root);
    snprintf(started, sizeof started, "%s/sleeping.pid", test_root);
    snprintf(grandchild_file, sizeof grandchild_file, "%s/grandchild.pid", test_root);
    unlink(started);
    unlink(grandchild_file);
    write_text(sleep_flag, "1");
    char *src = tiny_source(GRID_ABI_VERSION, 2, 5, 16, TINY_RNEA);
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "cancel", &g);
    cancel_ctx cc = {started, 0};
    req.cancel = cancel_once_started;
    req.cancel_ctx = &cc;
    grid_build_result res;
    grid_error err;
    double t0 = grid_now();
    int rc = grid_build(&req, &res, &err);
    double dt = grid_now() - t0;
    CHECK_MSG(rc == GRID_ERR_CANCELLED && strstr(err.message, "cancelled"), "%d %s", rc, err.message);
    CHECK_MSG(dt < 10.0, "cancelling took %.2f s", dt);
    pid_t sleeper = pid_in(started), grandchild = pid_in(grandchild_file);
    CHECK(sleeper > 0 && grandchild > 0);
    /* gone at once: the supervisor reaped every process before grid_build returned */
    CHECK_MSG(proc_start(sleeper, NULL) < 0 && proc_start(grandchild, NULL) < 0, "compiler processes survived");
    int entries, tmps;
    store_census(dir, &entries, &tmps);
    CHECK(entries == 0 && tmps == 0);
    char failed[2048];
    snprintf(failed, sizeof failed, "%s/store/%s.failed.log", dir, res.content_key);
    CHECK(!exists(failed));
    unlink(sleep_flag);
    req.cancel = NULL;
    CHECK(grid_build(&req, &res, &err) == GRID_OK && res.compiled == 1 && library_works(res.so_path, 2, 5));
    unsetenv("GRID_RBD_CC");
    free(src);
}

/* the supervisor killed from outside: the build fails, and its compiler processes are killed too */
static void test_supervisor_killed(void)
{
    clear_env();
    make_wrapper();
    setenv("GRID_RBD_CC", cc_wrapper, 1);
    char dir[1024], sleep_flag[1024], started[1024], grandchild_file[1024];
    fresh_dir(dir, sizeof dir, "supkill");
    snprintf(sleep_flag, sizeof sleep_flag, "%s/sleep", test_root);
    snprintf(started, sizeof started, "%s/sleeping.pid", test_root);
    snprintf(grandchild_file, sizeof grandchild_file, "%s/grandchild.pid", test_root);
    unlink(started);
    unlink(grandchild_file);
    write_text(sleep_flag, "1");
    char *src = tiny_source(GRID_ABI_VERSION, 2, 7, 16, TINY_RNEA);
    pid_t kid = fork();
    if (kid == 0) {
        gen_ctx g = {src, 0};
        grid_build_request req = request(dir, "supkill", &g);
        grid_build_result res;
        grid_error err;
        int rc = grid_build(&req, &res, &err);
        _exit(rc == GRID_ERR_BUILD && strstr(err.message, "signal 9") ? 0 : 1);
    }
    for (int i = 0; i < 300 && count_lines(started) == 0; i++) usleep(20000);
    pid_t sleeper = pid_in(started), grandchild = pid_in(grandchild_file);
    long long t_sleeper = proc_start(sleeper, NULL), t_grandchild = proc_start(grandchild, NULL);
    pid_t sup = proc_parent(sleeper);
    CHECK(sleeper > 0 && grandchild > 0 && sup > 0 && sup != kid && proc_parent(sup) == kid);
    if (sup > 0 && sup != kid && proc_parent(sup) == kid) kill(sup, SIGKILL);
    int st = 0;
    waitpid(kid, &st, 0);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    CHECK(ends_within(sleeper, t_sleeper, 2000) && ends_within(grandchild, t_grandchild, 2000));
    if (!ends_within(sleeper, t_sleeper, 0)) kill(sleeper, SIGKILL);
    if (!ends_within(grandchild, t_grandchild, 0)) kill(grandchild, SIGKILL);
    unlink(sleep_flag);
    int entries, tmps;
    store_census(dir, &entries, &tmps);
    CHECK(entries == 0 && tmps == 0);
    unsetenv("GRID_RBD_CC");
    free(src);
}

/* a split source: parts compile at most GRID_RBD_BUILD_JOBS at a time, then link into one library */
static void test_parts_within_the_job_cap(void)
{
    clear_env();
    char wrapper[700], log[700], script[2048];
    snprintf(wrapper, sizeof wrapper, "%s/cc-parts.sh", test_root);
    snprintf(log, sizeof log, "%s/parts.log", test_root);
    unlink(log);
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "for a in \"$@\"; do\n"
             "  if [ \"$a\" = -c ]; then echo start >> '%s'; sleep 0.3; echo end >> '%s'; fi\n"
             "done\n"
             "exec cc \"$@\"\n", log, log);
    write_text(wrapper, script);
    chmod(wrapper, 0755);
    setenv("GRID_RBD_CC", wrapper, 1);
    setenv("GRID_RBD_BUILD_JOBS", "2", 1);
    CHECK(grid_build_jobs(4) == 2 && grid_build_jobs(1) == 1);
    char *lib = tiny_source(GRID_ABI_VERSION, 2, 8, 16, TINY_RNEA);
    char *src = malloc(strlen(lib) + 512);
    sprintf(src, "/* grid-rbd parts: 4 */\n#if !defined(GRID_PART) || GRID_PART == 1\n%s#endif\n"
                 "#if !defined(GRID_PART) || GRID_PART == 2\nint grid_test_p2;\n#endif\n"
                 "#if !defined(GRID_PART) || GRID_PART == 3\nint grid_test_p3;\n#endif\n"
                 "#if !defined(GRID_PART) || GRID_PART == 4\nint grid_test_p4;\n#endif\n", lib);
    char dir[1024];
    fresh_dir(dir, sizeof dir, "parts");
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "parts", &g);
    grid_build_result res;
    grid_error err;
    CHECK_MSG(grid_build(&req, &res, &err) == GRID_OK && library_works(res.so_path, 2, 8), "%s", err.message);
    char *t = read_text(log);
    int now = 0, peak = 0, starts = 0;
    for (char *p = t; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
        if (strncmp(p, "start", 5) == 0) starts++, now++;
        else if (strncmp(p, "end", 3) == 0) now--;
        if (now > peak) peak = now;
    }
    free(t);
    CHECK_MSG(starts == 4 && peak == 2, "%d part compiles, %d at once", starts, peak);
    /* without the variable: at least 1, at most the parts and the CPUs */
    unsetenv("GRID_RBD_BUILD_JOBS");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int j = grid_build_jobs(16);
    CHECK_MSG(j >= 1 && j <= 16 && j <= cpus, "%d jobs", j);
    unsetenv("GRID_RBD_CC");
    free(src);
    free(lib);
}

/* ---- the loader ---- */

/* compile a source straight to a .so with cc (outside the cache) */
static int compile_direct(const char *src, const char *so)
{
    char c_path[1100], cmd[4096];
    snprintf(c_path, sizeof c_path, "%s.c", so);
    write_text(c_path, src);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s'", so, c_path);
    return system(cmd);
}

static void test_loader_checks(void)
{
    clear_env();
    char dir[1024];
    fresh_dir(dir, sizeof dir, "loader");
    char *src = tiny_source(GRID_ABI_VERSION, 3, 1, 16, TINY_RNEA);
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "tiny", &g);
    grid_build_result res;
    grid_error err;
    CHECK(grid_build(&req, &res, &err) == GRID_OK);

    grid_lib *lib = NULL;
    grid_lib_expect x = grid_lib_expect_any();
    x.nq = 3;
    x.nv = 3;
    x.nb = 3;
    x.dtype = GRID_FLOAT64;
    x.target = 0;
    x.model_hash = "hash-1";
    const int want_rnea[1] = {GRID_ALGO_RNEA}, want_crba[2] = {GRID_ALGO_RNEA, GRID_ALGO_CRBA};
    x.methods = want_rnea;
    x.n_methods = 1;
    CHECK_MSG(grid_lib_open(res.so_path, &x, &lib, &err) == GRID_OK, "%s", err.message);
    CHECK(lib && grid_lib_meta(lib)->nq == 3 && grid_lib_fn(lib, GRID_ALGO_RNEA) != NULL);
    CHECK(lib && grid_lib_fn(lib, GRID_ALGO_CRBA) == NULL && grid_lib_cuda_fn(lib, GRID_ALGO_RNEA) == NULL);
    CHECK(lib && strcmp(grid_lib_path(lib), res.so_path) == 0);
    grid_lib_close(lib);

    /* each mismatch is refused and named */
    struct { const char *word; grid_lib_expect x; } cases[6];
    for (int i = 0; i < 6; i++) cases[i].x = x;
    cases[0].word = "nq"; cases[0].x.nq = 4;
    cases[1].word = "nv"; cases[1].x.nv = 2;
    cases[2].word = "dtype"; cases[2].x.dtype = GRID_FLOAT32;
    cases[3].word = "target"; cases[3].x.target = 1;
    cases[4].word = "model_hash"; cases[4].x.model_hash = "another";
    cases[5].word = "crba"; cases[5].x.methods = want_crba; cases[5].x.n_methods = 2;
    for (int i = 0; i < 6; i++) {
        lib = NULL;
        int rc = grid_lib_open(res.so_path, &cases[i].x, &lib, &err);
        CHECK_MSG(rc == GRID_ERR_LOAD && lib == NULL && strstr(err.message, cases[i].word), "%s: %s",
                  cases[i].word, err.message);
    }

    /* ABI version and missing symbols, in libraries built outside the cache */
    char so[1100];
    char *wrong_abi = tiny_source(GRID_ABI_VERSION + 1, 3, 1, 16, TINY_RNEA);
    snprintf(so, sizeof so, "%s-abi.so", dir);
    CHECK(compile_direct(wrong_abi, so) == 0);
    CHECK(grid_lib_open(so, NULL, &lib, &err) == GRID_ERR_LOAD && strstr(err.message, "abi_version"));
    char *missing = tiny_source(GRID_ABI_VERSION, 3, 1, 16, TINY_RNEA | TINY_NLE);   /* lists rnea and nle, has rnea only */
    snprintf(so, sizeof so, "%s-sym.so", dir);
    CHECK(compile_direct(missing, so) == 0);
    CHECK_MSG(grid_lib_open(so, NULL, &lib, &err) == GRID_ERR_LOAD && strstr(err.message, "grid_nle"), "%s",
              err.message);
    snprintf(so, sizeof so, "%s-none.so", dir);
    CHECK(grid_lib_open(so, NULL, &lib, &err) == GRID_ERR_LOAD && strstr(err.message, so));
    /* rows that do not match the package's signature table are refused, naming the method and the difference */
    char *bad_shape = tiny_source(GRID_ABI_VERSION, 3, 1, 16, TINY_BAD_SHAPE);   /* rnea's tau is (4,), not (3,) */
    snprintf(so, sizeof so, "%s-shape.so", dir);
    CHECK(compile_direct(bad_shape, so) == 0);
    lib = NULL;
    CHECK_MSG(grid_lib_open(so, NULL, &lib, &err) == GRID_ERR_LOAD && lib == NULL && strstr(err.message, "method rnea") &&
                  strstr(err.message, "output 0 is 'tau' (4,)") && strstr(err.message, "expects 'tau' (3,)") &&
                  strstr(err.message, "rebuild"),
              "%s", err.message);
    char *unknown = tiny_source(GRID_ABI_VERSION, 3, 1, 16, TINY_RNEA | TINY_UNKNOWN);
    snprintf(so, sizeof so, "%s-unknown.so", dir);
    CHECK(compile_direct(unknown, so) == 0);
    CHECK_MSG(grid_lib_open(so, NULL, &lib, &err) == GRID_ERR_LOAD && strstr(err.message, "warp_drive") &&
                  strstr(err.message, "signature table"),
              "%s", err.message);
    free(bad_shape);
    free(unknown);
    free(wrong_abi);
    free(missing);
    free(src);
}

/* ---- administration, verbosity, CUDA, the knob table ---- */

static void test_cache_admin(void)
{
    clear_env();
    char dir[1024];
    fresh_dir(dir, sizeof dir, "admin");
    char *s1 = tiny_source(GRID_ABI_VERSION, 2, 1, 16, TINY_RNEA), *s2 = tiny_source(GRID_ABI_VERSION, 2, 2, 16, TINY_RNEA);
    gen_ctx g1 = {s1, 0}, g2 = {s2, 0};
    grid_build_request r1 = request(dir, "one", &g1), r2 = request(dir, "two", &g2);
    r2.options_json = "{\"two\":1}";
    grid_build_result a, b;
    grid_error err;
    CHECK(grid_build(&r1, &a, &err) == GRID_OK && grid_build(&r2, &b, &err) == GRID_OK);

    char *json = NULL;
    CHECK(grid_cache_list_json(dir, &json, &err) == GRID_OK);
    CHECK(json && json[0] == '[' && strstr(json, a.content_key) && strstr(json, b.content_key));
    CHECK(json && strstr(json, "\"name\":\"one\"") && strstr(json, "\"dtype\":\"float64\"") &&
          strstr(json, "\"complete\":true") && strstr(json, "\"target\":\"c\""));
    grid_build_free(json);

    char prefix[12];
    snprintf(prefix, sizeof prefix, "%.10s", b.content_key);
    CHECK(grid_cache_info_json(dir, "one", &json, &err) == GRID_OK);
    CHECK(json && strstr(json, a.content_key) && strstr(json, "\"meta\":{") && strstr(json, "\"build_inputs\":{") &&
          strstr(json, a.input_key));
    grid_build_free(json);
    CHECK_MSG(grid_cache_info_json(dir, prefix, &json, &err) == GRID_OK && strstr(json, "\"name\":\"two\""), "%s / %s",
              err.message, json ? json : "");
    grid_build_free(json);
    CHECK(grid_cache_info_json(dir, "nobody", &json, &err) == GRID_ERR_ARG && strstr(err.message, "nobody"));

    /* clear one name */
    int removed = -1;
    CHECK(grid_cache_clear(dir, "one", &removed, &err) == GRID_OK && removed == 1);
    CHECK(!exists(a.entry_dir) && exists(b.entry_dir));
    CHECK(grid_build(&r2, &b, &err) == GRID_OK && b.cache_hit == 1);
    /* clear everything */
    CHECK(grid_cache_clear(dir, NULL, &removed, &err) == GRID_OK && removed == 1);
    CHECK(grid_cache_list_json(dir, &json, &err) == GRID_OK && strcmp(json, "[]") == 0);
    grid_build_free(json);
    CHECK(grid_build(&r2, &b, &err) == GRID_OK && b.compiled == 1);
    /* a cache that does not exist lists empty */
    char none[1100];
    snprintf(none, sizeof none, "%s-never", dir);
    CHECK(grid_cache_list_json(none, &json, &err) == GRID_OK && strcmp(json, "[]") == 0 && !exists(none));
    grid_build_free(json);
    free(s1);
    free(s2);
}

static void test_verbose_progress(void)
{
    clear_env();
    char dir[1024], log[1100];
    fresh_dir(dir, sizeof dir, "verbose");
    snprintf(log, sizeof log, "%s.stderr", dir);
    char *src = tiny_source(GRID_ABI_VERSION, 2, 1, 16, TINY_RNEA);
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "iiwa", &g);
    req.verbose = 1;
    grid_build_result res;
    grid_error err;
    /* capture stderr into a file for the two calls */
    fflush(stderr);
    int saved = dup(2);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    int rc1 = grid_build(&req, &res, &err);
    int rc2 = grid_build(&req, &res, &err); /* level 1: a hit is silent */
    req.verbose = 2;
    int rc3 = grid_build(&req, &res, &err); /* level 2: hits are reported too */
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK(rc1 == GRID_OK && rc2 == GRID_OK && rc3 == GRID_OK);
    char *text = read_text(log);
    const char *hit = text ? strstr(text, "(hit, ") : NULL;
    CHECK_MSG(hit && !strstr(hit + 1, "(hit, "), "exactly one hit line expected: %s", text ? text : "");
    CHECK_MSG(text && strstr(text, "grid-rbd: iiwa: generating C source...") &&
              strstr(text, "grid-rbd: iiwa: compiling robot.so with ") && strstr(text, "compiled in ") &&
              strstr(text, "grid-rbd: iiwa: cached at ") && strstr(text, "(hit, "), "%s", text ? text : "");
    free(text);
    free(src);
}

static void test_cuda_target(void)
{
    clear_env();
    char nvcc[4096];
    if (grid_find_program("nvcc", nvcc, sizeof nvcc) != 0 &&
        grid_find_program("/usr/local/cuda/bin/nvcc", nvcc, sizeof nvcc) != 0) {
        printf("  (no nvcc: CUDA build test skipped)\n");
        return;
    }
    char dir[1024];
    fresh_dir(dir, sizeof dir, "cuda");
    const char *src =
        "// hand-written CUDA test library for grid-rbd's ABI\n"
        "#include <stddef.h>\n"
        TINY_ABI_STRUCTS
        "static const grid_method_info rows[] = {{\"rnea\", 4, 1, 0, {{\"q\", 1, {2}, 2, 0}, {\"qd\", 1, {2}, 2, 0},\n"
        "  {\"qdd\", 1, {2}, 2, 1}, {\"f_ext\", 1, {12}, 12, 1}}, {{\"tau\", 1, {2}, 2, 0}}, {0}, {0}, {0}, 0, 0}};\n"
        "__global__ void twice(const double *q, double *o, long long n) {\n"
        "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) o[i] = 2 * q[i]; }\n"
        "static const grid_robot_meta_t meta = {2, 2, 2, 2, 1, 1, 8, 1, 1, rows, 0, \"cuda-hash\"};\n"
        "extern \"C\" const grid_robot_meta_t *grid_robot_meta(void) { return &meta; }\n"
        "extern \"C\" int grid_cuda_rnea(const grid_call *c) {\n"
        "  long long n = c->batch * 2; twice<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)c->stream>>>(\n"
        "    (const double *)c->in[0], (double *)c->out[0], n); return cudaGetLastError() == cudaSuccess ? 0 : 11; }\n"
        "extern \"C\" int grid_rnea(const grid_call *c) {\n"
        "  const double *q = (const double *)c->in[0]; double *o = (double *)c->out[0];\n"
        "  for (long long i = 0; i < c->batch * 2; i++) o[i] = 2 * q[i]; return 0; }\n";
    gen_ctx g = {src, 0};
    grid_build_request req = request(dir, "cuda-tiny", &g);
    req.target = GRID_TARGET_CUDA;
    req.cuda_arch = "sm_90";
    grid_build_result res;
    grid_error err;
    double t0 = grid_now();
    int rc = grid_build(&req, &res, &err);
    CHECK_MSG(rc == GRID_OK && res.compiled == 1, "%s", err.message);
    printf("  CUDA build (nvcc, sm_90): %.2f s\n", grid_now() - t0);
    char path[8192];
    snprintf(path, sizeof path, "%s/robot.cu", res.entry_dir);
    CHECK(exists(path));
    grid_lib *lib = NULL;
    grid_lib_expect x = grid_lib_expect_any();
    x.target = 1;
    CHECK_MSG(grid_lib_open(res.so_path, &x, &lib, &err) == GRID_OK, "%s", err.message);
    CHECK(lib && grid_lib_cuda_fn(lib, GRID_ALGO_RNEA) && grid_lib_fn(lib, GRID_ALGO_RNEA));
    grid_lib_close(lib);
    char *ident = NULL;
    CHECK(grid_build_identity_json(GRID_TARGET_CUDA, "90", &ident, &err) == GRID_OK);
    CHECK(ident && strstr(ident, "\"cuda_arch\":\"90\"") && strstr(ident, "\"-arch=sm_90\"") &&
          strstr(ident, "\"target\":\"cuda\""));
    free(ident);
    /* hit */
    t0 = grid_now();
    CHECK(grid_build(&req, &res, &err) == GRID_OK && res.cache_hit == 1);
    printf("  CUDA cache hit: %.2f ms\n", (grid_now() - t0) * 1e3);
    /* a malformed arch is refused before anything runs */
    req.cuda_arch = "not-an-arch";
    CHECK(grid_build(&req, &res, &err) == GRID_ERR_ARG && strstr(err.message, "not-an-arch"));
}

/* every getenv("GRID_...") or grid_env("...") in src/ names a variable in the knob table */
static int knob_listed(const char *name)
{
    for (int i = 0; i < grid_env_knob_count(); i++)
        if (strcmp(grid_env_knob_at(i)->name, name) == 0) return 1;
    return 0;
}

static int scan_file(const char *path, int *found)
{
    char *text = read_text(path);
    if (!text) return 0;
    int bad = 0;
    static const char *const calls[] = {"getenv(\"GRID_", "grid_env(\"", NULL};
    for (int c = 0; calls[c]; c++) {
        for (char *p = strstr(text, calls[c]); p; p = strstr(p + 1, calls[c])) {
            char *q = strchr(p, '"') + 1;
            size_t n = strcspn(q, "\"");
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(n < 127 ? n : 127), q);
            (*found)++;
            if (!knob_listed(name)) {
                fprintf(stderr, "  %s reads %s, which is not in src/driver/env_knobs.c\n", path, name);
                bad++;
            }
        }
    }
    free(text);
    return bad;
}

static void test_env_knob_table_complete(void)
{
    /* find src/ from the working directory (make runs from the repository root) or from this file */
    const char *roots[] = {"src", "../../src", NULL};
    const char *src = NULL;
    struct stat st;
    for (int i = 0; roots[i]; i++)
        if (stat(roots[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            char probe[256];
            snprintf(probe, sizeof probe, "%s/build/env_knobs.c", roots[i]);
            if (exists(probe)) { src = roots[i]; break; }
        }
    if (!src) {
        printf("  (src/ not found from the working directory: knob scan skipped)\n");
        return;
    }
    int bad = 0, found = 0;
    DIR *top = opendir(src);
    struct dirent *de;
    while (top && (de = readdir(top)) != NULL) {
        if (de->d_name[0] == '.') continue;
        char sub[512];
        snprintf(sub, sizeof sub, "%s/%s", src, de->d_name);
        DIR *dh = opendir(sub);
        struct dirent *fe;
        while (dh && (fe = readdir(dh)) != NULL) {
            size_t n = strlen(fe->d_name);
            if (n < 3 || (strcmp(fe->d_name + n - 2, ".c") != 0 && strcmp(fe->d_name + n - 2, ".h") != 0)) continue;
            char file[1024];
            snprintf(file, sizeof file, "%s/%s", sub, fe->d_name);
            bad += scan_file(file, &found);
        }
        if (dh) closedir(dh);
    }
    if (top) closedir(top);
    CHECK(bad == 0);
    CHECK(found >= 6);
    /* no duplicates, every entry documented */
    for (int i = 0; i < grid_env_knob_count(); i++) {
        CHECK(grid_env_knob_at(i)->doc && grid_env_knob_at(i)->doc[0]);
        for (int j = i + 1; j < grid_env_knob_count(); j++)
            CHECK(strcmp(grid_env_knob_at(i)->name, grid_env_knob_at(j)->name) != 0);
    }
    /* unlisted names read as unset */
    setenv("GRID_RBD_NOT_A_KNOB", "1", 1);
    CHECK(grid_env("GRID_RBD_NOT_A_KNOB") == NULL);
    unsetenv("GRID_RBD_NOT_A_KNOB");
}

int main(void)
{
    alarm(600);
    snprintf(test_root, sizeof test_root, "/tmp/grid-test-build-XXXXXX");
    if (!mkdtemp(test_root)) {
        perror("mkdtemp");
        return 1;
    }
    RUN_TEST(test_sha256_vectors);
    RUN_TEST(test_json_canonical);
    RUN_TEST(test_cache_root);
    RUN_TEST(test_cuda_arch_normalize);
    RUN_TEST(test_hostile_files);
    RUN_TEST(test_load_the_verified_descriptor);
    RUN_TEST(test_build_then_hit);
    RUN_TEST(test_generator_change_same_bytes_no_compile);
    RUN_TEST(test_identity_change_rebuilds);
    RUN_TEST(test_damaged_entries_rebuilt);
    RUN_TEST(test_unwritable_cache);
    RUN_TEST(test_missing_compiler);
    RUN_TEST(test_compile_error);
    RUN_TEST(test_concurrent_builds_compile_once);
    RUN_TEST(test_killed_build_leaves_no_entry);
    RUN_TEST(test_cancelled_build);
    RUN_TEST(test_supervisor_killed);
    RUN_TEST(test_parts_within_the_job_cap);
    RUN_TEST(test_loader_checks);
    RUN_TEST(test_cache_admin);
    RUN_TEST(test_verbose_progress);
    RUN_TEST(test_cuda_target);
    RUN_TEST(test_env_knob_table_complete);
    grid_fs_rmtree(test_root);
    return check_summary("build");
}
