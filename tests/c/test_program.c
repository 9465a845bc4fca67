/* The program layer (src/emit/program.h) on its own: small programs on a toy tree, run unrolled (folded to constants) and rolled (compiled with cc), against hand-computed values. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "grid/urdf.h"
#include "../../src/emit/emit_ctx.h"
#include "../../src/emit/emit_model.h"

/* The toy tree, bodies in order: 0 base (on the world), 1 a (on base), 2 b (on a), 3 c (on base), 4 d (on c), 5 e
   (on c); one revolute coordinate each, so nv = 6 and coordinate k is body k's */
static const char toy_urdf[] =
    "<robot name='toy'>"
    "<link name='world'/>"
    "<link name='base'><inertial><mass value='1'/><inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial></link>"
    "<link name='a'><inertial><mass value='2'/><inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial></link>"
    "<link name='b'><inertial><mass value='3'/><inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial></link>"
    "<link name='c'><inertial><mass value='4'/><inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial></link>"
    "<link name='d'><inertial><mass value='5'/><inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial></link>"
    "<link name='e'><inertial><mass value='6'/><inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial></link>"
    "<joint name='j0' type='revolute'><parent link='world'/><child link='base'/><axis xyz='0 0 1'/>"
    "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
    "<joint name='j1' type='revolute'><parent link='base'/><child link='a'/><axis xyz='0 1 0'/>"
    "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
    "<joint name='j2' type='revolute'><parent link='a'/><child link='b'/><axis xyz='1 0 0'/>"
    "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
    "<joint name='j3' type='revolute'><parent link='base'/><child link='c'/><axis xyz='0 1 0'/>"
    "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
    "<joint name='j4' type='revolute'><parent link='c'/><child link='d'/><axis xyz='1 0 0'/>"
    "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
    "<joint name='j5' type='revolute'><parent link='c'/><child link='e'/><axis xyz='0 0 1'/>"
    "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
    "</robot>";
enum { NB = 6, NV = 6 };
static const int parent[NB] = {-1, 0, 1, 0, 3, 3};

/* ---- the programs: one output of NV (vectors), NV x NV (matrices) or NV x NV x NV ---- */

/* out[i] = the depth of body i (the root: 1): a forward loop reading the parent's slot */
static int depth_program(ep_prog *p)
{
    const int D = ep_buffer(p, "depth", 1, 1);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const sv d = ep_is_root(p, EP_I) ? sym_const(g, 1.0)
                                         : sym_add(g, ep_get(p, D, EP_I, EP_PARENT, 0), sym_const(g, 1.0));
        ep_set(p, D, EP_I, EP_SELF, 0, d);
        ep_out(p, d, ep_coord(EP_I, EP_SELF, 0));
    }
    return 0;
}

/* out[i] = v_i summed over i's subtree: a backward loop handing each body's sum to its parent */
static int subtree_sum_program(ep_prog *p)
{
    const int S = ep_buffer(p, "sum", 1, 1);
    for (ep_bodies(p, 0); ep_next(p);) ep_set(p, S, EP_I, EP_SELF, 0, ep_in(p, EP_V, EP_I, 0));
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const sv s = ep_get(p, S, EP_I, EP_SELF, 0);
        ep_out(p, s, ep_coord(EP_I, EP_SELF, 0));
        if (!ep_is_root(p, EP_I)) ep_set(p, S, EP_I, EP_PARENT, 0, sym_add(g, ep_get(p, S, EP_I, EP_PARENT, 0), s));
    }
    return 0;
}

/* out[i] = v_j summed over j = i and its ancestors: an ancestors loop inside a bodies loop, accumulating in i's slot */
static int path_sum_program(ep_prog *p)
{
    const int T = ep_buffer(p, "acc", 1, 1);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        ep_set(p, T, EP_I, EP_SELF, 0, sym_const(g, 0.0));
        for (ep_ancestors(p, 1); ep_next(p);) {
            sym_graph *gj = ep_graph(p); /* (rolled: a loop's steps have graphs of their own) */
            ep_set(p, T, EP_I, EP_SELF, 0, sym_add(gj, ep_get(p, T, EP_I, EP_SELF, 0), ep_in(p, EP_V, EP_J, 0)));
        }
        ep_out(p, ep_get(p, T, EP_I, EP_SELF, 0), ep_coord(EP_I, EP_SELF, 0));
    }
    return 0;
}

/* out[r, k] = a_r for k in the subtree of the body of coordinate r, else 0: a columns loop writing a matrix */
static int subtree_matrix_program(ep_prog *p)
{
    ep_zero_output(p);
    for (ep_bodies(p, 0); ep_next(p);) {
        for (ep_columns(p, EP_COLS_SUBTREE); ep_next(p);) {
            sym_graph *g = ep_graph(p);
            ep_out(p, sym_mul(g, sym_const(g, 1.0), ep_in(p, EP_A, EP_I, 0)), ep_coord(EP_I, EP_SELF, 0), ep_col(0));
        }
    }
    return 0;
}

/* out[i, j, m] = 100 a_i + 10 a_j + a_m + 1000 a_c for j = i and its ancestors, m a strict ancestor of j and c the child
   of m on the path to j: three nested body loops, the innermost reading its child slot, into a rank-3 output */
static int ancestor_triples_program(ep_prog *p)
{
    const int A = ep_buffer(p, "a", 1, 1);
    ep_zero_output(p);
    for (ep_bodies(p, 0); ep_next(p);) ep_set(p, A, EP_I, EP_SELF, 0, ep_in(p, EP_A, EP_I, 0));
    for (ep_bodies(p, 0); ep_next(p);) {
        for (ep_ancestors(p, 1); ep_next(p);) {
            for (ep_ancestors(p, 0); ep_next(p);) {
                sym_graph *g = ep_graph(p);
                sv x = sym_mul(g, sym_const(g, 100.0), ep_in(p, EP_A, EP_I, 0));
                x = sym_add(g, x, sym_mul(g, sym_const(g, 10.0), ep_in(p, EP_A, EP_J, 0)));
                x = sym_add(g, x, ep_get(p, A, EP_M, EP_SELF, 0));
                x = sym_add(g, x, sym_mul(g, sym_const(g, 1000.0), ep_get(p, A, EP_M, EP_CHILD, 0)));
                ep_out(p, x, ep_coord(EP_I, EP_SELF, 0), ep_coord(EP_J, EP_SELF, 0), ep_coord(EP_M, EP_SELF, 0));
            }
        }
    }
    return 0;
}

/* out[i, j, k] = 10 a_i + a_j for j = i and its ancestors and k in j's subtree: a columns loop inside an ancestors
   loop, over the columns of j's subtree */
static int ancestor_columns_program(ep_prog *p)
{
    ep_zero_output(p);
    for (ep_bodies(p, 0); ep_next(p);) {
        for (ep_ancestors(p, 1); ep_next(p);) {
            for (ep_columns(p, EP_COLS_SUBTREE); ep_next(p);) {
                sym_graph *g = ep_graph(p);
                const sv x = sym_add(g, sym_mul(g, sym_const(g, 10.0), ep_in(p, EP_A, EP_I, 0)), ep_in(p, EP_A, EP_J, 0));
                ep_out(p, x, ep_coord(EP_I, EP_SELF, 0), ep_coord(EP_J, EP_SELF, 0), ep_col(0));
            }
        }
    }
    return 0;
}

typedef struct {
    const char *name;
    int (*program)(ep_prog *p);
    int rank;
} toy;

static const toy toys[] = {
    {"depth", depth_program, 1},
    {"subtree_sum", subtree_sum_program, 1},
    {"path_sum", path_sum_program, 1},
    {"subtree_matrix", subtree_matrix_program, 2},
    {"ancestor_triples", ancestor_triples_program, 3},
    {"ancestor_columns", ancestor_columns_program, 3},
};
enum { NOUT = NV * NV * NV };
static int toy_size(const toy *t) { return t->rank == 1 ? NV : t->rank == 2 ? NV * NV : NOUT; }

/* the inputs: v_k = 10^k (so every sum shows which bodies it took), a_k = k + 1 */
static void inputs(double v[NV], double a[NV])
{
    for (int k = 0; k < NV; k++) {
        v[k] = 1.0;
        for (int e = 0; e < k; e++) v[k] *= 10.0;
        a[k] = k + 1.0;
    }
}

static int in_subtree(int i, int k) /* k is i or below it */
{
    while (k > i) k = parent[k];
    return k == i;
}

/* the hand-computed answers */
static void expected(const toy *t, double *out)
{
    double v[NV], a[NV];
    inputs(v, a);
    memset(out, 0, sizeof(double) * NOUT);
    for (int i = 0; i < NB; i++) {
        if (!strcmp(t->name, "depth")) {
            int d = 0;
            for (int j = i; j >= 0; j = parent[j]) d++;
            out[i] = d;
        } else if (!strcmp(t->name, "subtree_sum")) {
            for (int k = 0; k < NB; k++) out[i] += in_subtree(i, k) ? v[k] : 0.0;
        } else if (!strcmp(t->name, "path_sum")) {
            for (int j = i; j >= 0; j = parent[j]) out[i] += v[j];
        } else if (!strcmp(t->name, "subtree_matrix")) {
            /* row i: the subtree's columns; the columns loop's ep_in(EP_A, EP_I) is body i's a: i + 1 */
            for (int k = 0; k < NB; k++) out[i * NV + k] = in_subtree(i, k) ? a[i] : 0.0;
        } else if (!strcmp(t->name, "ancestor_triples")) {
            for (int j = i; j >= 0; j = parent[j])
                for (int c = j, m = parent[j]; m >= 0; c = m, m = parent[m])
                    out[(i * NV + j) * NV + m] = 100 * a[i] + 10 * a[j] + a[m] + 1000 * a[c];
        } else {
            for (int j = i; j >= 0; j = parent[j])
                for (int k = 0; k < NB; k++) out[(i * NV + j) * NV + k] = in_subtree(j, k) ? 10 * a[i] + a[j] : 0.0;
        }
    }
}

static grid_model *model;
static em_model em;

/* the output: nv, or nv x nv */
static void toy_shape(ep_prog *p, const toy *t)
{
    const int dims[3] = {NV, NV, NV};
    ep_out_shape(p, t->rank, dims);
}

/* unrolled: constant inputs, so every output folds to a constant */
static void run_unrolled(const toy *t, double *out)
{
    sym_graph *g = sym_new();
    double v[NV], a[NV];
    inputs(v, a);
    sv q[NV], vv[NV], aa[NV], res[NOUT];
    for (int k = 0; k < NV; k++) {
        q[k] = sym_const(g, 0.1 * k);
        vv[k] = sym_const(g, v[k]);
        aa[k] = sym_const(g, a[k]);
    }
    for (int k = 0; k < NOUT; k++) res[k] = sym_const(g, 0.0);
    ek_kin k = {0};
    CHECK(ek_kin_init(&k, g, &em, q) == 0);
    const sv *in[EP_OUT] = {q, vv, aa, NULL, NULL};
    ep_prog *p = ep_new(&em, &k, EP_UNROLLED, t->name, in, res, NULL, NULL, NULL);
    if (p) toy_shape(p, t);
    CHECK(p && t->program(p) == 0 && ep_finish(p, NULL, NULL, NULL) == 0);
    ep_free(p);
    for (int i = 0; i < toy_size(t); i++) {
        double x = -1e300;
        CHECK_MSG(sym_is_const(g, res[i], &x), "%s output %d is not a constant", t->name, i);
        out[i] = x;
    }
    ek_kin_free(&k);
    sym_free(g);
}

static char tmpdir[64];

/* rolled: the tables, the steps and the loop nest as a C function grid_s_<name>, compiled and called */
static void run_rolled(const toy *t, double *out)
{
    const emit_target *tg = emit_target_get(GRID_TARGET_C);
    const emit_real *re = emit_real_get(GRID_FLOAT64);
    ew_writer w, body;
    ew_init(&w);
    ew_init(&body);
    emit_ctx cx = {&em, tg, re, {"grid_real", 0, re->fn_sqrt, re->fn_sin, re->fn_cos, re->fn_atan2, "grid_sincos_", NULL,
                                 NULL, tg->elem_scale, "    ", "fabs"},
                   {"grid_vec", 0, "grid_vsqrt_", "grid_vsin_", "grid_vcos_", "grid_vatan2_", "grid_vsincos_",
                    "grid_splat_", NULL, "", "    ", "grid_vabs_"}, &w, GRID_SCHEDULE_ROLLED, 0, 0, 0};
    ew_puts(&w, tg->includes);
    ew_puts(&w, "\ntypedef double grid_real;\n\n");
    emit_math_helpers(&cx);
    ep_write_tables(&em, &w, &cx.st, tg->model_table);
    long work = 0;
    ep_prog *p = ep_new(&em, NULL, EP_ROLLED, t->name, NULL, NULL, &cx.st, tg, &w);
    if (p) toy_shape(p, t);
    CHECK(p && t->program(p) == 0 && ep_finish(p, &body, &work, NULL) == 0);
    ep_free(p);
    ew_printf(&w, "%s void grid_s_%s", tg->state_fn, t->name);
    emit_rolled_state_params(&w, tg);
    ew_puts(&w, "\n{\n    (void)q; (void)v; (void)a; (void)fext; (void)g; (void)out; (void)frame; (void)rf; (void)ws;\n");
    ew_putn(&w, body.buf, body.len);
    ew_printf(&w, "}\n\nvoid toy_entry(const double *q, const double *v, const double *a, double *out, double *ws)\n"
                  "{\n    grid_s_%s(q, v, a, 0, 0, out, 0, 0, ws);\n}\n", t->name);
    char src[128], so[128], cmd[512];
    snprintf(src, sizeof src, "%s/%s.c", tmpdir, t->name);
    snprintf(so, sizeof so, "%s/%s.so", tmpdir, t->name);
    FILE *f = fopen(src, "w");
    CHECK(f && !w.oom);
    if (f) {
        fwrite(w.buf, 1, w.len, f);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "cc -std=gnu11 -O1 -fPIC -shared -Wall -Werror -Wno-unused-function %s -o %s -lm", src, so);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    CHECK_MSG(h != NULL, "%s", dlerror());
    void (*entry)(const double *, const double *, const double *, double *, double *) =
        h ? (void (*)(const double *, const double *, const double *, double *, double *))dlsym(h, "toy_entry") : NULL;
    CHECK(entry != NULL);
    double q[NV] = {0}, v[NV], a[NV];
    inputs(v, a);
    double *ws = calloc((size_t)(work > 0 ? work : 1), sizeof *ws);
    for (int i = 0; i < NOUT; i++) out[i] = -7.0; /* the program writes every element it owns */
    if (entry) entry(q, v, a, out, ws);
    free(ws);
    if (h) dlclose(h);
    ew_free(&w);
    ew_free(&body);
}

static void check_toy(const toy *t)
{
    double want[NOUT], got[NOUT];
    const int n = toy_size(t);
    expected(t, want);
    run_unrolled(t, got);
    for (int i = 0; i < n; i++) CHECK_MSG(got[i] == want[i], "%s unrolled [%d]: %g, want %g", t->name, i, got[i], want[i]);
    run_rolled(t, got);
    for (int i = 0; i < n; i++) CHECK_MSG(got[i] == want[i], "%s rolled [%d]: %g, want %g", t->name, i, got[i], want[i]);
}

static void test_tree_order(void)
{
    /* the toy's bodies are where the hand-computed answers assume them */
    CHECK(em.nb == NB && em.nv == NV);
    for (int i = 0; i < NB && i < em.nb; i++) CHECK_MSG(em.b[i].parent == parent[i] && em.b[i].iv == i, "body %d", i);
}
static void test_depth(void) { check_toy(&toys[0]); }
static void test_subtree_sum(void) { check_toy(&toys[1]); }
static void test_path_sum(void) { check_toy(&toys[2]); }
static void test_subtree_matrix(void) { check_toy(&toys[3]); }
static void test_ancestor_triples(void) { check_toy(&toys[4]); }
static void test_ancestor_columns(void) { check_toy(&toys[5]); }

int main(void)
{
    grid_error err;
    if (grid_urdf_load(toy_urdf, strlen(toy_urdf), NULL, &model, &err) != GRID_OK ||
        em_model_init(&em, model, &err) != GRID_OK) {
        fprintf(stderr, "toy model: %s\n", err.message);
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/grid_test_program_XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    RUN_TEST(test_tree_order);
    RUN_TEST(test_depth);
    RUN_TEST(test_subtree_sum);
    RUN_TEST(test_path_sum);
    RUN_TEST(test_subtree_matrix);
    RUN_TEST(test_ancestor_triples);
    RUN_TEST(test_ancestor_columns);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    em_model_free(&em);
    grid_model_free(model);
    return check_summary("program");
}
