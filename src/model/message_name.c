/* Error messages about named elements: untrusted names made safe to quote, and the "<tag name> line N:" prefix. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "robot_desc.h"

#define MESSAGE_NAME_MAX 64

const char *grid_name_for_message(const char *s, char *buf, size_t n)
{
    if (!buf || n == 0) return "";
    if (!s) s = "";
    size_t limit = n - 1 < MESSAGE_NAME_MAX ? n - 1 : MESSAGE_NAME_MAX;
    size_t len = strlen(s);
    size_t keep = len;
    int cut = 0;
    if (len > limit) {
        // leave room for "..." and do not split a utf-8 sequence
        keep = limit >= 3 ? limit - 3 : 0;
        while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80) keep--;
        cut = 1;
    }
    for (size_t i = 0; i < keep; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (cut && limit >= 3) {
        memcpy(buf + keep, "...", 3);
        keep += 3;
    }
    buf[keep] = '\0';
    return buf;
}

int grid_desc_error(grid_error *err, int code, grid_src_pos pos, const char *tag, const char *name,
                    const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);

    char nb[80];
    if (name)
        return grid_error_set(err, code, pos.line, pos.column, "<%s name=\"%s\"> line %d: %s", tag,
                              grid_name_for_message(name, nb, sizeof nb), pos.line, what);
    return grid_error_set(err, code, pos.line, pos.column, "<%s> line %d: %s", tag, pos.line, what);
}
