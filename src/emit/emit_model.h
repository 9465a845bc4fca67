/* The model as the emitter sees it: constants snapped to exact zeros/ones, plus per-body tree facts. */
#ifndef GRID_EMIT_MODEL_H
#define GRID_EMIT_MODEL_H

#include "grid/error.h"
#include "grid/model.h"

typedef struct {
    int type;            /* grid_joint_type */
    int parent;          /* parent body, -1 = world */
    int iq, nq, iv, nv;  /* in the full coordinates */
    int uq, uv;          /* in the user's (a mimic joint: its leader's) */
    int mimic;           /* coupled: q = mimic_multiplier * q_user[uq] + mimic_offset */
    double mimic_multiplier, mimic_offset;
    int crole;           /* in the articulated-body recursion of a coupled model (em_model.group_aba): EM_PLAIN, or
                            a member of a mimic group (its leader included), the leader that eliminates the group's
                            coordinate (every other member below it), or the host body the group hangs from */
    int uc, unc, unsub;  /* columns of M^-1 with the couplings (group_minv): the user's coordinates, first, own count
                            and the subtree's; a mimic joint has none (uc = nv_user) */
    double R[9], p[3];   /* joint placement in the parent frame (snapped) */
    int place_rot_identity;
    double axis[3];      /* unit axis (snapped) */
    int axis_k;          /* 0..2 when the axis is +-e_k, else -1 */
    double S[36];        /* motion subspace, 6 x nv row-major */
    int s_basis;         /* 0..5 when nv == 1 and S is +-e_k (k = s_basis), else -1 */
    double mass, com[3];
    double Ic[9];        /* rotational inertia about the centre of mass, body axes (snapped) */
    char label[160];     /* "link 'x' (joint 'y')": sanitized for a block comment */
} em_body;

enum { EM_PLAIN = 0, EM_MEMBER = 1, EM_LEADER = 2, EM_HOST = 3, EM_ROLES = 4 };

typedef struct {
    int body;            /* -1 = welded to the world */
    double R[9], p[3];   /* placement in the body (or world) frame (snapped) */
} em_frame;

typedef struct {
    const grid_model *m;
    int nq, nv, nb, nframes, nee;  /* nq, nv: the full coordinates the algorithms run on */
    int nq_user, nv_user, nmimic;  /* the user's widths (== nq, nv without coupled mimic joints) */
    double gravity;      /* signed, along world z */
    em_body *b;
    em_frame *f;
    int *ee;             /* nee frame ids */
    int *coupled_tree;   /* nv_user parents: the elimination tree of G^T M G (grid_model_coupled_tree) */
    int group_aba;       /* 1: every mimic group hangs from one body (its leader, or a host carrying no other
                            group), so FD and ABA run the articulated-body recursion with couplings (crole) */
    int group_minv;      /* 1: group_aba, below a member only members of its group, and a hosted group's leader a
                            child of its host: M^-1 runs the recursion with couplings on the user's columns */
    char robot[96];      /* sanitized robot name */
} em_model;

/* build the emitter's view of m; GRID_ERR_ARG on a non-finite constant, GRID_ERR_NOMEM */
int em_model_init(em_model *em, const grid_model *m, grid_error *err);
void em_model_free(em_model *em);

/* copy an untrusted name into out as comment-safe text: [A-Za-z0-9_.:-] and space kept, the rest '_',
   at most cap - 1 characters (with "..." when cut) */
void em_sanitize(const char *name, char *out, size_t cap);

/* 1 when body a is an ancestor of (or equal to) body b */
int em_is_ancestor(const em_model *em, int a, int b);

#endif
