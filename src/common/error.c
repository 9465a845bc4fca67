/* grid_error helpers: formatting a status and message into the caller's error struct. */
#include <stdarg.h>
#include <stdio.h>
#include "grid/error.h"

static void clear_fields(grid_error *err)
{
    err->where_len = 0;
    err->path[0] = '\0';
    err->hint[0] = '\0';
}

int grid_error_set(grid_error *err, int code, int line, int column, const char *fmt, ...)
{
    if (!err) return code;
    err->code = code;
    err->line = line;
    err->column = column;
    clear_fields(err);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

void grid_error_path(grid_error *err, const char *path)
{
    if (err) snprintf(err->path, sizeof err->path, "%s", path ? path : "");
}

void grid_error_hint(grid_error *err, const char *hint)
{
    if (err) snprintf(err->hint, sizeof err->hint, "%s", hint ? hint : "");
}

void grid_error_clear(grid_error *err)
{
    if (!err) return;
    err->code = GRID_OK;
    err->line = 0;
    err->column = 0;
    err->message[0] = '\0';
    clear_fields(err);
}
