/* Snapping model constants to exact structural zeros/ones and sanitizing names for comments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emit_model.h"

/* rotation entries, axes and lever arms closer than this to 0 or +-1 are treated as exact
   (cos(pi/2) in a URDF rpy is 6e-17, not 0); the change is far below float64 test tolerances */
#define SNAP_EPS 1e-14

static double snap_unit(double x)
{
    if (fabs(x) < SNAP_EPS) return 0.0;
    if (fabs(x - 1.0) < SNAP_EPS) return 1.0;
    if (fabs(x + 1.0) < SNAP_EPS) return -1.0;
    return x;
}

static double snap_zero(double x, double scale)
{
    return fabs(x) < SNAP_EPS * scale ? 0.0 : x;
}

void em_sanitize(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    if (!cap) return;
    if (!name) name = "";
    for (; *name && n + 1 < cap; name++) {
        char c = *name;
        int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                   c == '.' || c == ':' || c == '-' || c == ' ';
        out[n++] = keep ? c : '_';
    }
    /* a cut name ends in "..." */
    if (*name && cap > 4) {
        memcpy(out + cap - 4, "...", 3);
        n = cap - 1;
    }
    out[n] = '\0';
}

static int finite_all(const double *x, int n)
{
    for (int k = 0; k < n; k++)
        if (!isfinite(x[k])) return 0;
    return 1;
}

static void snap_transform(const grid_transform *t, double R[9], double p[3])
{
    for (int k = 0; k < 9; k++) R[k] = snap_unit(t->R[k]);
    for (int k = 0; k < 3; k++) p[k] = snap_zero(t->p[k], 1.0);
}

/* the roles of the articulated-body recursion with couplings (bench/coupled_aba_proto.py, docs/decisions.md): a mimic
   group is a one-dof leader and the joints that mimic it; it is eliminated at its leader when every other member
   lies below it, or at the body its top members hang from when that body is no member and hosts no other group.
   Any other shape leaves group_aba 0 (the dense solve of G^T M G). */
/* 1 when body k belongs to the mimic group of leader l (l itself, or a joint mimicking l's coordinate) */
static int in_group(const em_model *em, int k, int l)
{
    return k == l || (em->b[k].mimic && em->b[k].uv == em->b[l].uv);
}

static void coupling_roles(em_model *em)
{
    em->group_aba = 0;
    if (em->nmimic == 0) return;
    for (int i = 0; i < em->nb; i++) em->b[i].crole = EM_PLAIN;
    int ok = 1;
    for (int l = 0; l < em->nb && ok; l++) {
        const em_body *L = &em->b[l];
        if (L->mimic || L->nv != 1) continue;
        int followers = 0;
        for (int k = 0; k < em->nb; k++) followers += k != l && in_group(em, k, l);
        if (!followers) continue;
        /* members: l and its followers; top members: those whose parent is no member */
        int top_other = 0, host = -2;
        for (int k = 0; k < em->nb; k++) {
            const em_body *b = &em->b[k];
            if (!in_group(em, k, l)) continue;
            ok &= b->nv == 1 && b->crole == EM_PLAIN;
            const int pa = b->parent;
            if (pa >= 0 && in_group(em, pa, l)) continue;
            top_other |= k != l;
            if (host == -2) host = pa;
            else if (host != pa) ok = 0;
        }
        if (!ok) break;
        if (!top_other) {
            em->b[l].crole = EM_LEADER;
        } else {
            /* several top members (or the leader beside them): one host, no member of a group, hosting no other */
            if (host < 0 || em->b[host].mimic || em->b[host].crole != EM_PLAIN) {
                ok = 0;
                break;
            }
            em->b[host].crole = EM_HOST;
            em->b[l].crole = EM_MEMBER;
        }
        for (int k = 0; k < em->nb; k++)
            if (k != l && in_group(em, k, l)) em->b[k].crole = EM_MEMBER;
    }
    /* (a host's own group, if it leads one, was placed first: bodies are parents-first, so the check above
       refuses a host that already has a role) */
    if (!ok)
        for (int i = 0; i < em->nb; i++) em->b[i].crole = EM_PLAIN;
    em->group_aba = ok;
}

/* M^-1 by the recursion with couplings (em_model.group_minv) needs below a group member only members of its group
   (no torque enters a group from below) and, when a group hangs from a host, its leader to be a child of the host; the
   columns of that M^-1 are the user's coordinates (uc, unc, unsub: a mimic joint has none and sits past the end) */
static void coupled_columns(em_model *em)
{
    int ok = em->group_aba;
    for (int k = 0; k < em->nb; k++) {
        em_body *b = &em->b[k];
        const int pa = b->parent;
        b->uc = b->mimic ? em->nv_user : b->uv;
        b->unc = b->mimic ? 0 : b->nv;
        b->unsub = 0;
        if (pa < 0 || em->b[pa].crole != EM_MEMBER || !ok) continue;
        /* below a member: a member of the same group */
        ok = b->crole == EM_MEMBER && b->uv == em->b[pa].uv;
    }
    for (int l = 0; l < em->nb && ok; l++) {
        const em_body *L = &em->b[l];
        if (L->crole == EM_MEMBER && !L->mimic) ok = L->parent >= 0 && em->b[L->parent].crole == EM_HOST;
    }
    for (int k = em->nb - 1; k >= 0; k--) {
        em->b[k].unsub += em->b[k].unc;
        if (em->b[k].parent >= 0) em->b[em->b[k].parent].unsub += em->b[k].unsub;
    }
    em->group_minv = ok;
}

int em_model_init(em_model *em, const grid_model *m, grid_error *err)
{
    memset(em, 0, sizeof *em);
    em->m = m;
    em->nq = m->nq_full;
    em->nv = m->nv_full;
    em->nq_user = m->nq;
    em->nv_user = m->nv;
    em->nmimic = m->nmimic;
    em->nb = m->nb;
    em->nframes = m->nframes;
    em->nee = m->nee;
    em->gravity = m->gravity;
    em_sanitize(m->robot_name, em->robot, sizeof em->robot);
    if (!isfinite(m->gravity))
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "gravity is not finite");
    em->b = calloc((size_t)(m->nb > 0 ? m->nb : 1), sizeof *em->b);
    em->f = calloc((size_t)(m->nframes > 0 ? m->nframes : 1), sizeof *em->f);
    em->ee = calloc((size_t)(m->nee > 0 ? m->nee : 1), sizeof *em->ee);
    em->coupled_tree = calloc((size_t)(m->nv > 0 ? m->nv : 1), sizeof *em->coupled_tree);
    if (!em->b || !em->f || !em->ee || !em->coupled_tree || grid_model_coupled_tree(m, em->coupled_tree) != 0) {
        em_model_free(em);
        return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory preparing the model for emission");
    }
    for (int i = 0; i < m->nb; i++) {
        const grid_body *gb = &m->bodies[i];
        const grid_joint *j = &gb->joint;
        em_body *b = &em->b[i];
        char ln[64], jn[64];
        const grid_inertia *in = &gb->inertia;
        if (!finite_all(j->placement.R, 9) || !finite_all(j->placement.p, 3) || !finite_all(j->axis, 3) ||
            !isfinite(in->mass) || !finite_all(in->com, 3) || !finite_all(in->I_com, 9)) {
            em_sanitize(j->name, jn, sizeof jn);
            em_model_free(em);
            return grid_error_set(err, GRID_ERR_ARG, 0, 0, "joint '%s': a non-finite model constant", jn);
        }
        const grid_joint_model *jm = grid_joint_model_of(j->type);
        if (j->parent >= i || j->parent < -1 || !jm || j->nv != jm->nv || j->nq != jm->nq ||
            j->iq < 0 || j->iq + j->nq > m->nq_full || j->iv < 0 || j->iv + j->nv > m->nv_full ||
            j->uq < 0 || j->uq + (j->mimic ? 1 : j->nq) > m->nq || j->uv < 0 || j->uv + (j->mimic ? 1 : j->nv) > m->nv ||
            (j->mimic && (j->nq != 1 || !isfinite(j->mimic_multiplier) || !isfinite(j->mimic_offset)))) {
            em_model_free(em);
            return grid_error_set(err, GRID_ERR_ARG, 0, 0, "body %d: malformed joint (parent order or type)", i);
        }
        b->type = j->type;
        b->parent = j->parent;
        b->iq = j->iq;
        b->nq = j->nq;
        b->iv = j->iv;
        b->nv = j->nv;
        b->uq = j->uq;
        b->uv = j->uv;
        b->mimic = j->mimic;
        b->mimic_multiplier = j->mimic_multiplier;
        b->mimic_offset = j->mimic_offset;
        snap_transform(&j->placement, b->R, b->p);
        b->place_rot_identity = b->R[0] == 1 && b->R[4] == 1 && b->R[8] == 1 && b->R[1] == 0 && b->R[2] == 0 &&
                                b->R[3] == 0 && b->R[5] == 0 && b->R[6] == 0 && b->R[7] == 0;
        b->axis_k = -1;
        for (int k = 0; k < 3; k++) b->axis[k] = snap_unit(j->axis[k]);
        for (int k = 0; k < 3; k++)
            if (fabs(b->axis[k]) == 1.0 && b->axis[(k + 1) % 3] == 0.0 && b->axis[(k + 2) % 3] == 0.0)
                b->axis_k = k;
        /* motion subspace from the joint-model table, of the snapped axis */
        grid_joint_subspace(j->type, b->axis, b->S);
        /* a one-dof S that is exactly +-e_r */
        b->s_basis = -1;
        if (b->nv == 1) {
            int nz = 0;
            for (int r = 0; r < 6; r++)
                if (b->S[r] != 0.0) nz++, b->s_basis = fabs(b->S[r]) == 1.0 ? r : -1;
            if (nz != 1) b->s_basis = -1;
        }
        /* inertia: products and lever arms snapped relative to the body's scale */
        b->mass = in->mass;
        double scale = fabs(in->I_com[0]) + fabs(in->I_com[4]) + fabs(in->I_com[8]);
        for (int k = 0; k < 3; k++) b->com[k] = snap_zero(in->com[k], 1.0);
        for (int k = 0; k < 9; k++) b->Ic[k] = snap_zero(in->I_com[k], scale);
        /* keep I symmetric exactly */
        b->Ic[3] = b->Ic[1];
        b->Ic[6] = b->Ic[2];
        b->Ic[7] = b->Ic[5];
        em_sanitize(gb->name, ln, sizeof ln);
        em_sanitize(j->name, jn, sizeof jn);
        snprintf(b->label, sizeof b->label, "link '%s' (joint '%s')", ln, jn);
    }
    for (int f = 0; f < m->nframes; f++) {
        const grid_frame *gf = &m->frames[f];
        if (!finite_all(gf->placement.R, 9) || !finite_all(gf->placement.p, 3) || gf->body < -1 ||
            gf->body >= m->nb) {
            em_model_free(em);
            return grid_error_set(err, GRID_ERR_ARG, 0, 0, "frame %d: bad body or non-finite placement", f);
        }
        em->f[f].body = gf->body;
        snap_transform(&gf->placement, em->f[f].R, em->f[f].p);
    }
    for (int k = 0; k < m->nee; k++) {
        if (m->ee_frames[k] < 0 || m->ee_frames[k] >= m->nframes) {
            em_model_free(em);
            return grid_error_set(err, GRID_ERR_ARG, 0, 0, "end effector %d: bad frame id", k);
        }
        em->ee[k] = m->ee_frames[k];
    }
    coupling_roles(em);
    coupled_columns(em);
    return GRID_OK;
}

void em_model_free(em_model *em)
{
    free(em->b);
    free(em->f);
    free(em->ee);
    free(em->coupled_tree);
    em->coupled_tree = NULL;
    em->b = NULL;
    em->f = NULL;
    em->ee = NULL;
}

int em_is_ancestor(const em_model *em, int a, int b)
{
    for (int k = b; k >= 0; k = em->b[k].parent)
        if (k == a) return 1;
    return 0;
}
