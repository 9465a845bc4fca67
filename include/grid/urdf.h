/* URDF text (untrusted bytes) to a validated grid_model, through libexpat. */
#ifndef GRID_URDF_H
#define GRID_URDF_H

#include <stddef.h>
#include "grid/error.h"
#include "grid/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* safety caps on untrusted input */
#define GRID_URDF_MAX_DEPTH 64          /* XML element nesting */
#define GRID_URDF_MAX_ATTR_LEN 4096     /* characters in one attribute value */
#define GRID_URDF_MAX_LINKS 4096        /* links (and joints) in one robot */
#define GRID_URDF_MAX_BYTES (64u << 20) /* whole document */

/* Parse URDF bytes and build the model. On failure returns a grid_status, sets err
   (line/column of the offending element when known) and leaves *out NULL.
   Never exits, never aborts. The caller frees *out with grid_model_free. */
int grid_urdf_load(const char *bytes, size_t len, const grid_model_options *opts,
                   grid_model **out, grid_error *err);

/* Same, reading the file at path (errors name the path). */
int grid_urdf_load_file(const char *path, const grid_model_options *opts,
                        grid_model **out, grid_error *err);

#ifdef __cplusplus
}
#endif
#endif
