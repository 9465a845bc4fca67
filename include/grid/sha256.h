/* SHA-256 (FIPS 180-4): every content key and file check of the cache, and the CUDA runtime's source hash. */
#ifndef GRID_SHA256_H
#define GRID_SHA256_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t state[8];
    uint64_t total;            /* bytes hashed so far */
    unsigned char block[64];   /* pending partial block */
    size_t used;               /* bytes in block */
} grid_sha256_ctx;

void grid_sha256_init(grid_sha256_ctx *c);
void grid_sha256_update(grid_sha256_ctx *c, const void *data, size_t len);
void grid_sha256_final(grid_sha256_ctx *c, unsigned char digest[32]);
/* one-shot digest of a buffer */
void grid_sha256(const void *data, size_t len, unsigned char digest[32]);
/* 64 lowercase hex characters plus the terminating NUL */
void grid_sha256_hex(const unsigned char digest[32], char hex[65]);

#ifdef __cplusplus
}
#endif
#endif
