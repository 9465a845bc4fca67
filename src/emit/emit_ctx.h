/* What every emitting function shares: the prepared model, the target and dtype tables, the output. */
#ifndef GRID_EMIT_CTX_H
#define GRID_EMIT_CTX_H

#include "grid/emit.h"
#include "algos.h"
#include "methods.h"
#include "target.h"
#include "writer.h"

typedef struct emit_ctx {
    const em_model *em;
    const emit_target *t;
    const emit_real *re;
    sym_style st;      /* spelling of statements in scalar per-state functions */
    sym_style vst;     /* the same for vector (lane) per-state functions, on targets with lanes */
    ew_writer *w;
    int schedule;      /* the requested grid_schedule (emit options) */
    int inner;         /* 1: writing a full-coordinate function of a model with mimic couplings (coupling.c) */
    int called;        /* 1: a composite calls this function too: C writes it out of line, compiled once */
    int copy;          /* 1: writing a composite's own rolled copy of a callee (never split) */
} emit_ctx;

/* the qualifiers of a per-state function: the target's, or out of line when a composite calls it as well (else gcc
   compiles its body twice, inlined into its tile and into the composite) */
const char *emit_state_qualifiers(const emit_ctx *cx);


/* an element of a state array in raw code: name[expr] or name[(expr) * st] */
void emit_elem(const emit_ctx *cx, char *buf, size_t cap, const char *name, const char *expr);

/* the inlinable sincos every per-state function calls (math_helpers.c) */
void emit_math_helpers(const emit_ctx *cx);
/* the lane vector type and its helpers (targets with lanes) */
void emit_lane_helpers(const emit_ctx *cx);

/* frames family (algo_frames.c): constant tables, the rpy helper, and the builders,
   which add raw code around the symbolic part */
void emit_frame_tables(const emit_ctx *cx);
void emit_rpy_helper(const emit_ctx *cx);
int ea_fk(const emit_ctx *cx, ek_kin *k);
/* the programs (program.h) of the frames family: FK (both schedules), and the rolled end-effector
   pose and frame Jacobian (a runtime walk of the frame's chain: code O(1) in the robot's size) */
int ea_fk_program(ep_prog *p);
int ea_ee_pose_program(ep_prog *p, const emit_ctx *cx);
int ea_jacobian_program(ep_prog *p);
int ea_ee_pose(const emit_ctx *cx, ek_kin *k);
/* algo_jacobian.c: writes one chain function per body to cx->w (ahead of the per-state function),
   whose graph k->g gets only the runtime dispatch; their counts go to *extra (statements summed,
   flops of the most expensive body) */
int ea_frame_jacobian(const emit_ctx *cx, ek_kin *k, sym_stats *extra);

/* per-state functions (emit_state.c): write the function named grid_s_<fn> */
typedef struct state_spec {
    const char *fn;   /* grid_s_<fn> (scalar) or grid_v_<fn> (lanes) */
    const emit_method *m; /* the method it implements (methods.c) */
    int reads_v, reads_a, reads_fext;
    int lanes_ok;     /* no raw code: can run on lane vectors */
    int reads_g;      /* reads a cotangent (the vector-Jacobian products) */
} state_spec;
/* the per-state function of method row `row` that a call reading `reads` (EM_READS bits) runs (emit.c) */
const state_spec *emit_function_for(int row, int reads);
/* the size of sp's unrolled form in graph nodes (capped: GRID_EMIT_UNROLL_BUDGET + 1 means larger), or -1 when
   sp has no program (it is always unrolled) */
long emit_state_size(const emit_ctx *cx, const state_spec *sp);

/* the AUTO schedule's budget, in graph nodes of one per-state function (about 0.7 emitted statements
   each): gcc's time on a straight-line function grows faster than its length. 28k keeps every function of
   the test robots up to atlas (its Minv: 26k) unrolled, and rolls the 35-40k-node FD, ABA and CRBA of a
   57-dof humanoid, which took gcc minutes (bench/RESULTS-large.md; docs/emitter.md, "Schedules") */
#define GRID_EMIT_UNROLL_BUDGET 28000L
/* the frame Jacobian's unrolled form is many small functions (one per body), which compile in linear time */
#define GRID_EMIT_JACOBIAN_BUDGET 40000L
/* the RNEA gradient's: its unrolled form keeps many values live across the function (each body's J, dV, dA columns
   until its subtree is done), which makes gcc's register allocation superlinear: go2's 16.7k-statement function took
   15.6 s of CPU (LRA 57 %) against 2.7 s rolled, and ran at 7 us per state against 29 us rolled (both far from
   the 1/3-of-Pinocchio target). Every library carries the gradient, so it rolls from this size on: robots up to
   about 8 links keep it unrolled. On the C target the rolled form runs on lane vectors (go2: 2.0 us per state at
   B = 256, 0.16 of Pinocchio), so the unrolled form's compile buys little past this size */
#define GRID_EMIT_GRADIENT_BUDGET 8000L
/* and of the whole library's unrolled functions: past it, AUTO rolls the largest ones until the rest fits
   (compile time follows the total); g1_29dof floating, the largest test robot, is about 143k nodes */
#define GRID_EMIT_LIBRARY_BUDGET 200000L
/* CUDA's split form for small batches (emit_state.c, docs/cuda.md "Split pieces"): a wide output's columns are
   cut into pieces, each a function of its own on its own thread. A column joins a piece while the piece stays
   within SLACK % of the heaviest single column's operations; a split is written only when its largest piece costs
   at most GAIN % of the whole function and all pieces together at most BUDGET operations (nvcc's time follows
   them: every piece repeats the shared part), for functions of at least MIN operations; a rolled function is
   split from its unrolled graph when that has at most GRAPH nodes */
#define GRID_EMIT_SPLIT_MIN 2000L   /* (smaller functions: the launch dominates) */
#define GRID_EMIT_SPLIT_SLACK 10
#define GRID_EMIT_SPLIT_GAIN 45 /* H200, float32 (bench/RESULTS-gpu.md run 16): the RNEA gradient split with its largest
   piece at 19 % (hyq) and 38 % (go2) of the function ran 3.1x and 1.8x faster at B = 1024; at 56 % (iiwa) slower */
#define GRID_EMIT_SPLIT_BUDGET 60000L
#define GRID_EMIT_SPLIT_GRAPH 40000L
/* rolled = 1: the rolled schedule (sp must have a program); vector = 1: the lane form grid_v_<fn>(const grid_vec
   *q, *v, *a, *fext, *g, grid_vec *out, grid_vec *ws), on either schedule (a rolled one's workspace: work vectors) */
int emit_state_function(const emit_ctx *cx, const state_spec *sp, int rolled, int vector, sym_stats *stats);
/* a program of a row with several outputs writes output k through this view of its packed block (program.h) */
void emit_output_part(ep_prog *p, const emit_ctx *cx, const state_spec *sp, int k);
/* "qualifiers void grid_v_<fn>(... grid_vec *ws)\n{\n" and the (void) casts of its parameters */
void emit_lane_signature(const emit_ctx *cx, const char *qualifiers, const char *fn);

/* coupling.c: on a model with coupled mimic joints, every per-state function is a wrapper around full-coordinate
   functions (grid_s_<fn>_m, written once per translation unit); emit_coupled says whether cx is such a model
   outside those, emit_coupled_size is emit_state_size for it */
int emit_coupled(const emit_ctx *cx);
long emit_coupled_size(const emit_ctx *cx, const state_spec *sp);
/* the full-coordinate functions a wrapper calls (names, unrolled sizes): their count, -1 without a program;
   wrappers share them by name (grid_s_crba_m serves CRBA, M^-1, FD and ABA) */
int emit_coupled_inners(const emit_ctx *cx, const state_spec *sp, char names[2][64], long sizes[2]);
/* 0 or -1 (out of memory, a shape it cannot project); the full-coordinate outputs of more than EMIT_COUPLED_MAX_OUT
   elements per state (and second-order tensors) live in the workspace, smaller ones in a local array of the wrapper */
enum { EMIT_COUPLED_MAX_OUT = 1 << 16 };
int emit_coupled_function(const emit_ctx *cx, const state_spec *sp, int rolled, int vector, sym_stats *stats);
/* An unrolled function of a projected row (COUPLE_PROJECT, every output projectable, none (nv, nv, nv)) is instead one
   graph in the user's coordinates: emit_coupled_in_graph says so; its builder runs on the full coordinates expanded
   from the user's inputs (emit_coupled_expand: q, or a tangent vector) and its outputs are folded onto the user's
   (emit_coupled_project), so the function is an ordinary unrolled one (the CUDA target's chunked outputs and split
   pieces included) with no full-coordinate arrays */
int emit_coupled_in_graph(const emit_ctx *cx, const state_spec *sp);
void emit_coupled_expand(const em_model *em, sym_graph *g, const sv *user, sv *full, int tangent);
/* full: the row's outputs on the full coordinates (packed, in order); user: the user's; 0, or -1 out of memory */
int emit_coupled_project(const emit_ctx *cx, const state_spec *sp, sym_graph *g, const sv *full, sv *user);
struct composite_inners;
/* a composite that must see the full coordinates (the pose Hessian relates the joints' own columns): its callees'
   full-coordinate functions (rolled), the composite written by `composite` on them (cx->inner set: its sizes are the
   full model's), and the wrapper projecting its outputs */
int emit_coupled_composite(const emit_ctx *cx, const state_spec *sp, const struct composite_inners *in,
                           sym_stats *stats,
                           int (*composite)(const emit_ctx *, const state_spec *, const struct composite_inners *, int,
                                            sym_stats *));

/* algo_fd_grad.c: the forward-dynamics gradient, -M^-1 [dtau/dq | dtau/dqd] at qdd = FD(q, v, u, fext), as a
   per-state function that calls three others of the library: fd (qdd), rnea_grad (at qdd) and minv. vector = 1:
   the lane form (all three are lane functions); else the scalar form, whose arrays follow the inner functions'
   workspace (inner_work reals) in ws. stats->work is what it needs in all. */
typedef struct composite_inners {
    const char *fn[EMIT_MAX_CALLS]; /* the per-state functions it calls (grid_s_ / grid_v_ names without the prefix), in calls[] order */
    long inner_work;   /* the most workspace any of them takes (reals) */
    int group;         /* 1: the scalar form as a template on GRID_G_ lanes sharing the state (CUDA, rolled: every
                          callee is a rolled template) */
    int interleave;    /* 1: the scalar form's arrays interleaved over the warp's lanes with the stride GRID_IL_
                          (CUDA, one thread per state, callees without workspace), the callees called with it */
} composite_inners;
int emit_fd_grad_function(const emit_ctx *cx, const state_spec *sp, const composite_inners *in, int vector,
                          sym_stats *stats);
/* algo_ee_pose_grad.c: d[xyz, rpy]/dq of every end effector from the pose (ee_pose) and each end effector's
   LOCAL_WORLD_ALIGNED frame Jacobian (frame_jacobian); scalar, its arrays in ws after inner_work */
int emit_ee_pose_grad_function(const emit_ctx *cx, const state_spec *sp, const composite_inners *in, int vector,
                               sym_stats *stats);
/* template.c: a composite of its method's C source template alone (emit_method.template; scalar, on q): the
   function's signature, the standard macros (methods.h), the body verbatim */
int emit_template_composite(const emit_ctx *cx, const state_spec *sp, const composite_inners *in, int vector,
                            sym_stats *stats);

#endif
