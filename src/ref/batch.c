/* The reference provider's batched entry point: the grid_call ABI over the single-state algorithms, driven by the signature table. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "ref_rows.h"

/* the reference function of every row of the signature table (NULL: a VJP, contracted from its gradient row) */
static const ref_state_fn ref_fns[GRID_ALGO_COUNT] = {
#define REF_FN_OWN(id) ref_row_##id
#define REF_FN_VJP(id) NULL
#define GRID_ROW(ID, id, ref, ...) [GRID_ALGO_##ID] = REF_FN_##ref(id),
#include "grid/signature_rows.h"
#undef GRID_ROW
};

ref_state_fn ref_row_fn(int algo) { return algo >= 0 && algo < GRID_ALGO_COUNT ? ref_fns[algo] : NULL; }

/* ---- a model with coupled mimic joints ----
   M^-1, FD and ABA do not follow from the full model's by projection: they solve the coupled system
   M_c = G^T M G, c_c = G^T rnea(q, v, 0, fext) densely; the two gradients (nv x 2nv, whose 2nv the generic
   projection cannot map) go through an (nv, 2, nv) view. The work they get: the coupled scratch below (outf holds
   the widest full output, nv_full x 2nv_full for the gradients). */
typedef struct {
    double *qf, *vf, *af, *uf;  /* full-coordinate inputs */
    double *outf;               /* a full-coordinate output */
    double *Mc, *cc;            /* the coupled M and bias */
    double *so;                 /* fdsva_so: qdd, M^-1, [D_q | D_v], idsva_so's tensors and a column (user sizes) */
    int *body_of_v;
    double *work;               /* the single-state algorithms' own */
} coupled_scratch;

/* fdsva_so's part of the coupled scratch (coupled_scratch.so) */
static size_t coupled_so_doubles(const grid_model *m, int algo)
{
    const size_t nv = (size_t)m->nv;
    return algo == GRID_ALGO_FDSVA_SO ? 2 * nv + 3 * nv * nv + 4 * nv * nv * nv : 0;
}

static size_t coupled_doubles(const grid_model *m, size_t out_full, int algo)
{
    const size_t nqf = (size_t)m->nq_full, nvf = (size_t)m->nv_full, nv = (size_t)m->nv;
    return nqf + 3 * nvf + out_full + nv * nv + nv + coupled_so_doubles(m, algo) + (nvf + 1) / 2 + 1;
}

static void coupled_scratch_at(const grid_model *m, double *at, size_t out_full, int algo, coupled_scratch *cs)
{
    const size_t nqf = (size_t)m->nq_full, nvf = (size_t)m->nv_full, nv = (size_t)m->nv;
    cs->qf = at;
    cs->vf = cs->qf + nqf;
    cs->af = cs->vf + nvf;
    cs->uf = cs->af + nvf;
    cs->outf = cs->uf + nvf;
    cs->Mc = cs->outf + out_full;
    cs->cc = cs->Mc + nv * nv;
    cs->so = cs->cc + nv;
    cs->body_of_v = (int *)(cs->so + coupled_so_doubles(m, algo));
    grid_ref_body_of_v(m, cs->body_of_v); /* once per call, not per state */
}

/* M_c (nv x nv) of q_full */
static void coupled_mass(const grid_model *m, coupled_scratch *cs)
{
    const int nvf = m->nv_full, shape[2] = {nvf, nvf}, tangent[2] = {1, 1};
    grid_ref_crba(m, cs->qf, cs->outf, cs->work);
    grid_ref_project(m, 2, shape, tangent, cs->outf, cs->Mc, cs->body_of_v);
}

/* the coupled [d/dq | d/dqd] (nv x 2nv): G^T [D_q G | D_v G] of the full model's D, viewed as (nv_full, 2, nv_full)
   so that one projection maps both halves; FD's is -M_c^-1 of that RNEA derivative at a_full = G qdd_c */
static void coupled_gradient(const grid_model *m, int algo, const double *const *in, double *out, coupled_scratch *cs)
{
    const int nv = m->nv, nvf = m->nv_full;
    const int shape[3] = {nvf, 2, nvf}, tangent[3] = {1, 0, 1};
    grid_ref_expand_q(m, in[0], cs->qf);
    grid_ref_expand_v(m, in[1], cs->vf);
    const double *af = NULL;
    if (algo == GRID_ALGO_RNEA_GRAD) {
        if (in[2]) {
            grid_ref_expand_v(m, in[2], cs->af);
            af = cs->af;
        }
    } else {
        /* qdd_c = M_c^-1 (u - G^T rnea(q, v, 0, fext)), as the coupled FD */
        const int vshape[1] = {nvf}, vtangent[1] = {1};
        coupled_mass(m, cs);
        grid_ref_rnea(m, cs->qf, cs->vf, NULL, in[3], cs->outf, cs->work);
        grid_ref_project(m, 1, vshape, vtangent, cs->outf, cs->cc, cs->body_of_v);
        for (int r = 0; r < nv; r++) cs->cc[r] = in[2][r] - cs->cc[r];
        grid_ref_spd_solve(nv, cs->Mc, cs->cc, 1);
        grid_ref_expand_v(m, cs->cc, cs->af);
        af = cs->af;
    }
    grid_ref_rnea_derivatives(m, cs->qf, cs->vf, af, in[3], cs->outf, cs->work);
    grid_ref_project(m, 3, shape, tangent, cs->outf, out, cs->body_of_v);
    if (algo == GRID_ALGO_FD_GRAD) {
        /* out = -M_c^-1 D_c; M_c anew, the solve above left its factors in it */
        coupled_mass(m, cs);
        grid_ref_spd_solve(nv, cs->Mc, out, 2 * nv);
        for (int k = 0; k < 2 * nv * nv; k++) out[k] = -out[k];
    }
}

/* the coupled row of algo for one state: in[] / out[] in the user's coordinates */
static void coupled_state(const grid_model *m, int algo, const grid_method_info *full, const double *const *in,
                          double *const *out, const int *attr, coupled_scratch *cs)
{
    const int nv = m->nv;
    const grid_signature_row *row = grid_sig_row(algo);
    if (algo == GRID_ALGO_RNEA_GRAD || algo == GRID_ALGO_FD_GRAD) {
        coupled_gradient(m, algo, in, out[0], cs);
        return;
    }
    if (algo == GRID_ALGO_MINV || algo == GRID_ALGO_FD || algo == GRID_ALGO_ABA) {
        grid_ref_expand_q(m, in[0], cs->qf);
        coupled_mass(m, cs);
        if (algo == GRID_ALGO_MINV) {
            for (int r = 0; r < nv; r++)
                for (int c = 0; c < nv; c++) out[0][r * nv + c] = r == c;
            grid_ref_spd_solve(nv, cs->Mc, out[0], nv);
            return;
        }
        /* qdd = M_c^-1 (u - G^T rnea(q, v, 0, fext)) */
        const int shape[1] = {m->nv_full}, tangent[1] = {1};
        grid_ref_expand_v(m, in[1], cs->vf);
        grid_ref_rnea(m, cs->qf, cs->vf, NULL, in[3], cs->outf, cs->work);
        grid_ref_project(m, 1, shape, tangent, cs->outf, cs->cc, cs->body_of_v);
        for (int r = 0; r < nv; r++) out[0][r] = in[2][r] - cs->cc[r];
        grid_ref_spd_solve(nv, cs->Mc, out[0], 1);
        return;
    }
    if (algo == GRID_ALGO_FDSVA_SO) {
        /* forward dynamics' second derivatives from the coupled rows in the user's coordinates (FD solves the coupled
           system, so they do not follow by projection): qdd = FD, the RNEA gradient and idsva_so at qdd, M^-1 */
        const size_t n = (size_t)nv;
        double *qdd = cs->so, *Mi = qdd + n, *D = Mi + n * n, *T = D + 2 * n * n, *r = T + 4 * n * n * n;
        double *fd_out[1] = {qdd}, *d_out[1] = {D}, *mi_out[1] = {Mi};
        double *t_out[4] = {T, T + n * n * n, T + 2 * n * n * n, T + 3 * n * n * n};
        const double *at_qdd[GRID_MAX_IN] = {in[0], in[1], qdd, in[3]}, *q_only[GRID_MAX_IN] = {in[0]};
        coupled_state(m, GRID_ALGO_FD, full, in, fd_out, attr, cs);
        coupled_state(m, GRID_ALGO_RNEA_GRAD, full, at_qdd, d_out, attr, cs);
        coupled_state(m, GRID_ALGO_IDSVA_SO, full, at_qdd, t_out, attr, cs); /* (its full shapes are fdsva_so's) */
        coupled_state(m, GRID_ALGO_MINV, full, q_only, mi_out, attr, cs);
        grid_ref_fd_so_from_parts(n, Mi, D, T, out, r);
        return;
    }
    /* every other row: inputs expanded by their symbol, the row on the full model, the output projected */
    const double *fin[GRID_MAX_IN] = {0};
    double *const vbuf[2] = {cs->vf, cs->af};
    int nvec = 0;
    for (int k = 0; k < row->n_in; k++) {
        if (!in[k] || row->in[k].dim[0].sym == GRID_SYM_NB || row->in[k].dim[0].sym == GRID_SYM_ONE) {
            fin[k] = in[k];
        } else if (row->in[k].dim[0].sym == GRID_SYM_NQ) {
            grid_ref_expand_q(m, in[k], cs->qf);
            fin[k] = cs->qf;
        } else {
            assert(row->in[k].dim[0].sym == GRID_SYM_NV && nvec < 2);
            grid_ref_expand_v(m, in[k], vbuf[nvec]);
            fin[k] = vbuf[nvec++];
        }
    }
    /* each output (one after another in outf) projected along its tangent dimensions */
    double *fout[GRID_MAX_OUT] = {0};
    size_t at = 0;
    for (int k = 0; k < full->n_out; k++, at += (size_t)full->out[k - 1].width) fout[k] = cs->outf + at;
    ref_fns[algo](m, fin, fout, attr, cs->work);
    for (int k = 0; k < full->n_out; k++) {
        int tangent[GRID_MAX_RANK] = {0};
        for (int d = 0; d < row->out[k].rank; d++) tangent[d] = row->out[k].dim[d].sym == GRID_SYM_NV;
        grid_ref_project(m, full->out[k].rank, full->out[k].shape, tangent, fout[k], out[k], cs->body_of_v);
    }
}

/* ---- vector-Jacobian products: the gradient row contracted with the cotangent (the oracle: no shortcut) ---- */

/* one state of a row that is not a VJP, on either model kind */
static void run_state(const grid_model *m, int algo, const grid_method_info *full, const double *const *in,
                      double *const *out, const int *attr, coupled_scratch *cs, double *work)
{
    if (m->nmimic > 0 && !grid_sig_row(algo)->user_coordinates) coupled_state(m, algo, full, in, out, attr, cs);
    else ref_fns[algo](m, in, out, attr, work);
}

/* A VJP row, read off the signature table: the method whose vjp link it is gives its gradient row (the method's
   derivative link); the cotangent is the input named so, and the gradient row's inputs are the VJP's of the same
   names. full / user: the gradient row (and M^-1, for FD's u block) concrete for the full and the user's sizes. */
typedef struct {
    int grad;                       /* the gradient row, -1: algo is not a VJP */
    int g_at;                       /* the cotangent's input position */
    int grad_in[GRID_MAX_IN];       /* per gradient input, its position among the VJP's */
    int u_block;                    /* 1: the method is linear in u with slope M^-1 (forward dynamics) */
    grid_method_info user, full, minv_full;
} vjp_plan;

static void vjp_plan_of(const grid_model *m, int algo, vjp_plan *v)
{
    memset(v, 0, sizeof *v);
    v->grad = -1;
    const grid_signature_row *r = grid_sig_row(algo), *method = NULL;
    for (int a = 0; a < GRID_ALGO_COUNT && !method; a++)
        if (grid_sig_row(a)->vjp == algo) method = grid_sig_row(a);
    if (!method || method->derivative < 0) return;
    v->grad = method->derivative;
    const grid_signature_row *gr = grid_sig_row(v->grad);
    for (int k = 0; k < r->n_in; k++) {
        if (!strcmp(r->in[k].name, "cotangent")) v->g_at = k;
        if (!strcmp(r->in[k].name, "u")) v->u_block = 1;
    }
    for (int j = 0; j < gr->n_in; j++) {
        v->grad_in[j] = -1;
        for (int k = 0; k < r->n_in; k++)
            if (!strcmp(gr->in[j].name, r->in[k].name)) v->grad_in[j] = k;
        assert(v->grad_in[j] >= 0); /* a VJP takes its method's inputs */
    }
    const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
    const grid_sizes fsz = grid_sizes_of(m->nq_full, m->nv_full, m->nb, m->nee, m->nframes);
    grid_sig_concrete(v->grad, &sz, 0, &v->user);
    grid_sig_concrete(v->grad, &fsz, 0, &v->full);
    grid_sig_concrete(GRID_ALGO_MINV, &fsz, 0, &v->minv_full);
}

/* out = g^T of the gradient (rows x cols) in tmp, then FD's u block g^T M^-1 */
static void vjp_state(const grid_model *m, const vjp_plan *v, const double *const *in, double *out, const int *attr,
                      coupled_scratch *cs, double *work, double *tmp)
{
    const grid_signature_row *gr = grid_sig_row(v->grad);
    const double *gin[GRID_MAX_IN] = {0};
    for (int j = 0; j < gr->n_in; j++) gin[j] = in[v->grad_in[j]];
    double *gout[GRID_MAX_OUT] = {tmp};
    const double *g = in[v->g_at];
    run_state(m, v->grad, &v->full, gin, gout, attr, cs, work);
    const int rows = v->user.out[0].shape[0], cols = v->user.out[0].shape[1];
    for (int c = 0; c < cols; c++) {
        double s = 0;
        for (int k = 0; k < rows; k++) s += g[k] * tmp[(size_t)k * cols + c];
        out[c] = s;
    }
    if (v->u_block) {
        const int nv = m->nv;
        run_state(m, GRID_ALGO_MINV, &v->minv_full, gin, gout, attr, cs, work);
        for (int c = 0; c < nv; c++) {
            double s = 0;
            for (int k = 0; k < nv; k++) s += g[k] * tmp[(size_t)k * nv + c];
            out[cols + c] = s;
        }
    }
}

/* widen n inputs of state b to float64 (or point at them when they already are) */
static const double *state_input(const void *base, int dtype, long long b, size_t n, double *buf)
{
    if (!base) return NULL;
    if (dtype == GRID_FLOAT64) return (const double *)base + (size_t)b * n;
    const float *src = (const float *)base + (size_t)b * n;
    for (size_t k = 0; k < n; k++) buf[k] = (double)src[k];
    return buf;
}

/* the row's argument checks: GRID_OK or GRID_ERR_ARG */
static int check_call(const grid_method_info *r, const grid_call *call)
{
    if (call->n_in != r->n_in || call->n_out != r->n_out || !call->in || !call->out) return GRID_ERR_ARG;
    for (int k = 0; k < r->n_in; k++)
        if (!call->in[k] && !r->in[k].optional) return GRID_ERR_ARG;
    for (int k = 0; k < r->n_out; k++)
        if (!call->out[k]) return GRID_ERR_ARG;
    for (int k = 0; k < r->n_attr; k++)
        if (call->attr[k] < r->attr_lo[k] || call->attr[k] >= r->attr_hi[k]) return GRID_ERR_ARG;
    return GRID_OK;
}

int grid_ref_batch(const grid_model *m, int algo, int dtype, const grid_call *call)
{
    return grid_ref_batch_as(m, algo, dtype, dtype, call);
}

int grid_ref_batch_as(const grid_model *m, int algo, int dtype, int rule_dtype, const grid_call *call)
{
    /* check the arguments before touching any array */
    if (!m || !call || algo < 0 || algo >= GRID_ALGO_COUNT) return GRID_ERR_ARG;
    if (dtype != GRID_FLOAT32 && dtype != GRID_FLOAT64) return GRID_ERR_ARG;
    if (rule_dtype != GRID_FLOAT32 && rule_dtype != GRID_FLOAT64) return GRID_ERR_ARG;
    if (call->batch < 0) return GRID_ERR_ARG;
    if (call->batch == 0) return GRID_OK;
    const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
    grid_method_info r;
    grid_sig_concrete(algo, &sz, 0, &r);
    int rc = check_call(&r, call);
    if (rc != GRID_OK) return rc;
    vjp_plan vp;
    vjp_plan_of(m, algo, &vp);
    const int grad = vp.grad;
    if (!ref_fns[algo] && grad < 0) return GRID_ERR_UNSUPPORTED; /* a row without a reference function yet */

    /* a coupled model runs the row on the full coordinates (the row's shapes for them in full) */
    const int coupled = m->nmimic > 0;
    grid_method_info full;
    const grid_sizes fsz = grid_sizes_of(m->nq_full, m->nv_full, m->nb, m->nee, m->nframes);
    grid_sig_concrete(grad >= 0 ? grad : algo, &fsz, 0, &full);
    size_t out_full = (size_t)m->nv_full * (size_t)m->nv_full, every = 0; /* (every output's elements) */
    for (int k = 0; k < full.n_out; k++) every += (size_t)full.out[k].width;
    if (every > out_full) out_full = every;
    /* a VJP's gradient (or M^-1) in the user's coordinates */
    const size_t ntmp = grad >= 0 ? (size_t)vp.user.out[0].width + (size_t)m->nv * (size_t)m->nv : 0;

    /* scratch once per call: work, float64 copies of one state's inputs and outputs, the coupled scratch */
    const size_t nwork = grid_ref_work_size(m), ncoupled = coupled ? coupled_doubles(m, out_full, algo) : 0;
    size_t total = nwork + ncoupled + ntmp + 1;
    for (int k = 0; k < r.n_in; k++) total += (size_t)r.in[k].width;
    for (int k = 0; k < r.n_out; k++) total += (size_t)r.out[k].width;
    double *scratch = malloc(total * sizeof(double));
    if (!scratch) return GRID_ERR_NOMEM;
    double *work = scratch, *tmp = scratch + nwork, *at = tmp + ntmp, *inb[GRID_MAX_IN], *outb[GRID_MAX_OUT];
    coupled_scratch cs = {0};
    if (coupled) {
        coupled_scratch_at(m, at, out_full, algo, &cs);
        cs.work = work;
        at += ncoupled;
    }
    for (int k = 0; k < r.n_in; k++, at += r.in[k - 1].width) inb[k] = at;
    for (int k = 0; k < r.n_out; k++, at += r.out[k - 1].width) outb[k] = at;

    const double *in[GRID_MAX_IN] = {0};
    double *out[GRID_MAX_OUT] = {0};
    int attr[GRID_REF_ATTRS];
    memcpy(attr, call->attr, sizeof call->attr);
    attr[GRID_REF_RULE] = rule_dtype;
    for (long long b = 0; b < call->batch; b++) {
        for (int k = 0; k < r.n_in; k++) in[k] = state_input(call->in[k], dtype, b, (size_t)r.in[k].width, inb[k]);
        for (int k = 0; k < r.n_out; k++)
            out[k] = dtype == GRID_FLOAT64 ? (double *)call->out[k] + (size_t)b * (size_t)r.out[k].width : outb[k];
        if (grad >= 0) vjp_state(m, &vp, in, out[0], attr, &cs, work, tmp);
        else run_state(m, algo, &full, in, out, attr, &cs, work);
        if (dtype == GRID_FLOAT32)
            /* narrow the float64 results */
            for (int k = 0; k < r.n_out; k++) {
                float *dst = (float *)call->out[k] + (size_t)b * (size_t)r.out[k].width;
                for (long long e = 0; e < r.out[k].width; e++) dst[e] = (float)outb[k][e];
            }
    }
    free(scratch);
    return GRID_OK;
}
