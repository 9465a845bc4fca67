/* The emitter's growable text buffer: appends, formatted appends, and handing the text over. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "writer.h"

void ew_init(ew_writer *w)
{
    memset(w, 0, sizeof *w);
}

void ew_free(ew_writer *w)
{
    free(w->buf);
    memset(w, 0, sizeof *w);
}

/* make room for n more bytes plus the NUL */
static int reserve(ew_writer *w, size_t n)
{
    if (w->oom) return 0;
    if (w->len + n + 1 <= w->cap) return 1;
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->len + n + 1) cap *= 2;
    char *b = realloc(w->buf, cap);
    if (!b) {
        w->oom = 1;
        return 0;
    }
    w->buf = b;
    w->cap = cap;
    return 1;
}

void ew_putn(ew_writer *w, const char *s, size_t n)
{
    if (!reserve(w, n)) return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

void ew_puts(ew_writer *w, const char *s)
{
    ew_putn(w, s, strlen(s));
}

void ew_printf(ew_writer *w, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        w->oom = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        ew_putn(w, small, (size_t)n);
        return;
    }
    /* long output: format straight into the buffer */
    if (!reserve(w, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(w->buf + w->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    w->len += (size_t)n;
}

char *ew_take(ew_writer *w, size_t *len)
{
    if (w->oom || !reserve(w, 0)) {
        ew_free(w);
        return NULL;
    }
    w->buf[w->len] = '\0';
    char *b = w->buf;
    if (len) *len = w->len;
    memset(w, 0, sizeof *w);
    return b;
}
