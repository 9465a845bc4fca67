/* The algorithm builders: each writes one algorithm once, as a loop over the model, into a symbolic graph. */
#ifndef GRID_EMIT_ALGOS_H
#define GRID_EMIT_ALGOS_H

#include "kinematics.h"
#include "program.h"

/* Every builder reads the kinematics k (built from symbolic q), symbolic inputs where an
   absent input (NULL) is an exact zero that folds away, and writes symbolic outputs.
   They return 0, or -1 when out of memory. */

/* Programs (program.h): one description for both schedules; has_* say which inputs exist. */

/* tau = M(q) a + C(q, v) v + g(q) - J^T fext into the output (tau_buf < 0) or a per-body buffer */
int ea_rnea_program(ep_prog *p, int has_v, int has_a, int has_fext, int tau_buf);


/* M (nv x nv row-major, full symmetric) by composite rigid bodies (rolled: in the world frame) */
int ea_crba_program(ep_prog *p, int nv);

/* Carpentier's factorization of M^-1: articulated inertias without bias, U = IA S, Dinv = (S^T U)^-1 */
typedef struct {
    sv (*U)[36];    /* per body: column c of U is U[i][6 c .. 6 c + 5] */
    sv (*Dinv)[36]; /* per body: nv x nv row-major */
} ea_factor;
int ea_factor_build(ek_kin *k, ea_factor *fa);
/* the factor as a program: U (6 x nv by columns) and Dinv (nv x nv) of every body into the two buffers
   (36 wide, per body); AL, BE >= 0 (per-body buffers of 6 and 1): with mimic couplings (crole), a member has no
   pieces and a group eliminated at its leader gives the leader's (ea_factor_build: a hosted group's at its leader) */
int ea_factor_program(ep_prog *p, int U_buf, int DINV_buf, int AL, int BE);
/* its pieces: U = IA S, Dinv = (S^T U)^-1; Ia = IA - U Dinv U^T (UD = U Dinv when UD is not NULL) */
void ea_joint_pieces(sym_graph *g, const ek_body *b, const sv IA[36], sv U[36], sv Dinv[36]);
void ea_articulated_minus_joint(sym_graph *g, const ek_body *b, const sv IA[36], const sv U[36], const sv Dinv[36],
                                sv Ia[36], sv *UD);
void ea_factor_free(ea_factor *fa);

/* M^-1 (nv x nv row-major, full symmetric) by Carpentier's direct algorithm: the unrolled builder (couplings
   to every ancestor, fast on small trees) and the rolled program (unit-torque columns in the world frame); with mimic
   couplings (em_model.group_minv) both give the user's nv x nv (the program: nv = nv_user, coupled = 1) */
int ea_minv_program(ep_prog *p, int nv, int coupled);
int ea_minv(ek_kin *k, sv *Minv);

int ea_fd_program(ep_prog *p, int has_fext);
/* coupled: the recursion with mimic couplings on the full coordinates (em_model.group_aba, crole) */
int ea_aba_program(ep_prog *p, int has_fext, int coupled);
/* in a backward bodies loop, a mimic group member i (EM_MEMBER) hands its parent the group's inertia terms: IA_parent
   += X^T IAi X; with ms = mult S, alpha = IAi ms + AL: AL_parent += X^T alpha, BE_parent += ms^T AL + BE + alpha^T ms
   (IA, AL, BE: per-body buffers of 36, 6, 1); ms and alpha out */
void ea_member_inertia(ep_prog *p, int IA, int AL, int BE, const sv IAi[36], sv ms[6], sv alpha[6]);
/* the joint pieces of body i in a backward bodies loop with its coupling role: a host (EM_HOST) first takes its
   hanging group out of IAi (IAi -= AL AL^T / BE); U = IAi S, Dinv = (S^T U)^-1; a leader (EM_LEADER) has U = IAi S +
   AL, D = S^T U + S^T AL + BE. bl: i's body, its basis shortcut dropped where Ia S = 0 does not hold */
void ea_group_pieces(ep_prog *p, int role, int AL, int BE, sv IAi[36], sv U[36], sv Dinv[36], ek_body *bl);


#endif
