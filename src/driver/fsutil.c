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

int grid_fs_open_regular(const char *path, struct stat *st_out)
{
    /* O_NONBLOCK: opening a FIFO with no writer returns at once instead of blocking; fstat on what was
       opened (not the path), so a swapped-in FIFO, device or directory is refused, never read */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return -(S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (st_out) *st_out = st;
    return fd;
}

int grid_fs_read_max(const char *path, size_t max, char **data, size_t *len)
{
    *data = NULL;
    if (len) *len = 0;
    struct stat st;
    int fd = grid_fs_open_regular(path, &st);
    if (fd < 0) return -fd;
    /* a file that says it is larger is refused unread (a sparse file costs nothing); one that grows while
       read is cut at max + 1 bytes and refused too */
    if (st.st_size < 0 || (unsigned long long)st.st_size > max) {
        close(fd);
        return EFBIG;
    }
    grid_buf b;
    grid_buf_init(&b);
    char chunk[65536];
    int e = 0;
    while (b.len <= max) {
        size_t want = max + 1 - b.len < sizeof chunk ? max + 1 - b.len : sizeof chunk;
        ssize_t r = read(fd, chunk, want);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            e = errno;
            break;
        }
        if (r == 0) break;
        if (grid_buf_put(&b, chunk, (size_t)r)) break;
    }
    close(fd);
    if (!e && b.len > max) e = EFBIG;
    if (e) {
        grid_buf_free(&b);
        return e;
    }
    size_t n = b.len;
    char *p = grid_buf_take(&b);
    if (!p) return ENOMEM;
    *data = p;
    if (len) *len = n;
    return 0;
}

int grid_fs_read(const char *path, char **data, size_t *len)
{
    return grid_fs_read_max(path, GRID_FS_READ_MAX, data, len);
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
    if (e == EISDIR) {
        /* a directory where the file belongs (corrupt): move it aside (the link or directory itself, never
           followed), put the file in place, then delete what was moved */
        char aside[GRID_PATH_CAP], inside[GRID_PATH_CAP];
        if (grid_pathf(aside, sizeof aside, "%s/.%s.tmp-%ld-aside-XXXXXX", dir, name, (long)getpid()) == 0 &&
            mkdtemp(aside) && grid_pathf(inside, sizeof inside, "%s/old", aside) == 0) {
            if (rename(dst, inside) == 0 || errno == ENOENT) e = rename(tmp, dst) == 0 ? 0 : errno;
            grid_fs_rmtree(aside);
        }
    }
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

int grid_fs_sha256_fd(int fd, long long max, char hex[65], long long *size)
{
    grid_sha256_ctx c;
    grid_sha256_init(&c);
    static const size_t chunk_bytes = 1 << 16;
    unsigned char *chunk = malloc(chunk_bytes);
    if (!chunk) return ENOMEM;
    long long total = 0;
    int rc = 0;
    for (;;) {
        size_t want = chunk_bytes;
        if (max >= 0 && (unsigned long long)(max + 1 - total) < want) want = (size_t)(max + 1 - total);
        ssize_t r = read(fd, chunk, want);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = errno;
            break;
        }
        if (r == 0) break;
        grid_sha256_update(&c, chunk, (size_t)r);
        total += r;
        if (max >= 0 && total > max) {
            rc = EFBIG;
            break;
        }
    }
    free(chunk);
    if (rc) return rc;
    unsigned char d[32];
    grid_sha256_final(&c, d);
    grid_sha256_hex(d, hex);
    if (size) *size = total;
    return 0;
}

int grid_fs_sha256_file(const char *path, char hex[65], long long *size)
{
    int fd = grid_fs_open_regular(path, NULL);
    if (fd < 0) return -fd;
    int rc = grid_fs_sha256_fd(fd, -1, hex, size);
    close(fd);
    return rc;
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
    /* streamed (a compiler log can be large), regular files only */
    int in = grid_fs_open_regular(from, NULL);
    if (in < 0) return -in;
    int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        close(in);
        return e;
    }
    char chunk[65536];
    int e = 0;
    for (;;) {
        ssize_t r = read(in, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) e = errno;
        if (r <= 0) break;
        if ((e = write_all(fd, chunk, (size_t)r))) break;
    }
    close(in);
    close(fd);
    return e;
}
