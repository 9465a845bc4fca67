/* The method-kind table: per signature row, how the emitter implements it (programs, builders, callees, budgets). */
#ifndef GRID_EMIT_METHODS_H
#define GRID_EMIT_METHODS_H

#include "grid/signature.h"
#include "kinematics.h"
#include "program.h"
#include "target.h"

struct emit_ctx;
struct state_spec;
struct composite_inners;

/* parameters a per-state function reads, as bits (1 << EP_V ...; q is always read) */
#define EM_READS(p) (1 << (p))

/* the AUTO schedule's budget a method's unrolled form is held to (emit_ctx.h: GRID_EMIT_*_BUDGET) */
enum { BUDGET_UNROLL = 0, BUDGET_JACOBIAN, BUDGET_GRADIENT };

/* how a wrapper of a model with coupled mimic joints runs a method (coupling.c): its full-coordinate function's
   output projected along every tangent dimension of the row's output; M^-1 as the inverse of G^T M G (or the coupled
   articulated-body recursion on unit torques); FD and ABA as a solve with G^T M G (or that recursion) */
enum { COUPLE_PROJECT = 0, COUPLE_INVERSE, COUPLE_SOLVE };

/* helpers a library needs once when it holds a method's functions */
enum { PRELUDE_RPY = 1, PRELUDE_FRAME_TABLES = 2 };

enum { EMIT_MAX_VARIANTS = 3, EMIT_MAX_CALLS = 4 };

/* a per-state function another one calls: method row `row`'s variant that reads `reads` */
typedef struct {
    int row;
    int reads;
} emit_callee;

typedef struct emit_method {
    int row;            /* the signature row it implements (GRID_ALGO_*): names, inputs, output shape */
    int shares;         /* -1, or the row whose per-state functions it calls (NLE: RNEA's at qdd = 0) */
    /* its per-state functions, one per formulation variant: the parameters each reads (EM_READS bits), 0 ends the
       list; a call runs the first variant that reads every input it is given (an absent optional one reads zeros) */
    int variants[EMIT_MAX_VARIANTS];
    int lanes;          /* 1: no raw code, it runs on lane vectors */
    int budget;         /* BUDGET_* */
    int coupling;       /* COUPLE_* */
    /* COUPLE_INVERSE, COUPLE_SOLVE: the rows whose full-coordinate functions give G^T M G (the mass matrix) and the
       bias at zero acceleration (SOLVE), and the row of the coupled articulated-body recursion that replaces them
       where the model allows it (em_model.group_minv for INVERSE, group_aba for SOLVE) */
    int couple_mass, couple_bias, couple_recursion;
    int prelude;        /* PRELUDE_* bits */
    /* the program of both schedules (EMIT_PROGRAM); NULL: unrolled only */
    int (*program)(ep_prog *p, const struct emit_ctx *cx, const struct state_spec *sp);
    /* an unrolled builder on symbolic inputs in[EP_*] (NULL: absent) that replaces the program's unrolled schedule, its
       output values in out (the row's output width on the full coordinates); NULL: the program's; or `graph`, a
       builder that stores its outputs itself (and may write other functions, counted in extra) */
    int (*values)(ek_kin *k, const sv *const in[EP_COUNT], sv *out);
    int (*graph)(const struct emit_ctx *cx, ek_kin *k, sym_stats *extra);
    /* its unrolled size when estimated instead of measured (one function per body); NULL: measured */
    long (*size_estimate)(const em_model *em);
    /* a composite: the per-state functions it calls, in order, and the function that writes it (vector = 1: its
       lane form) */
    emit_callee callees[EMIT_MAX_CALLS];
    int n_callees;
    int (*composite)(const struct emit_ctx *cx, const struct state_spec *sp, const struct composite_inners *in,
                     int vector, sym_stats *stats);
    /* a composite written from its C source template alone (composite = emit_template_composite, template.c): the
       template's text (the name_start of its GRID_INCBIN beside the table: a purpose line, a comment documenting the
       macros it reads, then the body), and its own workspace past the callees' and its flops, each in the user's
       sizes as c[0] + c[1] nq + c[2] nv + c[3] nv^2 + c[4] nv^3 + c[5] nb. The writer defines for the body:
         GRID_NV_, GRID_NQ_        the user's nv (at least 1: array sizes) and nq
         GRID_NV_OUT_              the user's nv as the output's shapes have it (0 on a robot without joints)
         GRID_NB_, GRID_NFRAMES_   the bodies (of the full model) and the frames
         GRID_METHOD_<ROW>_        1, for the row it writes (its name, upper case): rows may share a body
         GRID_WORK_                where its arrays start in ws (past the callees' workspace)
         GRID_FLOAT32_             1 when grid_real is float
         GRID_SQRT_, GRID_SIN_, GRID_COS_   the real type's square root, sine, cosine
         GRID_EL_(p, k)            element k of a state array of the convention (q, a, g, out: the target's stride)
         GRID_QMAP_BODY_           the user's joints with coordinates of their own as calls GRID_QMAP_RUN_(iq, iv, n),
                                   GRID_QMAP_FREE_ / _SPHERICAL_ / _PLANAR_(iq, iv), macros the body defines
         GRID_CALL_<ROW>_(q, o)    callee <ROW> (its row's name, upper case) on q into o, arrays of stride 1 in ws,
                                   with the function's own frame and rf
         GRID_CALL_<ROW>_AT_(q, o, f, rf)   the same at frame f and reference frame rf
         GRID_CALL_<ROW>_S_(q, v, a, f, o)  the same on a whole state: q, v, a (qdd or u) and f_ext (6 nb) */
    const char *template;
    long template_work[6], template_flops[6];
    int composite_groups; /* 1: its rolled scalar form is a template on a state's lanes, or interleaved over a warp */
    int staged_cuda;      /* 1: its CUDA entry launches its callees' kernels one after another (docs/cuda.md) */
    int wide_real;        /* 1: a float32 library computes it in float64 (a part of its own, float64 code; the entry
                             widens the inputs and rounds the outputs): its float32 chain misses the accuracy target
                             (docs/emitter.md, "Rows computed in float64") */
} emit_method;

/* a program of the table (program.h): one description of both schedules for the per-state function sp of cx */
#define EMIT_PROGRAM(fn) int fn(ep_prog *p, const struct emit_ctx *cx, const struct state_spec *sp)

/* the row's method (every row has one); NULL when out of range */
const emit_method *emit_method_of(int row);

#endif
