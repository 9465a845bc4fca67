/* The reference provider's per-row functions: one per signature row whose REF is OWN (include/grid/signature_rows.h). */
#ifndef GRID_REF_ROWS_H
#define GRID_REF_ROWS_H

#include "grid/ref.h"

/* One state of one row: in[k] is the row's input k in float64 (NULL when an optional input is absent), out[k] its
   output k, attr the call's attributes and then attr[GRID_REF_RULE], the dtype whose rule the answer follows
   (grid_ref_batch_as), work grid_ref_work_size(m) doubles. */
enum { GRID_REF_RULE = GRID_MAX_ATTR, GRID_REF_ATTRS };
typedef void (*ref_state_fn)(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                             double *work);

/* ref_row_<id> of every OWN row, defined beside its algorithm (src/ref) */
#define REF_PROTO_OWN(id) void ref_row_##id(const grid_model *m, const double *const *in, double *const *out, \
                                            const int *attr, double *work);
#define REF_PROTO_VJP(id)
#define GRID_ROW(ID, id, ref, ...) REF_PROTO_##ref(id)
#include "grid/signature_rows.h"
#undef GRID_ROW
#undef REF_PROTO_OWN
#undef REF_PROTO_VJP

/* fdsva_so's four tensors O[0..3] (nv^3 each) from M^-1 (nv x nv), D = [dtau/dq | dtau/dqd] (nv x 2 nv, overwritten
   with -M^-1 D) and idsva_so's four tensors T (one block) at FD's qdd; r: nv scratch (src/ref/second_order.c; the
   coupled path of src/ref/batch.c runs it on the user's coordinates) */
void grid_ref_fd_so_from_parts(size_t nv, const double *Minv, double *D, const double *T, double *const O[4], double *r);

/* the row's function (src/ref/batch.c's table); NULL for a VJP row or an id out of range */
ref_state_fn ref_row_fn(int algo);

#endif
