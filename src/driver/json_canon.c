/* Canonical JSON writer: sorted keys, no spaces, ASCII-only escaping, matching Python's json.dumps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"

/* decode one UTF-8 sequence at s (n bytes left); *cp gets the code point or -1 when invalid */
static size_t utf8_next(const unsigned char *s, size_t n, long *cp)
{
    unsigned c = s[0];
    size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (need == 0 || need > n) { *cp = -1; return 1; }
    if (need == 1) { *cp = c; return 1; }
    long v = c & (0x7f >> need);
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80) { *cp = -1; return 1; }
        v = (v << 6) | (s[i] & 0x3f);
    }
    /* reject overlong forms, surrogates and values past U+10FFFF */
    static const long min_for[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min_for[need] || (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff) { *cp = -1; return 1; }
    *cp = v;
    return need;
}

int grid_json_put_string(grid_buf *b, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    grid_buf_put(b, "\"", 1);
    for (size_t i = 0; i < len;) {
        unsigned c = p[i];
        /* plain printable ASCII goes through; quote and backslash get a backslash */
        if (c >= 0x20 && c < 0x7f) {
            if (c == '"' || c == '\\') grid_buf_put(b, "\\", 1);
            grid_buf_put(b, &p[i], 1);
            i++;
            continue;
        }
        /* short escapes Python uses, then \uXXXX (surrogate pairs above the BMP) */
        const char *esc = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" :
                          c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        if (esc) {
            grid_buf_puts(b, esc);
            i++;
            continue;
        }
        long cp;
        size_t used = utf8_next(p + i, len - i, &cp);
        if (cp < 0) cp = c; /* an invalid byte is written as the Latin-1 code point of that byte */
        if (cp >= 0x10000) {
            long u = cp - 0x10000;
            grid_buf_printf(b, "\\u%04lx\\u%04lx", 0xd800 + (u >> 10), 0xdc00 + (u & 0x3ff));
        } else {
            grid_buf_printf(b, "\\u%04lx", cp);
        }
        i += used;
    }
    return grid_buf_put(b, "\"", 1);
}

void grid_json_obj_init(grid_json_obj *o)
{
    memset(o, 0, sizeof *o);
}

void grid_json_obj_free(grid_json_obj *o)
{
    for (int i = 0; i < o->n; i++) {
        free(o->keys[i]);
        free(o->values[i]);
    }
    free(o->keys);
    free(o->values);
    grid_json_obj_init(o);
}

/* add a member whose value text is taken over (value may be NULL after an oom) */
static int obj_add(grid_json_obj *o, const char *key, char *value)
{
    if (!value) o->oom = 1;
    if (o->oom) {
        free(value);
        return -1;
    }
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 16;
        char **k = realloc(o->keys, (size_t)cap * sizeof *k);
        if (k) o->keys = k;
        char **v = realloc(o->values, (size_t)cap * sizeof *v);
        if (v) o->values = v;
        if (!k || !v) {
            o->oom = 1;
            free(value);
            return -1;
        }
        o->cap = cap;
    }
    char *kc = strdup(key);
    if (!kc) {
        o->oom = 1;
        free(value);
        return -1;
    }
    o->keys[o->n] = kc;
    o->values[o->n] = value;
    o->n++;
    return 0;
}

int grid_json_obj_str(grid_json_obj *o, const char *key, const char *value)
{
    if (!value) return grid_json_obj_raw(o, key, "null");
    grid_buf b;
    grid_buf_init(&b);
    grid_json_put_string(&b, value, strlen(value));
    return obj_add(o, key, grid_buf_take(&b));
}

int grid_json_obj_int(grid_json_obj *o, const char *key, long long value)
{
    grid_buf b;
    grid_buf_init(&b);
    grid_buf_printf(&b, "%lld", value);
    return obj_add(o, key, grid_buf_take(&b));
}

int grid_json_obj_num(grid_json_obj *o, const char *key, double value)
{
    grid_buf b;
    grid_buf_init(&b);
    grid_buf_printf(&b, "%.6f", value);
    return obj_add(o, key, grid_buf_take(&b));
}

int grid_json_obj_bool(grid_json_obj *o, const char *key, int value)
{
    return grid_json_obj_raw(o, key, value ? "true" : "false");
}

int grid_json_obj_raw(grid_json_obj *o, const char *key, const char *json)
{
    return obj_add(o, key, json ? strdup(json) : NULL);
}

char *grid_json_obj_finish(grid_json_obj *o)
{
    if (o->oom) {
        grid_json_obj_free(o);
        return NULL;
    }
    /* insertion sort by key bytes: equals sorting by code point for UTF-8 keys */
    for (int i = 1; i < o->n; i++) {
        char *k = o->keys[i], *v = o->values[i];
        int j = i - 1;
        for (; j >= 0 && strcmp(o->keys[j], k) > 0; j--) {
            o->keys[j + 1] = o->keys[j];
            o->values[j + 1] = o->values[j];
        }
        o->keys[j + 1] = k;
        o->values[j + 1] = v;
    }
    grid_buf b;
    grid_buf_init(&b);
    grid_buf_put(&b, "{", 1);
    for (int i = 0; i < o->n; i++) {
        if (i) grid_buf_put(&b, ",", 1);
        grid_json_put_string(&b, o->keys[i], strlen(o->keys[i]));
        grid_buf_put(&b, ":", 1);
        grid_buf_puts(&b, o->values[i]);
    }
    grid_buf_put(&b, "}", 1);
    grid_json_obj_free(o);
    return grid_buf_take(&b);
}
