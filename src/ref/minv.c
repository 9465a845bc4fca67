/* Reference inverse mass matrix: Carpentier's direct ABA-like algorithm (Pinocchio's computeMinverse). */
#include <string.h>
#include "grid/ref.h"
#include "spatial.h"

/* The algorithm is ABA run on every unit torque at once, without forming M. Column k of the
   per-body 6 x nv blocks B_i belongs to the unit torque on coordinate k (of body kb):
     pass 1 (parents first): placements.
     pass 2 (children first): articulated inertias IA_i, U_i = IA_i S_i, D_i = S_i^T U_i;
       Minv[i, i] = D_i^-1 and Minv[i, k] = -D_i^-1 S_i^T B_i[:, k] for kb below i, where
       B_i[:, k] is the force the subtree of i passes up, projected through each joint;
       then B_i[:, k] += U_i Minv[i, k] and B_i goes to the parent's frame.
     pass 3 (parents first): with a = X_i B_parent[:, k] the parent's acceleration under
       unit torque k, Minv[i, k] -= D_i^-1 U_i^T a and B_i[:, k] = a + S_i Minv[i, k].
   Everything is in body-local frames, so the result does not depend on the base placement
   (a world-frame version loses digits as the base moves away from the origin).
   Only the upper triangle (kb at or after i in body order) is computed; the lower is mirrored. */

size_t grid_sp_work_minv(const grid_model *m)
{
    const size_t nb = (size_t)m->nb, nv = (size_t)m->nv_full;
    /* placements; IA, U, D^-1 (36 each) per body; one 6 x nv block per body; a subtree mark per body */
    return grid_sp_work_kinematics(m) + 108 * nb + 6 * nv * nb + nb;
}

/* in[k] = 1 for body i and its descendants, else 0 (parents come before children, in any order of siblings'
   subtrees): O(nb) per body, where walking each later body up to i made a chain's M^-1 O(nb^3) */
static void mark_subtree(const grid_model *m, int i, double *in)
{
    in[i] = 1.0;
    for (int k = i + 1; k < m->nb; k++) {
        const int p = m->bodies[k].joint.parent;
        in[k] = p >= i && in[p] != 0.0 ? 1.0 : 0.0;
    }
}

/* column c of a 6 x nv row-major block */
static void get_col(const double *B, int nv, int c, double out[6])
{
    for (int r = 0; r < 6; r++) out[r] = B[(size_t)nv * r + c];
}

static void set_col(double *B, int nv, int c, const double in[6])
{
    for (int r = 0; r < 6; r++) B[(size_t)nv * r + c] = in[r];
}

void grid_ref_minv(const grid_model *m, const double *q, double *Minv, double *work)
{
    const size_t nb = (size_t)m->nb;
    const int nv = m->nv_full;
    double *liMi = work, *oMi = liMi + 12 * nb;
    double *IA = oMi + 12 * nb, *U = IA + 36 * nb, *Dinv = U + 36 * nb, *B = Dinv + 36 * nb, *sub = B + 6 * (size_t)nv * nb;
    memset(Minv, 0, (size_t)nv * (size_t)nv * sizeof(double));
    memset(B, 0, 6 * (size_t)nv * nb * sizeof(double));

    /* pass 1: placements; articulated inertias start as body inertias */
    grid_sp_placements(m, q, liMi, oMi);
    for (int i = 0; i < m->nb; i++) grid_sp_inertia_matrix(&m->bodies[i].inertia, IA + 36 * i);

    /* pass 2: children first */
    for (int i = m->nb - 1; i >= 0; i--) {
        const grid_joint *j = &m->bodies[i].joint;
        const int n = j->nv, iv = j->iv;
        double S[36], D[36];
        double *Ii = IA + 36 * i, *Ui = U + 36 * i, *Di = Dinv + 36 * i;
        double *Bi = B + 6 * (size_t)nv * i;
        grid_sp_joint_subspace(j, S);

        /* U_i = IA_i S_i (6 x n) and D_i = S_i^T U_i */
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < n; c++) {
                double s = 0.0;
                for (int k = 0; k < 6; k++) s += Ii[6 * r + k] * S[n * k + c];
                Ui[n * r + c] = s;
            }
        for (int a = 0; a < n; a++)
            for (int c = 0; c < n; c++) {
                double s = 0.0;
                for (int k = 0; k < 6; k++) s += S[n * k + a] * Ui[n * k + c];
                D[n * a + c] = s;
            }
        grid_sp_small_inverse(n, D, Di);

        /* diagonal block */
        for (int a = 0; a < n; a++)
            for (int c = 0; c < n; c++) Minv[(size_t)(iv + a) * nv + iv + c] = Di[n * a + c];

        mark_subtree(m, i, sub);
        for (int k = i + 1; k < m->nb; k++) {
            if (sub[k] == 0.0) continue;
            const grid_joint *jk = &m->bodies[k].joint;
            for (int c = 0; c < jk->nv; c++) {
                const int col = jk->iv + c;
                double b[6], stb[6];
                /* Minv[i, k] = -D_i^-1 S_i^T B_i[:, k] */
                get_col(Bi, nv, col, b);
                for (int a = 0; a < n; a++) {
                    double s = 0.0;
                    for (int r = 0; r < 6; r++) s += S[n * r + a] * b[r];
                    stb[a] = s;
                }
                for (int a = 0; a < n; a++) {
                    double s = 0.0;
                    for (int e = 0; e < n; e++) s += Di[n * a + e] * stb[e];
                    Minv[(size_t)(iv + a) * nv + col] = -s;
                }
            }
        }

        if (j->parent < 0) continue;
        double *Bp = B + 6 * (size_t)nv * j->parent;

        /* B_i[:, k] += U_i Minv[i, k] over the subtree of i, then into the parent's frame */
        for (int k = i; k < m->nb; k++) {
            if (sub[k] == 0.0) continue;
            const grid_joint *jk = &m->bodies[k].joint;
            for (int c = 0; c < jk->nv; c++) {
                const int col = jk->iv + c;
                double b[6], bp[6];
                get_col(Bi, nv, col, b);
                for (int r = 0; r < 6; r++)
                    for (int a = 0; a < n; a++) b[r] += Ui[n * r + a] * Minv[(size_t)(iv + a) * nv + col];
                grid_sp_force_act(liMi + 12 * i, b, bp);
                set_col(Bp, nv, col, bp);
            }
        }

        /* articulated inertia handed to the parent: IA_i - U_i D_i^-1 U_i^T in its frame */
        double Ia[36], Ip[36];
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < 6; c++) {
                double s = 0.0;
                for (int a = 0; a < n; a++)
                    for (int e = 0; e < n; e++) s += Ui[n * r + a] * Di[n * a + e] * Ui[n * c + e];
                Ia[6 * r + c] = Ii[6 * r + c] - s;
            }
        grid_sp_inertia_to_parent(liMi + 12 * i, Ia, Ip);
        for (int e = 0; e < 36; e++) IA[36 * j->parent + e] += Ip[e];
    }

    /* pass 3: parents first, over the columns of bodies k at or after i */
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        const int n = j->nv, iv = j->iv;
        double S[36];
        const double *Ui = U + 36 * i, *Di = Dinv + 36 * i;
        double *Bi = B + 6 * (size_t)nv * i;
        const double *Bp = j->parent >= 0 ? B + 6 * (size_t)nv * j->parent : NULL;
        grid_sp_joint_subspace(j, S);

        for (int k = i; k < m->nb; k++) {
            const grid_joint *jk = &m->bodies[k].joint;
            for (int c = 0; c < jk->nv; c++) {
                const int col = jk->iv + c;
                double ap[6] = {0}, a[6];
                /* the parent's acceleration under this unit torque, in body i's frame */
                if (Bp) {
                    get_col(Bp, nv, col, ap);
                    grid_sp_motion_act_inv(liMi + 12 * i, ap, a);
                    /* Minv[i, k] -= D_i^-1 U_i^T a */
                    double uta[6];
                    for (int e = 0; e < n; e++) {
                        double s = 0.0;
                        for (int r = 0; r < 6; r++) s += Ui[n * r + e] * a[r];
                        uta[e] = s;
                    }
                    for (int e = 0; e < n; e++) {
                        double s = 0.0;
                        for (int f = 0; f < n; f++) s += Di[n * e + f] * uta[f];
                        Minv[(size_t)(iv + e) * nv + col] -= s;
                    }
                } else {
                    memset(a, 0, sizeof a);
                }
                /* B_i[:, k] = a + S_i Minv[i, k], body i's acceleration */
                for (int r = 0; r < 6; r++)
                    for (int e = 0; e < n; e++) a[r] += S[n * r + e] * Minv[(size_t)(iv + e) * nv + col];
                set_col(Bi, nv, col, a);
            }
        }
    }

    /* mirror the upper triangle (in body order) into the lower, diagonal blocks included */
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        for (int a = 0; a < j->nv; a++)
            for (int c = a + 1; c < j->nv; c++)
                Minv[(size_t)(j->iv + c) * nv + j->iv + a] = Minv[(size_t)(j->iv + a) * nv + j->iv + c];
        for (int k = i + 1; k < m->nb; k++) {
            const grid_joint *jk = &m->bodies[k].joint;
            for (int a = 0; a < j->nv; a++)
                for (int c = 0; c < jk->nv; c++)
                    Minv[(size_t)(jk->iv + c) * nv + j->iv + a] = Minv[(size_t)(j->iv + a) * nv + jk->iv + c];
        }
    }
}
