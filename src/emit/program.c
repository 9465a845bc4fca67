/* The two schedules of an algorithm program: loops run at emit time (unrolled) or written out as C loops over step functions (rolled). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "program.h"
#include "emit_ctx.h"

typedef struct {
    char name[16];
    int width, per_body;
    long offset;   /* rolled: first real in the workspace */
    sv *val;       /* unrolled: slots x width values */
} ep_buf;

/* what a rolled step's array is: a workspace buffer slot, an input, the output, the body table */
enum { EP_MAX_VIEWS = 7 }; /* distinct views of the output (ep_out_view; a 3-bit part of the output arrays' keys) */
enum { ACC_BUF, ACC_IN, ACC_OUT, ACC_TABLE, ACC_BUFK, ACC_BUF_AT, ACC_FRAME, ACC_BUF_COL };

typedef struct {
    int what, id, var, rel;        /* id: buffer or input array, or ACC_OUT's index key (out_key) */
    int arr;                       /* the array in the step graph */
    sv *cache;                     /* ACC_BUF: values written in this step */
    unsigned char *set;
} ep_acc;

struct ep_prog {
    const em_model *em;
    ek_kin *k;
    int rolled;
    int lanes;                /* rolled on lane vectors (EP_ROLLED_LANES): steps take grid_vec arrays */
    char fn[48];
    const sv *in[EP_OUT];
    sv *res;
    const sym_style *st;
    const emit_target *t;
    ew_writer *steps;
    ep_buf buf[EP_MAX_BUFFERS];
    int nbuf;
    long ws;
    int xbuf;                 /* rolled: the liMi buffer (-1 until used) */
    int kin_done, kin_loop;   /* rolled: every liMi stored / the current forward loop stores them */
    int depth;                /* loops open: 0 none, 1 bodies, 2 and 3 an ancestors or columns loop inside */
    struct { int backward, from_self, started, pos, cols; } L[EP_MAX_DEPTH];  /* cols: an EP_COLS_* range, -1: ancestors */
    int deep;                 /* rolled: a loop of m has been opened (its steps take m and cm) */
    char chain_start[64];     /* rolled: a chain loop's first body (C text); "" for a bodies loop */
    int kinds[2 * GRID_JOINT_NTYPES * EM_ROLES], nkinds;  /* rolled: the kinds the loops switch over */
    int roles;                /* the kinds include the bodies' coupling roles (ep_coupling_roles) */
    int cur_kind[EP_MAX_DEPTH];   /* rolled: the kind of i, j and m in this iteration */
    int cur_body[EP_MAX_DEPTH];   /* unrolled: the body of i, j and m */
    int cur_child[EP_MAX_DEPTH];  /* unrolled: the child of j (m) on the path from i (j) */
    int cur_col;              /* unrolled: k of a columns loop */
    sym_graph *sg;            /* rolled: the current step's graph (NULL between steps) */
    ep_acc *acc;              /* rolled: the current step's arrays (grown: one per fixed body a step addresses) */
    int nacc, acccap;
    ek_body view[EP_MAX_DEPTH];
    int have_view[EP_MAX_DEPTH];
    sxf X[2 * EP_MAX_DEPTH];
    int have_X[2 * EP_MAX_DEPTH]; /* i, j, m, then the child of each */
    ew_writer skel;           /* rolled: the per-state body */
    int nsteps, fail;
    int inner;                /* rolled: the current step runs inside a columns or ancestors loop */
    int apart;                /* rolled: the steps on either side of an ep_break left to write (each a function
                                 of its own, never inlined into the loop nest) */
    int nslots;               /* rolled: slots of an EP_PER_CHAIN buffer (grid_slot_), 0 until one is declared */
    unsigned char used[EP_MAX_BUFFERS];  /* rolled: the buffers an inner step addresses (its parameters) */
    char outT[48];            /* rolled: "" or the offset (C text) of the coordinate part of the transposed output
                                 elements the step writes through its parameter outT = out + offset (out_array) */
    sym_stats stats;          /* rolled: all steps together */
    int out_rank;             /* the output's shape (ep_out_shape): rank, row-major strides, elements */
    long out_strides[GRID_MAX_RANK], out_size;
    long out_total, out_base;  /* the row's elements (every output's, packed), and where the view starts */
    int out_view;             /* the view's number (ep_out_view): part of the rolled output arrays' keys */
    int nviews;               /* the distinct views so far: base, rank and strides of each */
    long view_key[EP_MAX_VIEWS][2 + GRID_MAX_RANK];
    int ucols;                /* the columns and the matrix output are the user's coordinates (ep_user_columns) */
};

/* the column space of the columns loops and of the matrix output: the full coordinates, or the user's */
static int ncols(const ep_prog *p) { return p->ucols ? p->em->nv_user : p->em->nv; }
static int col0(const ep_prog *p, int body) { return p->ucols ? p->em->b[body].uc : p->em->b[body].iv; }
static const char *col_table(const ep_prog *p) { return p->ucols ? "grid_ivc_" : "grid_iv_"; }

/* a joint kind: 2 x joint type + 1 when the parent is the world, plus 2 x GRID_JOINT_NTYPES x the body's role in the
   coupled articulated-body recursion (EM_PLAIN = 0 for every body of a model without couplings) */
static int kind_type(int kind) { return (kind % (2 * GRID_JOINT_NTYPES)) >> 1; }
static int kind_root(int kind) { return kind & 1; }
static int kind_role(int kind) { return kind / (2 * GRID_JOINT_NTYPES); }
static int kind_of(const em_body *b, int roles)
{
    return 2 * b->type + (b->parent < 0) + (roles ? 2 * GRID_JOINT_NTYPES * b->crole : 0);
}
static int kind_nv(int kind) { return grid_joint_model_of(kind_type(kind))->nv; }

/* the sorted distinct kinds of the model's bodies, with or without their coupling roles */
static void list_kinds(ep_prog *p, int roles)
{
    p->nkinds = 0;
    for (int i = 0; i < p->em->nb; i++) {
        int kd = kind_of(&p->em->b[i], roles), seen = 0;
        for (int s = 0; s < p->nkinds; s++) seen |= p->kinds[s] == kd;
        if (!seen) p->kinds[p->nkinds++] = kd;
    }
    /* ascending, so the switch reads in a fixed order */
    for (int a = 1; a < p->nkinds; a++)
        for (int b = a; b > 0 && p->kinds[b - 1] > p->kinds[b]; b--) {
            int tmp = p->kinds[b];
            p->kinds[b] = p->kinds[b - 1];
            p->kinds[b - 1] = tmp;
        }
    p->roles = roles;
}

ep_prog *ep_new(const em_model *em, ek_kin *k, int schedule, const char *fn, const sv *const in[EP_OUT], sv *res,
                const sym_style *st, const emit_target *t, ew_writer *steps)
{
    ep_prog *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->em = em;
    p->k = k;
    p->rolled = schedule != EP_UNROLLED;
    p->lanes = schedule == EP_ROLLED_LANES;
    assert(!p->lanes || (st && st->fn_splat)); /* the lane style */
    snprintf(p->fn, sizeof p->fn, "%s", fn);
    for (int a = 0; a < EP_OUT; a++) p->in[a] = in ? in[a] : NULL;
    p->res = res;
    p->st = st;
    p->t = t;
    p->steps = steps;
    p->xbuf = -1;
    ew_init(&p->skel);
    list_kinds(p, 0);
    return p;
}

int ep_rolled(const ep_prog *p) { return p->rolled; }

void ep_coupling_roles(ep_prog *p)
{
    assert(p->depth == 0 && p->nsteps == 0 && p->em->nmimic > 0); /* (grid_kindr_ is written for coupled models) */
    list_kinds(p, 1);
}

void ep_user_columns(ep_prog *p)
{
    assert(p->em->group_minv && p->nbuf == 0);
    p->ucols = 1;
}

/* the kind a rolled loop switches on for body variable v (C text in buf): with the coupling roles only for a program
   that asked for them (the others would repeat their steps per role) */
static const char *kind_expr(const ep_prog *p, const char *v, char *buf)
{
    snprintf(buf, 96, "%s[%s]", p->roles ? "grid_kindr_" : "grid_kind_", v);
    return buf;
}

/* the rolled loop nest of a target whose per-state functions may share a state between lanes (CUDA) */
static int grouped(const ep_prog *p) { return p->rolled && p->t->group_fn[0]; }

int ep_over(const ep_prog *p, long nodes)
{
    return !p->rolled && sym_node_count(p->k->g) > nodes;
}

/* The slots of an EP_PER_CHAIN buffer (slot[b] for every body; returns how many): a body that is its parent's last
   child takes over its parent's slot, any other body the lowest slot free at its index, where a slot is busy from
   the body that took it to the end of that body's subtree (bodies are parents-first and depth-first, so a subtree
   is contiguous). A chain of n bodies has one slot. */
static int chain_slots(const em_model *em, int *slot)
{
    const size_t n = (size_t)(em->nb > 0 ? em->nb : 1);
    int *end = malloc(n * sizeof *end), *last = malloc(n * sizeof *last), *busy = malloc(n * sizeof *busy);
    int nslots = 0;
    if (end && last && busy) {
        /* each body's last child and the last body of its subtree, children first */
        for (int b = 0; b < em->nb; b++) end[b] = b, last[b] = -1;
        for (int b = em->nb - 1; b >= 0; b--) {
            const int par = em->b[b].parent;
            assert(par < b);
            if (par < 0) continue;
            if (last[par] < 0) last[par] = b;
            if (end[b] > end[par]) end[par] = end[b];
        }
        for (int b = 0; b < em->nb; b++) {
            const int par = em->b[b].parent;
            if (par >= 0 && last[par] == b) {
                slot[b] = slot[par];
                continue;
            }
            int s = 0;
            while (s < nslots && busy[s] >= b) s++;
            if (s == nslots) nslots++;
            slot[b] = s;
            busy[s] = end[b];
        }
    } else {
        nslots = -1;
    }
    free(end);
    free(last);
    free(busy);
    return nslots;
}

int ep_buffer(ep_prog *p, const char *name, int width, int per_body)
{
    assert(p->nbuf < EP_MAX_BUFFERS && width >= 0); /* 6·nv is 0 on a robot with no joints */
    if (p->nbuf == EP_MAX_BUFFERS) {
        p->fail = 1;
        return 0;
    }
    ep_buf *b = &p->buf[p->nbuf];
    snprintf(b->name, sizeof b->name, "%s", name);
    b->width = width;
    b->per_body = per_body;
    long slots = per_body ? p->em->nb : 1;
    if (per_body == EP_PER_CHAIN && p->rolled) {
        if (!p->nslots) {
            int *slot = malloc((size_t)(p->em->nb > 0 ? p->em->nb : 1) * sizeof *slot);
            p->nslots = slot ? chain_slots(p->em, slot) : -1;
            free(slot);
        }
        if (p->nslots < 0) p->fail = 1;
        slots = p->nslots > 0 ? p->nslots : 1;
    }
    if (p->rolled) {
        b->offset = p->ws;
        p->ws += slots * width;
    } else {
        b->val = calloc((size_t)(slots * width > 0 ? slots * width : 1), sizeof *b->val);
        if (!b->val) p->fail = 1;
    }
    return p->nbuf++;
}

const sv *ep_buffer_values(const ep_prog *p, int buf)
{
    assert(!p->rolled && buf >= 0 && buf < p->nbuf);
    return p->buf[buf].val;
}

/* ---- rolled steps ---- */

static sym_graph *step_graph(ep_prog *p)
{
    if (!p->sg) {
        p->sg = sym_new();
        if (!p->sg) p->fail = 1;
        p->nacc = 0;
        p->inner = p->depth >= 2;
        memset(p->used, 0, sizeof p->used);
        p->outT[0] = 0;
        memset(p->have_view, 0, sizeof p->have_view);
        memset(p->have_X, 0, sizeof p->have_X);
    }
    return p->sg;
}

/* the C text of var's body at rel (its own, its parent's, the child on the path to the enclosing variable's), and the
   short names of the three in step array names */
static const char *body_expr(int var, int rel)
{
    static const char *const e[EP_MAX_DEPTH][3] = {{"i", "grid_parent_[i]", "i"}, {"j", "grid_parent_[j]", "c"},
                                                   {"m", "grid_parent_[m]", "cm"}};
    assert(var >= 0 && var < EP_MAX_DEPTH && rel >= 0 && rel <= EP_CHILD);
    return e[var][rel];
}

static const char *body_tag(int var, int rel)
{
    static const char *const vn[EP_MAX_DEPTH][3] = {{"i", "pi", "i"}, {"j", "pj", "cj"}, {"m", "pm", "cm"}};
    return vn[var][rel];
}

/* 1 inside a columns loop (the innermost loop), whose iterations write column k only (they may run as SIMD lanes) */
static inline int in_columns(const ep_prog *p) { return p->depth >= 2 && p->L[p->depth - 1].cols >= 0; }

/* the step array of buffer id's elements at rel (C text, "" for the buffer's start): an inner step gets one
   restrict pointer per buffer (ws<id>_<name>, a parameter), so the compiler may keep the loop-invariant loads of one
   buffer in registers across stores to another; other steps address every buffer through ws */
static int buf_array(ep_prog *p, int id, const char *tag, const char *rel)
{
    const ep_buf *b = &p->buf[id];
    char ptr[24], base[64];
    if (p->inner) {
        snprintf(ptr, sizeof ptr, "ws%d_%s", id, b->name);
        snprintf(base, sizeof base, "%s", rel);
        p->used[id] = 1;
    } else {
        snprintf(ptr, sizeof ptr, "ws");
        if (rel[0]) snprintf(base, sizeof base, "%ld + %s", b->offset, rel);
        else snprintf(base, sizeof base, "%ld", b->offset);
    }
    return sym_array_at(p->sg, tag, ptr, base, 0);
}

/* ---- the output: one accessor, an element by its index along every dimension of the row's shape ---- */

/* an index's key (the non-constant parts, which name a step array): 7 bits per dimension */
static int ix_code(const ep_ix *x) { return x->kind == EP_IX_CONST ? 0 : x->kind << 4 | x->var << 2 | x->rel; }
static int out_key(const ep_prog *p, const ep_ix *ix)
{
    int key = 0;
    for (int d = 0; d < p->out_rank; d++) key |= ix_code(&ix[d]) << (7 * d);
    return key | p->out_view << (7 * GRID_MAX_RANK);
}

/* the rolled step array of the output elements whose non-constant index parts are key's: out + the sum of those
   parts times their strides (the constant parts are the elements). A column index ahead of a coordinate one (a
   transposed write) goes through a second restrict pointer, outT = out + the coordinate part: such elements are
   never those of the untransposed writes of the step, and the compiler then needs no dependence check */
static int out_array(ep_prog *p, int key)
{
    char tag[48] = "out", base[160] = "", outT[48] = "";
    int col_at = -1;
    for (int d = 0; d < p->out_rank; d++) {
        const int code = key >> (7 * d) & 127, kind = code >> 4, var = code >> 2 & 3, rel = code & 3;
        if (!code) continue;
        const long S = p->out_strides[d];
        const char *be = body_expr(var, rel);
        char term[64], scale[24] = "";
        if (S != 1) snprintf(scale, sizeof scale, " * %ld", S);
        size_t tl = strlen(tag);
        if (kind == EP_IX_COORD && col_at >= 0) {
            assert(!outT[0]); /* one transposed coordinate part */
            snprintf(outT, sizeof outT, "%s[%s]%s", col_table(p), be, scale);
            snprintf(tag + tl, sizeof tag - tl, "_T%s", body_tag(var, rel));
            continue;
        }
        if (kind == EP_IX_COORD) snprintf(term, sizeof term, "%s[%s]%s", col_table(p), be, scale);
        else if (kind == EP_IX_COL) snprintf(term, sizeof term, "k%s", scale);
        else snprintf(term, sizeof term, "%s%s", be, scale);
        if (kind == EP_IX_COL) col_at = d;
        snprintf(tag + tl, sizeof tag - tl, "_%s%s", kind == EP_IX_COL ? "k" : body_tag(var, rel), kind == EP_IX_BODY ? "b" : "");
        const size_t bl = strlen(base);
        snprintf(base + bl, sizeof base - bl, "%s%s", bl ? " + " : "", term);
    }
    if (outT[0]) {
        assert(!p->outT[0] || strcmp(p->outT, outT) == 0); /* one outT per step */
        snprintf(p->outT, sizeof p->outT, "%s", outT);
    }
    return sym_array_at(p->sg, tag, outT[0] ? "outT" : "out", base, 1);
}

/* the step array of an access, declared on first use */
static ep_acc *access(ep_prog *p, int what, int id, int var, int rel)
{
    sym_graph *g = step_graph(p);
    for (int a = 0; a < p->nacc; a++) {
        ep_acc *x = &p->acc[a];
        if (x->what == what && x->id == id && x->var == var && x->rel == rel) return x;
    }
    if (g && p->nacc == p->acccap) {
        const int cap = p->acccap ? 2 * p->acccap : 16;
        ep_acc *a = realloc(p->acc, (size_t)cap * sizeof *a);
        if (a) {
            p->acc = a;
            p->acccap = cap;
        }
    }
    if (!g || p->nacc == p->acccap) {
        p->fail = 1;
        return NULL;
    }
    ep_acc *x = &p->acc[p->nacc];
    memset(x, 0, sizeof *x);
    x->what = what;
    x->id = id;
    x->var = var;
    x->rel = rel;
    char tag[24], base[64];
    const int is_var = var >= 0 && var < EP_MAX_DEPTH && rel <= EP_CHILD;  /* a loop variable's body */
    const char *be = body_expr(is_var ? var : 0, is_var ? rel : 0);
    const char *vs = is_var ? body_tag(var, rel) : "s";
    switch (what) {
    case ACC_BUF: {
        const ep_buf *b = &p->buf[id];
        snprintf(tag, sizeof tag, "%.8s_%s", b->name, b->per_body ? vs : "s");
        if (b->per_body == EP_PER_CHAIN) snprintf(base, sizeof base, "%d * grid_slot_[%s]", b->width, be);
        else if (b->per_body) snprintf(base, sizeof base, "%d * %s", b->width, be);
        else base[0] = 0;
        x->arr = buf_array(p, id, tag, base);
        x->cache = calloc((size_t)b->width, sizeof *x->cache);
        x->set = calloc((size_t)b->width, 1);
        if (!x->cache || !x->set) p->fail = 1;
        break;
    }
    case ACC_IN: {
        static const char *const names[EP_OUT] = {"q", "v", "a", "fext", "g"};
        snprintf(tag, sizeof tag, "%s_%s", names[id], vs);
        if (id == EP_Q) snprintf(base, sizeof base, "grid_iq_[%s]", be);
        else if (id == EP_F) snprintf(base, sizeof base, "6 * %s", be);
        else snprintf(base, sizeof base, "grid_iv_[%s]", be);
        x->arr = sym_array_at(g, tag, names[id], base, 1);
        break;
    }
    case ACC_OUT:
        x->arr = out_array(p, id);
        break;
    case ACC_BUFK: {
        const ep_buf *b = &p->buf[id];
        snprintf(tag, sizeof tag, "%.8s_%sk", b->name, vs);
        /* element r of column k at r * nv + k: consecutive columns are contiguous (the loop over k vectorizes) */
        if (b->per_body == EP_PER_CHAIN) snprintf(base, sizeof base, "%d * grid_slot_[%s] + k", b->width, be);
        else if (b->per_body) snprintf(base, sizeof base, "%d * %s + k", b->width, be);
        else snprintf(base, sizeof base, "k");
        x->arr = buf_array(p, id, tag, base);
        x->cache = calloc(6, sizeof *x->cache);
        x->set = calloc(6, 1);
        if (!x->cache || !x->set) p->fail = 1;
        break;
    }
    case ACC_BUF_COL: {
        /* the columns of var's coordinates in a one-slot 6 x nv buffer: element (r, c) at r nv + c */
        const ep_buf *b = &p->buf[id];
        assert(!b->per_body && b->width == 6 * p->em->nv && !p->ucols);
        snprintf(tag, sizeof tag, "%.8s_%sc", b->name, vs);
        snprintf(base, sizeof base, "grid_iv_[%s]", be);
        x->arr = buf_array(p, id, tag, base);
        x->cache = calloc((size_t)b->width, sizeof *x->cache);
        x->set = calloc((size_t)b->width, 1);
        if (!x->cache || !x->set) p->fail = 1;
        break;
    }
    case ACC_BUF_AT: {
        /* var holds the body (>= 0) or EP_BODY_FRAME */
        const ep_buf *b = &p->buf[id];
        assert(b->per_body != EP_PER_CHAIN);
        if (var == EP_BODY_FRAME) snprintf(tag, sizeof tag, "%.8s_f", b->name);
        else snprintf(tag, sizeof tag, "%.8s_b%d", b->name, var);
        if (var == EP_BODY_FRAME) snprintf(base, sizeof base, "%d * grid_frame_body_[frame]", b->width);
        else if (var > 0) snprintf(base, sizeof base, "%ld", (long)b->width * var);
        else base[0] = 0;
        x->arr = buf_array(p, id, tag, base);
        x->cache = calloc((size_t)b->width, sizeof *x->cache);
        x->set = calloc((size_t)b->width, 1);
        if (!x->cache || !x->set) p->fail = 1;
        break;
    }
    case ACC_FRAME:
        x->arr = sym_array_at(g, "fp", "grid_frame_place_[frame]", "", 0);
        if (p->lanes) sym_array_broadcast(g, x->arr);
        break;
    case ACC_TABLE:
        snprintf(tag, sizeof tag, "bt_%s", vs);
        snprintf(base, sizeof base, "%d * %s", EKT_WIDTH, be);
        x->arr = sym_array_at(g, tag, "grid_body_", base, 0);
        if (p->lanes) sym_array_broadcast(g, x->arr);
        break;
    default:
        assert(0);
    }
    p->nacc++;
    return x;
}

/* write the current step as a function and its call into the loop nest */
static void step_end(ep_prog *p)
{
    sym_graph *g = p->sg;
    if (!g) return;
    /* the last value written to each buffer element, stored once */
    for (int a = 0; a < p->nacc; a++) {
        ep_acc *x = &p->acc[a];
        if (x->what != ACC_BUF && x->what != ACC_BUFK && x->what != ACC_BUF_AT && x->what != ACC_BUF_COL) continue;
        for (int e = 0; e < (x->what == ACC_BUFK ? 6 : p->buf[x->id].width); e++)
            if (x->set[e]) sym_store(g, x->arr, x->what == ACC_BUFK ? e * ncols(p) : e, x->cache[e]);
    }
    const char *r = p->t->restrict_kw, *T = p->lanes ? "grid_vec" : "grid_real";
    ew_printf(p->steps,
              "%s void grid_r%s_%s_%d(const int i, const int j, const int c, const int k, %sconst int frame, const %s *%s q, const %s *%s v, "
              "const %s *%s a, const %s *%s fext, const %s *%s g, %s *%s out",
              sym_node_count(g) > p->t->big_nodes || p->apart ? p->t->big_fn : p->inner ? p->t->inner_fn : p->t->state_fn, p->lanes ? "v" : "", p->fn, p->nsteps, p->deep ? "const int m, const int cm, " : "", T, r, T, r, T, r, T, r, T,
              r, T, r);
    if (!p->inner) ew_printf(p->steps, ", %s *%s ws", T, r);
    for (int b = 0; b < p->nbuf; b++)
        if (p->used[b]) ew_printf(p->steps, ", %s *%s ws%d_%s", T, r, b, p->buf[b].name);
    if (p->outT[0]) ew_printf(p->steps, ", %s *%s outT", T, r);
    ew_printf(p->steps, "%s)\n{\n    (void)i; (void)j; (void)c; (void)k; (void)frame; (void)q; (void)v; (void)a; (void)fext; (void)g; (void)out;%s%s%s\n",
              p->t->stride_param, p->inner ? "" : " (void)ws;", p->t->stride_param[0] ? " (void)st;" : "",
              p->deep ? " (void)m; (void)cm;" : "");
    sym_stats s;
    memset(&s, 0, sizeof s);
    if (sym_failed(g) || sym_emit(g, p->st, p->steps, &s) != 0) p->fail = 1;
    ew_puts(p->steps, "}\n\n");
    p->stats.statements += s.statements;
    p->stats.flops += s.flops;
    p->stats.transcendental += s.transcendental;
    p->stats.loads += s.loads;
    p->stats.stores += s.stores;
    /* grouped: a columns loop's step runs on every lane (its own columns), any other step on the group's first
       lane only (steps accumulate into their buffers, so they must run once); the syncs publish its stores */
    const int column_step = in_columns(p) && p->L[p->depth - 1].started;
    ew_printf(&p->skel, "%sgrid_r%s_%s_%d(i, j, c, k, %sframe, q, v, a, fext, g, out%s", grouped(p) && !column_step ? "if (gl == 0) " : "",
              p->lanes ? "v" : "", p->fn, p->nsteps, p->deep ? "m, cm, " : "", p->inner ? "" : ", ws");
    for (int b = 0; b < p->nbuf; b++)
        if (p->used[b]) ew_printf(&p->skel, ", ws + %ld", p->buf[b].offset);
    if (p->outT[0]) ew_printf(&p->skel, ", out + %s%s", p->outT, p->st->elem_scale);
    ew_printf(&p->skel, "%s);\n", p->t->stride_param[0] ? ", st" : "");
    p->nsteps++;
    if (p->apart > 0) p->apart--;
    for (int a = 0; a < p->nacc; a++) {
        free(p->acc[a].cache);
        free(p->acc[a].set);
    }
    p->nacc = 0;
    sym_free(g);
    p->sg = NULL;
    /* views and transforms belong to the graph just written */
    memset(p->have_view, 0, sizeof p->have_view);
    memset(p->have_X, 0, sizeof p->have_X);
}

/* ---- loops ---- */

void ep_bodies(ep_prog *p, int backward)
{
    assert(p->depth == 0);
    step_end(p);
    p->depth = 1;
    p->L[0].backward = backward;
    p->L[0].cols = -1;
    p->L[0].started = 0;
    p->L[0].pos = 0;
    p->kin_loop = p->rolled && !backward && !p->kin_done;
    p->chain_start[0] = 0;
}

void ep_chain(ep_prog *p, const char *start)
{
    assert(p->rolled && p->depth == 0);
    ep_bodies(p, 1);
    p->kin_loop = 0;
    snprintf(p->chain_start, sizeof p->chain_start, "%s", start);
}

void ep_break(ep_prog *p)
{
    if (!p->rolled || !p->sg) return;
    if (p->depth == 1 && p->kin_loop) (void)ep_X(p, EP_I);
    p->apart = 2;
    step_end(p);
}

void ep_raw(ep_prog *p, const char *text)
{
    assert(p->rolled && p->depth == 0);
    step_end(p);
    ew_puts(&p->skel, text);
}

/* a loop inside the innermost one, which must be a bodies or ancestors loop */
static void open_inner(ep_prog *p, int cols)
{
    const int lv = p->depth;
    assert(lv >= 1 && lv < EP_MAX_DEPTH && p->L[lv - 1].cols < 0);
    p->depth = lv + 1;
    p->L[lv].started = 0;
    p->L[lv].pos = 0;
    p->L[lv].cols = cols;
    if (cols < 0 && lv == EP_M && p->rolled) p->deep = 1;
}

void ep_ancestors(ep_prog *p, int from_self)
{
    p->L[p->depth].from_self = from_self;
    open_inner(p, -1);
}

void ep_columns(ep_prog *p, int range)
{
    assert(range >= EP_COLS_OWN && range <= EP_COLS_LATER);
    open_inner(p, range);
}

/* rolled: the bounds of a columns loop at level lv (over the body of the enclosing loop's variable) as C text */
static void column_bounds(const ep_prog *p, int lv, char *lo, char *hi, size_t cap)
{
    /* the body's first column, its own count (the kind's, or in the user's columns a table's: a mimic joint's range
       is empty, ivc = nv_user, nvc = nvsubc = 0) and its subtree's */
    const int var = lv - 1, range = p->L[lv].cols;
    const char *b = body_expr(var, EP_SELF);
    char own[24];
    if (p->ucols) snprintf(own, sizeof own, "grid_nvc_[%s]", b);
    else snprintf(own, sizeof own, "%d", kind_nv(p->cur_kind[var]));
    const char *iv = col_table(p), *sub = p->ucols ? "grid_nvsubc_" : "grid_nvsub_";
    switch (range) {
    case EP_COLS_OWN: snprintf(lo, cap, "%s[%s]", iv, b); snprintf(hi, cap, "%s[%s] + %s", iv, b, own); break;
    case EP_COLS_BELOW: snprintf(lo, cap, "%s[%s] + %s", iv, b, own); snprintf(hi, cap, "%s[%s] + %s[%s]", iv, b, sub, b); break;
    case EP_COLS_SUBTREE: snprintf(lo, cap, "%s[%s]", iv, b); snprintf(hi, cap, "%s[%s] + %s[%s]", iv, b, sub, b); break;
    case EP_COLS_LATER: snprintf(lo, cap, "%s[%s] + %s", iv, b, own); snprintf(hi, cap, "%d", ncols(p)); break;
    default: snprintf(lo, cap, "%s[%s]", iv, b); snprintf(hi, cap, "%d", ncols(p)); break;
    }
}

/* the coordinates of body b's subtree (its own included): parents come first and a subtree is contiguous,
   so the bodies after b up to the first one that is not below b */
static int subtree_nv(const em_model *em, int b)
{
    int nvsub = em->b[b].nv;
    /* in parents-first depth-first order, the first later body whose parent precedes b leaves b's subtree */
    for (int k = b + 1; k < em->nb && em->b[k].parent >= b; k++) nvsub += em->b[k].nv;
    return nvsub;
}

/* unrolled: the same bounds for body b */
static void column_range(const ep_prog *p, int b, int range, int *lo, int *hi)
{
    const em_model *em = p->em;
    const int nvsub = p->ucols ? em->b[b].unsub : subtree_nv(em, b);
    const int iv = col0(p, b), ni = p->ucols ? em->b[b].unc : em->b[b].nv;
    *lo = range == EP_COLS_BELOW || range == EP_COLS_LATER ? iv + ni : iv;
    *hi = range == EP_COLS_OWN ? iv + ni : range == EP_COLS_FROM || range == EP_COLS_LATER ? ncols(p) : iv + nvsub;
}

static int next_rolled(ep_prog *p)
{
    const int lv = p->depth - 1;
    if (lv >= 1 && p->L[lv].cols >= 0) {
        /* a columns loop: one step, the body of a C for loop over k */
        step_end(p);
        if (!p->L[lv].started) {
            char lo[64], hi[64];
            column_bounds(p, lv, lo, hi, sizeof lo);
            /* columns are independent (a step reads and writes column k only): the loop may be vectorized, or
               split over a group's lanes (lane k mod GRID_G_ always owns column k) */
            if (grouped(p))
                ew_printf(&p->skel, "GRID_GROUP_SYNC_();\nfor (k = %s + ((gl - (%s)) & (GRID_G_ - 1)); k < %s; k += GRID_G_) {\n",
                          lo, lo, hi);
            else
                ew_printf(&p->skel, "%sfor (k = %s; k < %s; k++) {\n", p->lanes ? "" : p->t->simd_loop, lo, hi);
            p->L[lv].started = 1;
            return 1;
        }
        ew_puts(&p->skel, grouped(p) ? "}\nGRID_GROUP_SYNC_();\n" : "}\n");
        p->depth = lv;
        return 0;
    }
    if (!p->L[lv].started) {
        step_end(p);
        if (lv >= 1 && !p->L[lv].from_self && kind_root(p->cur_kind[lv - 1])) {
            /* the strict ancestors of a root: none, so no steps (an iteration on kinds that cannot occur) */
            p->depth--;
            return 0;
        }
        /* grouped: each iteration ends at a sync, so that no lane overwrites a slot another still reads */
        const char *open = grouped(p) ? "{ switch" : "switch";
        char kx[96];
        if (lv == 0 && p->chain_start[0])
            ew_printf(&p->skel, "for (i = %s; i >= 0; i = grid_parent_[i]) %s (%s) {\n", p->chain_start, open,
                      kind_expr(p, "i", kx));
        else if (lv == 0)
            ew_printf(&p->skel, p->L[0].backward ? "for (i = %d; i >= 0; i--) %s (%s) {\n"
                                                 : "for (i = 0; i < %d; i++) %s (%s) {\n",
                      p->L[0].backward ? p->em->nb - 1 : p->em->nb, open, kind_expr(p, "i", kx));
        else {
            /* j over the ancestors of i (c: the child of j on the path), m over those of j (cm) */
            const char *v = body_expr(lv, EP_SELF), *c = body_expr(lv, EP_CHILD), *up = body_expr(lv - 1, EP_SELF);
            ew_printf(&p->skel, "for (%s = %s, %s = %s%s%s; %s >= 0; %s = %s, %s = grid_parent_[%s]) %s (%s) {\n", c, up,
                      v, p->L[lv].from_self ? "" : "grid_parent_[", up, p->L[lv].from_self ? "" : "]", v, c, v, v, v, open,
                      kind_expr(p, v, kx));
        }
        p->L[lv].started = 1;
        p->L[lv].pos = 0;
    } else {
        if (lv == 0 && p->kin_loop) (void)ep_X(p, EP_I);
        step_end(p);
        ew_puts(&p->skel, "break;\n");
        p->L[lv].pos++;
    }
    if (p->L[lv].pos < p->nkinds) {
        p->cur_kind[lv] = p->kinds[p->L[lv].pos];
        ew_printf(&p->skel, "case %d:\n", p->cur_kind[lv]);
        return 1;
    }
    ew_puts(&p->skel, grouped(p) ? "}\nGRID_GROUP_SYNC_();\n}\n" : "}\n");
    p->depth--;
    if (lv == 0 && p->kin_loop) {
        p->kin_done = 1;
        p->kin_loop = 0;
    }
    return 0;
}

static int next_unrolled(ep_prog *p)
{
    const em_model *em = p->em;
    const int lv = p->depth - 1;
    if (lv == 0) {
        int *pos = &p->L[0].pos;
        if (p->L[0].started) (*pos)++;
        p->L[0].started = 1;
        if (*pos >= em->nb) {
            p->depth = 0;
            return 0;
        }
        p->cur_body[EP_I] = p->L[0].backward ? em->nb - 1 - *pos : *pos;
        return 1;
    }
    if (p->L[lv].cols >= 0) {
        int lo, hi;
        column_range(p, p->cur_body[lv - 1], p->L[lv].cols, &lo, &hi);
        p->cur_col = p->L[lv].started ? p->cur_col + 1 : lo;
        p->L[lv].started = 1;
        if (p->cur_col >= hi) {
            p->depth = lv;
            return 0;
        }
        return 1;
    }
    int j;
    if (!p->L[lv].started) {
        j = p->L[lv].from_self ? p->cur_body[lv - 1] : em->b[p->cur_body[lv - 1]].parent;
        p->cur_child[lv] = p->cur_body[lv - 1];
    } else {
        p->cur_child[lv] = p->cur_body[lv];
        j = em->b[p->cur_body[lv]].parent;
    }
    p->L[lv].started = 1;
    if (j < 0) {
        p->depth = lv;
        return 0;
    }
    p->cur_body[lv] = j;
    return 1;
}

int ep_next(ep_prog *p)
{
    assert(p->depth > 0);
    return p->rolled ? next_rolled(p) : next_unrolled(p);
}

/* ---- access ---- */

sym_graph *ep_graph(ep_prog *p)
{
    return p->rolled ? step_graph(p) : p->k->g;
}

double ep_gravity(const ep_prog *p)
{
    return p->em->gravity;
}

static int body_of(const ep_prog *p, int var, int rel)
{
    assert(!p->rolled && var >= 0 && var < EP_MAX_DEPTH);
    if (rel == EP_CHILD) return var > EP_I ? p->cur_child[var] : p->cur_body[EP_I];
    int b = p->cur_body[var];
    return rel == EP_PARENT ? p->em->b[b].parent : b;
}

const ek_body *ep_body(ep_prog *p, int var)
{
    if (!p->rolled) return &p->k->view[body_of(p, var, EP_SELF)];
    (void)step_graph(p);
    if (!p->have_view[var]) {
        ep_acc *x = access(p, ACC_TABLE, 0, var, EP_SELF);
        if (x) sp_body_loaded(p->sg, x->arr, kind_type(p->cur_kind[var]), &p->view[var]);
        p->have_view[var] = 1;
    }
    return &p->view[var];
}

int ep_is_root(ep_prog *p, int var)
{
    if (!p->rolled) return p->em->b[body_of(p, var, EP_SELF)].parent < 0;
    return kind_root(p->cur_kind[var]);
}

int ep_role(ep_prog *p, int var)
{
    if (!p->rolled) return p->em->b[body_of(p, var, EP_SELF)].crole;
    assert(p->roles); /* (ep_coupling_roles first) */
    return kind_role(p->cur_kind[var]);
}

int ep_nv(ep_prog *p, int var)
{
    if (!p->rolled) return p->em->b[body_of(p, var, EP_SELF)].nv;
    return kind_nv(p->cur_kind[var]);
}

const sxf *ep_X(ep_prog *p, int var)
{
    if (!p->rolled) return &p->k->X[body_of(p, var, EP_SELF)];
    sym_graph *g = step_graph(p);
    if (p->have_X[var]) return &p->X[var];
    if (p->xbuf < 0) p->xbuf = ep_buffer(p, "X", 12, 1);
    sxf *X = &p->X[var];
    if (p->kin_loop && var == EP_I && p->depth == 1) {
        /* liMi = placement * M_J(q), stored for the later passes */
        const ek_body *b = ep_body(p, var);
        sv q[7];
        sxf XJ, P;
        const int nq = grid_joint_model_of(b->type)->nq;
        for (int e = 0; e < nq; e++) q[e] = ep_in(p, EP_Q, var, e);
        ek_joint_transform(g, b, q, &XJ);
        memcpy(P.R, b->R, sizeof P.R);
        memcpy(P.p, b->p, sizeof P.p);
        sp_xf_compose(g, &P, &XJ, X);
        for (int e = 0; e < 9; e++) ep_set(p, p->xbuf, var, EP_SELF, e, X->R[e]);
        for (int e = 0; e < 3; e++) ep_set(p, p->xbuf, var, EP_SELF, 9 + e, X->p[e]);
    } else {
        assert(p->kin_done);
        for (int e = 0; e < 9; e++) X->R[e] = ep_get(p, p->xbuf, var, EP_SELF, e);
        for (int e = 0; e < 3; e++) X->p[e] = ep_get(p, p->xbuf, var, EP_SELF, 9 + e);
    }
    p->have_X[var] = 1;
    return X;
}

const sxf *ep_X_child(ep_prog *p)
{
    const int var = p->depth - 1; /* the innermost loop's */
    assert(var >= 1 && p->L[var].cols < 0 && !p->L[var].from_self);
    if (!p->rolled) return &p->k->X[p->cur_child[var]];
    sxf *X = &p->X[EP_MAX_DEPTH + var];
    if (!p->have_X[EP_MAX_DEPTH + var]) {
        assert(p->kin_done);
        (void)step_graph(p);
        for (int e = 0; e < 9; e++) X->R[e] = ep_get(p, p->xbuf, var, EP_CHILD, e);
        for (int e = 0; e < 3; e++) X->p[e] = ep_get(p, p->xbuf, var, EP_CHILD, 9 + e);
        p->have_X[EP_MAX_DEPTH + var] = 1;
    }
    return X;
}

void ep_get_xf(ep_prog *p, int buf, int var, int rel, sxf *X)
{
    for (int e = 0; e < 9; e++) X->R[e] = ep_get(p, buf, var, rel, e);
    for (int e = 0; e < 3; e++) X->p[e] = ep_get(p, buf, var, rel, 9 + e);
}

void ep_set_xf(ep_prog *p, int buf, int var, const sxf *X)
{
    for (int e = 0; e < 9; e++) ep_set(p, buf, var, EP_SELF, e, X->R[e]);
    for (int e = 0; e < 3; e++) ep_set(p, buf, var, EP_SELF, 9 + e, X->p[e]);
}

void ep_get_sci(ep_prog *p, int buf, int var, int rel, sci *Y)
{
    Y->m = ep_get(p, buf, var, rel, 0);
    for (int e = 0; e < 3; e++) Y->h[e] = ep_get(p, buf, var, rel, 1 + e);
    for (int e = 0; e < 9; e++) Y->I[e] = ep_get(p, buf, var, rel, 4 + e);
}

void ep_set_sci(ep_prog *p, int buf, int var, int rel, const sci *Y)
{
    ep_set(p, buf, var, rel, 0, Y->m);
    for (int e = 0; e < 3; e++) ep_set(p, buf, var, rel, 1 + e, Y->h[e]);
    for (int e = 0; e < 9; e++) ep_set(p, buf, var, rel, 4 + e, Y->I[e]);
}

void ep_sci_add_to_parent(ep_prog *p, int buf, const sci *Y)
{
    assert(!ep_is_root(p, EP_I));
    sci Yp;
    ep_get_sci(p, buf, EP_I, EP_PARENT, &Yp);
    sp_sci_add(ep_graph(p), &Yp, Y);
    ep_set_sci(p, buf, EP_I, EP_PARENT, &Yp);
}

sxf ep_world_placement(ep_prog *p, int OM, int root_origin)
{
    sym_graph *g = ep_graph(p);
    const sxf *X = ep_X(p, EP_I);
    sxf o = *X;
    if (!ep_is_root(p, EP_I)) {
        sxf P;
        ep_get_xf(p, OM, EP_I, EP_PARENT, &P);
        sp_xf_compose(g, &P, X, &o);
    } else if (root_origin) {
        for (int e = 0; e < 3; e++) o.p[e] = sym_const(g, 0.0);
    }
    ep_set_xf(p, OM, EP_I, &o);
    return o;
}

void ep_body_velocity(ep_prog *p, int VEL, sv vel[6])
{
    sym_graph *g = ep_graph(p);
    const ek_body *b = ep_body(p, EP_I);
    sv qd[6], vj[6];
    for (int c = 0; c < b->nv; c++) qd[c] = ep_in(p, EP_V, EP_I, c);
    ek_joint_motion(g, b, qd, vj);
    if (ep_is_root(p, EP_I)) {
        for (int r = 0; r < 6; r++) vel[r] = vj[r];
    } else {
        sv vp[6], t[6];
        for (int r = 0; r < 6; r++) vp[r] = ep_get(p, VEL, EP_I, EP_PARENT, r);
        sp_motion_act_inv(g, ep_X(p, EP_I), vp, t);
        for (int r = 0; r < 6; r++) vel[r] = sym_add(g, t[r], vj[r]);
    }
    for (int r = 0; r < 6; r++) ep_set(p, VEL, EP_I, EP_SELF, r, vel[r]);
}

void ep_zero_output(ep_prog *p)
{
    const long nout = p->out_total;
    if (!p->rolled) return;
    assert(p->depth == 0);
    step_end(p);
    if (grouped(p))
        ew_printf(&p->skel, "for (i = gl; i < %ld; i += GRID_G_) out[i%s] = 0;\nGRID_GROUP_SYNC_();\n", nout,
                  p->st->elem_scale);
    else
        ew_printf(&p->skel, "for (i = 0; i < %ld; i++) out[i%s] = %s;\n", nout, p->st->elem_scale,
                  p->lanes ? "grid_splat_(0)" : "0");
}

void ep_kinematics(ep_prog *p)
{
    if (!p->rolled || p->kin_done) return;
    for (ep_bodies(p, 0); ep_next(p);) (void)ep_X(p, EP_I);
}

void ep_mat6_to_parent(ep_prog *p, int var, const sv M[36], sv out[36])
{
    if (!p->rolled) ek_mat6_to_parent(p->k, body_of(p, var, EP_SELF), M, out);
    else sp_mat6_to_parent(step_graph(p), ep_X(p, var), M, out);
}

void ep_sci_to_parent(ep_prog *p, int var, const sci *Y, sci *out)
{
    if (!p->rolled) ek_sci_to_parent(p->k, body_of(p, var, EP_SELF), Y, out);
    else sp_sci_to_parent(step_graph(p), ep_X(p, var), Y, out);
}

static sv *slot(ep_prog *p, int buf, int var, int rel, int k)
{
    const ep_buf *b = &p->buf[buf];
    assert(k >= 0 && k < b->width);
    int s = 0;
    if (b->per_body) {
        s = body_of(p, var, rel);
        assert(s >= 0);
    }
    return &b->val[(size_t)s * (size_t)b->width + (size_t)k];
}

sv ep_get(ep_prog *p, int buf, int var, int rel, int k)
{
    if (p->fail) return 0;
    if (!p->rolled) return *slot(p, buf, var, rel, k);
    ep_acc *x = access(p, ACC_BUF, buf, p->buf[buf].per_body ? var : -1, p->buf[buf].per_body ? rel : 0);
    if (!x) return 0;
    return x->set[k] ? x->cache[k] : sym_input(p->sg, x->arr, k);
}


void ep_set(ep_prog *p, int buf, int var, int rel, int k, sv val)
{
    assert(!in_columns(p));
    if (p->fail) return;
    if (!p->rolled) {
        *slot(p, buf, var, rel, k) = val;
        return;
    }
    ep_acc *x = access(p, ACC_BUF, buf, p->buf[buf].per_body ? var : -1, p->buf[buf].per_body ? rel : 0);
    if (!x) return;
    x->cache[k] = val;
    x->set[k] = 1;
}

sv ep_getk(ep_prog *p, int buf, int var, int rel, int r)
{
    assert(in_columns(p) && r >= 0 && r < 6);
    if (p->fail) return 0;
    if (!p->rolled) return *slot(p, buf, var, rel, r * ncols(p) + p->cur_col);
    ep_acc *x = access(p, ACC_BUFK, buf, var, rel);
    if (!x) return 0;
    return x->set[r] ? x->cache[r] : sym_input(p->sg, x->arr, r * ncols(p));
}

void ep_setk(ep_prog *p, int buf, int var, int rel, int r, sv val)
{
    assert(in_columns(p) && r >= 0 && r < 6);
    if (p->fail) return;
    if (!p->rolled) {
        *slot(p, buf, var, rel, r * ncols(p) + p->cur_col) = val;
        return;
    }
    ep_acc *x = access(p, ACC_BUFK, buf, var, rel);
    if (!x) return;
    x->cache[r] = val;
    x->set[r] = 1;
}

void ep_set_col(ep_prog *p, int buf, int var, int c, int r, sv val)
{
    const int nv = p->em->nv;
    assert(r >= 0 && r < 6 && c >= 0 && c < 6 && !in_columns(p));
    if (p->fail) return;
    if (!p->rolled) {
        *slot(p, buf, var, EP_SELF, r * nv + p->em->b[body_of(p, var, EP_SELF)].iv + c) = val;
        return;
    }
    ep_acc *x = access(p, ACC_BUF_COL, buf, var, EP_SELF);
    if (!x) return;
    x->cache[r * nv + c] = val;
    x->set[r * nv + c] = 1;
}

static sv *slot_at(ep_prog *p, int buf, int body, int k)
{
    const ep_buf *b = &p->buf[buf];
    assert(body >= 0 && body < p->em->nb && k >= 0 && k < b->width);
    return &b->val[(size_t)body * (size_t)b->width + (size_t)k];
}

sv ep_get_at(ep_prog *p, int buf, int body, int k)
{
    if (p->fail) return 0;
    if (!p->rolled) return *slot_at(p, buf, body, k);
    ep_acc *x = access(p, ACC_BUF_AT, buf, body, 3);
    if (!x) return 0;
    return x->set[k] ? x->cache[k] : sym_input(p->sg, x->arr, k);
}

void ep_set_at(ep_prog *p, int buf, int body, int k, sv val)
{
    if (p->fail) return;
    if (!p->rolled) {
        *slot_at(p, buf, body, k) = val;
        return;
    }
    ep_acc *x = access(p, ACC_BUF_AT, buf, body, 3);
    if (!x) return;
    x->cache[k] = val;
    x->set[k] = 1;
}

sv ep_frame_place(ep_prog *p, int k)
{
    assert(p->rolled);
    ep_acc *x = access(p, ACC_FRAME, 0, -1, 0);
    return x ? sym_input(p->sg, x->arr, k) : 0;
}

void ep_out_shape(ep_prog *p, int rank, const int *dims)
{
    assert(rank >= 1 && rank <= GRID_MAX_RANK);
    long n = 1;
    for (int d = 0; d < rank; d++) n *= dims[d];
    assert(!p->out_rank || n == p->out_total); /* a program's view has the row's elements */
    p->out_total = n;
    ep_out_view(p, 0, rank, dims);
}

void ep_out_view(ep_prog *p, long base, int rank, const int *dims)
{
    assert(rank >= 1 && rank <= GRID_MAX_RANK);
    long n = 1;
    for (int d = 0; d < rank; d++) n *= dims[d];
    assert(base >= 0 && base + n <= p->out_total);
    p->out_rank = rank;
    for (int d = rank - 1; d >= 0; d--) p->out_strides[d] = d == rank - 1 ? 1 : p->out_strides[d + 1] * dims[d + 1];
    p->out_size = n;
    p->out_base = base;
    /* the same view again (a program switching between outputs in a loop) keeps its number */
    long key[2 + GRID_MAX_RANK] = {base, rank};
    for (int d = 0; d < rank; d++) key[2 + d] = p->out_strides[d] * (d == 0 ? dims[0] : 1);
    int v = 0;
    while (v < p->nviews && memcmp(p->view_key[v], key, sizeof key) != 0) v++;
    assert(v < EP_MAX_VIEWS);
    if (v == p->nviews) memcpy(p->view_key[p->nviews++], key, sizeof key);
    p->out_view = v + 1;
}

/* unrolled: the element's offset */
static long out_offset(const ep_prog *p, const ep_ix *ix)
{
    long off = 0;
    for (int d = 0; d < p->out_rank; d++) {
        const ep_ix *x = &ix[d];
        long at = x->add;
        if (x->kind == EP_IX_COORD) at += col0(p, body_of(p, x->var, x->rel));
        else if (x->kind == EP_IX_COL) at += p->cur_col;
        else if (x->kind == EP_IX_BODY) at += body_of(p, x->var, x->rel);
        off += at * p->out_strides[d];
    }
    assert(off >= 0 && off < p->out_size);
    return p->out_base + off;
}

/* rolled: the step array and the element */
static ep_acc *out_access(ep_prog *p, const ep_ix *ix, int *elem)
{
    long e = 0;
    for (int d = 0; d < p->out_rank; d++) {
        assert(ix[d].kind != EP_IX_COL || in_columns(p));
        e += ix[d].add * p->out_strides[d];
    }
    *elem = (int)(p->out_base + e);
    return access(p, ACC_OUT, out_key(p, ix), -1, 0);
}

void ep_out_at(ep_prog *p, const ep_ix *ix, int rank, sv val)
{
    assert(rank == p->out_rank);
    (void)rank;
    if (p->fail) return;
    if (!p->rolled) {
        p->res[out_offset(p, ix)] = val;
        return;
    }
    int e;
    ep_acc *x = out_access(p, ix, &e);
    if (x) sym_store(p->sg, x->arr, e, val);
}

sv ep_out_get_at(ep_prog *p, const ep_ix *ix, int rank)
{
    assert(rank == p->out_rank);
    (void)rank;
    if (p->fail) return 0;
    if (!p->rolled) return p->res[out_offset(p, ix)];
    int e;
    ep_acc *x = out_access(p, ix, &e);
    return x ? sym_input(p->sg, x->arr, e) : 0;
}

sv ep_in(ep_prog *p, int array, int var, int k)
{
    assert(array >= EP_Q && array < EP_OUT);
    if (!p->rolled) {
        const em_body *b = &p->em->b[body_of(p, var, EP_SELF)];
        const sv *x = p->in[array];
        if (!x) return sym_const(p->k->g, 0.0);
        int off = array == EP_Q ? b->iq : array == EP_F ? 6 * body_of(p, var, EP_SELF) : b->iv;
        return x[off + k];
    }
    ep_acc *x = access(p, ACC_IN, array, var, EP_SELF);
    return x ? sym_input(p->sg, x->arr, k) : 0;
}

void ep_mirror_upper(ep_prog *p)
{
    const int nv = p->em->nv;
    if (!p->rolled) {
        for (int r = 0; r < nv; r++)
            for (int c = 0; c < r; c++) p->res[r * nv + c] = p->res[c * nv + r];
        return;
    }
    assert(p->depth == 0);
    step_end(p);
    if (grouped(p))
        ew_printf(&p->skel, "GRID_GROUP_SYNC_();\nfor (k = gl; k < %d; k += GRID_G_) {\n    i = k / %d;\n    j = k %% %d;\n"
                            "    if (j < i) out[(i * %d + j)%s] = out[(j * %d + i)%s];\n}\nGRID_GROUP_SYNC_();\n",
                  nv * nv, nv, nv, nv, p->st->elem_scale, nv, p->st->elem_scale);
    else
        ew_printf(&p->skel, "for (i = 1; i < %d; i++) for (j = 0; j < i; j++) out[(i * %d + j)%s] = out[(j * %d + i)%s];\n", nv, nv,
                  p->st->elem_scale, nv, p->st->elem_scale);
}

void ep_comment(ep_prog *p, const char *what)
{
    if (!p->rolled) {
        int var = p->depth - 1; /* the innermost body variable's */
        while (var > 0 && p->L[var].cols >= 0) var--;
        ek_body_comment(p->k->g, p->em, p->cur_body[var], what);
    } else {
        sym_comment(step_graph(p), "/* %s */", what);
    }
}

int ep_finish(ep_prog *p, ew_writer *w, long *work, sym_stats *stats)
{
    assert(p->depth == 0);
    if (p->rolled) {
        step_end(p);
        ew_puts(w, "    int i = 0, j = 0, c = 0, k = 0;\n    (void)i; (void)j; (void)c; (void)k;\n");
        if (p->deep) ew_puts(w, "    int m = 0, cm = 0;\n    (void)m; (void)cm;\n");
        /* the loop nest, indented */
        const char *s = p->skel.buf ? p->skel.buf : "";
        while (*s) {
            const char *e = strchr(s, '\n');
            size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
            ew_puts(w, "    ");
            ew_putn(w, s, n);
            s += n;
        }
        if (stats) *stats = p->stats;
    }
    if (work) *work = p->rolled ? p->ws : 0;
    return (p->fail || p->skel.oom) ? -1 : 0;
}

void ep_free(ep_prog *p)
{
    if (!p) return;
    for (int a = 0; a < p->nacc; a++) {
        free(p->acc[a].cache);
        free(p->acc[a].set);
    }
    free(p->acc);
    sym_free(p->sg);
    for (int b = 0; b < p->nbuf; b++) free(p->buf[b].val);
    ew_free(&p->skel);
    free(p);
}

void ep_write_tables(const em_model *em, ew_writer *w, const sym_style *st, const char *qual)
{
    const int nb = em->nb > 0 ? em->nb : 1;
    /* subtree coordinates, children first: O(nb) */
    int *nvsub = calloc((size_t)nb, sizeof *nvsub), *slot = calloc((size_t)nb, sizeof *slot);
    if (!nvsub || !slot) {
        free(nvsub);
        free(slot);
        w->oom = 1;
        return;
    }
    for (int i = em->nb - 1; i >= 0; i--) {
        nvsub[i] += em->b[i].nv;
        if (em->b[i].parent >= 0) nvsub[em->b[i].parent] += nvsub[i];
    }
    ew_printf(w, "#ifndef GRID_MODEL_TABLES_\n#define GRID_MODEL_TABLES_\n"
                 "/* the model tables of the rolled schedule, bodies parents-first (nb = %d) */\n", em->nb);
    const char *names[7] = {"grid_parent_", "grid_kind_", "grid_iq_", "grid_iv_", "grid_nvsub_", "grid_slot_", "grid_kindr_"};
    const char *what[7] = {"parent body, -1 = the world", "2 x joint type + 1 when the parent is the world",
                           "first coordinate in q", "first coordinate in v", "coordinates of the subtree (the body's own included)",
                           "slot in a buffer shared along chains (EP_PER_CHAIN)",
                           "grid_kind_ + 2 x joint types x the role in the coupled recursion (ep_coupling_roles)"};
    if (chain_slots(em, slot) < 0) {
        free(nvsub);
        free(slot);
        w->oom = 1;
        return;
    }
    for (int t = 0; t < (em->nmimic > 0 ? 7 : 6); t++) {
        ew_printf(w, "%s int %s[%d] = { /* %s (nb) */\n   ", qual, names[t], nb, what[t]);
        for (int i = 0; i < em->nb; i++) {
            const em_body *b = &em->b[i];
            int x = t == 0 ? b->parent : t == 1 || t == 6 ? kind_of(b, t == 6) : t == 2 ? b->iq : b->iv;
            if (t == 4) x = nvsub[i];
            if (t == 5) x = slot[i];
            ew_printf(w, " %d,%s", x, i % 16 == 15 ? "\n   " : "");
        }
        ew_puts(w, em->nb ? "\n};\n" : " 0\n};\n");
    }
    ew_printf(w, "%s grid_real grid_body_[%d] = { /* per body (nb x %d): R (9) p (3) of the joint placement, axis (3), "
                 "S (6, one-dof joints), mass, com (3), Ic (9), mass * com (3), Io (9, about the origin) */\n",
              qual, nb * EKT_WIDTH, EKT_WIDTH);
    for (int i = 0; i < em->nb; i++) {
        double row[EKT_WIDTH];
        sp_body_table_row(&em->b[i], row);
        ew_printf(w, "    /* body %d */", i);
        for (int e = 0; e < EKT_WIDTH; e++) {
            ew_puts(w, " ");
            sym_write_literal(w, st, row[e]);
            ew_puts(w, ",");
        }
        ew_puts(w, "\n");
    }
    ew_puts(w, em->nb ? "};\n" : "    0\n};\n");
    if (em->group_minv) {
        /* the user's columns (ep_user_columns): first, own count, the subtree's; a mimic joint's: none, past the end */
        const char *cn[3] = {"grid_ivc_", "grid_nvc_", "grid_nvsubc_"};
        for (int t = 0; t < 3; t++) {
            ew_printf(w, "%s int %s[%d] = {", qual, cn[t], nb);
            for (int i = 0; i < em->nb; i++)
                ew_printf(w, " %d,", t == 0 ? em->b[i].uc : t == 1 ? em->b[i].unc : em->b[i].unsub);
            ew_puts(w, em->nb ? " };\n" : " 0 };\n");
        }
    }
    ew_puts(w, "#endif\n\n");
    free(nvsub);
    free(slot);
}
