/* Public URDF entry points: bytes or a file in, a built grid_model out, every failure as a status and message. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* the whole file, capped at GRID_URDF_MAX_BYTES + 1 so an oversized file is detected without reading it all */
static int read_file(const char *path, char **data, size_t *len, grid_error *err)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return grid_error_set(err, GRID_ERR_IO, 0, 0, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int rc = GRID_OK;
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
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (!buf) rc = grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory reading '%s'", path);
    else if (ferror(f)) rc = grid_error_set(err, GRID_ERR_IO, 0, 0, "cannot read '%s'", path);
    else if (n > GRID_URDF_MAX_BYTES)
        rc = grid_error_set(err, GRID_ERR_LIMIT, 0, 0, "'%s' is larger than the %u-byte limit for a URDF", path,
                            GRID_URDF_MAX_BYTES);
    fclose(f);
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
