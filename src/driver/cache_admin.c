/* Cache administration for `python -m grid_rbd cache ...`: list entries, describe one, clear by name or all. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "build_internal.h"
#include "json.h"

/* the cache's directories without creating anything; 1 when the root exists */
static int dirs_existing(const char *cache_dir, grid_cache_dirs *d, grid_error *err, int *rc)
{
    *rc = grid_cache_root(cache_dir, d->root, sizeof d->root, err);
    if (*rc) return 0;
    grid_pathf(d->store, sizeof d->store, "%s/store", d->root);
    grid_pathf(d->bykey, sizeof d->bykey, "%s/bykey", d->root);
    struct stat st;
    return stat(d->root, &st) == 0 && S_ISDIR(st.st_mode);
}

/* content keys of the complete-looking entries (directories named by a key), sorted */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int store_keys(const grid_cache_dirs *d, char ***keys, int *n)
{
    *keys = NULL;
    *n = 0;
    DIR *dh = opendir(d->store);
    if (!dh) return errno == ENOENT || errno == ENOTDIR ? 0 : errno; /* a file as store/: no entries */
    struct dirent *de;
    int e = 0;
    while ((de = readdir(dh)) != NULL) {
        if (!grid_is_key(de->d_name)) continue;
        char **k = realloc(*keys, (size_t)(*n + 1) * sizeof *k);
        char *kc = strdup(de->d_name);
        if (!k || !kc) {
            if (k) *keys = k;
            free(kc);
            e = ENOMEM;
            break;
        }
        *keys = k;
        k[(*n)++] = kc;
    }
    closedir(dh);
    if (*n) qsort(*keys, (size_t)*n, sizeof **keys, cmp_str);
    return e;
}

static void free_keys(char **keys, int n)
{
    for (int i = 0; i < n; i++) free(keys[i]);
    free(keys);
}

/* raw text of a JSON file when it is a well-formed object, else NULL */
static int accept_member(void *ctx, const char *k, const char *r, size_t n, const char *s)
{
    (void)ctx; (void)k; (void)r; (void)n; (void)s;
    return 0;
}

static char *read_json_object(const char *dir, const char *file, size_t *len)
{
    char path[GRID_PATH_CAP], *text;
    grid_pathf(path, sizeof path, "%s/%s", dir, file);
    if (grid_fs_read_max(path, GRID_FS_META_MAX, &text, len) != 0) return NULL;
    if (grid_json_each(text, *len, accept_member, NULL) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* add the list fields of one entry to o; returns meta.json's text (or NULL) for the caller to free */
static char *entry_summary(const grid_cache_dirs *d, const grid_manifest *m, const char *ck, grid_json_obj *o)
{
    char dir[GRID_PATH_CAP];
    grid_pathf(dir, sizeof dir, "%s/%s", d->store, ck);
    size_t len = 0;
    char *meta = read_json_object(dir, "meta.json", &len);

    /* names from the manifest, else the name the entry was built under */
    grid_buf names;
    grid_buf_init(&names);
    grid_buf_put(&names, "[", 1);
    const char *first = NULL;
    for (int i = 0; i < m->n; i++) {
        if (!m->names[i] || strcmp(m->keys[i], ck) != 0) continue;
        if (first) grid_buf_put(&names, ",", 1);
        else first = m->names[i];
        grid_json_put_string(&names, m->names[i], strlen(m->names[i]));
    }
    grid_buf_put(&names, "]", 1);
    char *names_json = grid_buf_take(&names);
    char *meta_name = meta ? grid_json_get_string(meta, len, "name") : NULL;

    grid_json_obj_str(o, "content_key", ck);
    grid_json_obj_str(o, "path", dir);
    grid_json_obj_raw(o, "names", names_json);
    grid_json_obj_str(o, "name", first ? first : meta_name ? meta_name : "");
    grid_json_obj_int(o, "size_bytes", grid_fs_tree_bytes(dir));
    grid_json_obj_bool(o, "complete", grid_cache_entry_verify(d, ck, NULL) == 0);
    /* copied from meta.json when present */
    static const char *const str_fields[] = {"target", "dtype", "created_utc", "model_hash", "cuda_arch", NULL};
    static const char *const int_fields[] = {"so_bytes", "created", "nq", "nv", "nb", NULL};
    for (int i = 0; str_fields[i]; i++) {
        char *v = meta ? grid_json_get_string(meta, len, str_fields[i]) : NULL;
        if (v || strcmp(str_fields[i], "cuda_arch") != 0) grid_json_obj_str(o, str_fields[i], v);
        free(v);
    }
    for (int i = 0; int_fields[i]; i++) {
        long long v;
        if (meta && grid_json_get_int(meta, len, int_fields[i], &v) == 0) grid_json_obj_int(o, int_fields[i], v);
        else grid_json_obj_raw(o, int_fields[i], "null");
    }
    free(names_json);
    free(meta_name);
    return meta;
}

int grid_cache_list_json(const char *cache_dir, char **json, grid_error *err)
{
    *json = NULL;
    grid_cache_dirs d;
    int rc;
    if (!dirs_existing(cache_dir, &d, err, &rc)) {
        if (rc) return rc;
        *json = strdup("[]");
        return *json ? GRID_OK : grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory");
    }
    grid_manifest m;
    char **keys;
    int n, e;
    if ((e = grid_cache_manifest_load(&d, &m)) != 0) return grid_cache_error(err, "read the manifest in", d.root, e);
    if ((e = store_keys(&d, &keys, &n)) != 0) {
        grid_cache_manifest_free(&m);
        return grid_cache_error(err, "list", d.store, e);
    }
    grid_buf out;
    grid_buf_init(&out);
    grid_buf_put(&out, "[", 1);
    for (int i = 0; i < n; i++) {
        grid_json_obj o;
        grid_json_obj_init(&o);
        free(entry_summary(&d, &m, keys[i], &o));
        char *obj = grid_json_obj_finish(&o);
        if (i) grid_buf_put(&out, ",", 1);
        if (obj) grid_buf_puts(&out, obj);
        else out.oom = 1;
        free(obj);
    }
    grid_buf_put(&out, "]", 1);
    free_keys(keys, n);
    grid_cache_manifest_free(&m);
    *json = grid_buf_take(&out);
    return *json ? GRID_OK : grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory listing the cache");
}

/* the content key a manifest name or a unique key prefix (8+ hex digits) names; -1 none, -2 ambiguous */
static int resolve_entry(const grid_cache_dirs *d, const grid_manifest *m, const char *what, char ck[65],
                         int *by_name)
{
    *by_name = 0;
    for (int i = 0; i < m->n; i++) {
        if (m->names[i] && strcmp(m->names[i], what) == 0) {
            memcpy(ck, m->keys[i], 65);
            *by_name = 1;
            return 0;
        }
    }
    size_t n = strlen(what);
    if (n < 8 || n > 64 || strspn(what, "0123456789abcdef") != n) return -1;
    char **keys;
    int nk, found = 0;
    if (store_keys(d, &keys, &nk) != 0) return -1;
    for (int i = 0; i < nk; i++) {
        if (strncmp(keys[i], what, n) != 0) continue;
        if (found++) break;
        memcpy(ck, keys[i], 65);
    }
    free_keys(keys, nk);
    return found == 1 ? 0 : found ? -2 : -1;
}

/* input keys whose stage-1 pointer names ck, as a JSON array; remove them instead when drop is set */
static char *pointers_to(const grid_cache_dirs *d, const char *ck, int drop)
{
    grid_buf out;
    grid_buf_init(&out);
    grid_buf_put(&out, "[", 1);
    DIR *dh = opendir(d->bykey);
    int first = 1;
    struct dirent *de;
    while (dh && (de = readdir(dh)) != NULL) {
        char target[65];
        if (!grid_is_key(de->d_name) || grid_cache_bykey_read(d, de->d_name, target) != 0) continue;
        if (strcmp(target, ck) != 0) continue;
        if (drop) {
            char path[GRID_PATH_CAP];
            grid_pathf(path, sizeof path, "%s/%s", d->bykey, de->d_name);
            unlink(path);
            continue;
        }
        if (!first) grid_buf_put(&out, ",", 1);
        first = 0;
        grid_json_put_string(&out, de->d_name, 64);
    }
    if (dh) closedir(dh);
    grid_buf_put(&out, "]", 1);
    return grid_buf_take(&out);
}

int grid_cache_info_json(const char *cache_dir, const char *name_or_key, char **json, grid_error *err)
{
    *json = NULL;
    if (!name_or_key || !*name_or_key) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "cache info: give a name or key");
    grid_cache_dirs d;
    int rc;
    if (!dirs_existing(cache_dir, &d, err, &rc))
        return rc ? rc : grid_error_set(err, GRID_ERR_ARG, 0, 0, "no cache entry '%s' (cache %s is empty)",
                                        name_or_key, d.root);
    grid_manifest m;
    int e = grid_cache_manifest_load(&d, &m);
    if (e) return grid_cache_error(err, "read the manifest in", d.root, e);
    char ck[65];
    int by_name;
    int found = resolve_entry(&d, &m, name_or_key, ck, &by_name);
    char dir[GRID_PATH_CAP];
    struct stat st;
    if (found == 0) {
        grid_pathf(dir, sizeof dir, "%s/%s", d.store, ck);
        if (lstat(dir, &st) != 0) found = -1;  /* a dangling link is shown (incomplete), not followed */
    }
    if (found != 0) {
        grid_cache_manifest_free(&m);
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "%s cache entry '%s' in %s",
                              found == -2 ? "more than one" : "no", name_or_key, d.root);
    }
    grid_json_obj o;
    grid_json_obj_init(&o);
    free(entry_summary(&d, &m, ck, &o));
    size_t len;
    char *meta = read_json_object(dir, "meta.json", &len);
    char *inputs = read_json_object(dir, "build_inputs.json", &len);
    char *pointers = pointers_to(&d, ck, 0);
    grid_json_obj_raw(&o, "meta", meta ? meta : "null");
    grid_json_obj_raw(&o, "build_inputs", inputs ? inputs : "null");
    grid_json_obj_raw(&o, "input_keys", pointers ? pointers : "[]");
    free(meta);
    free(inputs);
    free(pointers);
    grid_cache_manifest_free(&m);
    *json = grid_json_obj_finish(&o);
    return *json ? GRID_OK : grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory describing the entry");
}

/* remove one entry (whatever is at store/<ck>: a link is removed, not followed) with its pointers and failed log,
   under its lock; 1 when something was there and is gone */
static int remove_entry(const grid_cache_dirs *d, const char *ck)
{
    char lock_path[GRID_PATH_CAP], failed[GRID_PATH_CAP], dir[GRID_PATH_CAP];
    grid_pathf(lock_path, sizeof lock_path, "%s/%s.lock", d->store, ck);
    grid_pathf(failed, sizeof failed, "%s/%s.failed.log", d->store, ck);
    grid_pathf(dir, sizeof dir, "%s/%s", d->store, ck);
    int fd = grid_fs_lock(lock_path, 0);
    struct stat st;
    int existed = lstat(dir, &st) == 0;
    int gone = grid_cache_entry_remove(d, ck) == 0 && lstat(dir, &st) != 0;
    free(pointers_to(d, ck, 1));
    unlink(failed);
    grid_fs_unlock(fd);
    return existed && gone;
}

int grid_cache_clear(const char *cache_dir, const char *name, int *removed, grid_error *err)
{
    if (removed) *removed = 0;
    grid_cache_dirs d;
    int rc;
    if (!dirs_existing(cache_dir, &d, err, &rc)) {
        if (rc) return rc;
        return name ? grid_error_set(err, GRID_ERR_ARG, 0, 0, "no cache entry '%s' (cache %s is empty)", name, d.root)
                    : GRID_OK;
    }
    int mfd = grid_cache_manifest_lock(&d, err);
    if (mfd < 0) return GRID_ERR_CACHE;
    grid_manifest m;
    int e = grid_cache_manifest_load(&d, &m);
    if (e) {
        grid_fs_unlock(mfd);
        return grid_cache_error(err, "read the manifest in", d.root, e);
    }
    rc = GRID_OK;
    if (!name) {
        /* everything: entries, pointers, abandoned temporaries, the CUDA runtimes, names */
        /* a file or dangling link as store/ or bykey/ goes too (the next registration makes the directory) */
        grid_cache_drop_non_directory(d.store);
        grid_cache_drop_non_directory(d.bykey);
        char **keys;
        int n;
        if (store_keys(&d, &keys, &n) == 0) {
            for (int i = 0; i < n; i++) {
                int gone = remove_entry(&d, keys[i]);
                if (removed) *removed += gone;
            }
            free_keys(keys, n);
        }
        DIR *dh = opendir(d.bykey);
        struct dirent *de;
        while (dh && (de = readdir(dh)) != NULL) {
            if (!grid_is_key(de->d_name)) continue;
            char path[GRID_PATH_CAP];
            grid_pathf(path, sizeof path, "%s/%s", d.bykey, de->d_name);
            grid_fs_rmtree(path); /* a pointer, or a directory in its place */
        }
        if (dh) closedir(dh);
        grid_cache_clean_stale(&d, -1.0);
        /* the CUDA host runtime objects (rebuilt by the next CUDA build) */
        char rt[GRID_PATH_CAP];
        if (grid_pathf(rt, sizeof rt, "%s/cuda-runtime", d.root) == 0) grid_fs_rmtree(rt);
        for (int i = 0; i < m.n; i++) {
            free(m.names[i]);
            m.names[i] = NULL;
        }
    } else {
        /* one name (or key): drop the names, and the entry once no name uses it */
        char ck[65];
        int by_name;
        int found = resolve_entry(&d, &m, name, ck, &by_name);
        if (found != 0) {
            rc = grid_error_set(err, GRID_ERR_ARG, 0, 0, "%s cache entry '%s' in %s",
                                found == -2 ? "more than one" : "no", name, d.root);
        } else {
            int still_used = 0;
            for (int i = 0; i < m.n; i++) {
                if (!m.names[i] || strcmp(m.keys[i], ck) != 0) continue;
                if (!by_name || strcmp(m.names[i], name) == 0) {
                    free(m.names[i]);
                    m.names[i] = NULL;
                } else {
                    still_used = 1;
                }
            }
            if (!still_used) {
                int gone = remove_entry(&d, ck);
                if (removed) *removed = gone;
            }
        }
    }
    if (!rc) rc = grid_cache_manifest_save(&d, &m, err);
    grid_cache_manifest_free(&m);
    grid_fs_unlock(mfd);
    return rc;
}
