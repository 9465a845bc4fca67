/* grid_error helpers: formatting a status and message into the caller's error struct. */
#include <stdarg.h>
#include <stdio.h>
#include "grid/error.h"

int grid_error_set(grid_error *err, int code, int line, int column, const char *fmt, ...)
{
    if (!err) return code;
    err->code = code;
    err->line = line;
    err->column = column;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

void grid_error_clear(grid_error *err)
{
    if (!err) return;
    err->code = GRID_OK;
    err->line = 0;
    err->column = 0;
    err->message[0] = '\0';
}
