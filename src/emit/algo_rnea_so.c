/* Second-order derivatives of inverse dynamics, four (nv, nv, nv) tensors (Pinocchio's ComputeRNEASecondOrderDerivatives, IDSVA), as a program for both schedules. */
#include "emit_ctx.h"
#include "rnea_world.h"

/* The world pass of the first-order derivatives (rnea_world.h) gives per column S = J, psid = dV, psidd = dA and
   phid = dAv - dV = v_i x S, per body the subtree sums Yc, Bc = Dc and F. Then, for each column ip of body i
   (children first), nine 6x6 matrices of Yc, Bc, F and the column (r0 .. r7, Bic: the reference's names,
   src/ref/second_order.c); for each column jq of i or an ancestor j, thirteen vectors of them and j's column; for
   each column kr of j or an ancestor k, the entries of the four tensors that (ip, jq, kr) determines, as dot
   products with k's column. The reference's j == i and k == j cases are its own loops here, so that each step
   knows them when it is written (a rolled step serves every body of its kind): i's own pairs and triples in i's
   step, then strict ancestors k of i (j = i), then strict ancestors j of i with their own triples (k = j) and their
   strict ancestors k: O(n d^2) triples, each a few dozen dot products, as Pinocchio's. */

enum { NMAT = 9, NVEC = 12 };
enum { M_R0, M_R1, M_R2, M_R3, M_R4, M_R5, M_R6, M_R7, M_BIC };
enum { V_U1, V_U2, V_U3, V_U4, V_U6, V_U7, V_U9, V_U10, V_U11, V_U13, V_U58, V_U812 };

/* A B, A^T B */
static void mat_mul(sym_graph *g, const sv A[36], const sv B[36], int ta, sv out[36])
{
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++) {
            sv a[6], b[6];
            for (int k = 0; k < 6; k++) {
                a[k] = ta ? A[6 * k + r] : A[6 * r + k];
                b[k] = B[6 * k + c];
            }
            out[6 * r + c] = sym_dot(g, a, b, 6);
        }
}

/* s * [a]x at (r0, c0) of M */
static void skew_into(sym_graph *g, const sv a[3], double s, sv M[36], int r0, int c0)
{
    const sv z = sym_const(g, 0.0);
    const sv k[9] = {z, sym_neg(g, a[2]), a[1], a[2], z, sym_neg(g, a[0]), sym_neg(g, a[1]), a[0], z};
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) M[6 * (r0 + r) + c0 + c] = s > 0 ? k[3 * r + c] : sym_neg(g, k[3 * r + c]);
}

static void zero36(sym_graph *g, sv M[36])
{
    for (int e = 0; e < 36; e++) M[e] = sym_const(g, 0.0);
}

/* x -> s x x as a matrix, and x -> x x* f (Featherstone's crm and -crf^T: the reference's cross matrices) */
static void motion_cross_matrix(sym_graph *g, const sv s[6], sv M[36])
{
    zero36(g, M);
    skew_into(g, s + 3, 1.0, M, 0, 0);
    skew_into(g, s, 1.0, M, 0, 3);
    skew_into(g, s + 3, 1.0, M, 3, 3);
}

static void force_cross_matrix(sym_graph *g, const sv f[6], sv M[36])
{
    zero36(g, M);
    skew_into(g, f, -1.0, M, 0, 3);
    skew_into(g, f, -1.0, M, 3, 0);
    skew_into(g, f + 3, -1.0, M, 3, 3);
}

/* the rate of an inertia Y along v: v x* Y - Y v x, column by column */
static void inertia_rate(sym_graph *g, const sv Y[36], const sv v[6], sv R[36])
{
    for (int c = 0; c < 6; c++) {
        sv e[6], col[6], a[6], vxe[6], b[6];
        for (int r = 0; r < 6; r++) {
            e[r] = sym_const(g, r == c ? 1.0 : 0.0);
            col[r] = Y[6 * r + c];
        }
        sp_force_cross(g, v, col, a);
        sp_motion_cross(g, v, e, vxe);
        sp_mat6_vec(g, Y, vxe, b);
        for (int r = 0; r < 6; r++) R[6 * r + c] = sym_sub(g, a[r], b[r]);
    }
}

static void add6(sym_graph *g, const sv a[6], const sv b[6], sv out[6])
{
    for (int r = 0; r < 6; r++) out[r] = sym_add(g, a[r], b[r]);
}

/* the nine matrices of column (S, psid, psidd, psid + phid) of a body with subtree sums Y (as 6x6), Bc and F */
static void column_matrices(sym_graph *g, const sv Y[36], const sv Bc[36], const sv F[6], const sv S[6],
                            const sv pd[6], const sv pdd[6], const sv pp[6], sv Mx[NMAT][36])
{
    sv f[6], t[6], T1[36], T2[36], SA[36], Bpsid[36];
    inertia_rate(g, Y, S, Mx[M_R1]);
    sp_mat6_vec(g, Y, S, f);
    force_cross_matrix(g, f, Mx[M_R0]);
    for (int e = 0; e < 36; e++) Mx[M_BIC][e] = sym_add(g, Mx[M_R1][e], Mx[M_R0][e]);
    inertia_rate(g, Y, pd, Bpsid);
    sp_mat6_vec(g, Y, pd, f);
    force_cross_matrix(g, f, T1);
    for (int e = 0; e < 36; e++) Bpsid[e] = sym_add(g, Bpsid[e], T1[e]);
    /* r2 = 2 r0 - Bic = r0 - r1 */
    for (int e = 0; e < 36; e++) Mx[M_R2][e] = sym_sub(g, Mx[M_R0][e], Mx[M_R1][e]);
    /* r3 = Bpsid - SA^T Bc - Bc SA */
    motion_cross_matrix(g, S, SA);
    mat_mul(g, SA, Bc, 1, T1);
    mat_mul(g, Bc, SA, 0, T2);
    for (int e = 0; e < 36; e++) Mx[M_R3][e] = sym_sub(g, sym_sub(g, Bpsid[e], T1[e]), T2[e]);
    /* r4 = cmf(Bc^T S) */
    sp_mat6_tvec(g, Bc, S, f);
    force_cross_matrix(g, f, Mx[M_R4]);
    /* r5 = cmf(Bc psid + S x* F + Y psidd) */
    sp_mat6_vec(g, Bc, pd, f);
    sp_force_cross(g, S, F, t);
    add6(g, f, t, f);
    sp_mat6_vec(g, Y, pdd, t);
    add6(g, f, t, f);
    force_cross_matrix(g, f, Mx[M_R5]);
    /* r6 = r0 - SA^T Y */
    mat_mul(g, SA, Y, 1, T1);
    for (int e = 0; e < 36; e++) Mx[M_R6][e] = sym_sub(g, Mx[M_R0][e], T1[e]);
    /* r7 = cmf(Bc S + Y (psid + phid)) */
    sp_mat6_vec(g, Bc, S, f);
    sp_mat6_vec(g, Y, pp, t);
    add6(g, f, t, f);
    force_cross_matrix(g, f, Mx[M_R7]);
}

/* the vectors of a column pair: the matrices of i's column, j's column (S, psid, psidd, psid + phid) */
static void pair_vectors(sym_graph *g, sv Mx[NMAT][36], const sv S[6], const sv pd[6], const sv pdd[6],
                         const sv pp[6], sv u[NVEC][6])
{
    sv x[6], u5[6], u8[6], u12[6];
    sp_mat6_tvec(g, Mx[M_R3], S, u[V_U1]);
    sp_mat6_tvec(g, Mx[M_R1], S, u[V_U2]);
    sp_mat6_vec(g, Mx[M_R3], pd, u[V_U3]);
    sp_mat6_vec(g, Mx[M_R1], pdd, x);
    add6(g, u[V_U3], x, u[V_U3]);
    sp_mat6_vec(g, Mx[M_R5], S, x);
    add6(g, u[V_U3], x, u[V_U3]);
    sp_mat6_vec(g, Mx[M_R6], S, u[V_U4]);
    sp_mat6_vec(g, Mx[M_R2], pd, u5);
    sp_mat6_vec(g, Mx[M_BIC], pd, u[V_U6]);
    sp_mat6_vec(g, Mx[M_R7], S, x);
    add6(g, u[V_U6], x, u[V_U6]);
    sp_mat6_vec(g, Mx[M_R3], S, u[V_U7]);
    sp_mat6_vec(g, Mx[M_R1], pp, x);
    add6(g, u[V_U7], x, u[V_U7]);
    sp_mat6_vec(g, Mx[M_R4], S, u8);
    sp_mat6_vec(g, Mx[M_R0], S, u[V_U9]);
    sp_mat6_vec(g, Mx[M_BIC], S, u[V_U10]);
    sp_mat6_tvec(g, Mx[M_BIC], S, u[V_U11]);
    sp_mat6_tvec(g, Mx[M_BIC], pd, u12);
    sp_mat6_vec(g, Mx[M_R1], S, u[V_U13]);
    add6(g, u5, u8, u[V_U58]);
    for (int r = 0; r < 6; r++) u[V_U812][r] = sym_sub(g, u8[r], u12[r]);
}

/* the columns of var's body: S, psid, psidd, and psid + phid = dV + (dAv - dV) = dAv */
static void columns_of(ep_prog *p, const ea_world_bufs *B, int var, int c, sv S[6], sv pd[6], sv pdd[6], sv pp[6])
{
    ea_world_col(p, B->J, var, c, S);
    ea_world_col(p, B->DV, var, c, pd);
    ea_world_col(p, B->DA, var, c, pdd);
    ea_world_col(p, B->DAV, var, c, pp);
}

/* one element of tensor t (0..3) at coordinates (a, b, c), each a loop variable's column */
typedef struct {
    int var, c;
} coord;

typedef struct {
    ep_prog *p;
    const emit_ctx *cx;
    const state_spec *sp;
    const ea_world_bufs *B;
    int part; /* the output (tensor) viewed now, -1 before the first */
} so_ctx;

static void put(so_ctx *s, int t, sv x, coord a, coord b, coord c)
{
    if (t != s->part) emit_output_part(s->p, s->cx, s->sp, s->part = t);
    ep_out(s->p, x, ep_coord(a.var, EP_SELF, a.c), ep_coord(b.var, EP_SELF, b.c), ep_coord(c.var, EP_SELF, c.c));
}

/* the entries of the triples (I, J, column ck of kvar's body) for the pair vectors u of (I, J): ji = 1 when J's body
   is I's, kj = 1 when kvar's body is J's (the reference's j == i and k == j, known here per loop) */
static void triples(so_ctx *s, sv u[NVEC][6], coord I, coord J, int kvar, int ji, int kj)
{
    ep_prog *p = s->p;
    sym_graph *g = ep_graph(p);
    for (int ck = 0; ck < ep_nv(p, kvar); ck++) {
        sv Sk[6], pdk[6], pddk[6], pk[6];
        columns_of(p, s->B, kvar, ck, Sk, pdk, pddk, pk);
        const coord K = {kvar, ck};
        const sv p1 = sym_dot(g, u[V_U11], pdk, 6);
        const sv p2 = sym_add(g, sym_dot(g, u[V_U9], pddk, 6), sym_dot(g, u[V_U812], pdk, 6));
        put(s, 0, p2, I, J, K);
        put(s, 2, sym_neg(g, p1), I, K, J);
        if (!ji) {
            const sv p3 = sym_neg(g, sym_dot(g, u[V_U11], Sk, 6));
            const sv p4 = sym_dot(g, Sk, u[V_U13], 6);
            const sv t1 = sym_add(g, sym_dot(g, u[V_U1], pdk, 6), sym_dot(g, u[V_U2], pddk, 6));
            put(s, 0, t1, J, K, I);
            put(s, 0, t1, J, I, K);
            put(s, 2, p1, J, K, I);
            put(s, 2, sym_add(g, sym_dot(g, u[V_U1], Sk, 6), sym_dot(g, u[V_U2], pk, 6)), J, I, K);
            put(s, 1, sym_neg(g, p3), J, K, I);
            put(s, 1, sym_neg(g, p3), J, I, K);
            put(s, 3, p4, K, J, I);
            put(s, 3, p4, J, K, I);
        }
        if (!kj) {
            const sv p3 = sym_neg(g, sym_dot(g, u[V_U11], Sk, 6));
            const sv p5 = sym_dot(g, Sk, u[V_U9], 6);
            const sv t3 = sym_dot(g, Sk, u[V_U3], 6);
            put(s, 0, p2, I, K, J);
            put(s, 0, t3, K, I, J);
            put(s, 1, p3, I, J, K);
            put(s, 1, p3, I, K, J);
            put(s, 2, sym_add(g, sym_dot(g, Sk, u[V_U58], 6), sym_dot(g, u[V_U9], pk, 6)), I, J, K);
            put(s, 2, sym_dot(g, Sk, u[V_U6], 6), K, J, I);
            put(s, 3, p5, K, I, J);
            put(s, 3, p5, I, K, J);
            if (!ji) {
                const sv p6 = sym_dot(g, Sk, u[V_U10], 6);
                put(s, 0, t3, K, J, I);
                put(s, 1, p6, K, I, J);
                put(s, 1, p6, K, J, I);
                put(s, 2, sym_dot(g, Sk, u[V_U7], 6), K, I, J);
            } else {
                put(s, 1, sym_dot(g, Sk, u[V_U4], 6), K, J, I);
            }
        } else {
            put(s, 1, sym_neg(g, sym_dot(g, u[V_U2], Sk, 6)), I, J, K);
        }
    }
}

/* the pair vectors of i's columns with jvar's (all of them into UV), and with kj the triples (i, jvar, jvar) */
static void pairs(so_ctx *s, int MX, int UV, int ncol, int jvar, int ji)
{
    ep_prog *p = s->p;
    const int ni = ep_nv(p, EP_I), nj = ep_nv(p, jvar);
    for (int ci = 0; ci < ni; ci++) {
        for (int cj = 0; cj < nj; cj++) {
            /* (the graph and values per pair: those of the step before a break are not this step's) */
            sym_graph *g = ep_graph(p);
            sv Mx[NMAT][36];
            for (int k = 0; k < NMAT; k++)
                for (int e = 0; e < 36; e++) Mx[k][e] = ep_get(p, MX, EP_I, EP_SELF, (ci * NMAT + k) * 36 + e);
            sv S[6], pd[6], pdd[6], pp[6], u[NVEC][6];
            columns_of(p, s->B, jvar, cj, S, pd, pdd, pp);
            pair_vectors(g, Mx, S, pd, pdd, pp, u);
            for (int k = 0; k < NVEC; k++)
                for (int r = 0; r < 6; r++) ep_set(p, UV, EP_I, EP_SELF, ((ci * ncol + cj) * NVEC + k) * 6 + r, u[k][r]);
            triples(s, u, (coord){EP_I, ci}, (coord){jvar, cj}, jvar, ji, 1);
            /* a pair and its triples per function: a joint of d columns has d^2 of them (a free flyer's 36 took
               gcc's register allocator 25 s as one function) */
            ep_break(p);
        }
    }
}

/* the triples (i, jvar, kvar) with kvar's body a strict ancestor of jvar's, from the pair vectors in UV */
static void triples_above(so_ctx *s, int UV, int ncol, int jvar, int kvar, int ji)
{
    ep_prog *p = s->p;
    const int ni = ep_nv(p, EP_I), nj = ep_nv(p, jvar);
    for (int ci = 0; ci < ni; ci++)
        for (int cj = 0; cj < nj; cj++) {
            sv u[NVEC][6];
            for (int k = 0; k < NVEC; k++)
                for (int r = 0; r < 6; r++) u[k][r] = ep_get(p, UV, EP_I, EP_SELF, ((ci * ncol + cj) * NVEC + k) * 6 + r);
            triples(s, u, (coord){EP_I, ci}, (coord){jvar, cj}, kvar, ji, 0);
        }
}

EMIT_PROGRAM(ea_idsva_so_program)
{
    const int has_a = sp->reads_a, has_fext = sp->reads_fext;
    int ncol = 1; /* the most columns of one joint */
    for (int b = 0; b < cx->em->nb; b++) ncol = cx->em->b[b].nv > ncol ? cx->em->b[b].nv : ncol;
    const ea_world_bufs B = ea_world_buffers(p);
    so_ctx s = {p, cx, sp, &B, -1};
    /* MX: the nine matrices of each of i's columns; UV: the vectors of each pair of i's and j's columns */
    const int MX = ep_buffer(p, "mx", ncol * NMAT * 36, 0), UV = ep_buffer(p, "uv", ncol * ncol * NVEC * 6, 0);
    ep_zero_output(p); /* (the whole packed block: the four tensors) */
    ea_world_forward(p, &B, has_a, has_fext, -1, -1, -1);

    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const int ni = ep_nv(p, EP_I);
        ep_comment(p, "second-order derivatives: a body's column matrices, pairs and triples of its own columns");
        sci Yc;
        sv Y[36], Dc[36], Fc[6];
        ea_world_subtree_sums(p, &B, &Yc, Dc, Fc);
        for (int c = 0; c < 6; c++) {
            sv e[6], col[6];
            for (int r = 0; r < 6; r++) e[r] = sym_const(g, r == c ? 1.0 : 0.0);
            sp_sci_apply(g, &Yc, e, col);
            for (int r = 0; r < 6; r++) Y[6 * r + c] = col[r];
        }
        for (int c = 0; c < ni; c++) {
            sv S[6], pd[6], pdd[6], pp[6], Mx[NMAT][36];
            columns_of(p, &B, EP_I, c, S, pd, pdd, pp);
            column_matrices(g, Y, Dc, Fc, S, pd, pdd, pp, Mx);
            for (int k = 0; k < NMAT; k++)
                for (int e = 0; e < 36; e++) ep_set(p, MX, EP_I, EP_SELF, (c * NMAT + k) * 36 + e, Mx[k][e]);
        }
        ea_world_add_to_parent(p, &B, &Yc, Dc, Fc);
        pairs(&s, MX, UV, ncol, EP_I, 1);
        /* j = i, k above it */
        for (ep_ancestors(p, 0); ep_next(p);) {
            ep_comment(p, "second-order derivatives: triples of a body's column pairs and an ancestor's column");
            triples_above(&s, UV, ncol, EP_I, EP_J, 1);
        }
        /* j above i: its pairs, k = j, then k above j */
        for (ep_ancestors(p, 0); ep_next(p);) {
            ep_comment(p, "second-order derivatives: pairs with an ancestor's columns");
            pairs(&s, MX, UV, ncol, EP_J, 0);
            for (ep_ancestors(p, 0); ep_next(p);) {
                ep_comment(p, "second-order derivatives: triples with the ancestor's ancestor's columns");
                triples_above(&s, UV, ncol, EP_J, EP_M, 0);
            }
        }
    }
    return 0;
}
