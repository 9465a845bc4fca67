/* Carpentier's direct inverse of the mass matrix: U carried to every ancestor (unrolled), world-frame unit-torque columns (rolled). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "algos.h"

/* the columns of body c: its coordinates, or with mimic couplings (em_model.group_minv) the user's (a mimic joint
   has none; a member above a body with columns has none either, so K below only meets bodies with columns) */
static int ncol(const em_model *em, int c) { return em->group_minv ? em->b[c].unc : em->b[c].nv; }
static int col0(const em_model *em, int c) { return em->group_minv ? em->b[c].uc : em->b[c].iv; }

/* K(a, c) = S_a^T (U_c carried up to body a), for every ancestor a of c: n_a x n_c, row-major.
   Stored per body c, by depth: kc[c][d] belongs to the d-th ancestor (0 = parent). */
typedef struct {
    int *depth;     /* number of ancestors per body */
    int *first;     /* offset of body c's entries in k */
    sv (*k)[36];
} coupling;

static int depth_of(const em_model *em, int c)
{
    int d = 0;
    for (int j = em->b[c].parent; j >= 0; j = em->b[j].parent) d++;
    return d;
}

static int coupling_build(ek_kin *k, const ea_factor *fa, coupling *cp)
{
    sym_graph *g = k->g;
    const em_model *em = k->em;
    const int nb = em->nb;
    size_t total = 0;
    cp->depth = ek_calloc((size_t)nb, sizeof *cp->depth);
    cp->first = ek_calloc((size_t)nb, sizeof *cp->first);
    if (!cp->depth || !cp->first) return -1;
    for (int c = 0; c < nb; c++) {
        cp->depth[c] = depth_of(em, c);
        cp->first[c] = (int)total;
        total += (size_t)cp->depth[c];
    }
    cp->k = ek_calloc(total, sizeof *cp->k);
    if (!cp->k) return -1;
    for (int c = 0; c < nb; c++) {
        sv W[6][6];
        if (ncol(em, c) == 0) continue;
        ek_body_comment(g, em, c, "joint-space coupling to the ancestors");
        const int nc = ncol(em, c);
        for (int m = 0; m < nc; m++) memcpy(W[m], fa->U[c] + 6 * m, sizeof W[m]);
        int d = 0;
        for (int j = c; em->b[j].parent >= 0; j = em->b[j].parent, d++) {
            const em_body *ba = &em->b[em->b[j].parent];
            sv *K = cp->k[cp->first[c] + d];
            for (int m = 0; m < nc; m++) {
                sv col[6];
                sp_force_act(g, &k->X[j], W[m], W[m]);
                ek_joint_project(g, &k->view[em->b[j].parent], W[m], col);
                for (int r = 0; r < ba->nv; r++) K[nc * r + m] = col[r];
            }
        }
    }
    return 0;
}

static void coupling_free(coupling *cp)
{
    free(cp->depth);
    free(cp->first);
    free(cp->k);
}

/* K(a, c) for the ancestor a of c */
static const sv *coupling_at(const em_model *em, const coupling *cp, int a, int c)
{
    int d = 0;
    for (int j = em->b[c].parent; j != a; j = em->b[j].parent) d++;
    return cp->k[cp->first[c] + d];
}

int ea_minv(ek_kin *k, sv *Minv)
{
    /* with mimic couplings (em_model.group_minv): the user's columns, the factor of the recursion with couplings */
    sym_graph *g = k->g;
    const em_model *em = k->em;
    const int nb = em->nb, nv = em->group_minv ? em->nv_user : em->nv; /* (the columns') */
    ea_factor fa = {0};
    coupling cp = {0};
    sv *Mb = ek_calloc((size_t)nv * (size_t)nv, sizeof *Mb);
    int rc = -1;
    if (!Mb || ea_factor_build(k, &fa) != 0 || coupling_build(k, &fa, &cp) != 0) goto done;
    for (int i = 0; i < nv * nv; i++) Mb[i] = Minv[i] = sym_const(g, 0.0);

    /* backward rows: Mb(i, i) = Dinv_i; Mb(i, b) = -Dinv_i sum_{c on the path i -> b, c != i} K(i, c) Mb(c, b) */
    for (int i = nb - 1; i >= 0 && !sym_over_limit(g); i--) {
        const int ni = ncol(em, i);
        ek_body_comment(g, em, i, "backward rows of the inverse");
        for (int r = 0; r < ni; r++)
            for (int c = 0; c < ni; c++) Mb[(col0(em, i) + r) * nv + col0(em, i) + c] = fa.Dinv[i][ni * r + c];
        for (int b = i + 1; b < nb; b++) {
            if (!em_is_ancestor(em, i, b)) continue;
            for (int col = 0; col < ncol(em, b); col++) {
                sv acc[6];
                for (int r = 0; r < ni; r++) acc[r] = sym_const(g, 0.0);
                for (int c = b; c != i; c = em->b[c].parent) {
                    const sv *K = coupling_at(em, &cp, i, c);
                    for (int r = 0; r < ni; r++)
                        for (int m = 0; m < ncol(em, c); m++)
                            acc[r] = sym_add(g, acc[r], sym_mul(g, K[ncol(em, c) * r + m], Mb[(col0(em, c) + m) * nv + col0(em, b) + col]));
                }
                for (int r = 0; r < ni; r++) {
                    sv s = sym_const(g, 0.0);
                    for (int m = 0; m < ni; m++) s = sym_add(g, s, sym_mul(g, fa.Dinv[i][ni * r + m], acc[m]));
                    Mb[(col0(em, i) + r) * nv + col0(em, b) + col] = sym_neg(g, s);
                }
            }
        }
    }
    /* forward rows: Minv(i, b) = Mb(i, b) - Dinv_i sum_{a ancestor of i} K(a, i)^T Minv(a, b), for b >= i */
    for (int i = 0; i < nb && !sym_over_limit(g); i++) {
        const int ni = ncol(em, i);
        ek_body_comment(g, em, i, "forward rows of the inverse");
        for (int b = i; b < nb; b++) {
            for (int col = 0; col < ncol(em, b); col++) {
                sv acc[6];
                for (int r = 0; r < ni; r++) acc[r] = sym_const(g, 0.0);
                for (int a = em->b[i].parent; a >= 0; a = em->b[a].parent) {
                    const sv *K = coupling_at(em, &cp, a, i);
                    for (int r = 0; r < ni; r++)
                        for (int m = 0; m < ncol(em, a); m++)
                            acc[r] = sym_add(g, acc[r], sym_mul(g, K[ni * m + r], Minv[(col0(em, a) + m) * nv + col0(em, b) + col]));
                }
                for (int r = 0; r < ni; r++) {
                    sv s = sym_const(g, 0.0);
                    for (int m = 0; m < ni; m++) s = sym_add(g, s, sym_mul(g, fa.Dinv[i][ni * r + m], acc[m]));
                    Minv[(col0(em, i) + r) * nv + col0(em, b) + col] = sym_sub(g, Mb[(col0(em, i) + r) * nv + col0(em, b) + col], s);
                }
            }
        }
    }
    /* the lower triangle mirrors the upper */
    for (int r = 0; r < nv; r++)
        for (int c = 0; c < r; c++) Minv[r * nv + c] = Minv[c * nv + r];
    rc = 0;
done:
    ea_factor_free(&fa);
    coupling_free(&cp);
    free(Mb);
    return rc;
}

/* pass 3 of the rolled form on column k: Minv[i, k] -= UDw^T A_parent[:, k]; A_i[:, k] = A_parent[:, k] + Jw Minv[i, k];
   transposed: Minv[k, i] too. A host (QG >= 0) then gives its group's row: QG[k] = -ALw^T A_i[:, k] / BE */
static void forward_column(ep_prog *p, int UDW, int JW, int A, int root, int n, int transposed, int QG, int ALW, int BE)
{
    sym_graph *g = ep_graph(p);
    sv a[6], m[6];
    for (int e = 0; e < n; e++) m[e] = ep_out_get(p, ep_coord(EP_I, EP_SELF, e), ep_col(0));
    for (int r = 0; r < 6; r++) a[r] = root ? sym_const(g, 0.0) : ep_getk(p, A, EP_I, EP_PARENT, r);
    for (int e = 0; e < n && !root; e++) {
        sv s = sym_const(g, 0.0);
        for (int r = 0; r < 6; r++) s = sym_add(g, s, sym_mul(g, ep_get(p, UDW, EP_I, EP_SELF, 6 * e + r), a[r]));
        m[e] = sym_sub(g, m[e], s);
        ep_out(p, m[e], ep_coord(EP_I, EP_SELF, e), ep_col(0));
    }
    for (int e = 0; e < n && transposed; e++) ep_out(p, m[e], ep_col(0), ep_coord(EP_I, EP_SELF, e));
    for (int r = 0; r < 6; r++) {
        sv x = a[r];
        for (int e = 0; e < n; e++) x = sym_add(g, x, sym_mul(g, ep_get(p, JW, EP_I, EP_SELF, 6 * e + r), m[e]));
        a[r] = x;
        ep_setk(p, A, EP_I, EP_SELF, r, x);
    }
    if (QG < 0) return;
    sv s = sym_const(g, 0.0);
    for (int r = 0; r < 6; r++) s = sym_add(g, s, sym_mul(g, ep_get(p, ALW, EP_I, EP_SELF, r), a[r]));
    ep_setk(p, QG, EP_I, EP_SELF, 0, sym_neg(g, sym_div(g, s, ep_get(p, BE, EP_I, EP_SELF, 0))));
}

/* The rolled form: Carpentier's algorithm as Pinocchio's computeMinverse writes it, ABA on every unit torque at
   once (column k: the unit torque on coordinate k) with the column blocks in the world frame, so that a column
   costs two 6-dots and two 6-axpys per pass and no transform. The articulated inertias stay in the local frames
   (in the world frame, D = S^T IA S of a light distal body cancels large lever-arm terms: 1e-13 errors on g1).
   O(n * nv) work, code independent of n. F (6 x nv, one slot) holds the backward pass's force columns in place
   (the subtrees of siblings own disjoint columns), A (6 x nv, shared along chains) the bodies' accelerations.

   Coupled (em_model.group_minv, the recursion of algo_aba.c without velocities and with unit torques): the columns
   and rows are the user's coordinates. A group's members hand their parent the composite inertia and the group terms
   AL, BE and have no columns; a leader eliminates the group as its own coordinate (U = IA S + AL, D = S^T U + S^T AL
   + BE); under a host the group is a virtual child of the host with U = AL and D = BE, whose unit torque the leader
   seeds (GA[k] = -1, one slot) and the host takes in (F[:, k] -= ALw GA[k] / BE); going down, the host gives the
   group's row QG[k] = -ALw^T a_host[:, k] / BE and the leader writes it (plus 1 / BE on its own column). */
int ea_minv_program(ep_prog *p, int nv, int coupled)
{
    if (coupled) {
        ep_coupling_roles(p);
        ep_user_columns(p);
    }
    const int IA = ep_buffer(p, "IA", 36, 1), OM = ep_buffer(p, "oM", 12, 1), JW = ep_buffer(p, "Jw", 36, 1);
    const int UW = ep_buffer(p, "Uw", 36, 1), SDW = ep_buffer(p, "SDw", 36, 1), UDW = ep_buffer(p, "UDw", 36, 1);
    const int F = ep_buffer(p, "F", 6 * nv, 0), A = ep_buffer(p, "A", 6 * nv, EP_PER_CHAIN);
    const int AL = coupled ? ep_buffer(p, "AL", 6, 1) : -1, BE = coupled ? ep_buffer(p, "BE", 1, 1) : -1;
    const int ALW = coupled ? ep_buffer(p, "ALw", 6, 1) : -1, GA = coupled ? ep_buffer(p, "GA", nv, 0) : -1;
    const int QG = coupled ? ep_buffer(p, "QG", nv, EP_PER_CHAIN) : -1;
    ep_zero_output(p);
    /* pass 1: world placements; articulated inertias start as body inertias */
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        sv M[36];
        sp_body_inertia_matrix(g, ep_body(p, EP_I), M);
        for (int e = 0; e < 36; e++) ep_set(p, IA, EP_I, EP_SELF, e, M[e]);
        /* world axes, origin at the root: M^-1's entries do not lose digits with the base's distance */
        (void)ep_world_placement(p, OM, 1);
        if (!coupled) continue;
        for (int e = 0; e < 6; e++) ep_set(p, AL, EP_I, EP_SELF, e, sym_const(g, 0.0));
        ep_set(p, BE, EP_I, EP_SELF, 0, sym_const(g, 0.0));
        /* no group torque in any column yet (each column has one owner) */
        for (ep_columns(p, EP_COLS_OWN); ep_next(p);) ep_setk(p, GA, EP_I, EP_SELF, 0, sym_const(ep_graph(p), 0.0));
    }
    /* pass 2: children first */
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const int n = b->nv, root = ep_is_root(p, EP_I), role = coupled ? ep_role(p, EP_I) : EM_PLAIN;
        sv IAi[36], U[36] = {0}, Dinv[36] = {0}, UD[36] = {0}, Ia[36], t[36];
        sxf oM;
        ep_comment(p, "articulated inertia, the diagonal block, the joint's columns in the world frame");
        for (int e = 0; e < 36; e++) IAi[e] = ep_get(p, IA, EP_I, EP_SELF, e);
        if (role == EM_MEMBER) {
            /* the composite and the group terms to the parent; the host's leader seeds its column */
            sv ms[6], alpha[6];
            ea_member_inertia(p, IA, AL, BE, IAi, ms, alpha);
            for (ep_columns(p, EP_COLS_OWN); ep_next(p);) {
                ep_setk(p, GA, EP_I, EP_SELF, 0, sym_const(ep_graph(p), -1.0));
                for (int r = 0; r < 6; r++) ep_setk(p, F, EP_I, EP_SELF, r, sym_const(ep_graph(p), 0.0));
            }
            continue;
        }
        ek_body bl;
        ea_group_pieces(p, role, AL, BE, IAi, U, Dinv, &bl);
        ea_articulated_minus_joint(g, &bl, IAi, U, Dinv, Ia, UD);
        for (int r = 0; r < n; r++)
            for (int c = 0; c < n; c++) ep_out(p, Dinv[n * r + c], ep_coord(EP_I, EP_SELF, r), ep_coord(EP_I, EP_SELF, c));
        if (!root) {
            ep_mat6_to_parent(p, EP_I, Ia, t);
            for (int e = 0; e < 36; e++) ep_set(p, IA, EP_I, EP_PARENT, e, sym_add(g, ep_get(p, IA, EP_I, EP_PARENT, e), t[e]));
        }
        ep_get_xf(p, OM, EP_I, EP_SELF, &oM);
        if (role == EM_HOST) {
            /* the group's AL in the world frame */
            sv al[6], alw[6];
            for (int e = 0; e < 6; e++) al[e] = ep_get(p, AL, EP_I, EP_SELF, e);
            sp_force_act(g, &oM, al, alw);
            for (int e = 0; e < 6; e++) ep_set(p, ALW, EP_I, EP_SELF, e, alw[e]);
        }
        /* Jw = oM S, SDw = oM S D^-1 (D^-1 is symmetric), UDw = oM U D^-1, Uw = oM U, by columns */
        for (int c = 0; c < n; c++) {
            sv s[6], sd[6], x[6];
            for (int r = 0; r < 6; r++) {
                s[r] = b->S[n * r + c];
                sd[r] = sym_const(g, 0.0);
                for (int m = 0; m < n; m++) sd[r] = sym_add(g, sd[r], sym_mul(g, b->S[n * r + m], Dinv[n * m + c]));
            }
            sp_motion_act(g, &oM, s, x);
            for (int r = 0; r < 6; r++) ep_set(p, JW, EP_I, EP_SELF, 6 * c + r, x[r]);
            sp_motion_act(g, &oM, sd, x);
            for (int r = 0; r < 6; r++) ep_set(p, SDW, EP_I, EP_SELF, 6 * c + r, x[r]);
            sp_force_act(g, &oM, UD + 6 * c, x);
            for (int r = 0; r < 6; r++) ep_set(p, UDW, EP_I, EP_SELF, 6 * c + r, x[r]);
            if (root) continue;
            sp_force_act(g, &oM, U + 6 * c, x);
            for (int r = 0; r < 6; r++) ep_set(p, UW, EP_I, EP_SELF, 6 * c + r, x[r]);
        }
        /* the descendants' columns: Minv[i, k] = -SDw^T F[:, k]; the parent's F[:, k] = F[:, k] + Uw Minv[i, k]
           (a host first takes in its group: F[:, k] -= ALw GA[k] / BE) */
        for (ep_columns(p, EP_COLS_BELOW); ep_next(p);) {
            sym_graph *gk = ep_graph(p);
            sv f[6], m[6];
            for (int r = 0; r < 6; r++) f[r] = ep_getk(p, F, EP_I, EP_SELF, r);
            if (role == EM_HOST) {
                const sv w = sym_div(gk, ep_getk(p, GA, EP_I, EP_SELF, 0), ep_get(p, BE, EP_I, EP_SELF, 0));
                for (int r = 0; r < 6; r++) f[r] = sym_sub(gk, f[r], sym_mul(gk, ep_get(p, ALW, EP_I, EP_SELF, r), w));
                ep_setk(p, GA, EP_I, EP_SELF, 0, sym_const(gk, 0.0));
            }
            for (int a = 0; a < n; a++) {
                sv s = sym_const(gk, 0.0);
                for (int r = 0; r < 6; r++) s = sym_add(gk, s, sym_mul(gk, ep_get(p, SDW, EP_I, EP_SELF, 6 * a + r), f[r]));
                m[a] = sym_neg(gk, s);
                ep_out(p, m[a], ep_coord(EP_I, EP_SELF, a), ep_col(0));
            }
            if (root) continue;
            for (int r = 0; r < 6; r++) {
                sv x = f[r];
                for (int a = 0; a < n; a++) x = sym_add(gk, x, sym_mul(gk, ep_get(p, UW, EP_I, EP_SELF, 6 * a + r), m[a]));
                ep_setk(p, F, EP_I, EP_SELF, r, x);
            }
        }
        if (root) continue;
        /* the joint's own columns: F[:, k] = Uw Minv[i, k] (D^-1's columns) */
        for (ep_columns(p, EP_COLS_OWN); ep_next(p);) {
            sym_graph *gk = ep_graph(p);
            sv m[6];
            for (int a = 0; a < n; a++) m[a] = ep_out_get(p, ep_coord(EP_I, EP_SELF, a), ep_col(0));
            for (int r = 0; r < 6; r++) {
                sv x = sym_const(gk, 0.0);
                for (int a = 0; a < n; a++) x = sym_add(gk, x, sym_mul(gk, ep_get(p, UW, EP_I, EP_SELF, 6 * a + r), m[a]));
                ep_setk(p, F, EP_I, EP_SELF, r, x);
            }
        }
    }
    /* pass 3: parents first, over the joint's own columns, then every later body's (writing the lower triangle too) */
    for (ep_bodies(p, 0); ep_next(p);) {
        const int root = ep_is_root(p, EP_I), n = ep_nv(p, EP_I), role = coupled ? ep_role(p, EP_I) : EM_PLAIN;
        if (role == EM_MEMBER) {
            /* the group's row at the host's leader (a follower has no columns): QG[k], plus 1 / BE on its own */
            for (ep_columns(p, EP_COLS_OWN); ep_next(p);) {
                sym_graph *gk = ep_graph(p);
                ep_out(p, sym_add(gk, ep_getk(p, QG, EP_I, EP_PARENT, 0),
                                                sym_div(gk, sym_const(gk, 1.0), ep_get(p, BE, EP_I, EP_PARENT, 0))), ep_coord(EP_I, EP_SELF, 0), ep_col(0));
            }
            for (ep_columns(p, EP_COLS_LATER); ep_next(p);) {
                const sv x = ep_getk(p, QG, EP_I, EP_PARENT, 0);
                ep_out(p, x, ep_coord(EP_I, EP_SELF, 0), ep_col(0));
                ep_out(p, x, ep_col(0), ep_coord(EP_I, EP_SELF, 0));
            }
            continue;
        }
        const int qg = role == EM_HOST ? QG : -1;
        for (ep_columns(p, EP_COLS_OWN); ep_next(p);) forward_column(p, UDW, JW, A, root, n, 0, qg, ALW, BE);
        for (ep_columns(p, EP_COLS_LATER); ep_next(p);) forward_column(p, UDW, JW, A, root, n, 1, qg, ALW, BE);
    }
    return 0;
}

