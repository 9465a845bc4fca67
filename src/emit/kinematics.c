/* Symbolic joint transforms (one case per row of the joint-model table), liMi/oMi and frame changes of inertias. */
#include <stdlib.h>
#include <string.h>
#include "kinematics.h"

void *ek_calloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

/* rotation by angle q about the unit axis a: exact sparsity for +-e_k, Rodrigues otherwise */
static void joint_rotation(sym_graph *g, const ek_body *b, sv q, sv R[9])
{
    const sv s = sym_sin(g, q);
    const sv c = sym_cos(g, q);
    ek_axis_rotation(g, b, s, c, R);
}

void ek_axis_rotation(sym_graph *g, const ek_body *b, sv s, sv c, sv R[9])
{
    const sv zero = sym_const(g, 0.0), one = sym_const(g, 1.0);
    double sign = 1.0;
    if (b->axis_k >= 0 && sym_is_const(g, b->axis[b->axis_k], &sign)) {
        int kx = b->axis_k, k1 = (kx + 1) % 3, k2 = (kx + 2) % 3;
        if (sign < 0) s = sym_neg(g, s);
        for (int i = 0; i < 9; i++) R[i] = zero;
        /* rotation about e_k: the (k1, k2) plane turns */
        R[3 * kx + kx] = one;
        R[3 * k1 + k1] = c;
        R[3 * k2 + k2] = c;
        R[3 * k1 + k2] = sym_neg(g, s);
        R[3 * k2 + k1] = s;
        return;
    }
    /* Rodrigues: R = I + sin(q) [a]x + (1 - cos(q)) [a]x^2, the reference's entry order */
    const sv *A = b->axis;
    sv t = sym_sub(g, one, c);
    const sv a00 = sym_mul(g, A[0], A[0]), a01 = sym_mul(g, A[0], A[1]), a02 = sym_mul(g, A[0], A[2]);
    const sv a11 = sym_mul(g, A[1], A[1]), a12 = sym_mul(g, A[1], A[2]), a22 = sym_mul(g, A[2], A[2]);
    R[0] = sym_add(g, c, sym_mul(g, t, a00));
    R[1] = sym_sub(g, sym_mul(g, t, a01), sym_mul(g, s, A[2]));
    R[2] = sym_add(g, sym_mul(g, t, a02), sym_mul(g, s, A[1]));
    R[3] = sym_add(g, sym_mul(g, t, a01), sym_mul(g, s, A[2]));
    R[4] = sym_add(g, c, sym_mul(g, t, a11));
    R[5] = sym_sub(g, sym_mul(g, t, a12), sym_mul(g, s, A[0]));
    R[6] = sym_sub(g, sym_mul(g, t, a02), sym_mul(g, s, A[1]));
    R[7] = sym_add(g, sym_mul(g, t, a12), sym_mul(g, s, A[0]));
    R[8] = sym_add(g, c, sym_mul(g, t, a22));
}

/* the rotation of the quaternion (x, y, z, w) = q[0..3] divided by its norm (written with s = 2 / |q|^2,
   which is the unit-quaternion formula on q / |q|). The quaternion is first divided by its 1-norm, so
   |q|^2 lies in [1/4, 1] and neither overflows nor underflows, whatever its scale */
static void quaternion_rotation(sym_graph *g, const sv *q, sv R[9])
{
    const sv l1 = sym_add(g, sym_add(g, sym_abs(g, q[0]), sym_abs(g, q[1])), sym_add(g, sym_abs(g, q[2]), sym_abs(g, q[3])));
    const sv r = sym_div(g, sym_const(g, 1.0), l1);
    const sv x = sym_mul(g, q[0], r), y = sym_mul(g, q[1], r), z = sym_mul(g, q[2], r), w = sym_mul(g, q[3], r);
    sv n2 = sym_add(g, sym_add(g, sym_mul(g, x, x), sym_mul(g, y, y)), sym_add(g, sym_mul(g, z, z), sym_mul(g, w, w)));
    sv s = sym_div(g, sym_const(g, 2.0), n2);
    sv xs = sym_mul(g, x, s), ys = sym_mul(g, y, s), zs = sym_mul(g, z, s);
    sv wx = sym_mul(g, w, xs), wy = sym_mul(g, w, ys), wz = sym_mul(g, w, zs);
    sv xx = sym_mul(g, x, xs), xy = sym_mul(g, x, ys), xz = sym_mul(g, x, zs);
    sv yy = sym_mul(g, y, ys), yz = sym_mul(g, y, zs), zz = sym_mul(g, z, zs);
    const sv one = sym_const(g, 1.0);
    R[0] = sym_sub(g, one, sym_add(g, yy, zz));
    R[1] = sym_sub(g, xy, wz);
    R[2] = sym_add(g, xz, wy);
    R[3] = sym_add(g, xy, wz);
    R[4] = sym_sub(g, one, sym_add(g, xx, zz));
    R[5] = sym_sub(g, yz, wx);
    R[6] = sym_sub(g, xz, wy);
    R[7] = sym_add(g, yz, wx);
    R[8] = sym_sub(g, one, sym_add(g, xx, yy));
}

void ek_joint_transform(sym_graph *g, const ek_body *b, const sv *q, sxf *X)
{
    const sv zero = sym_const(g, 0.0), one = sym_const(g, 1.0);
    for (int i = 0; i < 9; i++) X->R[i] = (i % 4 == 0) ? one : zero;
    for (int i = 0; i < 3; i++) X->p[i] = zero;
    switch ((grid_joint_type)b->type) {
    case GRID_JOINT_REVOLUTE:
        joint_rotation(g, b, q[0], X->R);
        break;
    case GRID_JOINT_PRISMATIC:
        for (int i = 0; i < 3; i++) X->p[i] = sym_mul(g, q[0], b->axis[i]);
        break;
    case GRID_JOINT_FREE:
        quaternion_rotation(g, q + 3, X->R);
        for (int i = 0; i < 3; i++) X->p[i] = q[i];
        break;
    case GRID_JOINT_PLANAR:
        /* q = [x, y, theta]: the turn about the normal, then x e1 + y e2 (S's first two columns) */
        joint_rotation(g, b, q[2], X->R);
        for (int i = 0; i < 3; i++)
            X->p[i] = sym_add(g, sym_mul(g, q[0], b->S[3 * i]), sym_mul(g, q[1], b->S[3 * i + 1]));
        break;
    case GRID_JOINT_SPHERICAL:
        quaternion_rotation(g, q, X->R);
        break;
    case GRID_JOINT_NTYPES:
        break;
    }
}

int ek_kin_init(ek_kin *k, sym_graph *g, const em_model *em, const sv *q)
{
    memset(k, 0, sizeof *k);
    k->g = g;
    k->em = em;
    k->XJ = ek_calloc((size_t)em->nb, sizeof *k->XJ);
    k->X = ek_calloc((size_t)em->nb, sizeof *k->X);
    k->view = ek_calloc((size_t)em->nb, sizeof *k->view);
    if (!k->XJ || !k->X || !k->view) {
        ek_kin_free(k);
        return -1;
    }
    for (int i = 0; i < em->nb; i++) sp_body_literal(g, &em->b[i], &k->view[i]);
    if (!q) return 0; /* the rolled schedule computes transforms per step */
    for (int i = 0; i < em->nb; i++) {
        const em_body *b = &em->b[i];
        sxf P;
        ek_joint_transform(g, &k->view[i], q + b->iq, &k->XJ[i]);
        sp_xf_const(g, b->R, b->p, &P);
        sp_xf_compose(g, &P, &k->XJ[i], &k->X[i]);
    }
    return 0;
}

int ek_world(ek_kin *k)
{
    const em_model *em = k->em;
    if (k->oM) return 0;
    k->oM = ek_calloc((size_t)em->nb, sizeof *k->oM);
    if (!k->oM) return -1;
    for (int i = 0; i < em->nb; i++) {
        int p = em->b[i].parent;
        if (p < 0) k->oM[i] = k->X[i];
        else sp_xf_compose(k->g, &k->oM[p], &k->X[i], &k->oM[i]);
    }
    return 0;
}

void ek_kin_free(ek_kin *k)
{
    free(k->XJ);
    free(k->X);
    free(k->oM);
    free(k->view);
    k->XJ = k->X = k->oM = NULL;
    k->view = NULL;
}

void ek_joint_motion(sym_graph *g, const ek_body *b, const sv *x, sv out[6])
{
    for (int r = 0; r < 6; r++) {
        sv s = sym_const(g, 0.0);
        for (int c = 0; c < b->nv; c++) s = sym_add(g, s, sym_mul(g, b->S[b->nv * r + c], x[c]));
        out[r] = s;
    }
}

void ek_joint_project(sym_graph *g, const ek_body *b, const sv f[6], sv *out)
{
    for (int c = 0; c < b->nv; c++) {
        sv s = sym_const(g, 0.0);
        for (int r = 0; r < 6; r++) s = sym_add(g, s, sym_mul(g, b->S[b->nv * r + c], f[r]));
        out[c] = s;
    }
}

void ek_mat6_to_parent(ek_kin *k, int i, const sv M[36], sv out[36])
{
    const em_body *b = &k->em->b[i];
    sxf P;
    sv t[36];
    sp_mat6_to_parent(k->g, &k->XJ[i], M, t);
    sp_xf_const(k->g, b->R, b->p, &P);
    sp_mat6_to_parent(k->g, &P, t, out);
}

void ek_sci_to_parent(ek_kin *k, int i, const sci *Y, sci *out)
{
    const em_body *b = &k->em->b[i];
    sxf P;
    sci t;
    sp_sci_to_parent(k->g, &k->XJ[i], Y, &t);
    sp_xf_const(k->g, b->R, b->p, &P);
    sp_sci_to_parent(k->g, &P, &t, out);
}

void ek_body_comment(sym_graph *g, const em_model *em, int i, const char *what)
{
    sym_comment(g, "/* body %d: %s, %s */", i, em->b[i].label, what);
}
