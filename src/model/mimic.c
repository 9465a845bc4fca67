/* Mimic couplings: each <mimic> joint follows an independent leader (chains resolved), and the user's q/v layout. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "robot_desc.h"

/* the joint kinds whose single coordinate can mimic or be mimicked */
static int one_coordinate(grid_joint_kind k)
{
    return k == GRID_JD_REVOLUTE || k == GRID_JD_CONTINUOUS || k == GRID_JD_PRISMATIC;
}

static const char *kind_name(grid_joint_kind k)
{
    static const char *const names[] = {"revolute", "continuous", "prismatic", "fixed", "floating", "planar",
                                        "spherical"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "unknown";
}

int grid_model_couple_mimics(grid_model *m, const grid_robot_desc *r, const grid_name_index *joints,
                             int ignore_mimic, grid_error *err)
{
    char n1[80], n2[80];
    const int nb = m->nb;
    /* the URDF joint of each body (-1: the inserted free-flyer), and the body of each URDF joint */
    int *desc = malloc((size_t)(nb > 0 ? nb : 1) * sizeof *desc);
    int *body_of = malloc((size_t)(r->njoints > 0 ? r->njoints : 1) * sizeof *body_of);
    if (!desc || !body_of) {
        free(desc);
        free(body_of);
        return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory while coupling mimic joints");
    }
    for (int j = 0; j < r->njoints; j++) body_of[j] = -1;
    for (int k = 0; k < nb; k++) {
        desc[k] = grid_name_index_find(joints, m->bodies[k].joint.name);
        if (desc[k] >= 0 && m->bodies[k].joint.type != GRID_JOINT_FREE) body_of[desc[k]] = k;
        else if (m->bodies[k].joint.type == GRID_JOINT_FREE) desc[k] = -1;
        m->bodies[k].joint.mimic = 0;
        m->bodies[k].joint.mimic_leader = -1;
        m->bodies[k].joint.mimic_multiplier = 1.0;
        m->bodies[k].joint.mimic_offset = 0.0;
    }
    int rc = GRID_OK;
    /* the kind of every URDF joint carrying a <mimic>, over the URDF's joints (a floating one has no desc[] entry,
       so the per-body checks below would never see it). A fixed joint's <mimic> is ignored, as Pinocchio and
       urdfdom do: the joint has no coordinate to couple and is merged away (talos_reduced.urdf has two). */
    for (int j = 0; j < r->njoints && rc == GRID_OK && !ignore_mimic; j++) {
        const grid_joint_desc *jd = &r->joints[j];
        if (jd->has_mimic && jd->kind != GRID_JD_FIXED && !one_coordinate(jd->kind))
            rc = grid_desc_error(err, GRID_ERR_URDF, jd->mimic_pos, "mimic", NULL,
                                 "joint '%s' is %s: only revolute, continuous and prismatic joints can mimic",
                                 grid_name_for_message(jd->name, n1, sizeof n1), kind_name(jd->kind));
    }
    /* direct leaders, checked */
    for (int k = 0; k < nb && rc == GRID_OK && !ignore_mimic; k++) {
        if (desc[k] < 0 || !r->joints[desc[k]].has_mimic) continue;
        const grid_joint_desc *jd = &r->joints[desc[k]];
        const int lj = grid_name_index_find(joints, jd->mimic_joint);
        const char *self = grid_name_for_message(jd->name, n1, sizeof n1);
        const char *lead = grid_name_for_message(jd->mimic_joint, n2, sizeof n2);
        if (lj < 0)
            rc = grid_desc_error(err, GRID_ERR_URDF, jd->mimic_pos, "mimic", NULL,
                                 "joint '%s' mimics '%s', which is not a joint of this robot", self, lead);
        else if (lj == desc[k])
            rc = grid_desc_error(err, GRID_ERR_URDF, jd->mimic_pos, "mimic", NULL, "joint '%s' mimics itself", self);
        else if (!one_coordinate(r->joints[lj].kind))
            rc = grid_desc_error(err, GRID_ERR_URDF, jd->mimic_pos, "mimic", NULL,
                                 "joint '%s' mimics '%s', a %s joint: a leader must be revolute, continuous or "
                                 "prismatic", self, lead, kind_name(r->joints[lj].kind));
        else if (!isfinite(jd->mimic_multiplier) || !isfinite(jd->mimic_offset))
            rc = grid_desc_error(err, GRID_ERR_URDF, jd->mimic_pos, "mimic", NULL,
                                 "joint '%s': multiplier and offset must be finite", self);
        else {
            grid_joint *gj = &m->bodies[k].joint;
            gj->mimic = 1;
            gj->mimic_leader = body_of[lj];
            gj->mimic_multiplier = jd->mimic_multiplier;
            gj->mimic_offset = jd->mimic_offset;
        }
    }
    /* chains: q_a = m1 (m2 q_c + o2) + o1; a cycle never reaches an independent joint */
    for (int k = 0; k < nb && rc == GRID_OK; k++) {
        grid_joint *gj = &m->bodies[k].joint;
        if (!gj->mimic) continue;
        double mult = gj->mimic_multiplier, off = gj->mimic_offset;
        int lead = gj->mimic_leader, steps = 0;
        while (m->bodies[lead].joint.mimic && steps++ <= nb) {
            const grid_joint *lj = &m->bodies[lead].joint;
            off += mult * lj->mimic_offset;
            mult *= lj->mimic_multiplier;
            lead = lj->mimic_leader;
        }
        if (steps > nb) {
            const grid_joint_desc *jd = &r->joints[desc[k]];
            rc = grid_desc_error(err, GRID_ERR_URDF, jd->mimic_pos, "mimic", NULL,
                                 "joint '%s' is part of a cycle of mimic joints: no joint of the cycle is independent",
                                 grid_name_for_message(jd->name, n1, sizeof n1));
            break;
        }
        gj->mimic_leader = lead;
        gj->mimic_multiplier = mult;
        gj->mimic_offset = off;
    }
    free(desc);
    free(body_of);
    if (rc != GRID_OK) return rc;
    /* layouts: the full coordinates in body order; the user's hold the independent joints only (a mimic's
       offsets are its leader's, written once every leader has its own) */
    int iq = 0, iv = 0, uq = 0, uv = 0;
    m->nmimic = 0;
    for (int k = 0; k < nb; k++) {
        grid_joint *gj = &m->bodies[k].joint;
        gj->iq = iq;
        gj->iv = iv;
        iq += gj->nq;
        iv += gj->nv;
        if (gj->mimic) {
            m->nmimic++;
            continue;
        }
        gj->uq = uq;
        gj->uv = uv;
        uq += gj->nq;
        uv += gj->nv;
    }
    for (int k = 0; k < nb; k++) {
        grid_joint *gj = &m->bodies[k].joint;
        if (!gj->mimic) continue;
        gj->uq = m->bodies[gj->mimic_leader].joint.uq;
        gj->uv = m->bodies[gj->mimic_leader].joint.uv;
    }
    m->nq_full = iq;
    m->nv_full = iv;
    m->nq = uq;
    m->nv = uv;
    return GRID_OK;
}
