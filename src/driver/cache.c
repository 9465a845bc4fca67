/* The content-addressed store: cache root, stage-1 pointers, entry verification, manifest, stale cleanup. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "build_internal.h"
#include "json.h"

int grid_cache_root(const char *cache_dir, char *out, size_t cap, grid_error *err)
{
    char buf[GRID_PATH_CAP];
    const char *env;
    int w;
    /* explicit, then $GRID_RBD_CACHE_DIR, then $XDG_CACHE_HOME/grid-rbd, then ~/.cache/grid-rbd */
    if (cache_dir && *cache_dir) w = snprintf(buf, sizeof buf, "%s", cache_dir);
    else if ((env = grid_env("GRID_RBD_CACHE_DIR"))) w = snprintf(buf, sizeof buf, "%s", env);
    else if ((env = grid_env("XDG_CACHE_HOME")) && env[0] == '/') w = grid_pathf(buf, sizeof buf, "%s/grid-rbd", env);
    else {
        /* the XDG rule: a relative $XDG_CACHE_HOME is ignored (above); a relative $HOME is not used either (it
           would put the cache under whatever the working directory is): that is an error, not a guess */
        const char *home = grid_env("HOME");
        if (home && home[0] != '/') {
            grid_error_set(err, GRID_ERR_CACHE, 0, 0,
                           "grid-rbd cache: HOME is a relative path ('%.200s'), so there is no ~/.cache/grid-rbd to use; "
                           "set GRID_RBD_CACHE_DIR or XDG_CACHE_HOME to an absolute path, or pass cache_dir=", home);
            grid_error_path(err, home);
            grid_error_hint(err, GRID_CACHE_HINT);
            return GRID_ERR_CACHE;
        }
        struct passwd pw, *res = NULL;
        char pwbuf[4096];
        if (!home && getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &res) == 0 && res && pw.pw_dir[0] == '/')
            home = pw.pw_dir;
        if (!home) {
            grid_error_set(err, GRID_ERR_CACHE, 0, 0,
                           "grid-rbd cache: no home directory to put ~/.cache/grid-rbd in; set "
                           "GRID_RBD_CACHE_DIR or pass cache_dir=");
            grid_error_hint(err, GRID_CACHE_HINT);
            return GRID_ERR_CACHE;
        }
        w = grid_pathf(buf, sizeof buf, "%s/.cache/grid-rbd", home);
    }
    if (w < 0 || w >= (int)sizeof buf) return grid_cache_error(err, "use directory", buf, ENAMETOOLONG);
    /* absolute, without trailing slashes */
    if (buf[0] == '/') w = snprintf(out, cap, "%s", buf);
    else {
        char cwd[GRID_PATH_CAP];
        if (!getcwd(cwd, sizeof cwd)) return grid_cache_error(err, "resolve relative directory", buf, errno);
        w = snprintf(out, cap, "%s/%s", cwd, buf);
    }
    if (w < 0 || w >= (int)cap || strlen(out) > GRID_ROOT_MAX)
        return grid_cache_error(err, "use directory", buf, ENAMETOOLONG);
    for (size_t n = strlen(out); n > 1 && out[n - 1] == '/'; n--) out[n - 1] = '\0';
    return GRID_OK;
}

int grid_cache_drop_non_directory(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISDIR(st.st_mode)) return 0;
    if (S_ISLNK(st.st_mode) && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return 0; /* a link to a directory */
    return unlink(path) == 0 || errno == ENOENT ? 1 : -1;  /* the file or the link itself, never its target */
}

int grid_cache_open(const char *cache_dir, grid_cache_dirs *d, grid_error *err)
{
    int rc = grid_cache_root(cache_dir, d->root, sizeof d->root, err);
    if (rc) return rc;
    if (grid_pathf(d->store, sizeof d->store, "%s/store", d->root) != 0 ||
        grid_pathf(d->bykey, sizeof d->bykey, "%s/bykey", d->root) != 0)
        return grid_cache_error(err, "use directory", d->root, ENAMETOOLONG);
    if ((rc = grid_fs_mkdirs(d->root, err))) return rc;
    /* a file or a dangling link where store/ or bykey/ belongs only ever holds garbage: replace it */
    grid_cache_drop_non_directory(d->store);
    grid_cache_drop_non_directory(d->bykey);
    if ((rc = grid_fs_mkdirs(d->store, err)) || (rc = grid_fs_mkdirs(d->bykey, err))) return rc;
    return GRID_OK;
}

int grid_is_key(const char *s)
{
    if (!s) return 0;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return s[64] == '\0';
}

int grid_cache_bykey_read(const grid_cache_dirs *d, const char *input_key, char content_key[65])
{
    char path[GRID_PATH_CAP], *text;
    size_t len;
    grid_pathf(path, sizeof path, "%s/%s", d->bykey, input_key);
    /* a FIFO, device or oversized file in its place is a corrupt pointer: a miss, repaired by the build */
    if (grid_fs_read_max(path, GRID_FS_META_MAX, &text, &len) != 0) return -1;
    while (len && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\r')) text[--len] = '\0';
    int ok = grid_is_key(text);
    if (ok) memcpy(content_key, text, 65);
    free(text);
    return ok ? 0 : -1;
}

int grid_cache_bykey_write(const grid_cache_dirs *d, const char *input_key, const char *content_key,
                           grid_error *err)
{
    char line[66];
    snprintf(line, sizeof line, "%s\n", content_key);
    return grid_fs_write_atomic(d->bykey, input_key, line, 65, err);
}

int grid_cache_entry_verify_fd(const grid_cache_dirs *d, const char *content_key, const char *identity, int *so_fd)
{
    char dir[GRID_PATH_CAP], path[GRID_PATH_CAP];
    grid_pathf(dir, sizeof dir, "%s/%s", d->store, content_key);
    char *text = NULL, *sha = NULL;
    size_t len;
    int ok = 0, fd = -1;
    if (so_fd) *so_fd = -1;
    /* the entry is a directory of its own: a file, or a link (to anything, even a valid entry elsewhere), in its
       place is corrupt, a miss that is moved aside and rebuilt */
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return -1;
    /* built under the same toolchain identity (every metadata file: regular, at most GRID_FS_META_MAX) */
    if (identity) {
        grid_pathf(path, sizeof path, "%s/build_inputs.json", dir);
        if (grid_fs_read_max(path, GRID_FS_META_MAX, &text, &len) != 0) return -1;
        int same = len == strlen(identity) && memcmp(text, identity, len) == 0;
        free(text);
        if (!same) return -1;
    }
    /* meta.json is written last: it records the hash and size of robot.so */
    grid_pathf(path, sizeof path, "%s/meta.json", dir);
    if (grid_fs_read_max(path, GRID_FS_META_MAX, &text, &len) != 0) return -1;
    long long want_bytes = -1;
    sha = grid_json_get_string(text, len, "so_sha256");
    grid_json_get_int(text, len, "so_bytes", &want_bytes);
    free(text);
    if (!sha || !grid_is_key(sha) || want_bytes < 0) goto done;
    /* open once and check what was opened: a size check first (cheap), then the hash of at most so_bytes + 1
       bytes; the caller may load this very descriptor (a concurrent clear cannot swap the file under it) */
    grid_pathf(path, sizeof path, "%s/robot.so", dir);
    fd = grid_fs_open_regular(path, &st);
    if (fd < 0 || (long long)st.st_size != want_bytes) goto done;
    char hex[65];
    if (grid_fs_sha256_fd(fd, want_bytes, hex, NULL) != 0) goto done;
    ok = strcmp(hex, sha) == 0;
done:
    free(sha);
    if (ok && so_fd && lseek(fd, 0, SEEK_SET) == 0) {
        *so_fd = fd;
        fd = -1;
    }
    if (fd >= 0) close(fd);
    return ok ? 0 : -1;
}

int grid_cache_entry_verify(const grid_cache_dirs *d, const char *content_key, const char *identity)
{
    return grid_cache_entry_verify_fd(d, content_key, identity, NULL);
}

int grid_cache_entry_remove(const grid_cache_dirs *d, const char *content_key)
{
    char dir[GRID_PATH_CAP], trash[GRID_PATH_CAP], inside[GRID_PATH_CAP];
    grid_pathf(dir, sizeof dir, "%s/%s", d->store, content_key);
    grid_pathf(trash, sizeof trash, "%s/.tmp-%s-%ld-trash-XXXXXX", d->store, content_key, (long)getpid());
    struct stat st;
    if (lstat(dir, &st) != 0) return errno == ENOENT ? 0 : errno;
    /* rename into an empty temp directory (atomic, whatever it is: a directory, a file, or a link, which is moved
       itself, never followed), then delete at leisure */
    if (!mkdtemp(trash)) return errno;
    if (grid_pathf(inside, sizeof inside, "%s/entry", trash) != 0 || rename(dir, inside) != 0) {
        int e = errno;
        rmdir(trash);
        return e == ENOENT ? 0 : e;
    }
    return grid_fs_rmtree(trash);
}

/* ---- manifest.json ---- */

typedef struct {
    grid_manifest *m;
    int oom;
} manifest_reader;

static int manifest_member(void *ctx, const char *key, const char *raw, size_t rawlen, const char *str)
{
    (void)raw;
    (void)rawlen;
    manifest_reader *r = ctx;
    if (!str || !grid_is_key(str)) return 0;
    char **names = realloc(r->m->names, (size_t)(r->m->n + 1) * sizeof *names);
    if (names) r->m->names = names;
    char **keys = realloc(r->m->keys, (size_t)(r->m->n + 1) * sizeof *keys);
    if (keys) r->m->keys = keys;
    char *nc = strdup(key), *kc = strdup(str);
    if (!names || !keys || !nc || !kc) {
        free(nc);
        free(kc);
        r->oom = 1;
        return 1;
    }
    r->m->names[r->m->n] = nc;
    r->m->keys[r->m->n] = kc;
    r->m->n++;
    return 0;
}

int grid_cache_manifest_load(const grid_cache_dirs *d, grid_manifest *m)
{
    memset(m, 0, sizeof *m);
    char path[GRID_PATH_CAP], *text;
    size_t len;
    grid_pathf(path, sizeof path, "%s/manifest.json", d->root);
    int e = grid_fs_read_max(path, GRID_FS_MANIFEST_MAX, &text, &len);
    /* a malformed manifest reads as empty: it only names entries, the store is the truth; so does one that
       is not a regular file (a directory, a link loop) or is larger than GRID_FS_MANIFEST_MAX (the next write
       replaces it) */
    if (e == ENOENT || e == EINVAL || e == EFBIG || e == EISDIR || e == ELOOP || e == ENOTDIR) return 0;
    if (e) return e;
    manifest_reader r = {m, 0};
    grid_json_each(text, len, manifest_member, &r);
    free(text);
    return r.oom ? ENOMEM : 0;
}

void grid_cache_manifest_free(grid_manifest *m)
{
    for (int i = 0; i < m->n; i++) {
        free(m->names[i]);
        free(m->keys[i]);
    }
    free(m->names);
    free(m->keys);
    memset(m, 0, sizeof *m);
}

int grid_cache_manifest_save(const grid_cache_dirs *d, const grid_manifest *m, grid_error *err)
{
    grid_json_obj o;
    grid_json_obj_init(&o);
    for (int i = 0; i < m->n; i++)
        if (m->names[i]) grid_json_obj_str(&o, m->names[i], m->keys[i]);
    char *json = grid_json_obj_finish(&o);
    if (!json) return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory writing manifest.json");
    int rc = grid_fs_write_atomic(d->root, "manifest.json", json, strlen(json), err);
    free(json);
    return rc;
}

int grid_cache_manifest_lock(const grid_cache_dirs *d, grid_error *err)
{
    char path[GRID_PATH_CAP];
    grid_pathf(path, sizeof path, "%s/manifest.lock", d->root);
    int fd = grid_fs_lock(path, 0);
    if (fd < 0) grid_cache_error(err, "lock", path, errno);
    return fd;
}

int grid_cache_manifest_get(const grid_cache_dirs *d, const char *name, char content_key[65])
{
    grid_manifest m;
    if (grid_cache_manifest_load(d, &m) != 0) return -1;
    int found = -1;
    for (int i = 0; i < m.n; i++) {
        if (strcmp(m.names[i], name) == 0) {
            memcpy(content_key, m.keys[i], 65);
            found = 0;
        }
    }
    grid_cache_manifest_free(&m);
    return found;
}

int grid_cache_manifest_set(const grid_cache_dirs *d, const char *name, const char *content_key,
                            grid_error *err)
{
    int fd = grid_cache_manifest_lock(d, err);
    if (fd < 0) return GRID_ERR_CACHE;
    grid_manifest m;
    int e = grid_cache_manifest_load(d, &m);
    if (e) {
        grid_fs_unlock(fd);
        return grid_error_set(err, GRID_ERR_CACHE, 0, 0, "grid-rbd cache: cannot read %s/manifest.json: %s",
                              d->root, strerror(e));
    }
    /* replace the name's key (or drop the name when content_key is NULL) */
    int found = 0, rc = GRID_OK;
    for (int i = 0; i < m.n; i++) {
        if (strcmp(m.names[i], name) != 0) continue;
        found = 1;
        if (content_key) {
            memcpy(m.keys[i], content_key, 65);
        } else {
            free(m.names[i]);
            m.names[i] = NULL;
        }
    }
    if (!found && content_key) {
        char **names = realloc(m.names, (size_t)(m.n + 1) * sizeof *names);
        if (names) m.names = names;
        char **keys = realloc(m.keys, (size_t)(m.n + 1) * sizeof *keys);
        if (keys) m.keys = keys;
        char *nc = strdup(name), *kc = strdup(content_key);
        if (!names || !keys || !nc || !kc) {
            free(nc);
            free(kc);
            rc = grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory updating manifest.json");
        } else {
            m.names[m.n] = nc;
            m.keys[m.n] = kc;
            m.n++;
        }
    }
    if (!rc && (found || content_key)) rc = grid_cache_manifest_save(d, &m, err);
    grid_cache_manifest_free(&m);
    grid_fs_unlock(fd);
    return rc;
}

/* ---- stale temporaries ---- */

/* newest modification time of a directory and its direct children */
static time_t newest_mtime(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    time_t newest = st.st_mtime;
    DIR *dir = S_ISDIR(st.st_mode) ? opendir(path) : NULL;
    if (!dir) return newest;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime > newest)
            newest = st.st_mtime;
    }
    closedir(dir);
    return newest;
}

/* remove the dot-temporaries of atomic file writes in dir older than max_age */
static void clean_stale_files(const char *dir, double max_age_seconds)
{
    DIR *dh = opendir(dir);
    if (!dh) return;
    time_t now = time(NULL);
    /* a writer renames its temporary within moments: never touch one younger than a minute */
    if (max_age_seconds < 60) max_age_seconds = 60;
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        if (de->d_name[0] != '.' || !strstr(de->d_name, ".tmp-")) continue;
        char path[GRID_PATH_CAP];
        if (grid_pathf(path, sizeof path, "%s/%s", dir, de->d_name) != 0) continue;
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && difftime(now, st.st_mtime) > max_age_seconds)
            unlink(path);
    }
    closedir(dh);
}

void grid_cache_clean_stale(const grid_cache_dirs *d, double max_age_seconds)
{
    DIR *dh = opendir(d->store);
    if (!dh) return;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        /* .tmp-<content key>-<pid>-... directories only */
        if (strncmp(de->d_name, ".tmp-", 5) != 0 || strlen(de->d_name) < 5 + 64) continue;
        char key[65], path[GRID_PATH_CAP], lock[GRID_PATH_CAP];
        memcpy(key, de->d_name + 5, 64);
        key[64] = '\0';
        if (!grid_is_key(key)) continue;
        if (grid_pathf(path, sizeof path, "%s/%s", d->store, de->d_name) != 0) continue;
        if (difftime(now, newest_mtime(path)) <= max_age_seconds) continue;
        /* a live builder holds the entry's lock: leave its directory alone */
        grid_pathf(lock, sizeof lock, "%s/%s.lock", d->store, key);
        int fd = grid_fs_lock(lock, 1);
        if (fd < 0) continue;
        grid_fs_rmtree(path);
        grid_fs_unlock(fd);
    }
    closedir(dh);
    clean_stale_files(d->bykey, max_age_seconds);
    clean_stale_files(d->root, max_age_seconds);
}

void grid_cache_clean_abandoned(const grid_cache_dirs *d, const char *content_key)
{
    DIR *dh = opendir(d->store);
    if (!dh) return;
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        /* .tmp-<key>-<pid>-XXXXXX (a build) or .tmp-<key>-<pid>-trash-XXXXXX (an entry being removed) */
        if (strncmp(de->d_name, ".tmp-", 5) != 0 || strncmp(de->d_name + 5, content_key, 64) != 0 ||
            de->d_name[69] != '-')
            continue;
        char *end = NULL;
        long pid = strtol(de->d_name + 70, &end, 10);
        if (pid <= 0 || end == de->d_name + 70 || *end != '-' || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours to probe) */
        char path[GRID_PATH_CAP];
        if (grid_pathf(path, sizeof path, "%s/%s", d->store, de->d_name) == 0) grid_fs_rmtree(path);
    }
    closedir(dh);
}
