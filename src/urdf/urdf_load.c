/* Public URDF entry points: bytes or a file in, a built grid_model out, every failure as a status and message. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "urdf_reader.h"

int grid_urdf_load(const char *bytes, size_t len, const grid_model_options *opts,
                   grid_model **out, grid_error *err)
{
    grid_error_clear(err);
    if (!out) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "out (the model pointer) is NULL");
    *out = NULL;
    if (!bytes && len > 0) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "bytes is NULL but len is %zu", len);
    if (len > GRID_URDF_MAX_BYTES)
        return grid_error_set(err, GRID_ERR_LIMIT, 0, 0, "the URDF is %zu bytes; the limit is %u bytes", len,
                              GRID_URDF_MAX_BYTES);
    if (len == 0) return grid_error_set(err, GRID_ERR_XML, 1, 1, "the input is empty: no XML document");

    grid_robot_desc robot;
    memset(&robot, 0, sizeof robot);
    int rc = urdf_read_document(bytes, len, &robot, err);
    if (rc == GRID_OK) rc = grid_model_build(&robot, opts, out, err);
    grid_robot_desc_free(&robot);
    return rc;
}

static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a directory" : "not a regular file";
}

/* the whole file, which must be a regular file of at most GRID_URDF_MAX_BYTES: opened without blocking (a FIFO
   with no writer would block open and read forever), checked with fstat on the open descriptor (a device such as
   /dev/zero is refused unread, and so is a file whose size is over the cap, sparse or not), and read up to the
   cap + 1 bytes in case it grows meanwhile */
static int read_file(const char *path, char **data, size_t *len, grid_error *err)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return grid_error_set(err, GRID_ERR_IO, 0, 0, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return grid_error_set(err, GRID_ERR_IO, 0, 0, "cannot read '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return grid_error_set(err, GRID_ERR_IO, 0, 0, "cannot read '%s': it is %s; a URDF must be a regular file",
                              path, file_kind(st.st_mode));
    }
    if (st.st_size > (off_t)GRID_URDF_MAX_BYTES) {
        close(fd);
        return grid_error_set(err, GRID_ERR_LIMIT, 0, 0, "'%s' is larger than the %u-byte limit for a URDF (%lld bytes)",
                              path, GRID_URDF_MAX_BYTES, (long long)st.st_size);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    size_t cap = (size_t)st.st_size + 1, n = 0;
    if (cap < 4096) cap = 4096;
    char *buf = malloc(cap);
    int rc = GRID_OK, rerr = 0;
    while (buf) {
        if (n == cap) {
            if (cap > GRID_URDF_MAX_BYTES) break;
            size_t ncap = cap * 2 > (size_t)GRID_URDF_MAX_BYTES + 1 ? (size_t)GRID_URDF_MAX_BYTES + 1 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            rerr = errno;
            break;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    if (!buf) rc = grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory reading '%s'", path);
    else if (rerr) rc = grid_error_set(err, GRID_ERR_IO, 0, 0, "cannot read '%s': %s", path, strerror(rerr));
    else if (n > GRID_URDF_MAX_BYTES)
        rc = grid_error_set(err, GRID_ERR_LIMIT, 0, 0, "'%s' is larger than the %u-byte limit for a URDF", path,
                            GRID_URDF_MAX_BYTES);
    close(fd);
    if (rc != GRID_OK) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = n;
    return GRID_OK;
}

int grid_urdf_load_file(const char *path, const grid_model_options *opts,
                        grid_model **out, grid_error *err)
{
    grid_error_clear(err);
    if (!out) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "out (the model pointer) is NULL");
    *out = NULL;
    if (!path) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "path is NULL");

    char *data;
    size_t len;
    int rc = read_file(path, &data, &len, err);
    if (rc != GRID_OK) {
        grid_error_path(err, path);
        return rc;
    }
    grid_error local;
    grid_error_clear(&local);
    rc = grid_urdf_load(data, len, opts, out, &local);
    free(data);
    if (rc == GRID_OK) return GRID_OK;

    // name the file, compiler style: path:line:column: message
    if (local.line > 0)
        grid_error_set(err, rc, local.line, local.column, "%s:%d:%d: %s", path, local.line, local.column,
                       local.message);
    else
        grid_error_set(err, rc, 0, 0, "%s: %s", path, local.message);
    grid_error_path(err, path);
    return rc;
}
