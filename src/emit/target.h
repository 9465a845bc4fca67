/* The per-target and per-dtype tables: what differs between the C and CUDA outputs, as data. */
#ifndef GRID_EMIT_TARGET_H
#define GRID_EMIT_TARGET_H

#include "grid/abi.h"
#include "writer.h"

/* how one real type is spelled */
typedef struct {
    int dtype;               /* GRID_FLOAT32 or GRID_FLOAT64 */
    const char *c_type;      /* "float" / "double" */
    const char *fn_sqrt, *fn_sin, *fn_cos, *fn_atan2;
    int is_float;            /* literals rounded to float, 9 significant digits and an 'f' suffix */
} emit_real;

/* the input parameters of every per-state function, in its parameter order: grid_s_<fn>(q, v, a, fext, g, out, ...)
   (g: a vector-Jacobian product's cotangent); the same ids name the arrays of a per-state graph (program.h,
   sym_input), whose output array EP_OUT comes after them */
enum { EP_Q = 0, EP_V, EP_A, EP_F, EP_G, EP_COUNT, EP_OUT = EP_COUNT };
/* The per-state calling convention, described once (target.c): every per-state function's parameters in order,
   grid_s_<fn>(q, v, a, fext, g, out, frame, rf, ws[, st]) and the lane form grid_v_<fn>(q, v, a, fext, g, out, ws)
   (no attributes; ws in lane vectors). Declarations, the (void) casts and calls are written from it. */
enum { EP_FRAME = EP_OUT + 1, EP_RF, EP_WS, EP_NARGS };

/* one per-state function the batch wrapper can call, and which parameters it reads */
typedef struct {
    const char *fn;           /* per-state function name (NULL: unused slot) */
    int reads[EP_COUNT];      /* 1: the function reads that parameter (q always) */
    long long work;           /* reals of workspace the function needs per state (0: none; rolled functions) */
    int grouped;              /* 1: a template on the lanes sharing a state (a rolled loop nest, or a rolled FD
                                 composite of them; not a wrapper): the group form exists */
    int interleaved;          /* 1: its workspace is interleaved over a warp's 32 lanes (element k of lane l at
                                 k * 32 + l of the warp's block), so its accesses coalesce (an unrolled composite) */
} emit_variant;

/* optional inputs one row may have: its variant slots are the 2^n_opt combinations of them */
#define EMIT_MAX_OPT 2
/* the callees of a staged composite */
#define EMIT_STAGES 3

/* one exported method: its concrete signature row, how the row's inputs and attributes map onto the
   per-state parameters, and the per-state function of each combination of optional inputs */
typedef struct emit_entry {
    const grid_method_info *row;   /* names, widths, optional inputs, attribute ranges (one output) */
    const grid_method_info *split; /* NULL, or the row of several outputs whose packed block row is (the target
                                      writes row's entry privately, then split's, which divides the block) */
    int param_in[EP_COUNT];        /* the row input that feeds each per-state parameter, -1 = none (0 passed) */
    int attr_frame, attr_rf;       /* the row attribute passed as the per-state frame / rf, -1 = none (0) */
    int n_opt;                     /* the row's optional inputs, in order: bit k of the variant slot ... */
    int opt[EMIT_MAX_OPT];         /* ... is set when input opt[k] is given */
    emit_variant variant[1 << EMIT_MAX_OPT]; /* slot 0 always set; NULL slots fall back to slot 0 */
    long long min_parallel;        /* smallest batch for which a thread team is used */
    int vector;                    /* 1: the variants are lane functions grid_v_<fn>, fed GRID_LANES states per tile */
    long long work;                /* reals of workspace one state's function needs (its thread's slice of c->work);
                                      a lane row's includes its tile when that lives there */
    long long tile, tile_at;       /* a lane row's tile in the workspace: its lane vectors (0: on the stack) and where
                                      it starts (past the function's own workspace) */
    /* a composite's staged form (CUDA, the FD gradient): its callees' rows and functions, launched one after another
       by their own launchers on device arrays (qdd = FD, M^-1, the RNEA gradient at qdd), then the product; NULL: none */
    const struct emit_entry *stage[EMIT_STAGES];
    const emit_variant *stage_variant[EMIT_STAGES];
} emit_entry;

/* per-state elements of parameter p (0 when the row does not feed it) */
long long emit_param_width(const emit_entry *e, int p);
/* 1 when parameter p comes from an optional input (NULL stands for zeros) */
int emit_param_optional(const emit_entry *e, int p);
/* lane vectors of a lane row's tile (its output, padded for the streamed stores, and every input it feeds)
   when the tile is too large for the stack (EMIT_TILE_STACK_MAX), else 0: it then lives in the workspace */
#define EMIT_TILE_STACK_MAX 4096
long long emit_lane_tile(const grid_method_info *row, const int *param_in);
/* a widened entry (emit_target.widened): the float64 reals of one state's inputs and outputs, and its slice loop
   (both targets): c's inputs widened into x (K states per array), grid_<prefix>f64_<row> called on the slice, the
   outputs rounded back; stream is the helpers' extra argument ("" on the C target, ", s" on CUDA) */
long long emit_widened_reals(const grid_method_info *r);
void emit_write_widened_loop(ew_writer *w, const grid_method_info *r, const char *prefix, const char *stream);
/* the local pointer name of parameter p in the wrappers: "q", "v", "a", "f", "g" */
const char *emit_param_name(int p);
/* the variant slots in use (2^n_opt) and the function of slot k (slot 0 for an empty slot) */
int emit_variant_count(const emit_entry *e);
const emit_variant *emit_variant_at(const emit_entry *e, int k);
/* "switch ((c->in[2] != 0) | ((c->in[3] != 0) << 1)) {": the variant slot of a call */
void emit_write_selector(ew_writer *w, const emit_entry *e);
/* the pointer declarations of the inputs (const grid_real *q = ..., in the row's mapping) and the output o */
void emit_write_pointers(ew_writer *w, const emit_entry *e);
/* the input arguments of a per-state call on state b into arg[EP_Q..EP_G] (text holds them: "q + b * 7"; "0" when
   the function does not read the input; zeros for an absent optional one), arg[EP_OUT..] NULL for the caller */
void emit_state_inputs(const emit_entry *e, const emit_variant *vr, char text[EP_COUNT][96], const char *arg[EP_NARGS]);
/* "const int fr = c->attr[0], rf = c->attr[1];" (0 for an attribute the row does not have) */
void emit_write_attrs(ew_writer *w, const emit_entry *e);

/* how one target is spelled */
typedef struct emit_target {
    int id;                    /* a grid_target */
    const char *name;          /* "c" / "cuda" */
    const char *state_fn;      /* qualifiers of per-state functions */
    const char *inner_fn;      /* qualifiers of a rolled step run inside a columns or ancestors loop (inlined) */
    const char *big_fn;        /* ... of one of more than big_nodes expression nodes: its own function, not inlined */
    long big_nodes;            /* (C: the compiler's time on one function grows faster than its size, go2's second
                                  order 61 s against 144 s; CUDA: a call costs registers, so only the floating root's
                                  second-order steps, 12171 and 49666 nodes, which each kernel that inlined them, one
                                  per lane-group size and composite, made ptxas compile again: bench/RESULTS-gpu.md
                                  run 34) */
    const char *simd_loop;     /* the line(s) before a rolled columns loop, whose iterations are independent */
    const char *helper_fn;     /* qualifiers of helpers a part may leave unused */
    const char *restrict_kw;   /* restrict qualifier of pointer parameters */
    const char *table;         /* qualifiers of constant tables read by per-state code */
    const char *model_table;   /* the same for the rolled schedule's model tables, which grow with the robot
                                  (CUDA: global memory, not the 64 KB constant bank) */
    const char *stride_param;  /* extra trailing parameter of per-state functions */
    const char *elem_scale;    /* state array element k is p[k<elem_scale>] */
    const char *includes;      /* the #include lines */
    const char *export_fn;     /* qualifiers of exported functions */
    int lanes;                 /* 1: per-state dynamics as lane-vector functions (grid_vec, GRID_LANES states) */
    const char *group_fn;      /* rolled per-state functions as templates on GRID_G_, the lanes that share one
                                  state (columns loops split over them); "" = one thread per state only */
    const char *group_params;  /* their trailing parameters: the lane within the group and the warp's live lanes */
    /* the batch entry point of one method (and any kernels it launches) */
    void (*batch)(ew_writer *w, const struct emit_target *t, const emit_entry *e);
    /* the entry of a row a float32 library computes in float64 (emit_method.wide_real): slices of its batch widened
       into scratch, grid_f64_<row> (grid_cuda_f64_<row>) of the library's float64 part called on them, the outputs
       rounded back; r->work_bytes is that function's workspace per state */
    void (*widened)(ew_writer *w, const struct emit_target *t, const grid_method_info *r);
    /* 1: rows that share per-state functions may take different parts, each part with its own copies (CUDA: every
       kernel inlines its functions, so sharing saves ptxas no time, while one part of g1's fifteen rows that share
       them took 169 s of its 214-s build: bench/RESULTS-gpu.md run 35); 0: they share a part (C: compiled once) */
    int parts_apart;
} emit_target;

const emit_target *emit_target_get(int target);   /* NULL when unknown */
const emit_real *emit_real_get(int dtype);        /* NULL when unknown */

/* the parameter list shared by every per-state function, e.g. "(const grid_real *restrict q, ...)" */
void emit_state_params(ew_writer *w, const emit_target *t);
/* the same on lane vectors (the lane form has no attributes) */
void emit_lane_params(ew_writer *w, const emit_target *t);
/* "(void)q; (void)v; ..." for the parameters of a per-state function (lanes: the lane form's) whose bit 1 << k
   is not in skip, then " (void)st;" on a target with a stride parameter (scalar form, unless skip_stride) */
void emit_state_unused(ew_writer *w, const emit_target *t, int lanes, unsigned skip, int skip_stride);
/* the call "name(args)" of a per-state function (lanes: its lane form): arg[k] is parameter k's argument, NULL (or
   arg NULL) for the parameter's own name (the caller's parameter of that name); the scalar form's stride argument
   is stride ("1"; NULL: the caller's "st") on a target with a stride parameter */
void emit_state_call(ew_writer *w, const emit_target *t, int lanes, const char *name, const char *const arg[EP_NARGS],
                     const char *stride);
/* the same argument list alone (for a call with arguments before or after the convention's) */
void emit_state_arglist(ew_writer *w, const emit_target *t, int lanes, const char *const arg[EP_NARGS],
                        const char *stride);
/* the same for a rolled function, with the target's group parameters (CUDA: the lane in the group, live lanes) */
void emit_rolled_state_params(ew_writer *w, const emit_target *t);

/* the helpers every batch wrapper uses (thread count), written once after the tables */
void emit_batch_helpers(ew_writer *w, const emit_target *t);

/* the argument checks every batch entry point starts with, for either target, from the row: counts,
   required inputs and outputs present, attribute ranges */
void emit_write_checks(ew_writer *w, const grid_method_info *r);
/* a row of several outputs (e->split): the slice loop's head, after n, S and pk are declared: in[], pc and rc, the
   loop over slices of S states and the call of the packed entry <prefix><packed name> on slice [at, at + k) (the
   caller closes the loop) */
void emit_write_slice_setup(ew_writer *w, const emit_entry *e, const char *prefix);

#endif
