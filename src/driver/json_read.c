/* A small JSON reader for the cache's own files: walks the members of one top-level object. */
#include <stdlib.h>
#include <string.h>
#include "json.h"

typedef struct {
    const char *p, *end;
    int depth;
} json_cursor;

static void skip_ws(json_cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int hex4(const char *p, const char *end, unsigned *out)
{
    if (end - p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static void put_utf8(grid_buf *b, unsigned long cp)
{
    unsigned char u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (unsigned char)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (unsigned char)(0xc0 | (cp >> 6)); u[1] = (unsigned char)(0x80 | (cp & 0x3f)); n = 2; }
    else if (cp < 0x10000) {
        u[0] = (unsigned char)(0xe0 | (cp >> 12)); u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (unsigned char)(0x80 | (cp & 0x3f)); n = 3;
    } else {
        u[0] = (unsigned char)(0xf0 | (cp >> 18)); u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)); u[3] = (unsigned char)(0x80 | (cp & 0x3f)); n = 4;
    }
    grid_buf_put(b, u, n);
}

/* parse a string literal at the cursor; decoded text into out when out is not NULL */
static int parse_string(json_cursor *c, grid_buf *out)
{
    if (c->p >= c->end || *c->p != '"') return -1;
    c->p++;
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch == '"') return 0;
        if (ch < 0x20) return -1;
        if (ch != '\\') {
            if (out) grid_buf_put(out, &ch, 1);
            continue;
        }
        if (c->p >= c->end) return -1;
        char e = *c->p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            if (out) grid_buf_put(out, &decoded[simple - "\"\\/bfnrt"], 1);
            continue;
        }
        if (e != 'u') return -1;
        unsigned hi, lo;
        if (hex4(c->p, c->end, &hi)) return -1;
        c->p += 4;
        unsigned long cp = hi;
        /* a high surrogate followed by a low one forms one code point */
        if (hi >= 0xd800 && hi <= 0xdbff && c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u' &&
            hex4(c->p + 2, c->end, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff) {
            cp = 0x10000 + ((unsigned long)(hi - 0xd800) << 10) + (lo - 0xdc00);
            c->p += 6;
        }
        if (out) put_utf8(out, cp);
    }
    return -1;
}

/* skip any value at the cursor */
static int skip_value(json_cursor *c)
{
    skip_ws(c);
    if (c->p >= c->end) return -1;
    char ch = *c->p;
    if (ch == '"') return parse_string(c, NULL);
    if (ch == '{' || ch == '[') {
        char close = ch == '{' ? '}' : ']';
        if (++c->depth > 64) return -1;
        c->p++;
        skip_ws(c);
        if (c->p < c->end && *c->p == close) {
            c->p++;
            c->depth--;
            return 0;
        }
        for (;;) {
            if (ch == '{') {
                skip_ws(c);
                if (parse_string(c, NULL)) return -1;
                skip_ws(c);
                if (c->p >= c->end || *c->p != ':') return -1;
                c->p++;
            }
            if (skip_value(c)) return -1;
            skip_ws(c);
            if (c->p >= c->end) return -1;
            if (*c->p == ',') { c->p++; continue; }
            if (*c->p == close) { c->p++; c->depth--; return 0; }
            return -1;
        }
    }
    /* number, true, false, null: a run of literal characters */
    const char *start = c->p;
    while (c->p < c->end && strchr("0123456789+-.eEtrufalsn", *c->p) && *c->p) c->p++;
    return c->p > start ? 0 : -1;
}

int grid_json_each(const char *json, size_t len, grid_json_member_fn fn, void *ctx)
{
    json_cursor c = {json, json + len, 0};
    grid_buf key, str;
    grid_buf_init(&key);
    grid_buf_init(&str);
    int rc = -1;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{') goto done;
    c.p++;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') { rc = 0; goto done; }
    for (;;) {
        /* key */
        skip_ws(&c);
        key.len = 0;
        grid_buf_put(&key, "", 0);
        if (parse_string(&c, &key)) goto done;
        skip_ws(&c);
        if (c.p >= c.end || *c.p != ':') goto done;
        c.p++;
        skip_ws(&c);
        /* value: raw span, plus the decoded text of a string */
        const char *raw = c.p;
        int is_string = c.p < c.end && *c.p == '"';
        str.len = 0;
        grid_buf_put(&str, "", 0);
        if (is_string ? parse_string(&c, &str) : skip_value(&c)) goto done;
        if (key.oom || str.oom) { rc = -2; goto done; }
        int stop = fn(ctx, key.data, raw, (size_t)(c.p - raw), is_string ? str.data : NULL);
        if (stop) { rc = stop; goto done; }
        skip_ws(&c);
        if (c.p >= c.end) goto done;
        if (*c.p == ',') { c.p++; continue; }
        if (*c.p == '}') { rc = 0; break; }
        goto done;
    }
done:
    grid_buf_free(&key);
    grid_buf_free(&str);
    return rc;
}

typedef struct {
    const char *key;
    char *raw;
    char *str;
    int found;
} json_lookup;

static int lookup_member(void *ctx, const char *key, const char *raw, size_t rawlen, const char *str)
{
    json_lookup *l = ctx;
    if (strcmp(key, l->key) != 0) return 0;
    l->found = 1;
    l->raw = strndup(raw, rawlen);
    l->str = str ? strdup(str) : NULL;
    return 1;
}

/* find key; on success fills raw and str (either may be NULL) */
static int json_lookup_key(const char *json, size_t len, const char *key, json_lookup *l)
{
    memset(l, 0, sizeof *l);
    l->key = key;
    grid_json_each(json, len, lookup_member, l);
    return l->found ? 0 : -1;
}

char *grid_json_get_string(const char *json, size_t len, const char *key)
{
    json_lookup l;
    if (json_lookup_key(json, len, key, &l)) return NULL;
    free(l.raw);
    return l.str;
}

int grid_json_get_int(const char *json, size_t len, const char *key, long long *out)
{
    json_lookup l;
    if (json_lookup_key(json, len, key, &l)) return -1;
    int rc = -1;
    if (l.raw && !l.str) {
        char *end;
        long long v = strtoll(l.raw, &end, 10);
        if (end != l.raw && *end == '\0') {
            *out = v;
            rc = 0;
        }
    }
    free(l.raw);
    free(l.str);
    return rc;
}

char *grid_json_get_raw(const char *json, size_t len, const char *key)
{
    json_lookup l;
    if (json_lookup_key(json, len, key, &l)) return NULL;
    free(l.str);
    return l.raw;
}
