/* C source templates: the macros a composite's embedded body reads, the body verbatim, and their undefinitions. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "emit_ctx.h"
#include "template.h"

void emit_tpl_begin(emit_tpl *t, ew_writer *w)
{
    t->w = w;
    t->n = 0;
}

/* the macro's name, without a function-like macro's parameters */
static void record(emit_tpl *t, const char *name)
{
    const size_t n = strcspn(name, "(");
    assert(t->n < EMIT_TPL_MAX_MACROS && n < sizeof t->names[0]);
    snprintf(t->names[t->n++], sizeof t->names[0], "%.*s", (int)n, name);
}

void emit_tpl_define(emit_tpl *t, const char *name, const char *fmt, ...)
{
    char value[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    record(t, name);
    ew_printf(t->w, "#define %s %s\n", name, value);
}

void emit_tpl_define_call(emit_tpl *t, const emit_target *tg, const char *name, const char *params, const char *callee,
                          int lanes, const char *const arg[EP_NARGS], const char *stride, const char *extra)
{
    record(t, name);
    ew_printf(t->w, "#define %s(%s) %s(", name, params, callee);
    emit_state_arglist(t->w, tg, lanes, arg, stride);
    ew_printf(t->w, "%s)\n", extra ? extra : "");
}

/* a template's text without its purpose line and the comment after it that documents the macros */
static const char *body_of(const char *file)
{
    const char *doc = strchr(file, '\n');
    const char *body = doc ? strstr(doc + 1, "*/\n") : NULL;
    assert(body); /* a purpose line, then the comment documenting the macros */
    return body ? body + 3 : file;
}

void emit_tpl_body(emit_tpl *t, const char *file) { ew_puts(t->w, body_of(file)); }

void emit_tpl_end(emit_tpl *t)
{
    for (int k = 0; k < t->n; k++) ew_printf(t->w, "#undef %s\n", t->names[k]);
    t->n = 0;
}

/* c[0] + c[1] nq + c[2] nv + c[3] nv^2 + c[4] nv^3 + c[5] nb */
static long poly(const long c[6], long nq, long nv, long nb)
{
    return c[0] + c[1] * nq + c[2] * nv + (c[3] + c[4] * nv) * nv * nv + c[5] * nb;
}

int emit_template_composite(const emit_ctx *cx, const state_spec *sp, const composite_inners *in, int vector,
                            sym_stats *stats)
{
    const emit_method *m = sp->m;
    ew_writer *w = cx->w;
    /* nv as the body sees it: at least 1 (GRID_NV_) */
    const int nv = cx->em->nv_user > 0 ? cx->em->nv_user : 1, nq = cx->em->nq_user;
    /* scalar: no lane form, no group or interleaved form (composite_groups) */
    assert(!vector && !in->group && !in->interleave && m->template && !m->composite_groups);
    (void)vector;
    const char *body = body_of(m->template);
    long statements = 0;
    for (const char *c = body; *c; c++) statements += *c == ';';
    stats->statements = statements;
    stats->flops = poly(m->template_flops, nq, nv, cx->em->nb);
    stats->transcendental = 0;
    stats->work = in->inner_work + poly(m->template_work, nq, nv, cx->em->nb);
    ew_printf(w, "/* %s: %s (a composite of its C source template) */\n", sp->fn, grid_sig_row(m->row)->doc);
    emit_tpl tp;
    emit_tpl_begin(&tp, w);
    char el[64];
    emit_elem(cx, el, sizeof el, "p", "k");
    emit_tpl_define(&tp, "GRID_NV_", "%d", nv);
    emit_tpl_define(&tp, "GRID_NV_OUT_", "%d", cx->em->nv_user);
    emit_tpl_define(&tp, "GRID_NQ_", "%d", nq);
    emit_tpl_define(&tp, "GRID_NB_", "%d", cx->em->nb);
    emit_tpl_define(&tp, "GRID_NFRAMES_", "%d", cx->em->nframes);
    emit_tpl_define(&tp, "GRID_WORK_", "%ld", in->inner_work);
    emit_tpl_define(&tp, "GRID_FLOAT32_", "%d", cx->re->is_float);
    emit_tpl_define(&tp, "GRID_SQRT_", "%s", cx->re->fn_sqrt);
    emit_tpl_define(&tp, "GRID_SIN_", "%s", cx->re->fn_sin);
    emit_tpl_define(&tp, "GRID_COS_", "%s", cx->re->fn_cos);
    /* the row it writes, for a body that several rows share */
    char method[64];
    int len = snprintf(method, sizeof method, "GRID_METHOD_");
    for (const char *s = grid_sig_row(m->row)->name; *s && len < (int)sizeof method - 2; s++)
        method[len++] = (char)(*s >= 'a' && *s <= 'z' ? *s - 32 : *s);
    snprintf(method + len, sizeof method - (size_t)len, "_");
    emit_tpl_define(&tp, method, "1");
    emit_tpl_define(&tp, "GRID_EL_(p, k)", "%s", el);
    /* for a body that reads it, the user's joints with coordinates of their own, in q order, as calls of the body's
       per-type macros (a run of one-coordinate joints as one GRID_QMAP_RUN_): GRID_QMAP_<TYPE>_(iq, iv) */
    const int qmap = strstr(body, "GRID_QMAP_BODY_") != NULL;
    if (qmap) {
        record(&tp, "GRID_QMAP_BODY_");
        ew_puts(w, "#define GRID_QMAP_BODY_");
    }
    for (int b = 0, run_q = -1, run_v = -1, run_n = 0; qmap && b <= cx->em->nb; b++) {
        const em_body *jb = b < cx->em->nb ? &cx->em->b[b] : NULL;
        const int one = jb && !jb->mimic && jb->nq == 1 && jb->nv == 1;
        if (run_n > 0 && !(one && jb->uq == run_q + run_n && jb->uv == run_v + run_n)) {
            ew_printf(w, " GRID_QMAP_RUN_(%d, %d, %d)", run_q, run_v, run_n);
            run_n = 0;
        }
        if (!jb || jb->mimic || jb->nq == 0) continue;
        if (one) {
            if (run_n == 0) run_q = jb->uq, run_v = jb->uv;
            run_n++;
            continue;
        }
        const char *kind = jb->type == GRID_JOINT_FREE ? "FREE" : jb->type == GRID_JOINT_SPHERICAL ? "SPHERICAL" : "PLANAR";
        assert(jb->type == GRID_JOINT_FREE || jb->type == GRID_JOINT_SPHERICAL || jb->type == GRID_JOINT_PLANAR);
        ew_printf(w, " GRID_QMAP_%s_(%d, %d)", kind, jb->uq, jb->uv);
    }
    if (qmap) ew_puts(w, "\n");
    /* each callee on q_ into o_ (arrays of stride 1), with the function's own frame and reference frame, and
       (GRID_CALL_<ROW>_AT_) with the frame f_ and reference frame rf_ given */
    const char *arg[EP_NARGS] = {"q_", "0", "0", "0", "0", "o_"};
    const char *arg_at[EP_NARGS] = {"q_", "0", "0", "0", "0", "o_", "f_", "rf_"};
    const char *arg_s[EP_NARGS] = {"q_", "v_", "a_", "f_", "0", "o_"};
    for (int c = 0; c < m->n_callees; c++) {
        char name[48], name_at[52], name_s[52], fn[96];
        const char *callee = grid_sig_row(m->callees[c].row)->name;
        int n = snprintf(name, sizeof name, "GRID_CALL_");
        for (const char *s = callee; *s && n < (int)sizeof name - 2; s++) name[n++] = (char)(*s >= 'a' && *s <= 'z' ? *s - 32 : *s);
        snprintf(name + n, sizeof name - (size_t)n, "_");
        snprintf(name_at, sizeof name_at, "%sAT_", name);
        snprintf(name_s, sizeof name_s, "%sS_", name);
        snprintf(fn, sizeof fn, "grid_s_%s", in->fn[c]);
        emit_tpl_define_call(&tp, cx->t, name, "q_, o_", fn, 0, arg, "1", NULL);
        emit_tpl_define_call(&tp, cx->t, name_at, "q_, o_, f_, rf_", fn, 0, arg_at, "1", NULL);
        emit_tpl_define_call(&tp, cx->t, name_s, "q_, v_, a_, f_, o_", fn, 0, arg_s, "1", NULL);
    }
    ew_printf(w, "%s void grid_s_%s", cx->t->state_fn, sp->fn);
    emit_state_params(w, cx->t);
    ew_puts(w, "\n{\n");
    /* q, the other inputs it reads, out, ws, frame and rf are the body's and its calls' (arrays through GRID_EL_) */
    const unsigned used = 1u << EP_Q | 1u << EP_OUT | 1u << EP_WS | 1u << EP_FRAME | 1u << EP_RF |
                          (unsigned)sp->reads_v << EP_V | (unsigned)sp->reads_a << EP_A |
                          (unsigned)sp->reads_fext << EP_F | (unsigned)sp->reads_g << EP_G;
    emit_state_unused(w, cx->t, 0, used, 1);
    ew_puts(w, "\n");
    ew_puts(w, body);
    ew_puts(w, "}\n");
    emit_tpl_end(&tp);
    ew_puts(w, "\n");
    return 0;
}
