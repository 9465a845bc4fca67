/* Growable byte buffer: append bytes, strings and formatted text, then take the result. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"

void grid_buf_init(grid_buf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

void grid_buf_free(grid_buf *b)
{
    free(b->data);
    grid_buf_init(b);
}

/* make room for n more bytes plus the NUL */
static int buf_reserve(grid_buf *b, size_t n)
{
    if (b->oom) return -1;
    if (b->len + n + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int grid_buf_put(grid_buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n)) return -1;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int grid_buf_puts(grid_buf *b, const char *s)
{
    return grid_buf_put(b, s, strlen(s));
}

int grid_buf_printf(grid_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buf_reserve(b, (size_t)n)) return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

char *grid_buf_take(grid_buf *b)
{
    if (b->oom) {
        grid_buf_free(b);
        return NULL;
    }
    if (!b->data && grid_buf_put(b, "", 0)) return NULL;
    char *p = b->data;
    grid_buf_init(b);
    return p;
}
