/* Growable byte buffer shared by the build and cache code (private to src/driver). */
#ifndef GRID_BUILD_BUF_H
#define GRID_BUILD_BUF_H

#include <stddef.h>

/* bytes plus a NUL kept after them; oom sticks once an allocation failed */
typedef struct {
    char *data;
    size_t len, cap;
    int oom;
} grid_buf;

void grid_buf_init(grid_buf *b);
void grid_buf_free(grid_buf *b);
/* append; return 0, or -1 (and set oom) when memory ran out */
int grid_buf_put(grid_buf *b, const void *p, size_t n);
int grid_buf_puts(grid_buf *b, const char *s);
int grid_buf_printf(grid_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* hand the NUL-terminated bytes to the caller (NULL after oom); the buffer is reset */
char *grid_buf_take(grid_buf *b);

#endif
