/* A growable text buffer for the emitter: printf-style appends with a sticky out-of-memory flag. */
#ifndef GRID_EMIT_WRITER_H
#define GRID_EMIT_WRITER_H

#include <stddef.h>

typedef struct {
    char *buf;   /* NUL-terminated once anything was written */
    size_t len;  /* bytes written, without the NUL */
    size_t cap;
    int oom;     /* 1 once an allocation failed; later writes are dropped */
} ew_writer;

void ew_init(ew_writer *w);
void ew_free(ew_writer *w);
void ew_puts(ew_writer *w, const char *s);
void ew_putn(ew_writer *w, const char *s, size_t n);
void ew_printf(ew_writer *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* hand the buffer to the caller (malloc'd, NUL-terminated) and reset w; NULL on oom */
char *ew_take(ew_writer *w, size_t *len);

#endif
