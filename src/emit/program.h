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

/* loop variables: i (a bodies loop), j (an ancestors loop inside it), m (an ancestors loop inside that); a columns
   loop (k) may be the innermost loop at any level below the bodies loop */
enum { EP_I = 0, EP_J = 1, EP_M = 2, EP_MAX_DEPTH = 3 };
/* a buffer slot: the variable's body, its parent, or (j or m of an ancestors loop that starts at the parent of the
   enclosing variable's body) the child of j on the path from i, of m on the path from j */
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
/* the rolled loops switch on the bodies' kinds with their coupling roles (ep_role), for the coupled articulated-body
   recursion; other programs see one kind per joint type and root flag: called before the first loop */
void ep_coupling_roles(ep_prog *p);
/* the columns loops and the output's coordinate indices over the user's coordinates instead of the full ones (a coupled
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
/* inside a bodies (ancestors) loop: j = i (from_self) or parent(i), up to the root (m from j) */
void ep_ancestors(ep_prog *p, int from_self);
/* a loop over columns k of the nv-wide joint space, inside a bodies or ancestors loop; its range is relative to that
   loop variable's body (i below, j or m when it runs inside an ancestors loop): */
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
/* rolled: end the step here and go on in a new one at the same place of the loop nest (its buffer values stored,
   then loaded again), so that a long step is written as several functions of bounded size; unrolled: nothing */
void ep_break(ep_prog *p);
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
/* a rigid inertia in a 13-wide buffer slot ([m, h, I]) */
void ep_get_sci(ep_prog *p, int buf, int var, int rel, sci *Y);
void ep_set_sci(ep_prog *p, int buf, int var, int rel, const sci *Y);
/* in a bodies loop at a body that is no root: Y added into its parent's slot of buf (a composite's sum) */
void ep_sci_add_to_parent(ep_prog *p, int buf, const sci *Y);
/* in a forward bodies loop: oMi of body i (the parent's slot of OM composed with liMi), stored in i's slot of OM
   and returned; root_origin: a root's translation is dropped, so the frame has world axes and its origin at the
   root (what M and M^-1 are the same in, without lever arms as long as the base's distance) */
sxf ep_world_placement(ep_prog *p, int OM, int root_origin);
/* in a forward bodies loop: body i's local spatial velocity v_i = liMi^-1 v_parent + S qd (S qd at a root), stored in
   i's slot of VEL (6 wide) and returned */
void ep_body_velocity(ep_prog *p, int VEL, sv vel[6]);
/* the output set to zero before the program writes the elements it computes (rolled; unrolled outputs start as
   zeros) */
void ep_zero_output(ep_prog *p);
/* a forward pass computing every liMi (rolled) when the algorithm starts with a backward loop */
void ep_kinematics(ep_prog *p);
/* an inertia-like 6x6 / a rigid inertia from var's body frame to its parent's */
void ep_mat6_to_parent(ep_prog *p, int var, const sv M[36], sv out[36]);
void ep_sci_to_parent(ep_prog *p, int var, const sci *Y, sci *out);

/* inside a columns loop: element r of column k of a buffer whose slots are 6 x nv blocks (width 6 nv, row-major:
   element (r, k) at r nv + k, so consecutive columns are contiguous) */
sv ep_getk(ep_prog *p, int buf, int var, int rel, int r);
void ep_setk(ep_prog *p, int buf, int var, int rel, int r, sv x);
/* element (r, iv(var) + c) of a one-slot 6 x nv buffer (row-major, as ep_getk reads it) */
void ep_set_col(ep_prog *p, int buf, int var, int c, int r, sv x);

/* element k of body `body`'s slot (a body fixed at emit time, or EP_BODY_FRAME: the body of the runtime
   frame attribute, grid_frame_body_[frame]) */
enum { EP_BODY_FRAME = -1 };
sv ep_get_at(ep_prog *p, int buf, int body, int k);
void ep_set_at(ep_prog *p, int buf, int body, int k, sv x);
/* rolled only: element k of the runtime frame's placement (grid_frame_place_[frame]) */
sv ep_frame_place(ep_prog *p, int k);
sv ep_get(ep_prog *p, int buf, int var, int rel, int k);
void ep_set(ep_prog *p, int buf, int var, int rel, int k, sv x);
/* input element k of var's body: EP_Q at its iq, EP_V / EP_A / EP_G at its iv, EP_F at 6 * body */
sv ep_in(ep_prog *p, int array, int var, int k);
/* The output: an element by one index per dimension of its shape (the signature row's, row-major), each a
   constant, a coordinate of a loop variable's body, the columns loop's k or a body id, plus a constant:

       ep_out(p, tau, ep_coord(EP_I, EP_SELF, c))                        tau[iv(i) + c]
       ep_out(p, x, ep_coord(EP_I, EP_SELF, r), ep_col(nv))               dtau[iv(i) + r][nv + k]
       ep_out(p, x, ep_body_ix(EP_I), ep_at(r), ep_at(c))                 oMi[i][r][c]

   The same call writes a vector, an (nv, 2 nv) gradient or an (nv, nv, nv) tensor, on both schedules. A write whose
   column index precedes its coordinate one (a transposed element) must not alias an untransposed write of the same
   columns loop (the iterations stay independent). */
enum { EP_IX_CONST = 0, EP_IX_COORD, EP_IX_COL, EP_IX_BODY };
typedef struct {
    int kind, var, rel;  /* EP_IX_*; the loop variable and slot (EP_SELF, EP_PARENT, EP_CHILD) of COORD and BODY */
    long add;
} ep_ix;
static inline ep_ix ep_at(long k) { return (ep_ix){EP_IX_CONST, 0, 0, k}; }
/* the first coordinate of var's body at rel (in the user's coordinates after ep_user_columns), plus k */
static inline ep_ix ep_coord(int var, int rel, long k) { return (ep_ix){EP_IX_COORD, var, rel, k}; }
static inline ep_ix ep_col(long k) { return (ep_ix){EP_IX_COL, 0, 0, k}; }
static inline ep_ix ep_body_ix(int var) { return (ep_ix){EP_IX_BODY, var, EP_SELF, 0}; }
/* the output's shape, before the program writes it (emit_state.c: the row's concrete output); a program may view
   it in another shape of the same elements, row-major (the 10 nb parameters of a regressor as nb x 10) */
void ep_out_shape(ep_prog *p, int rank, const int *dims);
/* a view of part of the output: the elements [base, base + prod(dims)) as an array of that shape (a row with several
   outputs packs them one after another: emit_output_part views output k) */
void ep_out_view(ep_prog *p, long base, int rank, const int *dims);
void ep_out_at(ep_prog *p, const ep_ix *ix, int rank, sv x);
sv ep_out_get_at(ep_prog *p, const ep_ix *ix, int rank);
#define EP_NIX(...) ((int)(sizeof((ep_ix[]){__VA_ARGS__}) / sizeof(ep_ix)))
#define ep_out(p, x, ...) ep_out_at((p), (const ep_ix[]){__VA_ARGS__}, EP_NIX(__VA_ARGS__), (x))
#define ep_out_get(p, ...) ep_out_get_at((p), (const ep_ix[]){__VA_ARGS__}, EP_NIX(__VA_ARGS__))

/* the lower triangle of the nv x nv output from the upper */
void ep_mirror_upper(ep_prog *p);
/* a block label: "body 3: link 'x' (joint 'y'), what" unrolled, "what" rolled */
void ep_comment(ep_prog *p, const char *what);

/* the model tables the rolled steps read (once per translation unit, guarded) */
void ep_write_tables(const em_model *em, ew_writer *w, const sym_style *st, const char *qual);

#endif
