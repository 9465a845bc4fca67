/* The CUDA host runtime: its plan (chunks, slices, layouts, reservations) without a GPU, its embedded sources, and its once-per-toolchain build with nvcc (skipped without nvcc). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "grid/build.h"
#include "grid/runtime.h"
#include "../../src/runtime/cuda_host.h"
#include "../../src/driver/build_internal.h"

static int fake_launch(const grid_call *c)
{
    (void)c;
    return 0;
}

static const grid_cuda_knobs defaults = {GRID_CUDA_CHUNK_BYTES, GRID_CUDA_ZERO_COPY_MAX, GRID_CUDA_WORK_MAX,
                                         GRID_CUDA_PACK_INPUTS, GRID_CUDA_CHUNK_MIN_STATES};

/* RNEA-like row of a 7-dof arm in float64: q, qd, qdd (absent), f_ext (absent) -> tau */
static grid_io_ rnea_io(long long work)
{
    grid_io_ io;
    memset(&io, 0, sizeof io);
    io.launch = fake_launch;
    io.n_in = 4;
    io.n_out = 1;
    io.win[0] = 7;
    io.win[1] = 7;
    io.win[2] = 0;
    io.win[3] = 0;
    io.wout[0] = 7;
    io.real_bytes = 8;
    io.work = work;
    return io;
}

static void test_chunks_and_slices(void)
{
    CHECK(grid_cuda_in_flight(0) == 0 && grid_cuda_in_flight(1) == 32 && grid_cuda_in_flight(32) == 32 &&
          grid_cuda_in_flight(33) == 64);
    /* the wider side sets the chunk; at least 32, at most n */
    CHECK(grid_cuda_chunk_states(1000000, 100, 400, 4000, 0) == 32);
    CHECK(grid_cuda_chunk_states(1000000, 100, 40, 400000, 0) == 4000);
    CHECK(grid_cuda_chunk_states(10, 100, 40, 400000, 0) == 10);
    CHECK(grid_cuda_chunk_states(5, 0, 0, 64, 0) == 5);
    /* at least min_states (a wide output's chunk_bytes would hold too few states for its kernel), at most n */
    CHECK(grid_cuda_chunk_states(1000000, 100, 400, 4000, 256) == 256);
    CHECK(grid_cuda_chunk_states(100, 100, 400, 4000, 256) == 100);
    CHECK(grid_cuda_chunk_states(1000000, 100, 40, 400000, 256) == 4000);
    /* slices: whole warps within the workspace budget, at least one warp; no workspace: one launch */
    CHECK(grid_cuda_slice_states(1000, 0, 1024) == 1000);
    CHECK(grid_cuda_slice_states(100000, 1000, 1000 * 100) == 96);
    CHECK(grid_cuda_slice_states(100000, 1000, 10) == 32);
    CHECK(grid_cuda_slice_states(50, 8, 1 << 20) == 50);
    /* a launch's block size (defaults: 128 threads, 66 blocks to fill): halved while it would have fewer blocks,
       never below a warp; large launches keep the full block */
    CHECK(GRID_CUDA_BLOCK == 128 && GRID_CUDA_FILL_BLOCKS == 66);
    CHECK(grid_cuda_block_of(1) == 32 && grid_cuda_block_of(1536) == 32 && grid_cuda_block_of(2048) == 32);
    CHECK(grid_cuda_block_of(6144) == 64 && grid_cuda_block_of(8192) == 64 && grid_cuda_block_of(4224) == 64);
    CHECK(grid_cuda_block_of(66 * 128) == 128 && grid_cuda_block_of(1LL << 20) == 128);
}

static void test_round_trip_plan(void)
{
    grid_io_ io = rnea_io(0);
    grid_cuda_plan p;
    grid_cuda_plan_call(&io, 1000, &defaults, &p);
    CHECK(p.n == 1000 && p.chunk == 1000 && p.slice == 1000 && !p.zero_copy && p.pack == GRID_CUDA_PACK_INPUTS);
    CHECK(p.row[0] == 56 && p.row[1] == 56 && p.row[2] == 0 && p.row[3] == 0 && p.in_b == 112 && p.out_b == 56);
    CHECK(p.din_bytes == 112000 && p.dout_bytes == 56000 && p.dws_bytes == 0 && p.out_halves == 1);
    /* the chunk's arrays one after the other, absent ones taking no room */
    CHECK(grid_cuda_in_offset(&p, 0, 10) == 0 && grid_cuda_in_offset(&p, 1, 10) == 560 &&
          grid_cuda_in_offset(&p, 2, 10) == 1120 && grid_cuda_in_offset(&p, 3, 10) == 1120 &&
          grid_cuda_in_offset(&p, 4, 10) == 1120);
    CHECK(grid_cuda_out_offset(&p, 0, 10) == 0 && grid_cuda_out_offset(&p, 1, 10) == 560);

    /* small chunks, packed inputs: two halves of pinned staging of one chunk each */
    grid_cuda_knobs k = {4096, 0, GRID_CUDA_WORK_MAX, 1, 0};
    grid_cuda_plan_call(&io, 1000, &k, &p);
    CHECK(p.chunk == 36 && p.pack && p.hin_bytes == 2 * 36 * 112 && p.din_bytes == 36 * 112);
    /* several chunks: the outputs in two halves (one copied out while the next chunk computes into the other) */
    CHECK(p.out_halves == 2 && p.dout_bytes == 2 * 36 * 56);
    /* the defaults' floor of states per chunk */
    k.chunk_min_states = GRID_CUDA_CHUNK_MIN_STATES;
    grid_cuda_plan_call(&io, 1000, &k, &p);
    CHECK(GRID_CUDA_CHUNK_MIN_STATES == 256 && p.chunk == 256 && p.out_halves == 2 && p.dout_bytes == 2 * 256 * 56);
    grid_cuda_plan_call(&io, 200, &k, &p);
    CHECK(p.chunk == 200 && p.out_halves == 1 && p.dout_bytes == 200 * 56);

    /* zero copy: the whole call in mapped memory, inputs then outputs */
    k = (grid_cuda_knobs){GRID_CUDA_CHUNK_BYTES, 168 * 10, GRID_CUDA_WORK_MAX, 1, 0};
    grid_cuda_plan_call(&io, 10, &k, &p);
    CHECK(p.zero_copy && p.hz_bytes == 1680 && p.din_bytes == 0 && p.hin_bytes == 0 && p.chunk == 10);
    grid_cuda_plan_call(&io, 11, &k, &p);
    CHECK(!p.zero_copy && p.hz_bytes == 0 && p.din_bytes == 11 * 112);

    /* a rolled function: workspace for the states in flight of one slice */
    io = rnea_io(4000);
    k = (grid_cuda_knobs){GRID_CUDA_CHUNK_BYTES, 0, 4000 * 64, 0, 0};
    grid_cuda_plan_call(&io, 1000, &k, &p);
    CHECK(p.work_b == 4000 && p.slice == 64 && p.dws_bytes == 64 * 4000);
    grid_cuda_plan_call(&io, 5, &k, &p);
    CHECK(p.slice == 5 && p.dws_bytes == 32 * 4000); /* a whole warp: lanes past the batch have their own */
    k.zero_copy_max = 1 << 20;
    grid_cuda_plan_call(&io, 5, &k, &p);
    CHECK(p.zero_copy && p.dws_bytes == 32 * 4000);
}

static void test_reserve_plan(void)
{
    grid_method_info rows[2];
    memset(rows, 0, sizeof rows);
    rows[0].n_in = 2;
    rows[0].in[0].width = 7;
    rows[0].in[1].width = 7;
    rows[0].n_out = 1;
    rows[0].out[0].width = 7;
    rows[1].n_in = 1;
    rows[1].in[0].width = 7;
    rows[1].n_out = 1;
    rows[1].out[0].width = 49;
    rows[1].work_bytes = 800;
    grid_robot_meta_t m;
    memset(&m, 0, sizeof m);
    m.dtype = 4;
    m.n_methods = 2;
    m.methods = rows;
    grid_cuda_knobs k = {GRID_CUDA_CHUNK_BYTES, 0, GRID_CUDA_WORK_MAX, 1, 0};
    grid_cuda_plan p;
    CHECK(grid_cuda_plan_reserve(&m, 1000, &k, &p) == 0);
    /* the widest inputs (14) and outputs (49) of any row, and the largest workspace */
    CHECK(p.din_bytes == 1000 * 14 * 4 && p.dout_bytes == 1000 * 49 * 4 && p.work_b == 800);
    CHECK(p.chunk == 1000 && p.hin_bytes == 2 * 1000 * 14 * 4 && p.dws_bytes == 1024 * 800 && p.hz_bytes == 0);
    k.zero_copy_max = 12345;
    CHECK(grid_cuda_plan_reserve(&m, 0, &k, &p) == 0 && p.din_bytes == 0 && p.hz_bytes == 12345);
    /* a batch of several chunks: room for two of them, even where that is more than the batch */
    k.chunk_bytes = 49 * 4 * 600;
    CHECK(grid_cuda_plan_reserve(&m, 1000, &k, &p) == 0 && p.chunk == 600 && p.out_halves == 2);
    CHECK(p.dout_bytes == 1200 * 49 * 4);
    /* sizes past size_t are refused, not wrapped */
    CHECK(grid_cuda_plan_reserve(&m, 1LL << 62, &k, &p) == -1);
}

/* the embedded sources are the repository's files (the library was rebuilt after an edit) and hash stably */
static void test_embedded_sources(void)
{
    static const char *const repo[] = {"include/grid/abi.h", "include/grid/convention.h", "src/runtime/cuda_host.h",
                                       "src/runtime/conv_state.h", "src/runtime/cuda_plan.c", "src/runtime/cuda_runtime.cu"};
    const grid_source_file *f;
    const int n = grid_cuda_runtime_sources(&f);
    CHECK(n == 6);
    for (int i = 0; i < n && i < 6; i++) {
        char *text = NULL;
        size_t len = 0;
        if (grid_fs_read(repo[i], &text, &len) != 0) {
            printf("  (not run from the repository root: %s not compared)\n", repo[i]);
            continue;
        }
        CHECK_MSG(len == f[i].len && memcmp(text, f[i].text, len) == 0 && f[i].text[len] == '\0',
                  "%s differs from the embedded %s (rebuild the library)", repo[i], f[i].path);
        free(text);
    }
    CHECK(strstr(f[5].text, "grid_cuda_round_trip_") && strcmp(f[5].path, "cuda_runtime.cu") == 0);
    CHECK(strcmp(f[1].path, "grid/convention.h") == 0 && strcmp(f[3].path, "conv_state.h") == 0);
    const char *h = grid_cuda_runtime_hash();
    CHECK(strlen(h) == 64 && strcmp(h, grid_cuda_runtime_hash()) == 0);
}

static int have_nvcc(void)
{
    char nvcc[4096];
    return grid_find_program("nvcc", nvcc, sizeof nvcc) == 0 ||
           grid_find_program("/usr/local/cuda/bin/nvcc", nvcc, sizeof nvcc) == 0;
}

/* nvcc compiles the runtime once per toolchain into the cache; a second request is a hit; a broken compile
   is reported with its log */
static void test_build_with_nvcc(void)
{
    unsetenv("GRID_RBD_NVCC_FLAGS");
    unsetenv("GRID_RBD_NVCC");
    if (!have_nvcc()) {
        printf("  (no nvcc: the CUDA runtime build test is skipped)\n");
        return;
    }
    char root[] = "/tmp/grid-test-cudart-XXXXXX";
    if (!mkdtemp(root)) {
        CHECK(0);
        return;
    }
    grid_error err;
    grid_cache_dirs d;
    grid_toolchain tc;
    CHECK(grid_cache_open(root, &d, &err) == GRID_OK);
    CHECK_MSG(grid_toolchain_resolve(GRID_TARGET_CUDA, "90", NULL, NULL, &tc, &err) == GRID_OK, "%s", err.message);
    CHECK(strstr(tc.identity_json, "\"cuda_runtime_sha256\"") && strstr(tc.identity_json, grid_cuda_runtime_hash()));
    char dir[GRID_PATH_CAP], dir2[GRID_PATH_CAP], path[GRID_PATH_CAP + 64];
    int compiled = 0;
    int rc = grid_cuda_runtime_ensure(&d, &tc, dir, sizeof dir, &compiled, NULL, NULL, &err);
    CHECK_MSG(rc == GRID_OK && compiled == 1, "%s", err.message);
    static const char *const files[] = {"cuda_runtime.o", "cuda_runtime.cu", "cuda_plan.c", "cuda_host.h",
                                        "conv_state.h", "grid/abi.h", "grid/convention.h", "object.sha256",
                                        "build.log"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        struct stat st;
        CHECK_MSG(stat(path, &st) == 0 && st.st_size > 0, "%s", path);
    }
    /* the object defines the runtime's entry points */
    char *obj = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/cuda_runtime.o", dir);
    CHECK(grid_fs_read(path, &obj, &len) == 0 && len > 1000);
    CHECK(obj && memmem(obj, len, "grid_cuda_reserve", 17) && memmem(obj, len, "grid_cuda_round_trip_", 21) &&
          memmem(obj, len, "grid_cuda_convention_call", 25));
    free(obj);
    /* the same toolchain again: nothing compiled */
    CHECK(grid_cuda_runtime_ensure(&d, &tc, dir2, sizeof dir2, &compiled, NULL, NULL, &err) == GRID_OK &&
          compiled == 0 && strcmp(dir, dir2) == 0);
    /* the robot command includes and links it */
    int argc = 0;
    char **argv = grid_cuda_runtime_link_argv(&tc, dir, &argc);
    CHECK(argv && argc == tc.argc + 2 && argv[argc] == NULL);
    int inc = -1, out = -1, src = -1, objarg = -1;
    for (int i = 0; argv && i < argc; i++) {
        if (strncmp(argv[i], "-I", 2) == 0 && strcmp(argv[i] + 2, dir) == 0) inc = i;
        if (strcmp(argv[i], "-o") == 0) out = i;
        if (strcmp(argv[i], "robot.cu") == 0) src = i;
        if (strstr(argv[i], "/cuda_runtime.o")) objarg = i;
    }
    CHECK(inc >= 0 && out == inc + 1 && src > out && objarg == src + 1);
    grid_cuda_runtime_free_argv(argv);
    /* a damaged entry (the object no longer matches its stamp) is rebuilt */
    snprintf(path, sizeof path, "%s/cuda_runtime.o", dir);
    FILE *fp = fopen(path, "ab");
    if (fp) {
        fputs("junk", fp);
        fclose(fp);
    }
    CHECK(grid_cuda_runtime_ensure(&d, &tc, dir2, sizeof dir2, &compiled, NULL, NULL, &err) == GRID_OK && compiled == 1);
    grid_toolchain_free(&tc);

    /* a compile that fails: GRID_ERR_BUILD naming the runtime, with the kept log */
    setenv("GRID_RBD_NVCC_FLAGS", "-O3 -DGRID_CUDA_BLOCK=", 1);
    CHECK(grid_toolchain_resolve(GRID_TARGET_CUDA, "90", NULL, NULL, &tc, &err) == GRID_OK);
    rc = grid_cuda_runtime_ensure(&d, &tc, dir2, sizeof dir2, &compiled, NULL, NULL, &err);
    CHECK_MSG(rc == GRID_ERR_BUILD && strstr(err.message, "CUDA host runtime") && strstr(err.path, ".failed.log") &&
                  access(err.path, R_OK) == 0,
              "%d %s", rc, err.message);
    CHECK(compiled == 0 && strcmp(dir, dir2) != 0 && access(dir2, F_OK) != 0);
    grid_toolchain_free(&tc);
    unsetenv("GRID_RBD_NVCC_FLAGS");
    grid_fs_rmtree(root);
}

int main(void)
{
    RUN_TEST(test_chunks_and_slices);
    RUN_TEST(test_round_trip_plan);
    RUN_TEST(test_reserve_plan);
    RUN_TEST(test_embedded_sources);
    RUN_TEST(test_build_with_nvcc);
    return check_summary("cuda_runtime");
}
