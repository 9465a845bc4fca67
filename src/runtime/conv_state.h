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

/* Inputs of one state into Pinocchio's basis: qp, vp, ap, up from q, v, a, u (in place when the pointers are equal).
   A NULL output skips that input; ap with a NULL a is built from MuJoCo's zero acceleration. */
GRID_CV_FN void GRID_CV_NAME(pre)(const grid_conv_job *j, const GRID_CV_REAL *q, const GRID_CV_REAL *v,
                                  const GRID_CV_REAL *a, const GRID_CV_REAL *u, GRID_CV_REAL *qp, GRID_CV_REAL *vp,
                                  GRID_CV_REAL *ap, GRID_CV_REAL *up)
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
        if (up) {
            const double u0 = (double)u[i], u1 = (double)u[i + 1], u2 = (double)u[i + 2];
            up[i] = (GRID_CV_REAL)(R[0] * u0 + R[3] * u1 + R[6] * u2);
            up[i + 1] = (GRID_CV_REAL)(R[1] * u0 + R[4] * u1 + R[7] * u2);
            up[i + 2] = (GRID_CV_REAL)(R[2] * u0 + R[5] * u1 + R[8] * u2);
        }
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

/* The output of one state into MuJoCo's basis, in place, from the state's converted qp and vp. */
GRID_CV_FN void GRID_CV_NAME(post)(const grid_conv_job *j, const GRID_CV_REAL *qp, const GRID_CV_REAL *vp,
                                   GRID_CV_REAL *out)
{
    const grid_convention *cv = &j->cv;
    const long long n = cv->nv;
    if (j->out_kind == GRID_CONV_OUT_NONE) return;
    for (int b = 0; b < cv->n_blocks; b++) {
        const grid_conv_block *k = &cv->block[b];
        if (k->kind != GRID_CONV_FREE) continue;
        double R[9];
        GRID_CV_NAME(rot_pin)(qp, k->iq + 3, R);
        const int i = k->iv;
        switch (j->out_kind) {
        case GRID_CONV_OUT_TAU: /* tau_lin world = R tau_lin body */
            GRID_CV_NAME(rot3)(R, out + i, 1);
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
        default:
            break;
        }
    }
}
