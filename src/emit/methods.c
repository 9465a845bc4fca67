/* The method-kind table: one row per signature row, naming its program, builders, callees and budget class. */
#include <stddef.h>
#include "../common/incbin.h"
#include "emit_ctx.h"

#define Q EM_READS(EP_Q)
#define V EM_READS(EP_V)
#define A EM_READS(EP_A)
#define F EM_READS(EP_F)
#define G EM_READS(EP_G)

/* ---- programs (program.h): one description, both schedules; a variant's reads pick its inputs ---- */

static int rnea_program(ep_prog *p, const emit_ctx *cx, const state_spec *sp)
{
    (void)cx;
    return ea_rnea_program(p, sp->reads_v, sp->reads_a, sp->reads_fext, -1);
}

static int crba_program(ep_prog *p, const emit_ctx *cx, const state_spec *sp)
{
    (void)sp;
    return ea_crba_program(p, cx->em->nv);
}

/* coupled (em_model.group_minv): a wrapper's inner M^-1 on the user's columns */
static int minv_program(ep_prog *p, const emit_ctx *cx, const state_spec *sp)
{
    (void)sp;
    return ea_minv_program(p, cx->em->group_minv ? cx->em->nv_user : cx->em->nv, cx->em->group_minv);
}

static int fd_program(ep_prog *p, const emit_ctx *cx, const state_spec *sp)
{
    (void)cx;
    return ea_fd_program(p, sp->reads_fext);
}

/* coupled (em_model.group_aba): a wrapper's inner ABA */
static int aba_program(ep_prog *p, const emit_ctx *cx, const state_spec *sp)
{
    return ea_aba_program(p, sp->reads_fext, cx->em->group_aba);
}

static int fk_program(ep_prog *p, const emit_ctx *cx, const state_spec *sp)
{
    (void)cx;
    (void)sp;
    return ea_fk_program(p);
}

static int ee_pose_program(ep_prog *p, const emit_ctx *cx, const state_spec *sp)
{
    (void)sp;
    return ea_ee_pose_program(p, cx);
}

static int jacobian_program(ep_prog *p, const emit_ctx *cx, const state_spec *sp)
{
    (void)sp;
    (void)cx;
    return ea_jacobian_program(p);
}

/* programs written to the table's signature (EMIT_PROGRAM), in their algo_*.c */
EMIT_PROGRAM(ea_rnea_grad_program);
EMIT_PROGRAM(ea_idsva_so_program);
EMIT_PROGRAM(ea_rnea_vjp_program);
EMIT_PROGRAM(ea_energy_program);
EMIT_PROGRAM(ea_kinetic_energy_regressor_program);
EMIT_PROGRAM(ea_potential_energy_regressor_program);
EMIT_PROGRAM(ea_coriolis_matrix_program);
EMIT_PROGRAM(ea_inverse_dynamics_regressor_program);
EMIT_PROGRAM(ea_com_program);
EMIT_PROGRAM(ea_ccrba_program);
EMIT_PROGRAM(ea_cmm_time_variation_program);
EMIT_PROGRAM(ea_dccrba_program);
EMIT_PROGRAM(ea_fk_batched_program);
EMIT_PROGRAM(ea_frame_jacobian_dot_program);

/* ---- unrolled builders besides the programs' own unrolled schedule: M^-1's couplings to every ancestor ---- */

static int minv_values(ek_kin *k, const sv *const in[EP_COUNT], sv *out) { (void)in; return ea_minv(k, out); }

/* the frames family stores its outputs itself (algo_frames.c, algo_jacobian.c) */
static int fk_graph(const emit_ctx *cx, ek_kin *k, sym_stats *extra) { (void)extra; return ea_fk(cx, k); }
static int ee_pose_graph(const emit_ctx *cx, ek_kin *k, sym_stats *extra) { (void)extra; return ea_ee_pose(cx, k); }
static int jacobian_graph(const emit_ctx *cx, ek_kin *k, sym_stats *extra) { return ea_frame_jacobian(cx, k, extra); }
int ea_frame_jacobian_dot(const emit_ctx *cx, ek_kin *k, sym_stats *extra);

/* The frame Jacobian's unrolled form is one function per body (each its own graph, about 165 statements per body
   of its chain: measured on chains of 25 and 50 links), so its size is estimated */
static long jacobian_size(const em_model *em)
{
    long chain = 0;
    for (int i = 0; i < em->nb; i++)
        for (int j = i; j >= 0; j = em->b[j].parent) chain++;
    return 165 * chain;
}

/* its rate's: about 2.5 times as much per body of the chain (measured as above) */
static long jacobian_dot_size(const em_model *em) { return 5 * jacobian_size(em) / 2; }
/* the C source templates of the composites written from their template alone (template.c) */
GRID_INCBIN(grid_osc_inertia_h, "src/emit/osc_inertia.h");
GRID_INCBIN(grid_ee_pose_runtime_h, "src/emit/ee_pose_runtime.h");
GRID_INCBIN(grid_fdsva_so_h, "src/emit/fdsva_so.h");
GRID_INCBIN(grid_q_pullback_h, "src/emit/q_pullback.h");

/* The table. Order matters twice: a composite's callees come before it (their workspace is known when it is
   written), and the library's functions appear in this order. */
static const emit_method methods[GRID_ALGO_COUNT] = {
    /* rnea(q, v, 0) (also NLE), rnea(q, v, a), rnea(q, v, a, fext) (a may be zeros) */
    [GRID_ALGO_RNEA] = {.row = GRID_ALGO_RNEA, .shares = -1, .variants = {Q | V, Q | V | A, Q | V | A | F}, .lanes = 1,
                        .program = rnea_program},
    [GRID_ALGO_NLE] = {.row = GRID_ALGO_NLE, .shares = GRID_ALGO_RNEA},
    [GRID_ALGO_GRAVITY] = {.row = GRID_ALGO_GRAVITY, .shares = -1, .variants = {Q}, .lanes = 1, .program = rnea_program},
    [GRID_ALGO_CRBA] = {.row = GRID_ALGO_CRBA, .shares = -1, .variants = {Q}, .lanes = 1, .program = crba_program},
    [GRID_ALGO_MINV] = {.row = GRID_ALGO_MINV, .shares = -1, .variants = {Q}, .lanes = 1, .coupling = COUPLE_INVERSE,
                        .couple_mass = GRID_ALGO_CRBA, .couple_recursion = GRID_ALGO_MINV, .program = minv_program, .values = minv_values},
    [GRID_ALGO_FD] = {.row = GRID_ALGO_FD, .shares = -1, .variants = {Q | V | A, Q | V | A | F}, .lanes = 1,
                      .coupling = COUPLE_SOLVE, .couple_mass = GRID_ALGO_CRBA, .couple_bias = GRID_ALGO_RNEA,
                      .couple_recursion = GRID_ALGO_ABA, .program = fd_program},
    [GRID_ALGO_ABA] = {.row = GRID_ALGO_ABA, .shares = -1, .variants = {Q | V | A, Q | V | A | F}, .lanes = 1,
                       .coupling = COUPLE_SOLVE, .couple_mass = GRID_ALGO_CRBA, .couple_bias = GRID_ALGO_RNEA,
                       .couple_recursion = GRID_ALGO_ABA, .program = aba_program},
    /* the frames family: stores dominate, lanes do not pay */
    [GRID_ALGO_FK] = {.row = GRID_ALGO_FK, .shares = -1, .variants = {Q}, .program = fk_program, .graph = fk_graph},
    [GRID_ALGO_EE_POSE] = {.row = GRID_ALGO_EE_POSE, .shares = -1, .variants = {Q}, .prelude = PRELUDE_RPY,
                           .program = ee_pose_program, .graph = ee_pose_graph},
    [GRID_ALGO_FRAME_JACOBIAN] = {.row = GRID_ALGO_FRAME_JACOBIAN, .shares = -1, .variants = {Q},
                                  .budget = BUDGET_JACOBIAN, .prelude = PRELUDE_FRAME_TABLES,
                                  .program = jacobian_program, .graph = jacobian_graph, .size_estimate = jacobian_size},
    /* the gradients have one variant each (absent qdd and f_ext read zeros): their code is large */
    [GRID_ALGO_RNEA_GRAD] = {.row = GRID_ALGO_RNEA_GRAD, .shares = -1, .variants = {Q | V | A | F}, .lanes = 1,
                             .budget = BUDGET_GRADIENT, .program = ea_rnea_grad_program},
    /* qdd = fd, the RNEA gradient at qdd, M^-1 */
    [GRID_ALGO_FD_GRAD] = {.row = GRID_ALGO_FD_GRAD, .shares = -1, .variants = {Q | V | A | F}, .lanes = 1,
                           .callees = {{GRID_ALGO_FD, Q | V | A | F}, {GRID_ALGO_RNEA_GRAD, Q | V | A | F}, {GRID_ALGO_MINV, Q}},
                           .n_callees = 3, .composite = emit_fd_grad_function, .composite_groups = 1, .staged_cuda = 1},
    /* the poses, each end effector's frame Jacobian */
    [GRID_ALGO_EE_POSE_GRAD] = {.row = GRID_ALGO_EE_POSE_GRAD, .shares = -1, .variants = {Q},
                                .callees = {{GRID_ALGO_EE_POSE, Q}, {GRID_ALGO_FRAME_JACOBIAN, Q}}, .n_callees = 2,
                                .composite = emit_ee_pose_grad_function},
    /* the vector-Jacobian products: one variant each, as the gradients */
    [GRID_ALGO_RNEA_VJP] = {.row = GRID_ALGO_RNEA_VJP, .shares = -1, .variants = {Q | V | A | F | G}, .lanes = 1,
                            .budget = BUDGET_GRADIENT, .program = ea_rnea_vjp_program},
    /* qdd = fd, the RNEA VJP at qdd for h = M^-1 g, M^-1 */
    [GRID_ALGO_FD_VJP] = {.row = GRID_ALGO_FD_VJP, .shares = -1, .variants = {Q | V | A | F | G}, .lanes = 1,
                          .callees = {{GRID_ALGO_FD, Q | V | A | F}, {GRID_ALGO_RNEA_VJP, Q | V | A | F | G}, {GRID_ALGO_MINV, Q}},
                          .n_callees = 3, .composite = emit_fd_grad_function, .composite_groups = 1},
    [GRID_ALGO_EE_POSE_VJP] = {.row = GRID_ALGO_EE_POSE_VJP, .shares = -1, .variants = {Q | G},
                               .callees = {{GRID_ALGO_EE_POSE, Q}, {GRID_ALGO_FRAME_JACOBIAN, Q}}, .n_callees = 2,
                               .composite = emit_ee_pose_grad_function},
    /* energies and centroidal quantities */
    [GRID_ALGO_ENERGY] = {.row = GRID_ALGO_ENERGY, .shares = -1, .variants = {Q | V}, .lanes = 1, .program = ea_energy_program},
    [GRID_ALGO_KINETIC_ENERGY_REGRESSOR] = {.row = GRID_ALGO_KINETIC_ENERGY_REGRESSOR, .shares = -1, .variants = {Q | V},
                                            .lanes = 1, .program = ea_kinetic_energy_regressor_program},
    [GRID_ALGO_POTENTIAL_ENERGY_REGRESSOR] = {.row = GRID_ALGO_POTENTIAL_ENERGY_REGRESSOR, .shares = -1, .variants = {Q},
                                              .lanes = 1, .program = ea_potential_energy_regressor_program},
    [GRID_ALGO_CORIOLIS_MATRIX] = {.row = GRID_ALGO_CORIOLIS_MATRIX, .shares = -1, .variants = {Q | V}, .lanes = 1,
                                   .program = ea_coriolis_matrix_program},
    /* absent qdd reads zeros */
    [GRID_ALGO_INVERSE_DYNAMICS_REGRESSOR] = {.row = GRID_ALGO_INVERSE_DYNAMICS_REGRESSOR, .shares = -1,
                                              .variants = {Q | V | A}, .lanes = 1,
                                              .program = ea_inverse_dynamics_regressor_program},
    /* outputs com and J, packed (emit_output_part) */
    [GRID_ALGO_COM] = {.row = GRID_ALGO_COM, .shares = -1, .variants = {Q}, .lanes = 1, .program = ea_com_program},
    [GRID_ALGO_CCRBA] = {.row = GRID_ALGO_CCRBA, .shares = -1, .variants = {Q | V}, .lanes = 1, .program = ea_ccrba_program},
    [GRID_ALGO_CMM_TIME_VARIATION] = {.row = GRID_ALGO_CMM_TIME_VARIATION, .shares = -1, .variants = {Q | V}, .lanes = 1,
                                      .program = ea_cmm_time_variation_program},
    [GRID_ALGO_DCCRBA] = {.row = GRID_ALGO_DCCRBA, .shares = -1, .variants = {Q}, .lanes = 1, .program = ea_dccrba_program},
    /* the first end effector's position and quaternion (raw code: no lanes) */
    [GRID_ALGO_FK_BATCHED] = {.row = GRID_ALGO_FK_BATCHED, .shares = -1, .variants = {Q}, .program = ea_fk_batched_program},
    [GRID_ALGO_FRAME_JACOBIAN_DOT] = {.row = GRID_ALGO_FRAME_JACOBIAN_DOT, .shares = -1, .variants = {Q | V},
                                      .budget = BUDGET_JACOBIAN, .prelude = PRELUDE_FRAME_TABLES,
                                      .program = ea_frame_jacobian_dot_program, .graph = ea_frame_jacobian_dot,
                                      .size_estimate = jacobian_dot_size},
    /* the frame's Jacobian and M^-1; q, J, M^-1 and Y in its workspace; at most nv^3 / 6 + 3 nv^2 + 72 nv flops */
    [GRID_ALGO_OSC_INERTIA] = {.row = GRID_ALGO_OSC_INERTIA, .shares = -1, .variants = {Q},
                               .callees = {{GRID_ALGO_FRAME_JACOBIAN, Q}, {GRID_ALGO_MINV, Q}}, .n_callees = 2,
                               .composite = emit_template_composite, .template = grid_osc_inertia_h_start,
                               .template_work = {0, 1, 12, 1, 0}, .template_flops = {500, 0, 72, 3, 1}},
    /* at a target chosen per call (the target input reads as a: EM_READS(EP_A)): every body's placement, and for the
       derivatives the frame's Jacobian; q, oMi and J local arrays (ee_pose_runtime.h) */
    [GRID_ALGO_EE_POSE_RUNTIME] = {.row = GRID_ALGO_EE_POSE_RUNTIME, .shares = -1, .variants = {Q | A},
                                   .prelude = PRELUDE_RPY | PRELUDE_FRAME_TABLES,
                                   .callees = {{GRID_ALGO_FK, Q}}, .n_callees = 1,
                                   .composite = emit_template_composite, .template = grid_ee_pose_runtime_h_start,
                                   .template_work = {0}, .template_flops = {150, 0, 0, 0, 0, 0}},
    [GRID_ALGO_EE_POSE_RUNTIME_GRAD] = {.row = GRID_ALGO_EE_POSE_RUNTIME_GRAD, .shares = -1, .variants = {Q | A},
                                        .prelude = PRELUDE_RPY | PRELUDE_FRAME_TABLES,
                                        .callees = {{GRID_ALGO_FK, Q}, {GRID_ALGO_FRAME_JACOBIAN, Q}}, .n_callees = 2,
                                        .composite = emit_template_composite, .template = grid_ee_pose_runtime_h_start,
                                        .template_work = {0}, .template_flops = {150, 0, 30, 0, 0, 0}},
    [GRID_ALGO_EE_POSE_RUNTIME_VJP] = {.row = GRID_ALGO_EE_POSE_RUNTIME_VJP, .shares = -1, .variants = {Q | A | G},
                                       .prelude = PRELUDE_RPY | PRELUDE_FRAME_TABLES,
                                       .callees = {{GRID_ALGO_FK, Q}, {GRID_ALGO_FRAME_JACOBIAN, Q}}, .n_callees = 2,
                                       .composite = emit_template_composite, .template = grid_ee_pose_runtime_h_start,
                                       .template_work = {0}, .template_flops = {150, 0, 42, 0, 0, 0}},
    /* second order (built when named: grid_sig_opt_in): one variant (absent qdd and f_ext read zeros), O(nv^3) outputs (AUTO rolls them
       past the budget) */
    [GRID_ALGO_IDSVA_SO] = {.row = GRID_ALGO_IDSVA_SO, .shares = -1, .variants = {Q | V | A | F}, .lanes = 1,
                            .budget = BUDGET_GRADIENT, .program = ea_idsva_so_program},
    /* qdd = fd, the first- and second-order RNEA derivatives at qdd, M^-1; q, qd, u, f_ext, qdd, D, T, M^-1 and a
       column in its workspace; 4 nv^4 + 4 nv^3 flops; in float64 in a float32 library (its ingredients' float32
       errors, amplified by the products with M^-1, put g1's entries 50 % off: bench/RESULTS.md) */
    [GRID_ALGO_FDSVA_SO] = {.row = GRID_ALGO_FDSVA_SO, .shares = -1, .variants = {Q | V | A | F},
                            .callees = {{GRID_ALGO_FD, Q | V | A | F}, {GRID_ALGO_RNEA_GRAD, Q | V | A | F},
                                        {GRID_ALGO_IDSVA_SO, Q | V | A | F}, {GRID_ALGO_MINV, Q}},
                            .n_callees = 4, .composite = emit_template_composite, .template = grid_fdsva_so_h_start,
                            .template_work = {0, 1, 4, 3, 4, 6}, .template_flops = {0, 0, 0, 4, 10, 0},
                            .wide_real = 1},
    /* the poses and each end effector's frame Jacobian, as the gradient; its arrays and the world columns in ws */
    [GRID_ALGO_EE_POSE_HESSIAN] = {.row = GRID_ALGO_EE_POSE_HESSIAN, .shares = -1, .variants = {Q},
                                   .callees = {{GRID_ALGO_EE_POSE, Q}, {GRID_ALGO_FRAME_JACOBIAN, Q}}, .n_callees = 2,
                                   .composite = emit_ee_pose_grad_function},
    /* joint by joint in the user's coordinates (GRID_QMAP_BODY_, template.c); no workspace, at most 40 flops a joint */
    [GRID_ALGO_Q_PULLBACK] = {.row = GRID_ALGO_Q_PULLBACK, .shares = -1, .variants = {Q | G},
                              .composite = emit_template_composite, .template = grid_q_pullback_h_start,
                              .template_work = {0}, .template_flops = {0, 0, 0, 0, 0, 40}},
};

const emit_method *emit_method_of(int row)
{
    return row >= 0 && row < GRID_ALGO_COUNT && methods[row].row == row ? &methods[row] : NULL;
}
