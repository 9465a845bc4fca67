/* Canonical JSON writing and a small reader for the cache's own flat JSON files (private). */
#ifndef GRID_BUILD_JSON_H
#define GRID_BUILD_JSON_H

#include <stddef.h>
#include "buf.h"

/* ---- writing: byte-identical to Python's json.dumps(sort_keys=True, separators=(",", ":"))
   for strings, integers, booleans, null and nested canonical values ---- */

/* append s (UTF-8, len bytes) as a JSON string literal with ensure_ascii escaping */
int grid_json_put_string(grid_buf *b, const char *s, size_t len);

/* an object under construction: members are sorted by key when it is finished */
typedef struct {
    char **keys;
    char **values;   /* each already JSON text */
    int n, cap;
    int oom;
} grid_json_obj;

void grid_json_obj_init(grid_json_obj *o);
void grid_json_obj_free(grid_json_obj *o);
int grid_json_obj_str(grid_json_obj *o, const char *key, const char *value);   /* NULL value -> null */
int grid_json_obj_int(grid_json_obj *o, const char *key, long long value);
int grid_json_obj_num(grid_json_obj *o, const char *key, double value);        /* %.6f, not canonical */
int grid_json_obj_bool(grid_json_obj *o, const char *key, int value);
int grid_json_obj_raw(grid_json_obj *o, const char *key, const char *json);    /* value already JSON */
/* sorted "{...}" text (malloc'd, NULL on oom); frees the members */
char *grid_json_obj_finish(grid_json_obj *o);

/* ---- reading ---- */

/* called for each member of a top-level object: raw is the value's JSON text (rawlen bytes),
   str its decoded text when the value is a string (NULL otherwise); return nonzero to stop */
typedef int (*grid_json_member_fn)(void *ctx, const char *key, const char *raw, size_t rawlen,
                                   const char *str);

/* walk the members of the object in json; 0 ok, -1 malformed, -2 out of memory,
   or the callback's nonzero return */
int grid_json_each(const char *json, size_t len, grid_json_member_fn fn, void *ctx);

/* the decoded string value of key (malloc'd) or NULL when absent, not a string, or malformed */
char *grid_json_get_string(const char *json, size_t len, const char *key);
/* the integer value of key; 0 found, -1 absent or not an integer */
int grid_json_get_int(const char *json, size_t len, const char *key, long long *out);
/* the raw JSON text of key's value (malloc'd) or NULL */
char *grid_json_get_raw(const char *json, size_t len, const char *key);

#endif
