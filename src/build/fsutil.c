/* File-system helpers for the cache: reading, atomic writing, hashing, removing trees, locking. */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "build_internal.h"

double grid_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int grid_cache_error(grid_error *err, const char *what, const char *path, int errnum)
{
    grid_error_set(err, GRID_ERR_CACHE, 0, 0,
                   "grid-rbd cache: cannot %s '%s': %s (" GRID_CACHE_HINT ")", what, path, strerror(errnum));
    grid_error_path(err, path);
    grid_error_hint(err, GRID_CACHE_HINT);
    return GRID_ERR_CACHE;
}

int grid_pathf(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int grid_fs_mkdirs(const char *path, grid_error *err)
{
    char tmp[GRID_PATH_CAP];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) return grid_cache_error(err, "use directory", path, ENAMETOOLONG);
    memcpy(tmp, path, n + 1);
    /* create every prefix, then the whole path */
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0') continue;
        char keep = tmp[i];
        tmp[i] = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            return grid_cache_error(err, "create directory", tmp, e);
        }
        tmp[i] = keep;
    }
    struct stat st;
    if (stat(path, &st) != 0) return grid_cache_error(err, "use directory", path, errno);
    if (!S_ISDIR(st.st_mode)) return grid_cache_error(err, "use directory", path, ENOTDIR);
    return GRID_OK;
}

int grid_fs_read(const char *path, char **data, size_t *len)
{
    *data = NULL;
    if (len) *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    grid_buf b;
    grid_buf_init(&b);
    char chunk[65536];
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            grid_buf_free(&b);
            return e;
        }
        if (r == 0) break;
        if (grid_buf_put(&b, chunk, (size_t)r)) break;
    }
    close(fd);
    size_t n = b.len;
    char *p = grid_buf_take(&b);
    if (!p) return ENOMEM;
    *data = p;
    if (len) *len = n;
    return 0;
}

/* write all bytes to fd; 0 or errno */
static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int grid_fs_write(const char *path, const void *data, size_t len, grid_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return grid_cache_error(err, "create file", path, errno);
    int e = write_all(fd, data, len);
    if (!e && fsync(fd) != 0 && errno != EINVAL && errno != EROFS) e = errno;
    if (close(fd) != 0 && !e) e = errno;
    if (e) {
        unlink(path);
        return grid_cache_error(err, "write file", path, e);
    }
    return GRID_OK;
}

int grid_fs_write_atomic(const char *dir, const char *name, const void *data, size_t len, grid_error *err)
{
    char tmp[GRID_PATH_CAP], dst[GRID_PATH_CAP];
    if (grid_pathf(dst, sizeof dst, "%s/%s", dir, name) != 0 ||
        grid_pathf(tmp, sizeof tmp, "%s/.%s.tmp-%ld-XXXXXX", dir, name, (long)getpid()) != 0)
        return grid_cache_error(err, "write file", dir, ENAMETOOLONG);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) return grid_cache_error(err, "create file in", dir, errno);
    int e = write_all(fd, data, len);
    if (!e) fchmod(fd, 0644);
    if (!e && fsync(fd) != 0 && errno != EINVAL && errno != EROFS) e = errno;
    if (close(fd) != 0 && !e) e = errno;
    if (!e && rename(tmp, dst) != 0) e = errno;
    if (e) {
        unlink(tmp);
        return grid_cache_error(err, "write file", dst, e);
    }
    return GRID_OK;
}

/* remove the contents of the open directory dfd, then nothing else */
static int rmtree_at(int dfd)
{
    DIR *dir = fdopendir(dfd);
    if (!dir) {
        int e = errno;
        close(dfd);
        return e;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        struct stat st;
        if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(dir), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                int e = rmtree_at(sub);
                if (e && !rc) rc = e;
            }
            if (unlinkat(dirfd(dir), de->d_name, AT_REMOVEDIR) != 0 && !rc) rc = errno;
        } else if (unlinkat(dirfd(dir), de->d_name, 0) != 0 && !rc) {
            rc = errno;
        }
    }
    closedir(dir);
    return rc;
}

int grid_fs_rmtree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : errno;
    if (!S_ISDIR(st.st_mode)) return unlink(path) == 0 || errno == ENOENT ? 0 : errno;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno;
    int rc = rmtree_at(fd);
    if (rmdir(path) != 0 && errno != ENOENT && !rc) rc = errno;
    return rc;
}

int grid_fs_sha256_file(const char *path, char hex[65], long long *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    grid_sha256_ctx c;
    grid_sha256_init(&c);
    static const size_t chunk_bytes = 1 << 16;
    unsigned char *chunk = malloc(chunk_bytes);
    if (!chunk) {
        close(fd);
        return ENOMEM;
    }
    long long total = 0;
    int rc = 0;
    for (;;) {
        ssize_t r = read(fd, chunk, chunk_bytes);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = errno;
            break;
        }
        if (r == 0) break;
        grid_sha256_update(&c, chunk, (size_t)r);
        total += r;
    }
    free(chunk);
    close(fd);
    if (rc) return rc;
    unsigned char d[32];
    grid_sha256_final(&c, d);
    grid_sha256_hex(d, hex);
    if (size) *size = total;
    return 0;
}

void grid_fs_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

long long grid_fs_tree_bytes(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) return S_ISREG(st.st_mode) ? (long long)st.st_size : 0;
    DIR *dir = opendir(path);
    if (!dir) return 0;
    long long total = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        char sub[GRID_PATH_CAP];
        if (grid_pathf(sub, sizeof sub, "%s/%s", path, de->d_name) != 0) continue;
        total += grid_fs_tree_bytes(sub);
    }
    closedir(dir);
    return total;
}

int grid_fs_lock(const char *path, int nonblock)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    int op = LOCK_EX | (nonblock ? LOCK_NB : 0);
    while (flock(fd, op) != 0) {
        if (errno == EINTR) continue;
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

void grid_fs_unlock(int fd)
{
    if (fd < 0) return;
    flock(fd, LOCK_UN);
    close(fd);
}

int grid_fs_copy(const char *from, const char *to)
{
    char *data;
    size_t len;
    int e = grid_fs_read(from, &data, &len);
    if (e) return e;
    int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        e = errno;
        free(data);
        return e;
    }
    e = write_all(fd, data, len);
    close(fd);
    free(data);
    return e;
}
