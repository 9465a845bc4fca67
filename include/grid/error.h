/* Error reporting shared by every stage: an integer status plus a struct that says what and where. */
#ifndef GRID_ERROR_H
#define GRID_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* status codes; 0 is success, every failure is one of these */
typedef enum {
    GRID_OK = 0,
    GRID_ERR_IO = 1,          /* a file could not be read or written */
    GRID_ERR_XML = 2,         /* the bytes are not well-formed XML (or use DOCTYPE/entities) */
    GRID_ERR_URDF = 3,        /* well-formed XML that is not a valid URDF robot */
    GRID_ERR_UNSUPPORTED = 4, /* a valid URDF feature this version does not handle (planar, mimic) */
    GRID_ERR_LIMIT = 5,       /* input exceeds a safety cap (depth, attribute length, link count) */
    GRID_ERR_NOMEM = 6,       /* allocation failed */
    GRID_ERR_ARG = 7,         /* a caller passed a bad argument (unknown frame, bad option) */
    GRID_ERR_BUILD = 8,       /* the compiler failed or is missing */
    GRID_ERR_CACHE = 9,       /* the cache directory is unusable */
    GRID_ERR_LOAD = 10,       /* a compiled library failed to load or its metadata does not match */
    GRID_ERR_CUDA = 11,       /* a CUDA call or kernel launch failed */
    GRID_ERR_CANCELLED = 12   /* the caller's cancel check stopped the work (e.g. Ctrl-C during a build) */
} grid_status;

/* what went wrong; line/column are 1-based positions in the input, 0 when unknown.
   The fields after message restate what the message says, for callers that want them apart. */
typedef struct {
    int code;            /* a grid_status */
    int line;
    int column;
    char message[1024];  /* one sentence naming the element or argument at fault */
    int where_len;       /* bytes at the start of message that only restate line/column ("line 3, column 5: ") */
    char path[4096];     /* the file or directory at fault: GRID_ERR_CACHE the path that failed,
                            GRID_ERR_BUILD from a failing compiler the kept log; "" when none */
    char hint[256];      /* how to fix it, when the message says so; "" otherwise */
} grid_error;

/* fill err (when not NULL) and return code; printf-style message */
int grid_error_set(grid_error *err, int code, int line, int column, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* set err->path / err->hint (when err is not NULL; cut to fit); call after grid_error_set, which clears them */
void grid_error_path(grid_error *err, const char *path);
void grid_error_hint(grid_error *err, const char *hint);

/* reset err to GRID_OK with an empty message and fields */
void grid_error_clear(grid_error *err);

#ifdef __cplusplus
}
#endif
#endif
