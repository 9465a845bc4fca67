/* The CUDA host runtime's source files, embedded in the library (.incbin, paths relative to the repository root where every build runs) so a CUDA build can write them out and compile them once per toolchain. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "grid/sha256.h"
#include "grid/runtime.h"
#include "../common/incbin.h"

GRID_INCBIN(grid_rt_abi_h, "include/grid/abi.h");
GRID_INCBIN(grid_rt_conv_h, "include/grid/convention.h");
GRID_INCBIN(grid_rt_host_h, "src/runtime/cuda_host.h");
GRID_INCBIN(grid_rt_conv_state_h, "src/runtime/conv_state.h");
GRID_INCBIN(grid_rt_plan_c, "src/runtime/cuda_plan.c");
GRID_INCBIN(grid_rt_runtime_cu, "src/runtime/cuda_runtime.cu");

#define N_FILES 6
static grid_source_file files[N_FILES];
static char hash_hex[65];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* a length-prefixed field, so that no two file lists hash the same bytes */
static void hash_field(grid_sha256_ctx *c, const void *data, size_t len)
{
    unsigned char prefix[8];
    for (int i = 0; i < 8; i++) prefix[i] = (unsigned char)((unsigned long long)len >> (8 * i));
    grid_sha256_update(c, prefix, 8);
    grid_sha256_update(c, data, len);
}

static void init(void)
{
    const char *const path[N_FILES] = {"grid/abi.h", "grid/convention.h", "cuda_host.h", "conv_state.h", "cuda_plan.c",
                                       "cuda_runtime.cu"};
    const char *const start[N_FILES] = {grid_rt_abi_h_start, grid_rt_conv_h_start, grid_rt_host_h_start,
                                        grid_rt_conv_state_h_start, grid_rt_plan_c_start, grid_rt_runtime_cu_start};
    const char *const end[N_FILES] = {grid_rt_abi_h_end, grid_rt_conv_h_end, grid_rt_host_h_end, grid_rt_conv_state_h_end,
                                      grid_rt_plan_c_end, grid_rt_runtime_cu_end};
    grid_sha256_ctx c;
    grid_sha256_init(&c);
    hash_field(&c, "grid-rbd cuda runtime v1", 24);
    for (int i = 0; i < N_FILES; i++) {
        files[i] = (grid_source_file){path[i], start[i], (size_t)(end[i] - start[i])};
        hash_field(&c, path[i], strlen(path[i]));
        hash_field(&c, start[i], files[i].len);
    }
    unsigned char d[32];
    grid_sha256_final(&c, d);
    grid_sha256_hex(d, hash_hex);
}

int grid_cuda_runtime_sources(const grid_source_file **out)
{
    pthread_once(&once, init);
    if (out) *out = files;
    return (int)(sizeof files / sizeof files[0]);
}

const char *grid_cuda_runtime_hash(void)
{
    pthread_once(&once, init);
    return hash_hex;
}
