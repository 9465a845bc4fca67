/* One algorithm description, two schedules: tree loops the unrolled schedule runs at emit time and the rolled schedule writes out. */
#ifndef GRID_EMIT_PROGRAM_H
#define GRID_EMIT_PROGRAM_H

#include "kinematics.h"
#include "target.h"
#include "writer.h"

/* An algorithm is written once as loops over the tree in parents-first order:

       for (ep_bodies(p, 0); ep_next(p);) {            forward over every body i
           const ek_body *b = ep_body(p, EP_I);        the model accessor
           sv x = ep_get(p, VEL, EP_I, EP_PARENT, r);  per-body state of the parent
           ep_set(p, VEL, EP_I, EP_SELF, r, y);
           for (ep_ancestors(p, 0); ep_next(p);) ...   j = parent(i), ..., the root
       }

   UNROLLED: the loops run here over concrete bodies; constants are literals, buffers are symbolic
   values, everything lands in one straight-line graph (today's fast path).
   ROLLED: each loop iterates once per joint kind (joint type x root or not x coupling role) and its body becomes a
   step function grid_r_<fn>_<n>(i, j, ...) with constants loaded from the body table (EKT_*) and
   buffers in the caller's workspace; the per-state function is the C loop nest that calls the steps
   through a switch on grid_kind_[i]. Code size is then independent of the robot's size.

   Rules that make both schedules agree: values cross from one step to another only through buffers
   (ep_get/ep_set), and a step reads an element it wrote back from the write (ep_get does that). */

/* the array ids every per-state graph declares are the per-state parameters, EP_Q .. EP_G then EP_OUT (target.h) */

enum { EP_I = 0, EP_J = 1 };          /* loop variables: i (a bodies loop), j (an ancestors loop inside it) */
/* a buffer slot: the variable's body, its parent, or (j of an ancestors loop that starts at parent(i))
   the child of j on the path from i */
enum { EP_SELF = 0, EP_PARENT = 1, EP_CHILD = 2 };
enum { EP_MAX_BUFFERS = 16 };

typedef struct ep_prog ep_prog;

/* the schedules: unrolled, rolled (scalar steps), rolled on lane vectors (steps on grid_vec arrays, GRID_LANES states
   at once: the tables are the same for every lane, so the loops and switches are too; model constants broadcast) */
enum { EP_UNROLLED = 0, EP_ROLLED = 1, EP_ROLLED_LANES = 2 };

/* a program over em for the per-state function fn on a schedule (EP_*), appending its graph (unrolled) or its step functions
   (rolled, written to steps) and returning the per-state body in ep_finish. in[EP_Q..EP_G] are the
   unrolled schedule's input values (NULL for absent inputs), res the unrolled outputs (may be NULL) */
ep_prog *ep_new(const em_model *em, ek_kin *k, int schedule, const char *fn, const sv *const in[EP_OUT], sv *res,
                const sym_style *st, const emit_target *t, ew_writer *steps);
/* the rolled per-state body (loops and calls) appended to w, the workspace it needs in *work (reals);
   returns 0, or -1 on failure (out of memory, a rule broken) */
int ep_finish(ep_prog *p, ew_writer *w, long *work, sym_stats *stats);
void ep_free(ep_prog *p);
int ep_rolled(const ep_prog *p);
/* the columns loops and the nv x nv matrix output over the user's coordinates instead of the full ones (a coupled
   model's M^-1, em_model.group_minv; em_body uc, unc, unsub): called before the first buffer */
void ep_user_columns(ep_prog *p);
/* 1 once the unrolled graph has more than `nodes` nodes (the budget check of the AUTO schedule) */
int ep_over(const ep_prog *p, long nodes);

/* a buffer of width reals per body (per_body = 1) or one slot per state (0); returns its id. EP_PER_CHAIN: a slot
   per body that a parent's last child takes over (grid_slot_, one slot for a chain), for a buffer written in a
   parents-first pass and read only by the children, so that the parent's value is dead once its last child
   has read it in the step that writes its own (rolled only; unrolled it is per body) */
enum { EP_PER_CHAIN = 2 };
int ep_buffer(ep_prog *p, const char *name, int width, int per_body);

/* unrolled: the symbolic values of a per-body buffer (slots x width), e.g. to hand a factor to a builder */
const sv *ep_buffer_values(const ep_prog *p, int buf);

void ep_bodies(ep_prog *p, int backward);
void ep_ancestors(ep_prog *p, int from_self);   /* j = i (from_self) or parent(i), up to the root */
/* a loop over columns k of the nv-wide joint space, inside a bodies loop: */
enum {
    EP_COLS_OWN,        /* i's own coordinates: [iv_i, iv_i + nv_i) */
    EP_COLS_BELOW,      /* the coordinates of i's descendants: [iv_i + nv_i, iv_i + nvsub_i) */
    EP_COLS_SUBTREE,    /* i's and its descendants': [iv_i, iv_i + nvsub_i) */
    EP_COLS_FROM,       /* i's and every later body's: [iv_i, nv) */
    EP_COLS_LATER       /* every later body's: [iv_i + nv_i, nv) */
};
void ep_columns(ep_prog *p, int range);
/* rolled only: a loop of i over the chain from the body `start` (C text, e.g. a table lookup) to the root */
void ep_chain(ep_prog *p, const char *start);
/* rolled only: C text into the loop nest between steps (a branch on an attribute, its closing brace) */
void ep_raw(ep_prog *p, const char *text);
int ep_next(ep_prog *p);

sym_graph *ep_graph(ep_prog *p);
double ep_gravity(const ep_prog *p);   /* signed, along world z */
const ek_body *ep_body(ep_prog *p, int var);
int ep_is_root(ep_prog *p, int var);
/* var's body's role in the coupled articulated-body recursion (EM_PLAIN, EM_MEMBER, EM_LEADER, EM_HOST) */
int ep_role(ep_prog *p, int var);
int ep_nv(ep_prog *p, int var);
/* liMi of var's body (rolled: computed in the first forward bodies loop, or by ep_kinematics, then loaded) */
const sxf *ep_X(ep_prog *p, int var);
/* liMi of the child of j on the path from i (an ancestors loop started at parent(i)) */
const sxf *ep_X_child(ep_prog *p);
/* a placement in a 12-wide buffer slot ([R row-major, p]) */
void ep_get_xf(ep_prog *p, int buf, int var, int rel, sxf *X);
void ep_set_xf(ep_prog *p, int buf, int var, const sxf *X);
/* in a forward bodies loop: oMi of body i (the parent's slot of OM composed with liMi), stored in i's slot of OM
   and returned; root_origin: a root's translation is dropped, so the frame has world axes and its origin at the
   root (what M and M^-1 are the same in, without lever arms as long as the base's distance) */
sxf ep_world_placement(ep_prog *p, int OM, int root_origin);
/* the nout outputs set to zero before the program writes the ones it computes (rolled; unrolled outputs
   start as zeros) */
void ep_zero_output(ep_prog *p, long nout);
/* a forward pass computing every liMi (rolled) when the algorithm starts with a backward loop */
void ep_kinematics(ep_prog *p);
/* an inertia-like 6x6 / a rigid inertia from var's body frame to its parent's */
void ep_mat6_to_parent(ep_prog *p, int var, const sv M[36], sv out[36]);
void ep_sci_to_parent(ep_prog *p, int var, const sci *Y, sci *out);

/* inside a columns loop: element r of column k of a buffer whose slots are 6 x nv blocks (width 6 nv, row-major:
   element (r, k) at r nv + k, so consecutive columns are contiguous), and the output element (iv(var) + r, k) */
sv ep_getk(ep_prog *p, int buf, int var, int rel, int r);
void ep_setk(ep_prog *p, int buf, int var, int rel, int r, sv x);
sv ep_out_getk(ep_prog *p, int var, int r);
void ep_out_setk(ep_prog *p, int var, int r, sv x);
/* the transposed output element (k, iv(var) + r), inside a columns loop whose k never reaches var's own columns
   (the loop's iterations must stay independent) */
void ep_out_setk_t(ep_prog *p, int var, int r, sv x);
/* a matrix output of `stride` elements per row (default nv; a gradient's [d/dq | d/dqd] is 2 nv wide), and the
   writes above at a column offset `off` (0, or nv for the second block) */
void ep_out_stride(ep_prog *p, int stride);
void ep_out_setk_off(ep_prog *p, int var, int r, int off, sv x);
void ep_out_setk_t_off(ep_prog *p, int var, int r, int off, sv x);
void ep_out_mat_off(ep_prog *p, int rv, int rrel, int r, int cv, int c, int off, sv x);
/* element (r, iv(var) + c) of a one-slot 6 x nv buffer (row-major, as ep_getk reads it) */
void ep_set_col(ep_prog *p, int buf, int var, int c, int r, sv x);

/* element k of body `body`'s slot (a body fixed at emit time, or EP_BODY_FRAME: the body of the runtime
   frame attribute, grid_frame_body_[frame]) */
enum { EP_BODY_FRAME = -1 };
sv ep_get_at(ep_prog *p, int buf, int body, int k);
void ep_set_at(ep_prog *p, int buf, int body, int k, sv x);
/* rolled only: element k of the runtime frame's placement (grid_frame_place_[frame]) */
sv ep_frame_place(ep_prog *p, int k);
/* out[k] (a flat output, e.g. FK's (nb, 4, 4) or the pose vector) and out[r * nv + iv(var) + c] (a 6 x nv Jacobian) */
void ep_out_flat(ep_prog *p, long k, sv x);
void ep_out_jac(ep_prog *p, int var, int r, int c, sv x);
/* out[stride * body(var) + k] (FK rows) */
void ep_out_body(ep_prog *p, int var, int stride, int k, sv x);

sv ep_get(ep_prog *p, int buf, int var, int rel, int k);
void ep_set(ep_prog *p, int buf, int var, int rel, int k, sv x);
/* input element k of var's body: EP_Q at its iq, EP_V / EP_A / EP_G at its iv, EP_F at 6 * body */
sv ep_in(ep_prog *p, int array, int var, int k);
/* out[iv(var) + k] and out[(iv(rv) + r) * nv + iv(cv) + c] (rv's body or its parent with rrel) */
void ep_out_vec(ep_prog *p, int var, int k, sv x);
void ep_out_mat(ep_prog *p, int rv, int rrel, int r, int cv, int c, sv x);
/* the lower triangle of the nv x nv output from the upper */
void ep_mirror_upper(ep_prog *p);
/* a block label: "body 3: link 'x' (joint 'y'), what" unrolled, "what" rolled */
void ep_comment(ep_prog *p, const char *what);

/* the model tables the rolled steps read (once per translation unit, guarded) */
void ep_write_tables(const em_model *em, ew_writer *w, const sym_style *st, const char *qual);

#endif
