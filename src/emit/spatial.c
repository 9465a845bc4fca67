/* Symbolic spatial algebra: the same formulas as the reference, written so model constants fold. */
#include <assert.h>
#include <string.h>
#include "spatial.h"

static sv k(sym_graph *g, double x) { return sym_const(g, x); }

void sp_xf_const(sym_graph *g, const double R[9], const double p[3], sxf *out)
{
    for (int i = 0; i < 9; i++) out->R[i] = k(g, R[i]);
    for (int i = 0; i < 3; i++) out->p[i] = k(g, p[i]);
}

void sp_rot(sym_graph *g, const sv R[9], const sv x[3], sv out[3])
{
    sv t[3];
    for (int r = 0; r < 3; r++) t[r] = sym_dot(g, R + 3 * r, x, 3);
    memcpy(out, t, sizeof t);
}

void sp_rot_t(sym_graph *g, const sv R[9], const sv x[3], sv out[3])
{
    sv t[3];
    for (int c = 0; c < 3; c++) {
        const sv col[3] = {R[c], R[3 + c], R[6 + c]};
        t[c] = sym_dot(g, col, x, 3);
    }
    memcpy(out, t, sizeof t);
}

void sp_cross(sym_graph *g, const sv a[3], const sv b[3], sv out[3])
{
    sv t[3];
    t[0] = sym_sub(g, sym_mul(g, a[1], b[2]), sym_mul(g, a[2], b[1]));
    t[1] = sym_sub(g, sym_mul(g, a[2], b[0]), sym_mul(g, a[0], b[2]));
    t[2] = sym_sub(g, sym_mul(g, a[0], b[1]), sym_mul(g, a[1], b[0]));
    memcpy(out, t, sizeof t);
}

void sp_xf_compose(sym_graph *g, const sxf *a, const sxf *b, sxf *out)
{
    sxf t;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            const sv col[3] = {b->R[c], b->R[3 + c], b->R[6 + c]};
            t.R[3 * r + c] = sym_dot(g, a->R + 3 * r, col, 3);
        }
    sp_rot(g, a->R, b->p, t.p);
    for (int i = 0; i < 3; i++) t.p[i] = sym_add(g, t.p[i], a->p[i]);
    *out = t;
}

void sp_motion_act(sym_graph *g, const sxf *X, const sv m[6], sv out[6])
{
    /* angular: R w; linear: R v + p x (R w) */
    sv w[3], v[3], pxw[3];
    sp_rot(g, X->R, m + 3, w);
    sp_rot(g, X->R, m, v);
    sp_cross(g, X->p, w, pxw);
    for (int i = 0; i < 3; i++) {
        out[i] = sym_add(g, v[i], pxw[i]);
        out[3 + i] = w[i];
    }
}

void sp_motion_act_inv(sym_graph *g, const sxf *X, const sv m[6], sv out[6])
{
    /* angular: R^T w; linear: R^T (v - p x w) */
    sv pxw[3], d[3], w[3];
    sp_cross(g, X->p, m + 3, pxw);
    for (int i = 0; i < 3; i++) d[i] = sym_sub(g, m[i], pxw[i]);
    sp_rot_t(g, X->R, m + 3, w);
    sp_rot_t(g, X->R, d, out);
    memcpy(out + 3, w, sizeof w);
}

void sp_force_act(sym_graph *g, const sxf *X, const sv f[6], sv out[6])
{
    /* force: R f; torque: R n + p x (R f) */
    sv rf[3], rn[3], pxf[3];
    sp_rot(g, X->R, f, rf);
    sp_rot(g, X->R, f + 3, rn);
    sp_cross(g, X->p, rf, pxf);
    for (int i = 0; i < 3; i++) {
        out[i] = rf[i];
        out[3 + i] = sym_add(g, rn[i], pxf[i]);
    }
}

void sp_force_act_inv(sym_graph *g, const sxf *X, const sv f[6], sv out[6])
{
    /* force: R^T f; torque: R^T (n - p x f) */
    sv pxf[3], d[3], rf[3];
    sp_cross(g, X->p, f, pxf);
    for (int i = 0; i < 3; i++) d[i] = sym_sub(g, f[3 + i], pxf[i]);
    sp_rot_t(g, X->R, f, rf);
    sp_rot_t(g, X->R, d, out + 3);
    memcpy(out, rf, sizeof rf);
}

void sp_motion_cross(sym_graph *g, const sv v[6], const sv m[6], sv out[6])
{
    /* linear: w x m_lin + v_lin x m_ang; angular: w x m_ang */
    sv a[3], b[3], c[3];
    sp_cross(g, v + 3, m, a);
    sp_cross(g, v, m + 3, b);
    sp_cross(g, v + 3, m + 3, c);
    for (int i = 0; i < 3; i++) {
        out[i] = sym_add(g, a[i], b[i]);
        out[3 + i] = c[i];
    }
}

void sp_force_cross(sym_graph *g, const sv v[6], const sv f[6], sv out[6])
{
    /* force: w x f; torque: w x n + v_lin x f */
    sv a[3], b[3], c[3];
    sp_cross(g, v + 3, f, a);
    sp_cross(g, v + 3, f + 3, b);
    sp_cross(g, v, f, c);
    for (int i = 0; i < 3; i++) {
        out[i] = a[i];
        out[3 + i] = sym_add(g, b[i], c[i]);
    }
}

/* ---- inertias ---- */

void sp_body_inertia_apply(sym_graph *g, const ek_body *b, const sv m[6], sv out[6])
{
    sv cxw[3], f[3], Iw[3], cxf[3];
    /* f = m (v - c x w) */
    sp_cross(g, b->com, m + 3, cxw);
    for (int i = 0; i < 3; i++) f[i] = sym_mul(g, b->mass, sym_sub(g, m[i], cxw[i]));
    /* n = Ic w + c x f */
    sp_rot(g, b->Ic, m + 3, Iw);
    sp_cross(g, b->com, f, cxf);
    for (int i = 0; i < 3; i++) {
        out[i] = f[i];
        out[3 + i] = sym_add(g, Iw[i], cxf[i]);
    }
}

/* rotational inertia about the origin: Ic + m [c]x [c]x^T, in double */
static void body_io(const em_body *b, double Io[9])
{
    const double *c = b->com;
    const double cx[9] = {0, -c[2], c[1], c[2], 0, -c[0], -c[1], c[0], 0};
    for (int r = 0; r < 3; r++)
        for (int col = 0; col < 3; col++) {
            double s = 0.0;
            for (int i = 0; i < 3; i++) s += cx[3 * r + i] * cx[3 * col + i];
            Io[3 * r + col] = b->Ic[3 * r + col] + b->mass * s;
        }
}

void sp_body_table_row(const em_body *b, double row[EKT_WIDTH])
{
    memset(row, 0, EKT_WIDTH * sizeof *row);
    memcpy(row + EKT_R, b->R, 9 * sizeof *row);
    memcpy(row + EKT_P, b->p, 3 * sizeof *row);
    memcpy(row + EKT_AXIS, b->axis, 3 * sizeof *row);
    if (grid_joint_model_of(b->type)->axis != GRID_AXIS_NONE) {
        assert(6 * b->nv <= EKT_MASS - EKT_S);
        for (int e = 0; e < 6 * b->nv; e++) row[EKT_S + e] = b->S[e];
    }
    row[EKT_MASS] = b->mass;
    memcpy(row + EKT_COM, b->com, 3 * sizeof *row);
    memcpy(row + EKT_IC, b->Ic, 9 * sizeof *row);
    for (int i = 0; i < 3; i++) row[EKT_H + i] = b->mass * b->com[i];
    body_io(b, row + EKT_IO);
    row[EKT_MULT] = b->mimic ? b->mimic_multiplier : 1.0;
}

/* which entries of a type's S are nonzero for a generic axis (the others are structural zeros); S itself
   when it does not depend on the axis */
static void subspace_structure(int type, double S[36], int depends[36])
{
    static const double generic[3] = {0.2672612419124244, 0.5345224838248488, 0.8017837257372732};
    const double zero[3] = {0.0, 0.0, 0.0};
    const grid_joint_model *jm = grid_joint_model_of(type);
    assert(jm);
    double Sg[36];
    grid_joint_subspace(type, generic, Sg);
    grid_joint_subspace(type, zero, S);
    for (int e = 0; e < 6 * jm->nv; e++) depends[e] = jm->axis != GRID_AXIS_NONE && Sg[e] != 0.0;
}

/* the structure of a body's view: its type, widths and (axis-free) S */
static void view_structure(sym_graph *g, ek_body *out, int type)
{
    double S[36];
    int depends[36];
    subspace_structure(type, S, depends);
    out->type = type;
    out->nv = grid_joint_model_of(type)->nv;
    for (int i = 0; i < 36; i++) out->S[i] = k(g, i < 6 * out->nv ? S[i] : 0.0);
}

void sp_body_literal(sym_graph *g, const em_body *b, ek_body *out)
{
    double row[EKT_WIDTH];
    sp_body_table_row(b, row);
    view_structure(g, out, b->type);
    out->axis_k = b->axis_k;
    out->s_basis = b->s_basis;
    for (int i = 0; i < 9; i++) out->R[i] = k(g, row[EKT_R + i]);
    for (int i = 0; i < 3; i++) out->p[i] = k(g, row[EKT_P + i]);
    for (int i = 0; i < 3; i++) out->axis[i] = k(g, row[EKT_AXIS + i]);
    for (int i = 0; i < 6 * b->nv; i++) out->S[i] = k(g, b->S[i]);
    out->mass = k(g, row[EKT_MASS]);
    for (int i = 0; i < 3; i++) out->com[i] = k(g, row[EKT_COM + i]);
    for (int i = 0; i < 9; i++) out->Ic[i] = k(g, row[EKT_IC + i]);
    for (int i = 0; i < 3; i++) out->h[i] = k(g, row[EKT_H + i]);
    for (int i = 0; i < 9; i++) out->Io[i] = k(g, row[EKT_IO + i]);
    out->mult = k(g, row[EKT_MULT]);
}

void sp_body_loaded(sym_graph *g, int table, int type, ek_body *out)
{
    view_structure(g, out, type);
    out->axis_k = -1;
    out->s_basis = -1;
    for (int i = 0; i < 9; i++) out->R[i] = sym_input(g, table, EKT_R + i);
    for (int i = 0; i < 3; i++) out->p[i] = sym_input(g, table, EKT_P + i);
    for (int i = 0; i < 3; i++) out->axis[i] = sym_input(g, table, EKT_AXIS + i);
    double S[36];
    int depends[36];
    subspace_structure(type, S, depends);
    for (int e = 0; e < 6 * out->nv; e++)
        if (depends[e]) out->S[e] = sym_input(g, table, EKT_S + e);
    out->mass = sym_input(g, table, EKT_MASS);
    for (int i = 0; i < 3; i++) out->com[i] = sym_input(g, table, EKT_COM + i);
    /* symmetric 3x3: the upper triangle's loads serve both halves */
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            int u = r <= c ? 3 * r + c : 3 * c + r;
            out->Ic[3 * r + c] = sym_input(g, table, EKT_IC + u);
            out->Io[3 * r + c] = sym_input(g, table, EKT_IO + u);
        }
    for (int i = 0; i < 3; i++) out->h[i] = sym_input(g, table, EKT_H + i);
    out->mult = sym_input(g, table, EKT_MULT);
}

void sp_body_inertia_matrix(sym_graph *g, const ek_body *b, sv M[36])
{
    /* [m 1, -m [c]x; m [c]x, Io] with m [c]x = [h]x */
    const sv zero = k(g, 0.0);
    const sv hx[9] = {zero, sym_neg(g, b->h[2]), b->h[1], b->h[2], zero, sym_neg(g, b->h[0]),
                      sym_neg(g, b->h[1]), b->h[0], zero};
    for (int r = 0; r < 3; r++)
        for (int col = 0; col < 3; col++) {
            M[6 * r + col] = r == col ? b->mass : zero;
            M[6 * r + col + 3] = sym_neg(g, hx[3 * r + col]);
            M[6 * (r + 3) + col] = hx[3 * r + col];
            M[6 * (r + 3) + col + 3] = b->Io[3 * r + col];
        }
}

void sp_body_inertia_sci(sym_graph *g, const ek_body *b, sci *out)
{
    (void)g;
    out->m = b->mass;
    for (int i = 0; i < 3; i++) out->h[i] = b->h[i];
    for (int i = 0; i < 9; i++) out->I[i] = b->Io[i];
}

void sp_sci_apply(sym_graph *g, const sci *Y, const sv m[6], sv out[6])
{
    sv hxw[3], hxv[3], Iw[3];
    sp_cross(g, Y->h, m + 3, hxw);
    sp_cross(g, Y->h, m, hxv);
    sp_rot(g, Y->I, m + 3, Iw);
    for (int i = 0; i < 3; i++) {
        out[i] = sym_sub(g, sym_mul(g, Y->m, m[i]), hxw[i]);
        out[3 + i] = sym_add(g, Iw[i], hxv[i]);
    }
}

void sp_sci_add(sym_graph *g, sci *acc, const sci *y)
{
    acc->m = sym_add(g, acc->m, y->m);
    for (int i = 0; i < 3; i++) acc->h[i] = sym_add(g, acc->h[i], y->h[i]);
    for (int i = 0; i < 9; i++) acc->I[i] = sym_add(g, acc->I[i], y->I[i]);
}

/* R A R^T for symmetric A (upper computed, mirrored) */
static void rot_sandwich_sym(sym_graph *g, const sv R[9], const sv A[9], sv out[9])
{
    sv T[9], o[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            const sv col[3] = {A[c], A[3 + c], A[6 + c]};
            T[3 * r + c] = sym_dot(g, R + 3 * r, col, 3);
        }
    for (int r = 0; r < 3; r++)
        for (int c = r; c < 3; c++) o[3 * r + c] = o[3 * c + r] = sym_dot(g, T + 3 * r, R + 3 * c, 3);
    memcpy(out, o, sizeof o);
}

/* R B R^T for a general B */
static void rot_sandwich(sym_graph *g, const sv R[9], const sv B[9], sv out[9])
{
    sv T[9], o[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            const sv col[3] = {B[c], B[3 + c], B[6 + c]};
            T[3 * r + c] = sym_dot(g, R + 3 * r, col, 3);
        }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) o[3 * r + c] = sym_dot(g, T + 3 * r, R + 3 * c, 3);
    memcpy(out, o, sizeof o);
}

void sp_sci_to_parent(sym_graph *g, const sxf *X, const sci *Y, sci *out)
{
    /* h' = R h + m p;  I' = R I R^T - (u p^T + p u^T) + 2 (u.p) 1 - m (p p^T - |p|^2 1), u = R h */
    sv u[3], I[9], two_up, pp;
    const sv *p = X->p;
    sp_rot(g, X->R, Y->h, u);
    rot_sandwich_sym(g, X->R, Y->I, I);
    two_up = sym_mul(g, k(g, 2.0), sym_dot(g, u, p, 3));
    pp = sym_dot(g, p, p, 3);
    for (int r = 0; r < 3; r++)
        for (int c = r; c < 3; c++) {
            sv e = sym_sub(g, I[3 * r + c], sym_add(g, sym_mul(g, u[r], p[c]), sym_mul(g, p[r], u[c])));
            sv q = sym_mul(g, p[r], p[c]);
            if (r == c) {
                e = sym_add(g, e, two_up);
                q = sym_sub(g, q, pp);
            }
            e = sym_sub(g, e, sym_mul(g, Y->m, q));
            out->I[3 * r + c] = out->I[3 * c + r] = e;
        }
    for (int i = 0; i < 3; i++) out->h[i] = sym_add(g, u[i], sym_mul(g, Y->m, p[i]));
    out->m = Y->m;
}

/* ---- 6x6 ---- */

void sp_mat6_vec(sym_graph *g, const sv M[36], const sv x[6], sv out[6])
{
    sv t[6];
    for (int r = 0; r < 6; r++) t[r] = sym_dot(g, M + 6 * r, x, 6);
    memcpy(out, t, sizeof t);
}

void sp_mat6_tvec(sym_graph *g, const sv M[36], const sv x[6], sv out[6])
{
    sv t[6]; /* (out may be x) */
    for (int c = 0; c < 6; c++) {
        sv col[6];
        for (int r = 0; r < 6; r++) col[r] = M[6 * r + c];
        t[c] = sym_dot(g, col, x, 6);
    }
    memcpy(out, t, sizeof t);
}

static void blk_get(const sv M[36], int r0, int c0, sv out[9])
{
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) out[3 * r + c] = M[6 * (r0 + r) + c0 + c];
}

/* out = A B (3x3) */
static void m3_mul(sym_graph *g, const sv A[9], const sv B[9], sv out[9])
{
    sv o[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            const sv col[3] = {B[c], B[3 + c], B[6 + c]};
            o[3 * r + c] = sym_dot(g, A + 3 * r, col, 3);
        }
    memcpy(out, o, sizeof o);
}

void sp_mat6_to_parent(sym_graph *g, const sxf *X, const sv M[36], sv out[36])
{
    /* rotate the blocks, then shift by P = [p]x:
       A' = R A R^T, B' = R B R^T, C' = R C R^T;
       A_p = A', B_p = B' - A' P, C_p = C' + Z + Z^T - P A' P with Z = P B' */
    sv A[9], B[9], C[9], P[9], Y[9], Z[9], W[9], o[36];
    blk_get(M, 0, 0, A);
    blk_get(M, 0, 3, B);
    blk_get(M, 3, 3, C);
    rot_sandwich_sym(g, X->R, A, A);
    rot_sandwich(g, X->R, B, B);
    rot_sandwich_sym(g, X->R, C, C);
    const sv *p = X->p;
    const sv zero = k(g, 0.0);
    P[0] = zero; P[1] = sym_neg(g, p[2]); P[2] = p[1];
    P[3] = p[2]; P[4] = zero; P[5] = sym_neg(g, p[0]);
    P[6] = sym_neg(g, p[1]); P[7] = p[0]; P[8] = zero;
    m3_mul(g, A, P, Y);
    m3_mul(g, P, B, Z);
    m3_mul(g, P, Y, W);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            sv a = A[3 * r + c];
            sv b = sym_sub(g, B[3 * r + c], Y[3 * r + c]);
            o[6 * r + c] = a;
            o[6 * r + c + 3] = b;
            o[6 * (c + 3) + r] = b;
        }
    for (int r = 0; r < 3; r++)
        for (int c = r; c < 3; c++) {
            sv e = sym_add(g, C[3 * r + c], sym_add(g, Z[3 * r + c], Z[3 * c + r]));
            e = sym_sub(g, e, W[3 * r + c]);
            o[6 * (r + 3) + c + 3] = o[6 * (c + 3) + r + 3] = e;
        }
    memcpy(out, o, sizeof o);
}

void sp_spd_inverse(sym_graph *g, int n, const sv *A, sv *Ainv)
{
    /* A = L D L^T with unit lower L (E = L D kept to share products), then
       A^-1 = L^-T D^-1 L^-1 with L^-1 by forward substitution */
    sv L[36], E[36], Dinv[6], Li[36], X[36];
    for (int j = 0; j < n; j++) {
        sv d = A[n * j + j];
        for (int m = 0; m < j; m++) d = sym_sub(g, d, sym_mul(g, E[n * j + m], L[n * j + m]));
        Dinv[j] = sym_div(g, k(g, 1.0), d);
        for (int i = j + 1; i < n; i++) {
            sv e = A[n * i + j];
            for (int m = 0; m < j; m++) e = sym_sub(g, e, sym_mul(g, E[n * i + m], L[n * j + m]));
            E[n * i + j] = e;
            L[n * i + j] = sym_mul(g, e, Dinv[j]);
        }
    }
    for (int j = 0; j < n; j++) {
        Li[n * j + j] = k(g, 1.0);
        for (int i = j + 1; i < n; i++) {
            sv s = L[n * i + j];
            for (int m = j + 1; m < i; m++) s = sym_add(g, s, sym_mul(g, L[n * i + m], Li[n * m + j]));
            Li[n * i + j] = sym_neg(g, s);
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) {
            sv s = k(g, 0.0);
            for (int m = j; m < n; m++) s = sym_add(g, s, sym_mul(g, sym_mul(g, Li[n * m + i], Dinv[m]), Li[n * m + j]));
            X[n * i + j] = X[n * j + i] = s;
        }
    memcpy(Ainv, X, (size_t)(n * n) * sizeof(sv));
}
