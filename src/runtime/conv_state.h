/* The per-state basis changes of the output conventions (grid/convention.h) for one real type, shared by the CPU (convention.c) and the CUDA runtime (cuda_runtime.cu), each including it once per type. */
/* Before each inclusion define GRID_CV_REAL (the element type), GRID_CV_NAME(x) (the functions' names) and
   GRID_CV_FN (their qualifiers: static, __device__, ...). Arithmetic is in double whatever the element type. */

/* R (row-major) of the quaternion (w, x, y, z), normalised first: divided by its largest component, then by its
   norm, so any finite nonzero scale gives the rotation of the unit quaternion (as the kernels do) */
GRID_CV_FN void GRID_CV_NAME(rot)(double w, double x, double y, double z, double R[9])
{
    double s = w < 0 ? -w : w;
    const double ax = x < 0 ? -x : x, ay = y < 0 ? -y : y, az = z < 0 ? -z : z;
    s = ax > s ? ax : s;
    s = ay > s ? ay : s;
    s = az > s ? az : s;
    const double inv = 1.0 / s;
    w *= inv, x *= inv, y *= inv, z *= inv;
    const double n2 = w * w + x * x + y * y + z * z, k = 2.0 / n2;
    R[0] = 1 - k * (y * y + z * z), R[1] = k * (x * y - w * z), R[2] = k * (x * z + w * y);
    R[3] = k * (x * y + w * z), R[4] = 1 - k * (x * x + z * z), R[5] = k * (y * z - w * x);
    R[6] = k * (x * z - w * y), R[7] = k * (y * z + w * x), R[8] = 1 - k * (x * x + y * y);
}

/* R of a free flyer's Pinocchio-ordered quaternion qp[o..o+3] = (x, y, z, w) */
GRID_CV_FN void GRID_CV_NAME(rot_pin)(const GRID_CV_REAL *qp, int o, double R[9])
{
    GRID_CV_NAME(rot)((double)qp[o + 3], (double)qp[o], (double)qp[o + 1], (double)qp[o + 2], R);
}

/* y = R^T x of three entries (y may be x) */
GRID_CV_FN void GRID_CV_NAME(rot3t)(const double R[9], const GRID_CV_REAL *x, GRID_CV_REAL *y)
{
    const double x0 = (double)x[0], x1 = (double)x[1], x2 = (double)x[2];
    y[0] = (GRID_CV_REAL)(R[0] * x0 + R[3] * x1 + R[6] * x2);
    y[1] = (GRID_CV_REAL)(R[1] * x0 + R[4] * x1 + R[7] * x2);
    y[2] = (GRID_CV_REAL)(R[2] * x0 + R[5] * x1 + R[8] * x2);
}

/* Inputs of one state into Pinocchio's basis: qp, vp, ap, up, gp from q, v, a, u, g (in place when the pointers are
   equal). A NULL output skips that input; ap with a NULL a is built from MuJoCo's zero acceleration. */
GRID_CV_FN void GRID_CV_NAME(pre)(const grid_conv_job *j, const GRID_CV_REAL *q, const GRID_CV_REAL *v,
                                  const GRID_CV_REAL *a, const GRID_CV_REAL *u, const GRID_CV_REAL *g,
                                  GRID_CV_REAL *qp, GRID_CV_REAL *vp, GRID_CV_REAL *ap, GRID_CV_REAL *up,
                                  GRID_CV_REAL *gp)
{
    const grid_convention *cv = &j->cv;
    if (qp != q)
        for (int i = 0; i < cv->nq; i++) qp[i] = q[i];
    if (vp && vp != v)
        for (int i = 0; i < cv->nv; i++) vp[i] = v[i];
    if (ap && ap != a)
        for (int i = 0; i < cv->nv; i++) ap[i] = a ? a[i] : (GRID_CV_REAL)0;
    if (up && up != u)
        for (int i = 0; i < cv->nv; i++) up[i] = u[i];
    if (gp && gp != g)
        for (int i = 0; i < cv->nv; i++) gp[i] = g[i];
    /* each block reads its own entries before writing them, so in place works */
    for (int b = 0; b < cv->n_blocks; b++) {
        const grid_conv_block *k = &cv->block[b];
        const int o = k->kind == GRID_CONV_FREE ? k->iq + 3 : k->iq;
        const double w = (double)q[o], x = (double)q[o + 1], y = (double)q[o + 2], z = (double)q[o + 3];
        qp[o] = (GRID_CV_REAL)x, qp[o + 1] = (GRID_CV_REAL)y, qp[o + 2] = (GRID_CV_REAL)z, qp[o + 3] = (GRID_CV_REAL)w;
        if (k->kind != GRID_CONV_FREE) continue; /* a ball joint: the reorder alone */
        double R[9];
        GRID_CV_NAME(rot)(w, x, y, z, R);
        const int i = k->iv;
        if (vp) {
            /* v_lin body = R^T v_lin world; a_lin body = R^T a_world - omega x v_lin body */
            const double l0 = (double)v[i], l1 = (double)v[i + 1], l2 = (double)v[i + 2];
            const double w0 = (double)v[i + 3], w1 = (double)v[i + 4], w2 = (double)v[i + 5];
            const double b0 = R[0] * l0 + R[3] * l1 + R[6] * l2, b1 = R[1] * l0 + R[4] * l1 + R[7] * l2,
                         b2 = R[2] * l0 + R[5] * l1 + R[8] * l2;
            vp[i] = (GRID_CV_REAL)b0, vp[i + 1] = (GRID_CV_REAL)b1, vp[i + 2] = (GRID_CV_REAL)b2;
            if (ap) {
                const double a0 = a ? (double)a[i] : 0.0, a1 = a ? (double)a[i + 1] : 0.0, a2 = a ? (double)a[i + 2] : 0.0;
                ap[i] = (GRID_CV_REAL)(R[0] * a0 + R[3] * a1 + R[6] * a2 - (w1 * b2 - w2 * b1));
                ap[i + 1] = (GRID_CV_REAL)(R[1] * a0 + R[4] * a1 + R[7] * a2 - (w2 * b0 - w0 * b2));
                ap[i + 2] = (GRID_CV_REAL)(R[2] * a0 + R[5] * a1 + R[8] * a2 - (w0 * b1 - w1 * b0));
            }
        }
        /* a generalised force and a torque's or acceleration's cotangent: x_pin = R^T x_lin */
        if (up) GRID_CV_NAME(rot3t)(R, u + i, up + i);
        if (gp) GRID_CV_NAME(rot3t)(R, g + i, gp + i);
    }
}

/* three entries x[0], x[s], x[2s] replaced by R x */
GRID_CV_FN void GRID_CV_NAME(rot3)(const double R[9], GRID_CV_REAL *x, long long s)
{
    const double x0 = (double)x[0], x1 = (double)x[s], x2 = (double)x[2 * s];
    x[0] = (GRID_CV_REAL)(R[0] * x0 + R[1] * x1 + R[2] * x2);
    x[s] = (GRID_CV_REAL)(R[3] * x0 + R[4] * x1 + R[5] * x2);
    x[2 * s] = (GRID_CV_REAL)(R[6] * x0 + R[7] * x1 + R[8] * x2);
}

/* c = a x b, and c += s (a x b) */
GRID_CV_FN void GRID_CV_NAME(cross)(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1], c[1] = a[2] * b[0] - a[0] * b[2], c[2] = a[0] * b[1] - a[1] * b[0];
}

/* three entries x[0..2] += d[0..2] */
GRID_CV_FN void GRID_CV_NAME(add3)(GRID_CV_REAL *x, const double *d)
{
    x[0] = (GRID_CV_REAL)((double)x[0] + d[0]), x[1] = (GRID_CV_REAL)((double)x[1] + d[1]);
    x[2] = (GRID_CV_REAL)((double)x[2] + d[2]);
}

/* three entries of x (stride 1) as doubles */
GRID_CV_FN void GRID_CV_NAME(get3)(const GRID_CV_REAL *x, double *d)
{
    d[0] = (double)x[0], d[1] = (double)x[1], d[2] = (double)x[2];
}

/* rows r0..r0+2 of an out of width w, columns c0..c0+2: += -R [s]x (the derivative of R s along R exp(dtheta)) */
GRID_CV_FN void GRID_CV_NAME(add_dR)(const double R[9], const double *s, GRID_CV_REAL *out, long long w, long long r0,
                                     long long c0)
{
    const double S[9] = {0, -s[2], s[1], s[2], 0, -s[0], -s[1], s[0], 0};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            const double d = R[3 * a] * S[b] + R[3 * a + 1] * S[3 + b] + R[3 * a + 2] * S[6 + b];
            GRID_CV_REAL *o = out + (r0 + a) * w + c0 + b;
            *o = (GRID_CV_REAL)((double)*o - d);
        }
}

/* One row's terms from the inputs that move with a free block's rotation: with gv the row's v_lin entries (read
   before they change) and m its M (Minv, or the VJP's M g / u block) entries, q_rot += gv x vl + m x in; for ID
   (a_pin = R^T a - w x vl depends on v and dth) also q_rot -= (m x w) x vl, v_lin -= m x w, v_rot += m x vl.
   qrot and vlin point at the row's entries (v_rot follows v_lin). */
GRID_CV_FN void GRID_CV_NAME(input_terms)(const double *m, const double *vl, const double *om, const double *in,
                                          int id, GRID_CV_REAL *qrot, GRID_CV_REAL *vlin)
{
    double gv[3], c1[3], c2[3], d[3];
    GRID_CV_NAME(get3)(vlin, gv);
    GRID_CV_NAME(cross)(gv, vl, c1);
    GRID_CV_NAME(cross)(m, in, c2);
    for (int e = 0; e < 3; e++) d[e] = c1[e] + c2[e];
    if (id) {
        double mw[3];
        GRID_CV_NAME(cross)(m, om, mw);
        GRID_CV_NAME(cross)(mw, vl, c1);
        for (int e = 0; e < 3; e++) d[e] -= c1[e], mw[e] = -mw[e];
        GRID_CV_NAME(add3)(vlin, mw);
        GRID_CV_NAME(cross)(m, vl, c1);
        GRID_CV_NAME(add3)(vlin + 3, c1);
    }
    GRID_CV_NAME(add3)(qrot, d);
}

/* Derivatives in MuJoCo's basis from Pinocchio's (grid/convention.h, docs/python.md "Output conventions"), per free
   block with base rotation R, body velocity vl, w and body rotation dth along MuJoCo's tangent:
   - inputs: v_pin = R^T v_lin, a_pin = R^T a_lin - w x vl, u_pin = R^T u_lin move with dth (d vl = [vl]x dth, ...),
     and a_pin depends on vl and w: these enter through dtau/dv (dqdd/dv) and M (Minv, or the VJP's own u block);
   - outputs: tau_lin = R tau_pin,lin (d: -R [tau_lin]x dth); qdd_lin = R (qdd_pin,lin + w x vl) adds its v and dth
     terms before R;
   - columns: the linear part of q, v (and u) takes R (dq_pin = R^T dq_mj).
   A row vector r times [x]x is r x x, so the terms below are cross products of 3-vectors. A gradient is nv rows of
   width 2 nv; a VJP one row (the row transform folded into the cotangent, gp = R^T g). */
GRID_CV_FN void GRID_CV_NAME(post_deriv)(const grid_conv_job *j, const GRID_CV_REAL *qp, const GRID_CV_REAL *vp,
                                         const GRID_CV_REAL *ap, const GRID_CV_REAL *up, const GRID_CV_REAL *gp,
                                         const GRID_CV_REAL *const *x, GRID_CV_REAL *out)
{
    const grid_convention *cv = &j->cv;
    const long long n = cv->nv;
    const int kind = j->out_kind, grad = kind == GRID_CONV_OUT_DTAU || kind == GRID_CONV_OUT_DQDD;
    const int id = kind == GRID_CONV_OUT_DTAU || kind == GRID_CONV_OUT_VJP_TAU;
    const long long w = grad ? 2 * n : 0; /* a gradient's row width; a VJP is one row */
    const GRID_CV_REAL *prim = x[0], *mat = j->n_aux > 1 ? x[1] : NULL;
    for (int b = 0; b < cv->n_blocks; b++) {
        const grid_conv_block *k = &cv->block[b];
        if (k->kind != GRID_CONV_FREE) continue;
        const long long i = k->iv;
        double vl[3], om[3], in[3], c1[3], c2[3], c3[3], d[3];
        GRID_CV_NAME(get3)(vp + i, vl);
        GRID_CV_NAME(get3)(vp + i + 3, om);
        /* in: the input that moves with dtheta beside v: the acceleration plus w x vl (ID) or the force (FD) */
        if (id) {
            GRID_CV_NAME(get3)(ap + i, in);
            GRID_CV_NAME(cross)(om, vl, c1);
            for (int e = 0; e < 3; e++) in[e] += c1[e];
        } else {
            GRID_CV_NAME(get3)(up + i, in);
        }
        if (grad) {
            /* every row: the inputs' rotation, through dtau/dv (dqdd/dv) and M (Minv) */
            for (long long r = 0; r < n; r++) {
                GRID_CV_REAL *row = out + r * w;
                double m[3];
                GRID_CV_NAME(get3)(mat + r * n + i, m);
                GRID_CV_NAME(input_terms)(m, vl, om, in, id, row + i + 3, row + n + i);
            }
        } else {
            /* the one row: g^T through the same terms, M g or g^T Minv (the u block) in place of M's rows */
            GRID_CV_REAL *vq = out, *vv = out + n;
            double m[3];
            if (id) {
                for (int e = 0; e < 3; e++) {
                    double s = 0;
                    for (long long c = 0; c < n; c++) s += (double)mat[(i + e) * n + c] * (double)gp[c];
                    m[e] = s;
                }
            } else {
                GRID_CV_NAME(get3)(out + 2 * n + i, m);
            }
            GRID_CV_NAME(input_terms)(m, vl, om, in, id, vq + i + 3, vv + i);
            for (int e = 0; e < 3; e++) d[e] = 0;
            double gl[3];
            GRID_CV_NAME(get3)(gp + i, gl);
            if (id) {
                /* the output's rotation: -g^T R [tau_lin]x = -(g_pin x tau_lin) */
                double t[3];
                GRID_CV_NAME(get3)(prim + i, t);
                GRID_CV_NAME(cross)(gl, t, c1);
                for (int e = 0; e < 3; e++) d[e] -= c1[e];
            } else {
                /* qdd_lin = R (qdd_pin + w x vl): g^T R ([w]x dvl - [vl]x dw + [w]x [vl]x dth), and -(g_pin x s) */
                double s[3];
                GRID_CV_NAME(cross)(gl, om, c3);
                GRID_CV_NAME(cross)(c3, vl, c1);
                GRID_CV_NAME(get3)(prim + i, s);
                GRID_CV_NAME(cross)(om, vl, c2);
                for (int e = 0; e < 3; e++) s[e] += c2[e];
                GRID_CV_NAME(cross)(gl, s, c2);
                for (int e = 0; e < 3; e++) d[e] += c1[e] - c2[e];
                GRID_CV_NAME(add3)(vv + i, c3);
                GRID_CV_NAME(cross)(gl, vl, c1);
                for (int e = 0; e < 3; e++) c1[e] = -c1[e];
                GRID_CV_NAME(add3)(vv + i + 3, c1);
            }
            GRID_CV_NAME(add3)(vq + i + 3, d);
        }
    }
    /* a gradient's rows: the acceleration's own terms (FD), R on the free blocks' linear rows, the output's rotation */
    for (int b = 0; grad && b < cv->n_blocks; b++) {
        const grid_conv_block *k = &cv->block[b];
        if (k->kind != GRID_CONV_FREE) continue;
        const long long i = k->iv;
        double R[9], vl[3], om[3], s[3], c1[3];
        GRID_CV_NAME(rot_pin)(qp, k->iq + 3, R);
        GRID_CV_NAME(get3)(vp + i, vl);
        GRID_CV_NAME(get3)(vp + i + 3, om);
        GRID_CV_NAME(get3)(prim + i, s);
        if (!id) {
            /* rows of qdd_pin,lin + w x vl: + [w]x in v_lin, - [vl]x in w, + [w]x [vl]x in dtheta */
            const double W[9] = {0, -om[2], om[1], om[2], 0, -om[0], -om[1], om[0], 0};
            const double V[9] = {0, -vl[2], vl[1], vl[2], 0, -vl[0], -vl[1], vl[0], 0};
            for (int a = 0; a < 3; a++) {
                GRID_CV_REAL *row = out + (i + a) * w;
                double wv[3];
                for (int c = 0; c < 3; c++) wv[c] = W[3 * a] * V[c] + W[3 * a + 1] * V[3 + c] + W[3 * a + 2] * V[6 + c];
                GRID_CV_NAME(add3)(row + n + i, W + 3 * a);
                const double mv[3] = {-V[3 * a], -V[3 * a + 1], -V[3 * a + 2]};
                GRID_CV_NAME(add3)(row + n + i + 3, mv);
                GRID_CV_NAME(add3)(row + i + 3, wv);
            }
            GRID_CV_NAME(cross)(om, vl, c1);
            for (int e = 0; e < 3; e++) s[e] += c1[e];
        }
        for (long long c = 0; c < w; c++) GRID_CV_NAME(rot3)(R, out + i * w + c, w);
        GRID_CV_NAME(add_dR)(R, s, out, w, i, i + 3);
    }
    /* the columns: each free block's linear part of q, v (and u) x -> R x */
    const long long rows = grad ? n : 1, blocks = grad ? 2 : (id ? 2 : 3), bw = grad ? w : 0;
    for (int b = 0; b < cv->n_blocks; b++) {
        const grid_conv_block *k = &cv->block[b];
        if (k->kind != GRID_CONV_FREE) continue;
        double R[9];
        GRID_CV_NAME(rot_pin)(qp, k->iq + 3, R);
        for (long long r = 0; r < rows; r++)
            for (long long h = 0; h < blocks; h++) GRID_CV_NAME(rot3)(R, out + r * bw + h * n + k->iv, 1);
    }
}

/* X T + Y Tdot for a free block at column i, Tdot's block -[w]x R^T (w the body's angular velocity): columns
   i..i+2 of each of the rows rows of X (row stride n, in place) become R (x + w x y), y the same columns of Y */
GRID_CV_FN void GRID_CV_NAME(rate_columns)(const double R[9], const GRID_CV_REAL *w, GRID_CV_REAL *X,
                                           const GRID_CV_REAL *Y, long long rows, long long n, long long i)
{
    const double w0 = (double)w[0], w1 = (double)w[1], w2 = (double)w[2];
    for (long long r = 0; r < rows; r++) {
        GRID_CV_REAL *const c = X + r * n + i;
        const GRID_CV_REAL *const m = Y + r * n + i;
        const double m0 = (double)m[0], m1 = (double)m[1], m2 = (double)m[2];
        c[0] = (GRID_CV_REAL)((double)c[0] + (w1 * m2 - w2 * m1));
        c[1] = (GRID_CV_REAL)((double)c[1] + (w2 * m0 - w0 * m2));
        c[2] = (GRID_CV_REAL)((double)c[2] + (w0 * m1 - w1 * m0));
        GRID_CV_NAME(rot3)(R, c, 1);
    }
}

/* The output of one state into MuJoCo's basis, in place, from the state's converted inputs and aux outputs. */
GRID_CV_FN void GRID_CV_NAME(post)(const grid_conv_job *j, const GRID_CV_REAL *qp, const GRID_CV_REAL *vp,
                                   const GRID_CV_REAL *ap, const GRID_CV_REAL *up, const GRID_CV_REAL *gp,
                                   const GRID_CV_REAL *const *x, GRID_CV_REAL *out)
{
    const grid_convention *cv = &j->cv;
    const long long n = cv->nv;
    if (j->out_kind == GRID_CONV_OUT_NONE) return;
    if (j->out_kind >= GRID_CONV_OUT_DTAU) {
        GRID_CV_NAME(post_deriv)(j, qp, vp, ap, up, gp, x, out);
        return;
    }
    for (int b = 0; b < cv->n_blocks; b++) {
        const grid_conv_block *k = &cv->block[b];
        if (k->kind != GRID_CONV_FREE) continue;
        double R[9];
        GRID_CV_NAME(rot_pin)(qp, k->iq + 3, R);
        const int i = k->iv;
        switch (j->out_kind) {
        case GRID_CONV_OUT_TAU: /* tau_lin world = R tau_lin body, in each column of nv x cols (a regressor's) */
            for (long long c = 0, cols = j->out_width / n; c < cols; c++) GRID_CV_NAME(rot3)(R, out + i * cols + c, cols);
            break;
        case GRID_CONV_OUT_QDD: { /* a_world = R (qdd_lin + omega x v_lin body) */
            const double b0 = (double)vp[i], b1 = (double)vp[i + 1], b2 = (double)vp[i + 2];
            const double w0 = (double)vp[i + 3], w1 = (double)vp[i + 4], w2 = (double)vp[i + 5];
            const double t0 = (double)out[i] + (w1 * b2 - w2 * b1), t1 = (double)out[i + 1] + (w2 * b0 - w0 * b2),
                         t2 = (double)out[i + 2] + (w0 * b1 - w1 * b0);
            out[i] = (GRID_CV_REAL)(R[0] * t0 + R[1] * t1 + R[2] * t2);
            out[i + 1] = (GRID_CV_REAL)(R[3] * t0 + R[4] * t1 + R[5] * t2);
            out[i + 2] = (GRID_CV_REAL)(R[6] * t0 + R[7] * t1 + R[8] * t2);
            break;
        }
        case GRID_CONV_OUT_MAT: { /* T^T X T of a symmetric X (M, Minv): symmetric to the bit */
            GRID_CV_REAL *const row = out + i * n;
            /* outside the block: rows i..i+2 become R X[rows, c], and columns i..i+2 their mirror */
            for (long long c = 0; c < n; c++) {
                if (c == i) c += 3;
                if (c >= n) break;
                GRID_CV_NAME(rot3)(R, row + c, n);
                GRID_CV_REAL *const col = out + c * n + i;
                col[0] = row[c], col[1] = row[n + c], col[2] = row[2 * n + c];
            }
            /* the block R X R^T: its columns, then its rows; the upper triangle mirrored */
            for (int c = 0; c < 3; c++) GRID_CV_NAME(rot3)(R, row + i + c, n);
            for (int r = 0; r < 3; r++) GRID_CV_NAME(rot3)(R, row + r * n + i, 1);
            for (int r = 1; r < 3; r++)
                for (int c = 0; c < r; c++) row[r * n + i + c] = row[c * n + i + r];
            break;
        }
        case GRID_CONV_OUT_JAC: /* X T: each row's columns i..i+2 become R x */
            for (long long r = 0; r < j->out_rows; r++) GRID_CV_NAME(rot3)(R, out + r * n + i, 1);
            break;
        case GRID_CONV_OUT_COR: /* T^T (C T + M Tdot) */
            GRID_CV_NAME(rate_columns)(R, vp + i + 3, out, x[0], n, n, i);
            /* then T^T: rows i..i+2 of every column become R x */
            for (long long c = 0; c < n; c++) GRID_CV_NAME(rot3)(R, out + i * n + c, n);
            break;
        case GRID_CONV_OUT_JDOT: /* Jdot T + J Tdot, J the aux row's output */
            GRID_CV_NAME(rate_columns)(R, vp + i + 3, out, x[0], j->out_rows, n, i);
            break;
        default:
            break;
        }
    }
}
