/* Mimic couplings in generated code: per-state wrappers that expand the user's coordinates, call the full-coordinate
   functions and project their outputs (G^T x, G^T M G, J G), run M^-1, FD and ABA by the articulated-body recursion
   with the couplings (em_model.group_minv, group_aba), or solve the coupled system M_c = G^T M G by Featherstone's
   L^T D L on its elimination tree (grid_model_coupled_tree). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emit_ctx.h"

int emit_coupled(const emit_ctx *cx) { return cx->em->nmimic > 0 && !cx->inner; }

/* the name of function fn's full-coordinate form (rolled: "_r", so a composite's rolled copy of a wrapper can share a
   translation unit with the library's unrolled wrapper), by which wrappers and coupled composites share it */
static void inner_name(char *name, size_t cap, const char *fn, int rolled)
{
    snprintf(name, cap, "%s_m%s", fn, rolled ? "_r" : "");
}

/* the inner (full-coordinate) functions a wrapper of kind k calls: the same kind, or for M^-1, FD and ABA the
   mass matrix and the bias (named by inner_name) */
static int inner_specs(const em_model *em, const state_spec *sp, int rolled, state_spec inner[2], char names[2][64])
{
    const emit_method *m = sp->m;
    const state_spec *f[2] = {sp, NULL};
    int n = 1;
    const int R = EM_READS(EP_Q), V = EM_READS(EP_V), A = EM_READS(EP_A), F = EM_READS(EP_F);
    if ((m->coupling == COUPLE_SOLVE && em->group_aba) || (m->coupling == COUPLE_INVERSE && em->group_minv))
        /* the articulated-body recursion with the couplings, on the full coordinates: FD and ABA by one function with
           f_ext for every row (the rows without pass zeros: 6 nb subtractions, against a second unrolled ABA to
           compile); M^-1 by the same recursion on unit torques, the user's M^-1 from the full kinematics */
        f[0] = emit_function_for(m->couple_recursion, m->coupling == COUPLE_SOLVE ? R | V | A | F : R);
    else if (m->coupling == COUPLE_INVERSE || m->coupling == COUPLE_SOLVE) {
        /* G^T M G, and for FD and ABA the bias rnea(q, v, 0, fext) */
        f[0] = emit_function_for(m->couple_mass, R);
        if (m->coupling == COUPLE_SOLVE) f[n++] = emit_function_for(m->couple_bias, R | V | (sp->reads_fext ? A | F : 0));
    }
    for (int k = 0; k < n; k++) {
        assert(f[k]);
        inner_name(names[k], sizeof names[k], f[k]->fn, rolled);
        inner[k] = *f[k];
        inner[k].fn = names[k];
        inner[k].lanes_ok = sp->lanes_ok;
    }
    return n;
}

int emit_coupled_inners(const emit_ctx *cx, const state_spec *sp, char names[2][64], long sizes[2])
{
    emit_ctx ix = *cx;
    ix.inner = 1;
    state_spec inner[2];
    const int n = inner_specs(cx->em, sp, 0, inner, names);
    for (int k = 0; k < n; k++) {
        sizes[k] = emit_state_size(&ix, &inner[k]);
        if (sizes[k] < 0) return -1;
    }
    /* (the sparse solve of M^-1, FD and ABA is a loop helper: it adds no graph nodes) */
    return n;
}

long emit_coupled_size(const emit_ctx *cx, const state_spec *sp)
{
    char names[2][64];
    long sizes[2];
    const int n = emit_coupled_inners(cx, sp, names, sizes);
    if (n < 0) return -1;
    long size = 0;
    for (int k = 0; k < n; k++) size += sizes[k];
    return size;
}

/* ---- writing the wrapper ---- */

typedef struct {
    const emit_ctx *cx;
    int vector;
    char cst[64];
} wr;

/* a constant in the wrapper's real type */
static const char *constant(wr *x, double c)
{
    if (x->vector) snprintf(x->cst, sizeof x->cst, "grid_splat_(%.17g)", c);
    else snprintf(x->cst, sizeof x->cst, "(grid_real)%.17g", c);
    return x->cst;
}

/* element k of a parameter (the target's stride in the scalar form) */
static void elem(const wr *x, char *buf, size_t cap, const char *name, const char *expr)
{
    if (x->vector) snprintf(buf, cap, "%s[%s]", name, expr);
    else emit_elem(x->cx, buf, cap, name, expr);
}

/* the coupling tables, once per translation unit: per full q coordinate its user's index, weight and offset;
   per full v coordinate its user's index and weight */
static void write_tables(wr *x)
{
    const em_model *em = x->cx->em;
    ew_writer *w = x->cx->w;
    const char *tq = x->cx->t->table;
    ew_puts(w, "#ifndef GRID_COUPLING_TABLES_\n#define GRID_COUPLING_TABLES_\n"
               "/* mimic couplings: full coordinate k = weight[k] * user[index[k]] + offset[k] */\n");
    /* what: 0 user index, 1 weight, 2 offset; per full q (tangent = 0) or v (1) coordinate */
    static const struct { const char *decl; int tangent, what; } tables[] = {
        {"int grid_cq_", 0, 0}, {"grid_real grid_cqw_", 0, 1}, {"grid_real grid_cqo_", 0, 2},
        {"int grid_cv_", 1, 0}, {"grid_real grid_cvw_", 1, 1}};
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        ew_printf(w, "%s%s %s[%d] = {", t ? "};\n" : "", tq, tables[t].decl, tables[t].tangent ? em->nv : em->nq);
        for (int b = 0; b < em->nb; b++) {
            const em_body *bd = &em->b[b];
            for (int k = 0; k < (tables[t].tangent ? bd->nv : bd->nq); k++) {
                if (tables[t].what == 0) ew_printf(w, "%d, ", (tables[t].tangent ? bd->uv : bd->uq) + (bd->mimic ? 0 : k));
                else ew_printf(w, "%.17g, ", !bd->mimic ? (tables[t].what == 1 ? 1.0 : 0.0)
                                             : tables[t].what == 1 ? bd->mimic_multiplier : bd->mimic_offset);
            }
        }
    }
    ew_printf(w, "};\n/* the full velocity coordinate of each user one (its joint's own, not a mimic's) */\n"
                 "%s int grid_cfull_[%d] = {", tq, em->nv_user > 0 ? em->nv_user : 1);
    for (int b = 0; b < em->nb; b++)
        for (int k = 0; !em->b[b].mimic && k < em->b[b].nv; k++) ew_printf(w, "%d, ", em->b[b].iv + k);
    if (em->nv_user == 0) ew_puts(w, "0");
    ew_printf(w, "};\n/* the full velocity coordinates of the mimic joints */\n%s int grid_cfol_[%d] = {", tq,
              em->nv > em->nv_user ? em->nv - em->nv_user : 1);
    for (int b = 0; b < em->nb; b++)
        for (int k = 0; em->b[b].mimic && k < em->b[b].nv; k++) ew_printf(w, "%d, ", em->b[b].iv + k);
    if (em->nv == em->nv_user) ew_puts(w, "0");
    ew_printf(w, "};\n/* the elimination tree of G^T M G: the parent of each user velocity coordinate, -1 = none */\n"
                 "%s int grid_clam_[%d] = {", tq, em->nv_user > 0 ? em->nv_user : 1);
    for (int k = 0; k < em->nv_user; k++) ew_printf(w, "%d, ", em->coupled_tree[k]);
    if (em->nv_user == 0) ew_puts(w, "-1");
    ew_puts(w, "};\n#endif\n\n");
}

/* a table weight in the wrapper's real type */
static const char *weight(const wr *x, const char *expr, char *buf, size_t cap)
{
    if (x->vector) snprintf(buf, cap, "grid_splat_(%s)", expr);
    else snprintf(buf, cap, "%s", expr);
    return buf;
}

/* the full q (qf) of the user's q, or a full tangent vector (name##f) of the user's one */
static void write_expand(wr *x, const char *name, int tangent)
{
    const em_model *em = x->cx->em;
    char wt[96], off[96];
    char lookup[160];
    elem(x, lookup, sizeof lookup, name, tangent ? "grid_cv_[k]" : "grid_cq_[k]");
    if (tangent)
        ew_printf(x->cx->w, "    for (int k = 0; k < %d; k++) %sf[k] = %s * %s;\n", em->nv, name,
                  weight(x, "grid_cvw_[k]", wt, sizeof wt), lookup);
    else
        ew_printf(x->cx->w, "    for (int k = 0; k < %d; k++) %sf[k] = %s * %s + %s;\n", em->nq, name,
                  weight(x, "grid_cqw_[k]", wt, sizeof wt), lookup, weight(x, "grid_cqo_[k]", off, sizeof off));
}

/* dst (the user's shape, a local array; NULL: the wrapper's output) = the projection of the full output src (rows x cols, row-major;
   trow / tcol: the rows / columns are tangent coordinates; tcol = 2: two blocks of them, a gradient's): each mimic
   coordinate's column, then row, folded into its leader's in src (src[., leader] += w src[., mimic]; a leader's own
   weight is 1), then the leaders' elements gathered. Contiguous row updates and one read per output element, not a
   scatter over every full element */
static void write_project(wr *x, const char *src, const char *dst, long dst_off, int rows, int cols, int trow, int tcol)
{
    const em_model *em = x->cx->em;
    ew_writer *w = x->cx->w;
    const int nv = em->nv_user, nvf = em->nv, urows = trow ? nv : rows, ucols = tcol ? tcol * nv : cols;
    const int nfol = nvf - nv;
    char wt[96];
    for (int blk = 0; blk < tcol && nfol > 0; blk++)
        ew_printf(w, "    for (int f = 0; f < %d; f++)\n        for (int r = 0; r < %d; r++)\n"
                     "            %s[r * %d + %d + grid_cfull_[grid_cv_[grid_cfol_[f]]]] += %s * %s[r * %d + %d + grid_cfol_[f]];\n",
                  nfol, rows, src, cols, blk * nvf, weight(x, "grid_cvw_[grid_cfol_[f]]", wt, sizeof wt), src, cols, blk * nvf);
    if (trow && nfol > 0)
        ew_printf(w, "    for (int f = 0; f < %d; f++)\n        for (int c = 0; c < %d; c++)\n"
                     "            %s[grid_cfull_[grid_cv_[grid_cfol_[f]]] * %d + c] += %s * %s[grid_cfol_[f] * %d + c];\n",
                  nfol, cols, src, cols, weight(x, "grid_cvw_[grid_cfol_[f]]", wt, sizeof wt), src, cols);
    /* a user column c: its leader's full column (two blocks for a gradient) */
    char col[96] = "c";
    if (tcol == 1) snprintf(col, sizeof col, "grid_cfull_[c]");
    if (tcol == 2) snprintf(col, sizeof col, "(c / %d) * %d + grid_cfull_[c %% %d]", nv, nvf, nv);
    char d[128], at[48];
    if (dst_off) snprintf(at, sizeof at, "%ld + r * %d + c", dst_off, ucols);
    else snprintf(at, sizeof at, "r * %d + c", ucols);
    if (dst) snprintf(d, sizeof d, "%s[%s]", dst, at);
    else elem(x, d, sizeof d, "out", at);
    ew_printf(w, "    for (int r = 0; r < %d; r++)\n        for (int c = 0; c < %d; c++)\n"
                 "            %s = %s[%s * %d + %s];\n",
              urows, ucols, d, src, trow ? "grid_cfull_[r]" : "r", cols, col);
}

/* the wrapper's output parameter from a local array of n elements */
static void write_output(wr *x, const char *src, int n)
{
    char d[96];
    elem(x, d, sizeof d, "out", "k");
    ew_printf(x->cx->w, "    for (int k = 0; k < %d; k++) %s = %s[k];\n", n, d, src);
}

/* the solve helper, once per translation unit and form: A (n x n, symmetric positive definite, row-major) =
   L^T D L in place on the elimination tree grid_clam_ (Featherstone's LTDL: row k's nonzeros and fill lie on k's
   ancestors), then B (n x nrhs, row-major) <- A^-1 B; work follows the tree's depth, not n^3 */
static void write_solve_helper(wr *x)
{
    ew_writer *w = x->cx->w;
    const char *T = x->vector ? "grid_vec" : "grid_real", *tag = x->vector ? "V" : "S";
    ew_printf(w, "#ifndef GRID_LTL_SOLVE_%s_\n#define GRID_LTL_SOLVE_%s_\n"
                 "%s void grid_ltl_solve_%s_(const int n, %s *A, %s *B, const int nrhs)\n{\n"
                 "    for (int k = n - 1; k >= 0; k--)\n"
                 "        for (int i = grid_clam_[k]; i >= 0; i = grid_clam_[i]) {\n"
                 "            const %s f = A[k * n + i] / A[k * n + k];\n"
                 "            for (int j = i; j >= 0; j = grid_clam_[j]) A[i * n + j] -= f * A[k * n + j];\n"
                 "            A[k * n + i] = f;\n"
                 "        }\n"
                 "    for (int c = 0; c < nrhs; c++) {\n"
                 "        for (int k = n - 1; k >= 0; k--)\n"
                 "            for (int i = grid_clam_[k]; i >= 0; i = grid_clam_[i]) B[i * nrhs + c] -= A[k * n + i] * B[k * nrhs + c];\n"
                 "        for (int k = 0; k < n; k++) B[k * nrhs + c] /= A[k * n + k];\n"
                 "        for (int k = 0; k < n; k++)\n"
                 "            for (int i = grid_clam_[k]; i >= 0; i = grid_clam_[i]) B[k * nrhs + c] -= A[k * n + i] * B[i * nrhs + c];\n"
                 "    }\n"
                 "}\n#endif\n\n",
              tag, tag, x->cx->t->state_fn, tag, T, T, T);
}

/* multiply-adds of the helper: the factorisation (per ancestor i of k, i's own depth) and per right-hand side
   the two substitutions (per ancestor) and the diagonal */
static long solve_flops(const em_model *em, int nrhs)
{
    const int *lam = em->coupled_tree;
    long factor = 0, subst = 0;
    for (int k = 0; k < em->nv_user; k++)
        for (int i = lam[k]; i >= 0; i = lam[i]) {
            subst += 2;
            factor += 2;
            for (int j = i; j >= 0; j = lam[j]) factor += 2;
        }
    return factor + (long)nrhs * (2 * subst + em->nv_user);
}

/* the call of an inner function on the wrapper's full arrays (local, contiguous) */
static void write_inner_call(wr *x, const state_spec *in, const char *out)
{
    ew_writer *w = x->cx->w;
    const char *zero = x->vector ? "qf" : "0";
    char name[96];
    snprintf(name, sizeof name, "grid_%s_%s", x->vector ? "v" : "s", in->fn);
    const char *arg[EP_NARGS] = {[EP_Q] = "qf", [EP_V] = in->reads_v ? "vf" : zero, [EP_A] = in->reads_a ? "af" : zero,
                                 [EP_F] = in->reads_fext ? "ff" : zero, [EP_G] = in->reads_g ? "gf" : zero,
                                 [EP_OUT] = out};
    ew_puts(w, "    ");
    emit_state_call(w, x->cx->t, x->vector, name, arg, "1");
    ew_puts(w, ";\n");
}

/* the full output o as blocks of rows x cols (row-major) and which of them are tangent coordinates (trow: the rows,
   1 or 0; tcol: the columns, in as many blocks of nv), from its shape: a dimension of nv before the last are the rows
   (the dimensions ahead of it count the blocks: dA/dq's 6 of nv x nv), a last one k nv the columns; -1 for a tangent
   dimension elsewhere (not projected yet) */
static int projection(const em_model *em, const grid_sig_arg *o, int *blocks, int *rows, int *cols, int *trow, int *tcol)
{
    const grid_sizes s = grid_sizes_of(em->nq, em->nv, em->nb, em->nee, em->nframes);
    const long long width = grid_sig_shape(o, &s, NULL);
    *blocks = 1;
    if (o->rank == 0) { /* a scalar: nothing to project */
        *rows = *cols = 1;
        *trow = *tcol = 0;
        return 0;
    }
    const grid_dim last = o->dim[o->rank - 1];
    int at = -1; /* the rows' dimension */
    for (int d = 0; d < o->rank - 1; d++)
        if (o->dim[d].sym == GRID_SYM_NV) {
            if (at >= 0 || o->dim[d].mul != 1) return -1;
            at = d;
        }
    for (int d = 0; d < at; d++) *blocks *= (int)grid_sig_dim(o->dim[d], &s);
    *trow = at >= 0;
    *tcol = last.sym == GRID_SYM_NV ? last.mul : 0;
    const long long lastw = grid_sig_dim(last, &s), bw = *blocks > 0 ? width / *blocks : 0;
    *rows = *trow ? em->nv : *tcol && lastw > 0 ? (int)(bw / lastw) : 1;
    *cols = *rows > 0 ? (int)(bw / *rows) : 0;
    /* write_project's columns are the tangent blocks themselves */
    return *tcol && *blocks > 0 && *cols != *tcol * em->nv ? -1 : 0;
}

/* is o an (nv, nv, nv) tensor (a second-order output)? */
static int is_nv3(const grid_sig_arg *o)
{
    return o->rank == 3 && o->dim[0].sym == GRID_SYM_NV && o->dim[1].sym == GRID_SYM_NV &&
           o->dim[2].sym == GRID_SYM_NV && o->dim[0].mul == 1 && o->dim[1].mul == 1 && o->dim[2].mul == 1;
}

/* ---- couplings inside one graph ---- */

int emit_coupled_in_graph(const emit_ctx *cx, const state_spec *sp)
{
    const emit_method *m = sp->m;
    if (!emit_coupled(cx) || m->coupling != COUPLE_PROJECT || m->graph || m->composite || !(m->program || m->values))
        return 0;
    const grid_signature_row *r = grid_sig_row(m->row);
    for (int k = 0; k < r->n_out; k++) {
        int blocks, rows, cols, trow, tcol;
        if (is_nv3(&r->out[k]) || projection(cx->em, &r->out[k], &blocks, &rows, &cols, &trow, &tcol) != 0) return 0;
    }
    return 1;
}

void emit_coupled_expand(const em_model *em, sym_graph *g, const sv *user, sv *full, int tangent)
{
    for (int b = 0; b < em->nb; b++) {
        const em_body *bd = &em->b[b];
        for (int k = 0; k < (tangent ? bd->nv : bd->nq); k++) {
            sv x = user[(tangent ? bd->uv : bd->uq) + (bd->mimic ? 0 : k)];
            if (bd->mimic) {
                x = sym_mul(g, sym_const(g, bd->mimic_multiplier), x);
                if (!tangent) x = sym_add(g, x, sym_const(g, bd->mimic_offset));
            }
            full[(tangent ? bd->iv : bd->iq) + k] = x;
        }
    }
}

/* the full velocity coordinate of each user one (its leader's) and of each mimic joint's leader (lead[v] = v for a
   leader), with the mimic joints' weights */
static void leaders(const em_model *em, int *cfull, int *lead, double *wt)
{
    for (int b = 0; b < em->nb; b++)
        for (int k = 0; k < em->b[b].nv; k++)
            if (!em->b[b].mimic) cfull[em->b[b].uv + k] = em->b[b].iv + k;
    for (int b = 0; b < em->nb; b++)
        for (int k = 0; k < em->b[b].nv; k++) {
            const em_body *bd = &em->b[b];
            lead[bd->iv + k] = bd->mimic ? cfull[bd->uv] : bd->iv + k;
            wt[bd->iv + k] = bd->mimic ? bd->mimic_multiplier : 1.0;
        }
}

/* write_project's fold as graph values: src (rows x cols, tcol blocks of nv columns) folded in place, each mimic
   coordinate's column and then row added into its leader's with its weight, in the full coordinates' order */
static void fold(const em_model *em, sym_graph *g, sv *src, int rows, int cols, int trow, int tcol, const int *lead,
                 const double *wt)
{
    const int nvf = em->nv;
    for (int blk = 0; blk < tcol; blk++)
        for (int f = 0; f < nvf; f++)
            for (int r = 0; f != lead[f] && r < rows; r++) {
                sv *to = &src[r * cols + blk * nvf + lead[f]];
                *to = sym_add(g, *to, sym_mul(g, sym_const(g, wt[f]), src[r * cols + blk * nvf + f]));
            }
    for (int f = 0; trow && f < nvf; f++)
        for (int c = 0; f != lead[f] && c < cols; c++) {
            sv *to = &src[lead[f] * cols + c];
            *to = sym_add(g, *to, sym_mul(g, sym_const(g, wt[f]), src[f * cols + c]));
        }
}

int emit_coupled_project(const emit_ctx *cx, const state_spec *sp, sym_graph *g, const sv *full, sv *user)
{
    const em_model *em = cx->em;
    const int nv = em->nv_user, nvf = em->nv;
    const grid_signature_row *r = grid_sig_row(sp->m->row);
    const grid_sizes fs = grid_sizes_of(em->nq, nvf, em->nb, em->nee, em->nframes),
                     us = grid_sizes_of(em->nq_user, nv, em->nb, em->nee, em->nframes);
    int *cfull = malloc((size_t)(nv + 1) * sizeof *cfull), *lead = malloc((size_t)nvf * sizeof *lead);
    double *wt = malloc((size_t)nvf * sizeof *wt);
    long largest = 1;
    for (int k = 0; k < r->n_out; k++)
        if ((long)grid_sig_shape(&r->out[k], &fs, NULL) > largest) largest = (long)grid_sig_shape(&r->out[k], &fs, NULL);
    sv *src = malloc((size_t)largest * sizeof *src);
    int rc = -1;
    if (!cfull || !lead || !wt || !src) goto done;
    leaders(em, cfull, lead, wt);
    long from = 0, to = 0;
    for (int k = 0; k < r->n_out; k++) {
        int blocks, rows, cols, trow, tcol;
        if (projection(em, &r->out[k], &blocks, &rows, &cols, &trow, &tcol) != 0) goto done;
        const long ublock = blocks > 0 ? (long)grid_sig_shape(&r->out[k], &us, NULL) / blocks : 0;
        const int urows = trow ? nv : rows, ucols = tcol ? tcol * nv : cols;
        assert(ublock == (long)urows * ucols);
        for (int b = 0; b < blocks; b++) {
            memcpy(src, full + from + (long)b * rows * cols, (size_t)rows * cols * sizeof *src);
            fold(em, g, src, rows, cols, trow, tcol, lead, wt);
            for (int i = 0; i < urows; i++)
                for (int c = 0; c < ucols; c++) {
                    const int fc = tcol ? (c / nv) * nvf + cfull[c % nv] : c;
                    user[to + (long)b * ublock + (long)i * ucols + c] = src[(trow ? cfull[i] : i) * cols + fc];
                }
        }
        from += (long)grid_sig_shape(&r->out[k], &fs, NULL);
        to += (long)grid_sig_shape(&r->out[k], &us, NULL);
    }
    rc = 0;
done:
    free(cfull);
    free(lead);
    free(wt);
    free(src);
    return rc;
}

/* the sum of a written function's stats into a wrapper's (its workspace: the largest) */
static void add_stats(sym_stats *to, const sym_stats *s)
{
    to->statements += s->statements;
    to->flops += s->flops;
    to->transcendental += s->transcendental;
    to->loads += s->loads;
    to->stores += s->stores;
    if (s->work > to->work) to->work = s->work;
}

/* full-coordinate function sp (named by the caller) of a wrapper, once per translation unit */
static int write_inner_function(const emit_ctx *ix, const state_spec *sp, int rolled, int vector, sym_stats *stats)
{
    sym_stats s = {0};
    const char *v = vector ? "v" : "s";
    ew_printf(ix->w, "#ifndef GRID_INNER_%s_%s\n#define GRID_INNER_%s_%s\n", v, sp->fn, v, sp->fn);
    if (emit_state_function(ix, sp, rolled, vector, &s) != 0) return -1;
    ew_puts(ix->w, "#endif\n\n");
    add_stats(stats, &s);
    return 0;
}

static int write_wrapper(const emit_ctx *cx, const state_spec *sp, const state_spec *inner, int n, int vector,
                         sym_stats *stats);

int emit_coupled_function(const emit_ctx *cx, const state_spec *sp, int rolled, int vector, sym_stats *stats)
{
    state_spec inner[2];
    char names[2][64];
    const int n = inner_specs(cx->em, sp, rolled, inner, names);
    emit_ctx ix = *cx;
    ix.inner = 1;
    memset(stats, 0, sizeof *stats);
    for (int k = 0; k < n; k++)
        if (write_inner_function(&ix, &inner[k], rolled, vector, stats) != 0) return -1;
    return write_wrapper(cx, sp, inner, n, vector, stats);
}

int emit_coupled_composite(const emit_ctx *cx, const state_spec *sp, const composite_inners *in, sym_stats *stats,
                           int (*composite)(const emit_ctx *, const state_spec *, const composite_inners *, int,
                                            sym_stats *))
{
    const emit_method *m = sp->m;
    emit_ctx ix = *cx;
    ix.inner = 1;
    memset(stats, 0, sizeof *stats);
    /* its callees on the full coordinates, rolled (inner_name: shared with rolled wrappers' inner functions) */
    char names[EMIT_MAX_CALLS][64], name[64];
    composite_inners full_in = *in;
    full_in.inner_work = 0;
    full_in.group = full_in.interleave = 0;
    for (int c = 0; c < m->n_callees; c++) {
        state_spec g = *emit_function_for(m->callees[c].row, m->callees[c].reads);
        inner_name(names[c], sizeof names[c], g.fn, 1);
        g.fn = full_in.fn[c] = names[c];
        sym_stats s = {0};
        if (write_inner_function(&ix, &g, 1, 0, &s) != 0) return -1;
        stats->statements += s.statements;
        if (s.work > full_in.inner_work) full_in.inner_work = s.work;
    }
    /* the composite itself on the full coordinates, then the wrapper that projects its outputs */
    state_spec full = *sp;
    snprintf(name, sizeof name, "%s_m", sp->fn);
    full.fn = name;
    sym_stats s = {0};
    if (composite(&ix, &full, &full_in, 0, &s) != 0) return -1;
    stats->flops += s.flops;
    stats->transcendental += s.transcendental;
    stats->statements += s.statements;
    stats->work = s.work;
    return write_wrapper(cx, sp, &full, 1, 0, stats);
}

/* the wrapper: the user's coordinates expanded, the inner functions called, their outputs projected (or M^-1, FD
   and ABA solved) */
static int write_wrapper(const emit_ctx *cx, const state_spec *sp, const state_spec *inner, int n, int vector,
                         sym_stats *stats)
{
    const em_model *em = cx->em;
    wr x = {cx, vector, ""};
    /* M^-1, FD and ABA without the coupled recursion (em->group_minv, em->group_aba): the dense solve of G^T M G */
    const int inverse = sp->m->coupling == COUPLE_INVERSE;
    const int group = sp->m->coupling == COUPLE_SOLVE && em->group_aba;
    const int group_minv = inverse && em->group_minv;
    const int solves = sp->m->coupling != COUPLE_PROJECT && !group && !group_minv;
    write_tables(&x);
    if (solves) write_solve_helper(&x);

    /* the wrapper: the per-state function the batch entry calls */
    ew_writer *w = cx->w;
    const char *T = vector ? "grid_vec" : "grid_real";
    const int nqf = em->nq, nvf = em->nv, nv = em->nv_user, nb = em->nb;
    if (vector)
        emit_lane_signature(cx, emit_state_qualifiers(cx), sp->fn);
    else {
        ew_printf(w, "%s void grid_s_%s", emit_state_qualifiers(cx), sp->fn);
        emit_state_params(w, cx->t);
        ew_puts(w, "\n{\n");
    }
    ew_printf(w, "    /* mimic couplings: the full coordinates (%d in q, %d in v) of the user's (%d in v) */\n", nqf, nvf, nv);
    /* (the attributes and the workspace pass through to the inner functions) */
    emit_state_unused(w, cx->t, vector, 1u << EP_FRAME | 1u << EP_RF | 1u << EP_WS, 1);
    ew_puts(w, "\n");
    ew_printf(w, "    %s qf[%d];\n", T, nqf > 0 ? nqf : 1);
    write_expand(&x, "q", 0);
    const int reads_v = sp->reads_v, reads_a = sp->reads_a && !solves && !group, reads_f = sp->reads_fext;
    if (reads_v) {
        ew_printf(w, "    %s vf[%d];\n", T, nvf);
        write_expand(&x, "v", 1);
    }
    if (reads_a) {
        ew_printf(w, "    %s af[%d];\n", T, nvf);
        write_expand(&x, "a", 1);
    }
    if (solves && n == 2 && inner[1].reads_a) {
        /* the bias reads a = 0 */
        ew_printf(w, "    %s af[%d];\n    for (int k = 0; k < %d; k++) af[k] = %s;\n", T, nvf, nvf, constant(&x, 0.0));
    }
    if (sp->reads_g) {
        /* a cotangent of tau: G g, the full coordinates' */
        ew_printf(w, "    %s gf[%d];\n", T, nvf);
        write_expand(&x, "g", 1);
    }
    if (group && !reads_f) ew_printf(w, "    %s ff[%d];\n    for (int k = 0; k < %d; k++) ff[k] = %s;\n", T,
                                     6 * nb, 6 * nb, constant(&x, 0.0));
    if (reads_f) {
        /* contiguous for the inner call */
        char f[96];
        elem(&x, f, sizeof f, "fext", "k");
        ew_printf(w, "    %s ff[%d];\n    for (int k = 0; k < %d; k++) ff[k] = %s;\n", T, 6 * nb, 6 * nb, f);
    }
    int rc = 0;
    if (group) {
        /* u on the full coordinates (a mimic joint's entry 0: the group's torque is its leader's), the recursion,
           and the user's coordinates of its accelerations */
        char u[96], d[96];
        elem(&x, u, sizeof u, "a", "k");
        elem(&x, d, sizeof d, "out", "k");
        ew_printf(w, "    %s af[%d], of[%d];\n    for (int k = 0; k < %d; k++) af[k] = %s;\n", T, nvf, nvf, nvf,
                  constant(&x, 0.0));
        ew_printf(w, "    for (int k = 0; k < %d; k++) af[grid_cfull_[k]] = %s;\n", nv, u);
        write_inner_call(&x, &inner[0], "of");
        ew_printf(w, "    for (int k = 0; k < %d; k++) %s = of[grid_cfull_[k]];\n", nv, d);
    } else if (group_minv) {
        /* already the user's matrix: on the C target into the output itself; on CUDA through a local array (the
           inner function's one stride is its inputs' too, and writing a state's rows in place measured 1.6x slower
           at 65536 states than the copy, bench/RESULTS-gpu.md run 19) */
        if (!vector && cx->t->stride_param[0]) {
            ew_printf(w, "    %s of[%d];\n", T, nv * nv > 0 ? nv * nv : 1);
            write_inner_call(&x, &inner[0], "of");
            write_output(&x, "of", nv * nv);
        } else {
            write_inner_call(&x, &inner[0], "out");
        }
    } else if (!solves) {
        /* one inner function, each of its outputs (packed, in order) projected along its tangent dimensions */
        const grid_signature_row *r = grid_sig_row(sp->m->row);
        const grid_sizes fs = grid_sizes_of(em->nq, em->nv, em->nb, em->nee, em->nframes),
                         us = grid_sizes_of(em->nq_user, em->nv_user, em->nb, em->nee, em->nframes);
        long full = 0, scratch = 0;
        for (int k = 0; k < r->n_out; k++) {
            full += (long)grid_sig_shape(&r->out[k], &fs, NULL);
            if (is_nv3(&r->out[k])) scratch = (long)nvf * nv * nv;
        }
        /* second-order tensors (4 nv^3 elements in the full coordinates: 4.2 MB a state of h1_2's) and their
           projection's scratch, and any output past EMIT_COUPLED_MAX_OUT elements, live in the workspace past the
           inner function's; other outputs in a local array */
        if (scratch || full > EMIT_COUPLED_MAX_OUT) {
            ew_printf(w, "    %s *const of = ws + %ld, *const t3 = of + %ld;\n", T, stats->work, full);
            stats->work += full + scratch;
        } else {
            ew_printf(w, "    %s of[%ld];\n", T, full > 0 ? full : 1);
        }
        write_inner_call(&x, &inner[0], "of");
        long src = 0, dst = 0;
        for (int k = 0; k < r->n_out; k++) {
            int blocks, rows, cols, trow, tcol;
            char at[48];
            const grid_sig_arg *o = &r->out[k];
            if (is_nv3(o)) {
                /* (nv, nv, nv): each row's nv x nv block projected into t3, then the rows (t3 as nv_full x nv^2) */
                const long n2f = (long)nvf * nvf, n2u = (long)nv * nv;
                char t3b[48];
                /* (one loop over the blocks: written out per block, nvcc unrolled the 57 copies of h1_2's for
                   minutes) */
                ew_printf(w, "    for (int b = 0; b < %d; b++) {\n", nvf);
                snprintf(at, sizeof at, "(of + %ld + b * %ld)", src, n2f);
                snprintf(t3b, sizeof t3b, "(t3 + b * %ld)", n2u);
                write_project(&x, at, t3b, 0, nvf, nvf, 1, 1);
                ew_puts(w, "    }\n");
                write_project(&x, "t3", NULL, dst, nvf, (int)n2u, 1, 0);
                src += (long)nvf * n2f;
                dst += (long)nv * n2u;
                continue;
            }
            if (projection(em, o, &blocks, &rows, &cols, &trow, &tcol) != 0) return -1;
            const long ublock = blocks > 0 ? (long)grid_sig_shape(&r->out[k], &us, NULL) / blocks : 0;
            for (int b = 0; b < blocks; b++) {
                const long from = src + (long)b * rows * cols;
                if (from) snprintf(at, sizeof at, "(of + %ld)", from);
                else snprintf(at, sizeof at, "of");
                write_project(&x, at, NULL, dst + b * ublock, rows, cols, trow, tcol);
            }
            src += (long)grid_sig_shape(&r->out[k], &fs, NULL);
            dst += (long)grid_sig_shape(&r->out[k], &us, NULL);
        }
    } else {
        /* M_c = G^T M G; M^-1: M_c^-1 I; FD, ABA: M_c^-1 (u - G^T rnea(q, v, 0, fext)), by the L^T D L helper */
        ew_printf(w, "    %s Mf[%d], Mc[%d];\n", T, nvf * nvf, nv * nv);
        write_inner_call(&x, &inner[0], "Mf");
        write_project(&x, "Mf", "Mc", 0, nvf, nvf, 1, 1);
        if (inverse) {
            ew_printf(w, "    %s B[%d];\n    for (int k = 0; k < %d; k++) B[k] = %s;\n", T, nv * nv, nv * nv,
                      constant(&x, 0.0));
            ew_printf(w, "    for (int k = 0; k < %d; k++) B[k * %d] = %s;\n", nv, nv + 1, constant(&x, 1.0));
            ew_printf(w, "    grid_ltl_solve_%s_(%d, Mc, B, %d);\n", vector ? "V" : "S", nv, nv);
        } else {
            char u[96];
            ew_printf(w, "    %s cf[%d], B[%d];\n", T, nvf, nv);
            write_inner_call(&x, &inner[1], "cf");
            write_project(&x, "cf", "B", 0, 1, nvf, 0, 1);
            /* u is the row's third input, passed as a */
            elem(&x, u, sizeof u, "a", "k");
            ew_printf(w, "    for (int k = 0; k < %d; k++) B[k] = %s - B[k];\n", nv, u);
            ew_printf(w, "    grid_ltl_solve_%s_(%d, Mc, B, 1);\n", vector ? "V" : "S", nv);
        }
        write_output(&x, "B", nv * (inverse ? nv : 1));
        stats->flops += solve_flops(em, inverse ? nv : 1);
    }
    ew_puts(w, "}\n\n");
    return rc;
}
