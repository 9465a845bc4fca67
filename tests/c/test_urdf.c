/* Tests of the URDF parser and model builder: real robots, merged inertias, frames, end effectors, refusals. */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "grid/joints.h"
#include "grid/urdf.h"

/* tests run from the repository root */
#define DATA "tests/data/"
#define ROBOTS "../shared/robots/"

static int load_str(const char *text, const grid_model_options *opts, grid_model **m, grid_error *err)
{
    return grid_urdf_load(text, strlen(text), opts, m, err);
}

/* a load that must fail: code, line (> 0 when want_line < 0, exact when > 0, 0 ignores) and a message piece */
static void expect_fail(int rc, const grid_model *m, const grid_error *err, int code, int want_line, const char *piece)
{
    CHECK_MSG(rc == code, "rc %d (want %d): %s", rc, code, err->message);
    CHECK(err->code == code);
    CHECK(m == NULL);
    if (want_line < 0) CHECK_MSG(err->line > 0, "line %d: %s", err->line, err->message);
    if (want_line > 0) CHECK_MSG(err->line == want_line, "line %d (want %d): %s", err->line, want_line, err->message);
    CHECK_MSG(strstr(err->message, piece) != NULL, "message lacks \"%s\": %s", piece, err->message);
    CHECK_MSG(strchr(err->message, '\n') == NULL, "message has a newline: %s", err->message);
}

static void expect_file_fails(const char *file, int code, int want_line, const char *piece)
{
    char path[256];
    snprintf(path, sizeof path, DATA "%s", file);
    grid_model *m = (grid_model *)1;
    grid_error err;
    int rc = grid_urdf_load_file(path, NULL, &m, &err);
    expect_fail(rc, m, &err, code, want_line, piece);
    // the file form names the path first
    CHECK_MSG(strncmp(err.message, path, strlen(path)) == 0, "no path prefix: %s", err.message);
}

static int frame_of(const grid_model *m, const char *name)
{
    int f = grid_model_frame_index(m, name);
    CHECK_MSG(f >= 0, "no frame %s", name);
    return f;
}

/* ---- a small arm with every joint type and a fixed tool ---- */

static void test_small_arm(void)
{
    grid_model *m = NULL;
    grid_error err;
    int rc = grid_urdf_load_file(DATA "small_arm.urdf", NULL, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(strcmp(m->robot_name, "small_arm") == 0);
    CHECK(m->nq == 3 && m->nv == 3 && m->nb == 3 && m->floating_base == 0);
    CHECK_NEAR(m->gravity, -9.81, 0);

    // bodies in order, with their joints
    const char *bodies[3] = {"upper", "lower", "slider"};
    const char *joints[3] = {"shoulder", "elbow", "slide"};
    for (int k = 0; k < 3; k++) {
        CHECK(strcmp(m->bodies[k].name, bodies[k]) == 0);
        CHECK(strcmp(m->bodies[k].joint.name, joints[k]) == 0);
        CHECK(m->bodies[k].joint.parent == k - 1);
        CHECK(m->bodies[k].joint.iq == k && m->bodies[k].joint.iv == k);
        CHECK(m->bodies[k].joint.nq == 1 && m->bodies[k].joint.nv == 1);
    }
    const grid_joint *sh = &m->bodies[0].joint, *el = &m->bodies[1].joint, *sl = &m->bodies[2].joint;
    CHECK(sh->type == GRID_JOINT_REVOLUTE && !sh->continuous);
    CHECK(el->type == GRID_JOINT_REVOLUTE && el->continuous);
    CHECK(sl->type == GRID_JOINT_PRISMATIC);

    // axis "0 0 2" normalised; default axis 1 0 0 on the slide
    CHECK_NEAR(sh->axis[2], 1.0, 0);
    CHECK_NEAR(sl->axis[0], 1.0, 0);

    // limits and dynamics copied; continuous has no position limits
    CHECK(sh->has_limits && sh->lower == -1.5 && sh->upper == 1.5 && sh->effort == 10 && sh->velocity == 2);
    CHECK(sh->damping == 0.1 && sh->friction == 0.2);
    CHECK(!el->has_limits && isnan(el->lower) && isnan(el->upper) && el->effort == 5 && el->velocity == 3);
    CHECK(el->damping == 0 && el->friction == 0);
    CHECK(sl->has_limits && sl->lower == 0 && sl->upper == 0.2);

    // placements: elbow turned about x by pi/2, 0.5 up
    CHECK_NEAR(sh->placement.p[2], 0.1, 1e-15);
    CHECK_NEAR(el->placement.p[2], 0.5, 1e-15);
    CHECK_NEAR(el->placement.R[5], -1.0, 1e-15); /* R[1][2] of Rx(pi/2) */
    CHECK_NEAR(el->placement.R[7], 1.0, 1e-15);

    // inertia given in a frame turned pi/2 about z: diag(0.1, 0.2, 0.3) -> diag(0.2, 0.1, 0.3)
    const grid_inertia *up = &m->bodies[0].inertia;
    CHECK_NEAR(up->mass, 2, 0);
    CHECK_NEAR(up->com[2], 0.25, 0);
    CHECK_NEAR(up->I_com[0], 0.2, 1e-15);
    CHECK_NEAR(up->I_com[4], 0.1, 1e-15);
    CHECK_NEAR(up->I_com[8], 0.3, 1e-15);

    // slider + tool welded 0.1 up and pitched pi/2: tool com (0.1 0 0) -> (0 0 -0.1) + 0.1 = origin
    const grid_inertia *sb = &m->bodies[2].inertia;
    CHECK_NEAR(sb->mass, 1.0, 1e-15);
    for (int i = 0; i < 3; i++) CHECK_NEAR(sb->com[i], 0.0, 1e-15);
    CHECK_NEAR(sb->I_com[0], 0.011, 1e-15);
    CHECK_NEAR(sb->I_com[4], 0.011, 1e-15);
    CHECK_NEAR(sb->I_com[8], 0.011, 1e-15);

    // every link is a frame, in file order; welded links sit on the body with the fixed transforms
    CHECK(m->nframes == 6);
    int base = frame_of(m, "base"), tool = frame_of(m, "tool"), tip = frame_of(m, "tip");
    CHECK(base == 0 && tip == 5);
    CHECK(m->frames[base].body == -1 && m->frames[base].joint == NULL);
    CHECK(m->frames[tool].body == 2 && strcmp(m->frames[tool].joint, "tool_mount") == 0);
    CHECK(m->frames[tip].body == 2 && strcmp(m->frames[tip].joint, "tip_frame") == 0);
    CHECK_NEAR(m->frames[tip].placement.p[0], 0.0, 1e-15);
    CHECK_NEAR(m->frames[tip].placement.p[2], -0.1, 1e-15);
    CHECK(grid_model_frame_index(m, "nope") == -1);

    // default end effectors: the leaf body's own link frame
    CHECK(m->nee == 1 && m->ee_frames[0] == frame_of(m, "slider"));
    grid_model_free(m);
}

/* a fixed chain between the body and the moving joint below it, and an off-centre welded mass */
static void test_fixed_chain_merge(void)
{
    const char *text =
        "<robot name='r'>\n"
        "<link name='a'/>\n"
        "<link name='b'><inertial><mass value='0.5'/>"
        "<inertia ixx='0.01' ixy='0' ixz='0' iyy='0.01' iyz='0' izz='0.01'/></inertial></link>\n"
        "<link name='w'><inertial><origin xyz='0.1 0 0.05'/><mass value='0.5'/>"
        "<inertia ixx='0.001' ixy='0' ixz='0' iyy='0.001' iyz='0' izz='0.001'/></inertial></link>\n"
        "<link name='nothing'/>\n"
        "<link name='massless'><inertial><mass value='0'/>"
        "<inertia ixx='0' ixy='0' ixz='0' iyy='0' iyz='0' izz='0'/></inertial></link>\n"
        "<link name='c'/>\n"
        "<joint name='jb' type='revolute'><parent link='a'/><child link='b'/></joint>\n"
        "<joint name='fw' type='fixed'><parent link='b'/><child link='w'/>"
        "<origin xyz='0 0 0.1' rpy='0 1.5707963267948966 0'/></joint>\n"
        "<joint name='fn' type='fixed'><parent link='w'/><child link='nothing'/><origin xyz='0 0 1'/></joint>\n"
        "<joint name='fm' type='fixed'><parent link='nothing'/><child link='massless'/></joint>\n"
        "<joint name='jc' type='revolute'><parent link='massless'/><child link='c'/><origin xyz='0 2 0'/></joint>\n"
        "</robot>\n";
    grid_model *m = NULL;
    grid_error err;
    int rc = load_str(text, NULL, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(m->nb == 2);
    // w's com (0.1 0 0.05) pitched: (0.05 0 -0.1) + (0 0 0.1) = (0.05 0 0); total com (0.025 0 0)
    const grid_inertia *in = &m->bodies[0].inertia;
    CHECK_NEAR(in->mass, 1.0, 1e-15);
    CHECK_NEAR(in->com[0], 0.025, 1e-15);
    CHECK_NEAR(in->com[2], 0.0, 1e-15);
    // parallel axis: mu = 0.25, d = 0.05 along x -> +0.000625 on yy and zz
    CHECK_NEAR(in->I_com[0], 0.011, 1e-15);
    CHECK_NEAR(in->I_com[4], 0.011625, 1e-15);
    CHECK_NEAR(in->I_com[8], 0.011625, 1e-15);
    CHECK_NEAR(in->I_com[1], 0.0, 1e-15);
    // jc below the chain: placement = fw * fn * fm * own origin; fw pitches z up into x
    const grid_joint *jc = &m->bodies[1].joint;
    CHECK(jc->parent == 0);
    CHECK_NEAR(jc->placement.p[0], 1.0, 1e-15);
    CHECK_NEAR(jc->placement.p[1], 2.0, 1e-15);
    CHECK_NEAR(jc->placement.p[2], 0.1, 1e-15);
    CHECK_NEAR(jc->placement.R[2], 1.0, 1e-15);
    CHECK(m->frames[frame_of(m, "nothing")].body == 0);
    CHECK(m->nee == 1 && m->ee_frames[0] == frame_of(m, "c"));
    grid_model_free(m);
}

/* children are visited in joint-name order (Pinocchio's), not file order */
static void test_child_order(void)
{
    const char *text =
        "<robot name='r'><link name='root'/><link name='x'/><link name='y'/><link name='z'/><link name='x2'/>"
        "<joint name='c_joint' type='revolute'><parent link='root'/><child link='x'/></joint>"
        "<joint name='a_joint' type='revolute'><parent link='root'/><child link='y'/></joint>"
        "<joint name='b_joint' type='fixed'><parent link='root'/><child link='z'/></joint>"
        "<joint name='d_joint' type='revolute'><parent link='z'/><child link='x2'/></joint>"
        "</robot>";
    grid_model *m = NULL;
    grid_error err;
    int rc = load_str(text, NULL, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(m->nb == 3);
    CHECK(strcmp(m->bodies[0].joint.name, "a_joint") == 0);
    CHECK(strcmp(m->bodies[1].joint.name, "d_joint") == 0);
    CHECK(strcmp(m->bodies[2].joint.name, "c_joint") == 0);
    // z is welded to the fixed root: it belongs to the world
    CHECK(m->frames[frame_of(m, "z")].body == -1);
    CHECK(m->bodies[1].joint.parent == -1);
    CHECK(m->nee == 3);
    grid_model_free(m);
}

static void test_floating_base_option(void)
{
    grid_model_options o = grid_model_options_default();
    o.floating_base = 1;
    grid_model *m = NULL;
    grid_error err;
    int rc = grid_urdf_load_file(DATA "small_arm.urdf", &o, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(m->floating_base == 1 && m->nb == 4 && m->nq == 10 && m->nv == 9);
    const grid_body *b0 = &m->bodies[0];
    CHECK(strcmp(b0->name, "base") == 0 && strcmp(b0->joint.name, "root_joint") == 0);
    CHECK(b0->joint.type == GRID_JOINT_FREE && b0->joint.nq == 7 && b0->joint.nv == 6 && b0->joint.parent == -1);
    CHECK_NEAR(b0->inertia.mass, 3.0, 0);
    CHECK(m->bodies[1].joint.iq == 7 && m->bodies[1].joint.iv == 6 && m->bodies[1].joint.parent == 0);
    int base = frame_of(m, "base");
    CHECK(m->frames[base].body == 0 && m->frames[base].joint && strcmp(m->frames[base].joint, "root_joint") == 0);
    grid_model_free(m);

    // the free-flyer's name can pick the root link frame as an end effector
    const char *names[2] = {"root_joint", "tip_frame"};
    o.ee_joint_names = names;
    o.n_ee_joint_names = 2;
    rc = grid_urdf_load_file(DATA "small_arm.urdf", &o, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(m->nee == 2 && m->ee_frames[0] == frame_of(m, "base") && m->ee_frames[1] == frame_of(m, "tip"));
    grid_model_free(m);
}

static void test_floating_joint_in_urdf(void)
{
    for (int fb = 0; fb < 2; fb++) {
        grid_model_options o = grid_model_options_default();
        o.floating_base = fb;
        grid_model *m = NULL;
        grid_error err;
        int rc = grid_urdf_load_file(DATA "floating_joint.urdf", &o, &m, &err);
        CHECK_MSG(rc == GRID_OK, "%s", err.message);
        if (rc) return;
        CHECK(m->floating_base == 1 && m->nb == 2 && m->nq == 8 && m->nv == 7);
        CHECK(m->bodies[0].joint.type == GRID_JOINT_FREE && strcmp(m->bodies[0].joint.name, "base_free") == 0);
        CHECK(m->frames[frame_of(m, "world")].body == -1);
        CHECK(m->frames[frame_of(m, "base")].body == 0);
        grid_model_free(m);
    }
    expect_file_fails("bad_floating_not_first.urdf", GRID_ERR_UNSUPPORTED, 10, "floating joint is supported only");
}

/* planar and spherical joints: widths from the joint-model table, the normal kept as the axis */
static void test_planar_and_spherical(void)
{
    grid_model *m = NULL;
    grid_error err;
    int rc = grid_urdf_load_file(DATA "planar.urdf", NULL, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(m->nb == 1 && m->nq == 3 && m->nv == 3);
    CHECK(m->bodies[0].joint.type == GRID_JOINT_PLANAR && m->bodies[0].joint.axis[2] == 1.0);
    CHECK(strcmp(grid_joint_model_of(GRID_JOINT_PLANAR)->name, "planar") == 0);
    grid_model_free(m);
    static const char *const types[] = {"ball", "spherical"};
    for (int t = 0; t < 2; t++) {
        char text[512];
        snprintf(text, sizeof text,
                 "<robot name='r'><link name='a'/><link name='b'/><link name='c'/>"
                 "<joint name='s' type='%s'><parent link='a'/><child link='b'/><axis xyz='0 1 0'/></joint>"
                 "<joint name='p' type='planar'><parent link='b'/><child link='c'/><axis xyz='0 3 4'/></joint>"
                 "</robot>", types[t]);
        m = NULL;
        rc = load_str(text, NULL, &m, &err);
        CHECK_MSG(rc == GRID_OK, "%s", err.message);
        if (rc) return;
        CHECK(m->nb == 2 && m->nq == 7 && m->nv == 6);
        CHECK(m->bodies[0].joint.type == GRID_JOINT_SPHERICAL && m->bodies[0].joint.iq == 0 && m->bodies[1].joint.iq == 4);
        CHECK(m->bodies[1].joint.type == GRID_JOINT_PLANAR && m->bodies[1].joint.iv == 3);
        CHECK(fabs(m->bodies[1].joint.axis[1] - 0.6) < 1e-15 && fabs(m->bodies[1].joint.axis[2] - 0.8) < 1e-15);
        grid_model_free(m);
    }
    /* a zero axis on a ball joint: its line and joint */
    m = (grid_model *)1;
    rc = load_str("<robot name='r'><link name='a'/><link name='b'/>\n<joint name='wrist' type='ball'>"
                  "<parent link='a'/><child link='b'/>\n<axis xyz='0 0 0'/></joint></robot>", NULL, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_URDF, 3, "<joint name=\"wrist\"> line 3: <axis xyz=\"0 0 0\"> is zero");
    /* the plane axes: orthonormal, e1 x e2 = n, and x, y for n = z */
    const double normals[][3] = {{0, 0, 1}, {0, 0, -1}, {0, 0.6, 0.8}, {0.48, -0.6, -0.64}, {1, 0, 0}};
    for (int k = 0; k < 5; k++) {
        const double *n = normals[k];
        double e1[3], e2[3];
        grid_plane_basis(n, e1, e2);
        const double c[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        double d11 = 0, d22 = 0, d12 = 0, dc = 0;
        for (int i = 0; i < 3; i++) {
            d11 += e1[i] * e1[i];
            d22 += e2[i] * e2[i];
            d12 += e1[i] * e2[i];
            dc += fabs(c[i] - n[i]);
        }
        CHECK_MSG(fabs(d11 - 1) < 1e-15 && fabs(d22 - 1) < 1e-15 && fabs(d12) < 1e-15 && dc < 1e-15,
                  "normal %d: |e1|^2 %g |e2|^2 %g e1.e2 %g |e1 x e2 - n| %g", k, d11, d22, d12, dc);
        if (k == 0) CHECK(e1[0] == 1 && e1[1] == 0 && e2[0] == 0 && e2[1] == 1);
    }
}

static void test_end_effector_names(void)
{
    grid_model_options o = grid_model_options_default();
    const char *names[3] = {"elbow", "tip_frame", "shoulder"};
    o.ee_joint_names = names;
    o.n_ee_joint_names = 3;
    grid_model *m = NULL;
    grid_error err;
    int rc = grid_urdf_load_file(DATA "small_arm.urdf", &o, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(m->nee == 3);
    CHECK(m->ee_frames[0] == frame_of(m, "lower"));
    CHECK(m->ee_frames[1] == frame_of(m, "tip"));
    CHECK(m->ee_frames[2] == frame_of(m, "upper"));
    grid_model_free(m);

    // an unknown name is the caller's mistake; the message lists real joints
    const char *bad[2] = {"elbow", "wrist_9"};
    o.ee_joint_names = bad;
    o.n_ee_joint_names = 2;
    m = (grid_model *)1;
    rc = grid_urdf_load_file(DATA "small_arm.urdf", &o, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_ARG, 0, "'wrist_9' is not a joint");
    CHECK(strstr(err.message, "'shoulder'") != NULL);

    // "root_joint" exists only with a floating base
    const char *root[1] = {"root_joint"};
    o.ee_joint_names = root;
    o.n_ee_joint_names = 1;
    rc = grid_urdf_load_file(DATA "small_arm.urdf", &o, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_ARG, 0, "root_joint");
}

/* ---- the robots handed to the project ---- */

typedef struct {
    const char *file;
    int nv;            /* fixed base; every joint is 1-DoF so nq == nv == nb */
    double total_mass; /* kg, SOURCES.md */
    int has_mimic;     /* its <mimic> joints */
} robot_row;

static const robot_row robots[] = {
    {"iiwa.urdf", 7, 30.610, 0},     {"hyq.urdf", 12, 86.774, 0},       {"atlas.urdf", 30, 175.118, 0},
    {"go2.urdf", 12, 15.019, 0},     {"g1_29dof.urdf", 29, 35.115, 0}, {"h1_2.urdf", 51, 67.368, 12},
};

/* k's ancestors in the coupled elimination tree include a */
static int tree_above(const int *lambda, int a, int k)
{
    for (; k >= 0; k = lambda[k])
        if (k == a) return 1;
    return 0;
}

/* grid_model_coupled_tree: without couplings the tree's own parents (the joint's previous coordinate, else the
   parent body's last); with them, every pair of user coordinates that move bodies on one branch (a nonzero of
   G^T M G) is ancestor-related in it */
static void check_coupled_tree(const grid_model *m, const char *file)
{
    int *lambda = malloc(sizeof(int) * (size_t)(m->nv > 0 ? m->nv : 1));
    CHECK(lambda && grid_model_coupled_tree(m, lambda) == GRID_OK);
    if (!lambda) return;
    for (int k = 0; k < m->nv; k++) CHECK_MSG(lambda[k] < k, "%s: lambda[%d] = %d", file, k, lambda[k]);
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *ji = &m->bodies[i].joint;
        if (m->nmimic == 0)
            for (int c = 0; c < ji->nv; c++) {
                const grid_joint *pj = ji->parent >= 0 ? &m->bodies[ji->parent].joint : NULL;
                const int want = c > 0 ? ji->uv + c - 1 : pj ? pj->uv + pj->nv - 1 : -1;
                CHECK_MSG(lambda[ji->uv + c] == want, "%s: lambda[%d] = %d, not %d", file, ji->uv + c,
                          lambda[ji->uv + c], want);
            }
        for (int j = 0; j < m->nb; j++) {
            int on_branch = 0;
            for (int b = i; b >= 0 && !on_branch; b = m->bodies[b].joint.parent) on_branch = b == j;
            for (int b = j; b >= 0 && !on_branch; b = m->bodies[b].joint.parent) on_branch = b == i;
            const grid_joint *jj = &m->bodies[j].joint;
            if (!on_branch || ji->nv != 1 || jj->nv != 1 || ji->uv == jj->uv) continue;
            const int hi = ji->uv > jj->uv ? ji->uv : jj->uv, lo = ji->uv + jj->uv - hi;
            CHECK_MSG(tree_above(lambda, lo, hi), "%s: coordinates %d and %d couple off the tree", file, lo, hi);
        }
    }
    free(lambda);
}

static void test_shared_robots(void)
{
    struct stat st;
    if (stat(ROBOTS, &st) != 0) {
        printf("note: %s not found, robot tests skipped\n", ROBOTS);
        return;
    }
    for (size_t i = 0; i < sizeof robots / sizeof robots[0]; i++) {
        const robot_row *row = &robots[i];
        char path[256];
        snprintf(path, sizeof path, ROBOTS "%s", row->file);
        for (int fb = 0; fb < 2; fb++) {
            grid_model_options o = grid_model_options_default();
            o.floating_base = fb;
            o.ignore_mimic = 1;
            grid_model *m = NULL;
            grid_error err;
            int rc = grid_urdf_load_file(path, &o, &m, &err);
            CHECK_MSG(rc == GRID_OK, "%s: %s", row->file, err.message);
            if (rc) continue;
            int nq = row->nv + 7 * fb, nv = row->nv + 6 * fb, nb = row->nv + fb;
            CHECK_MSG(m->nq == nq && m->nv == nv && m->nb == nb, "%s fb=%d: nq %d nv %d nb %d", row->file, fb,
                      m->nq, m->nv, m->nb);
            // parents first, offsets contiguous
            int iq = 0, iv = 0;
            for (int k = 0; k < m->nb; k++) {
                CHECK(m->bodies[k].joint.parent < k);
                CHECK(m->bodies[k].joint.iq == iq && m->bodies[k].joint.iv == iv);
                iq += m->bodies[k].joint.nq;
                iv += m->bodies[k].joint.nv;
            }
            // on a floating base every link's mass is on some body
            if (fb) {
                double mass = 0;
                for (int k = 0; k < m->nb; k++) mass += m->bodies[k].inertia.mass;
                CHECK_MSG(fabs(mass - row->total_mass) < 6e-4, "%s: mass %.6f vs %.3f", row->file, mass,
                          row->total_mass);
            }
            // every frame is on a real body or the world
            for (int f = 0; f < m->nframes; f++) CHECK(m->frames[f].body >= -1 && m->frames[f].body < m->nb);
            CHECK(m->nee > 0);
            check_coupled_tree(m, row->file);
            grid_model_free(m);
        }
        // by default mimic joints are couplings: q and v lose one coordinate per mimic joint
        grid_model *m = NULL;
        grid_error err;
        int rc = grid_urdf_load_file(path, NULL, &m, &err);
        CHECK_MSG(rc == GRID_OK, "%s: %s", row->file, err.message);
        if (rc == GRID_OK) {
            CHECK_MSG(m->nv == row->nv - row->has_mimic && m->nv_full == row->nv && m->nmimic == row->has_mimic,
                      "%s: nv %d nv_full %d mimic %d", row->file, m->nv, m->nv_full, m->nmimic);
            check_coupled_tree(m, row->file);
            grid_model_free(m);
        }
    }

    // iiwa joints in chain order; its end effector is the last arm link
    grid_model *m = NULL;
    grid_error err;
    if (grid_urdf_load_file(ROBOTS "iiwa.urdf", NULL, &m, &err) == GRID_OK) {
        char want[32];
        for (int k = 0; k < m->nb; k++) {
            snprintf(want, sizeof want, "iiwa_joint_%d", k + 1);
            CHECK(strcmp(m->bodies[k].joint.name, want) == 0);
        }
        CHECK(m->nee == 1 && strcmp(m->frames[m->ee_frames[0]].name, "iiwa_link_7") == 0);
        grid_model_free(m);
    }
}

/* ---- refusals ---- */

static void test_malformed_files(void)
{
    expect_file_fails("bad_missing_parent.urdf", GRID_ERR_URDF, 6, "<parent link=\"nowhere\"> names a link that does not exist");
    expect_file_fails("bad_cycle.urdf", GRID_ERR_URDF, -1, "cycle");
    expect_file_fails("bad_two_roots.urdf", GRID_ERR_URDF, 5, "'first_root' (line 3), 'second_root' (line 5)");
    expect_file_fails("bad_xyz.urdf", GRID_ERR_URDF, 7, "<joint name=\"j2\"> line 7: <origin xyz=\"1 2\"> needs 3 numbers");
    expect_file_fails("bad_xyz.urdf", GRID_ERR_URDF, 7, DATA "bad_xyz.urdf:7:5: ");
    expect_file_fails("bad_mass.urdf", GRID_ERR_URDF, 5, "<mass value=\"abc\"> is not a number");
    expect_file_fails("bad_mass_nan.urdf", GRID_ERR_URDF, 5, "must be finite");
    expect_file_fails("bad_mass_negative.urdf", GRID_ERR_URDF, 5, "is negative");
    expect_file_fails("bad_inertia_inf.urdf", GRID_ERR_URDF, 6, "iyy=\"1e999\"");
    expect_file_fails("bad_zero_axis.urdf", GRID_ERR_URDF, 7, "<axis xyz=\"0 0 0\"> is zero");
    expect_file_fails("bad_joint_type.urdf", GRID_ERR_URDF, 5, "unknown joint type \"telescopic\"");
    expect_file_fails("bad_planar_zero_normal.urdf", GRID_ERR_URDF, 7, "a planar joint needs its plane's normal");
    expect_file_fails("truncated.urdf", GRID_ERR_XML, 6, "malformed XML");
    expect_file_fails("billion_laughs.urdf", GRID_ERR_XML, 2, "DOCTYPE/entities are not allowed");
    expect_file_fails("bad_duplicate_link.urdf", GRID_ERR_URDF, 5, "duplicate link name 'a'");
    expect_file_fails("bad_duplicate_joint.urdf", GRID_ERR_URDF, 7, "duplicate joint name 'j1'");
    expect_file_fails("bad_two_parents.urdf", GRID_ERR_URDF, 7, "already the child of joint 'j1'");
    expect_file_fails("bad_no_links.urdf", GRID_ERR_URDF, 2, "no <link>");
    expect_file_fails("bad_missing_name.urdf", GRID_ERR_URDF, 4, "<link> has no name attribute");

    grid_model *m = (grid_model *)1;
    grid_error err;
    int rc = grid_urdf_load_file(DATA "does_not_exist.urdf", NULL, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_IO, 0, "does_not_exist.urdf");
}

static void test_malformed_strings(void)
{
    static const struct {
        const char *text;
        int code, line;
        const char *piece;
    } cases[] = {
        {"<robot name='r'><link name='a'/><link name='b'/>\n<joint name='j' type='revolute'>"
         "<parent link='a'/><child link='b'/><origin xyz='1 2 3 4'/></joint></robot>", GRID_ERR_URDF, 2, "needs 3 numbers"},
        {"<robot name='r'><link name='a'/><link name='b'/>\n<joint name='j' type='revolute'>"
         "<parent link='a'/><child link='b'/><origin rpy='0x10 0 0'/></joint></robot>", GRID_ERR_URDF, 2, "is not a list of numbers"},
        {"<robot name='r'><link name='a'/><link name='b'/>\n<joint name='j' type='revolute'>"
         "<parent link='a'/><child link='b'/><origin rpy='1,2,3'/></joint></robot>", GRID_ERR_URDF, 2, "rpy=\"1,2,3\""},
        {"<robot name='r'><link name='a'/><link name='b'/>\n<joint name='j' type='revolute'>"
         "<parent link='a'/><child link='b'/><limit lower='-inf'/></joint></robot>", GRID_ERR_URDF, 2, "must be finite"},
        {"<robot name='r'><link name='a'/><link name='b'/>\n<joint name='j'>"
         "<parent link='a'/><child link='b'/></joint></robot>", GRID_ERR_URDF, 2, "<joint> has no type attribute"},
        {"<robot name='r'><link name='a'/><link name='b'/>\n<joint type='fixed'>"
         "<parent link='a'/><child link='b'/></joint></robot>", GRID_ERR_URDF, 2, "<joint> has no name attribute"},
        {"<robot name='r'><link name='a'/><link name='b'/>\n<joint name='j' type='fixed'>"
         "<parent link='a'/></joint></robot>", GRID_ERR_URDF, 2, "has no <child"},
        {"<robot name='r'><link name='a'/><link name='b'/>\n<joint name='j' type='fixed'>"
         "<parent/><child link='b'/></joint></robot>", GRID_ERR_URDF, 2, "<parent> has no link attribute"},
        {"<robot name='r'><link name='a'/><link name='b'/>\n<joint name='j' type='fixed'>"
         "<parent link='a'/><child link='b'/><origin/><origin/></joint></robot>", GRID_ERR_URDF, 2, "more than one <origin>"},
        {"<robot name='r'><link name='a'/>\n<joint name='j' type='fixed'>"
         "<parent link='a'/><child link='a'/></joint></robot>", GRID_ERR_URDF, 2, "same link 'a'"},
        {"<robot name='r'><link name='a'/><link name='b'/>\n<joint name='j1' type='fixed'><parent link='a'/><child link='b'/></joint>"
         "<joint name='j2' type='fixed'><parent link='b'/><child link='a'/></joint></robot>", GRID_ERR_URDF, 2, "cycle"},
        {"<robot name='r'><link name='a'>\n<inertial><inertia ixx='1' ixy='0' ixz='0' iyy='1' iyz='0' izz='1'/>"
         "</inertial></link></robot>", GRID_ERR_URDF, 2, "<inertial> has no <mass>"},
        {"<robot name='r'><link name='a'>\n<inertial><mass value='1'/><inertia ixx='1' ixy='0' ixz='0' iyy='1' izz='1'/>"
         "</inertial></link></robot>", GRID_ERR_URDF, 2, "<inertia> has no iyz attribute"},
        {"<robot><link name='a'/></robot>", GRID_ERR_URDF, 1, "<robot> has no name"},
        {"<model name='r'><link name='a'/></model>", GRID_ERR_URDF, 1, "a URDF starts with <robot>"},
        {"<robot name='r'>\n<link name='a'/></robot>junk", GRID_ERR_XML, 2, "malformed XML"},
        {"<robot name='r'>\n<link name='&undefined;'/></robot>", GRID_ERR_XML, 2, "malformed XML"},
        {"<?xml version='1.0'?>\n<!DOCTYPE robot SYSTEM 'http://example.com/x.dtd'>\n<robot name='r'/>", GRID_ERR_XML, 2,
         "DOCTYPE/entities are not allowed"},
        {"   \n  ", GRID_ERR_XML, 0, "malformed XML"},
        {"<robot name='r'><link name='a'/></robot\n", GRID_ERR_XML, -1, "malformed XML"},
        {"<robot name='r'><link name='a'/>\n<link name='b'/><joint name='j' type='revolute'>\n"
         "<parent link='a'/><child link='b'/><mimic joint='k'/></joint></robot>", GRID_ERR_URDF, 3,
         "mimics 'k', which is not a joint of this robot"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        grid_model *m = (grid_model *)1;
        grid_error err;
        int rc = load_str(cases[i].text, NULL, &m, &err);
        if (rc != cases[i].code) fprintf(stderr, "  case %zu\n", i);
        expect_fail(rc, m, &err, cases[i].code, cases[i].line, cases[i].piece);
    }

    // empty input
    grid_model *m = (grid_model *)1;
    grid_error err;
    int rc = grid_urdf_load("", 0, NULL, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_XML, -1, "empty");
    rc = grid_urdf_load(NULL, 0, NULL, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_XML, -1, "empty");
    rc = grid_urdf_load(NULL, 5, NULL, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_ARG, 0, "NULL");
    CHECK(grid_urdf_load("<robot name='r'/>", 17, NULL, NULL, &err) == GRID_ERR_ARG);
}

/* the structured fields: where_len covers exactly the "line L, column C: " prefix, path names the file */
static void test_error_fields(void)
{
    static const struct {
        const char *text;
        const char *prefix;  /* NULL: no position prefix in the message */
    } cases[] = {
        {"<robot name='r'>\n<link name='a'/></robot>junk", "line 2, column "},
        {"<model name='r'><link name='a'/></model>", "line 1: "},
        {"<robot name='r'><link name='a'/><link name='a'/></robot>", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        grid_model *m = NULL;
        grid_error err;
        CHECK(load_str(cases[i].text, NULL, &m, &err) != GRID_OK && m == NULL);
        if (!cases[i].prefix) {
            CHECK_MSG(err.where_len == 0, "%d: %s", err.where_len, err.message);
            continue;
        }
        char want[64];
        if (strcmp(cases[i].prefix, "line 1: ") == 0) snprintf(want, sizeof want, "line %d: ", err.line);
        else snprintf(want, sizeof want, "line %d, column %d: ", err.line, err.column);
        CHECK_MSG(err.where_len == (int)strlen(want) && strncmp(err.message, want, strlen(want)) == 0,
                  "%d '%s'", err.where_len, err.message);
    }
    grid_model *m = NULL;
    grid_error err;
    CHECK(grid_urdf_load_file(DATA "truncated.urdf", NULL, &m, &err) == GRID_ERR_XML);
    CHECK_MSG(strcmp(err.path, DATA "truncated.urdf") == 0 && err.where_len == 0, "'%s'", err.path);
    CHECK(grid_urdf_load_file(DATA "does_not_exist.urdf", NULL, &m, &err) == GRID_ERR_IO);
    CHECK(strcmp(err.path, DATA "does_not_exist.urdf") == 0);
    grid_error_clear(&err);
    CHECK(err.path[0] == '\0' && err.hint[0] == '\0' && err.where_len == 0);
}

/* names in messages never carry raw control characters, even when the URDF's do */
static void test_message_names_sanitised(void)
{
    const char *text = "<robot name='r'><link name='b'/>\n<joint name='j&#10;x' type='fixed'>"
                       "<parent link='a&#10;b'/><child link='b'/></joint></robot>";
    grid_model *m = (grid_model *)1;
    grid_error err;
    int rc = load_str(text, NULL, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_URDF, 2, "<joint name=\"j?x\">");
    CHECK(strstr(err.message, "a?b") != NULL);
}

static void test_mimic(void)
{
    grid_model *m = (grid_model *)1;
    grid_error err;
    int rc = grid_urdf_load_file(DATA "mimic.urdf", NULL, &m, &err);
    /* coupled (the default): one coordinate, the mimic joint follows its leader */
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(m->nq == 1 && m->nv == 1 && m->nq_full == 2 && m->nv_full == 2 && m->nb == 2 && m->nmimic == 1);
    const grid_joint *fr = &m->bodies[1].joint;
    CHECK(strcmp(fr->name, "finger_right") == 0 && fr->mimic && fr->mimic_leader == 0 && fr->uq == 0 && fr->uv == 0);
    CHECK(fr->iq == 1 && fr->iv == 1 && fr->mimic_multiplier == 1.0 && fr->mimic_offset == 0.0);
    CHECK(!m->bodies[0].joint.mimic && m->bodies[0].joint.mimic_leader == -1);
    grid_model_free(m);
    /* a <mimic> whose leader is missing: the <mimic> element's line */
    m = (grid_model *)1;
    rc = load_str("<robot name='r'><link name='a'/><link name='b'/>\n<joint name='j' type='prismatic'>"
                  "<parent link='a'/><child link='b'/>\n\n<mimic joint='nowhere'/></joint></robot>", NULL, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_URDF, 4, "<mimic> line 4: joint 'j' mimics 'nowhere'");
    /* a <mimic> inside a fixed joint is ignored (merged away, no coordinate: Pinocchio does the same) */
    m = NULL;
    rc = load_str("<robot name='r'><link name='a'/><link name='b'/><link name='c'/>\n<joint name='k' type='revolute'>"
                  "<parent link='a'/><child link='b'/><limit lower='-1' upper='1'/></joint>\n<joint name='f' type='fixed'>"
                  "<parent link='b'/><child link='c'/>\n<mimic joint='k'/></joint></robot>", NULL, &m, &err);
    CHECK(rc == GRID_OK && m && m->nq == 1 && m->nv == 1 && m->nb == 1 && !m->bodies[0].joint.mimic);
    grid_model_free(m);
    /* a <mimic> inside a floating joint: refused at its line */
    m = (grid_model *)1;
    rc = load_str("<robot name='r'><link name='a'/><link name='b'/><link name='c'/>\n<joint name='f' type='floating'>"
                  "<parent link='a'/><child link='b'/>\n\n<mimic joint='k'/></joint><joint name='k' type='revolute'>"
                  "<parent link='b'/><child link='c'/><limit lower='-1' upper='1'/></joint></robot>", NULL, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_URDF, 4,
                "<mimic> line 4: joint 'f' is floating: only revolute, continuous and prismatic joints can mimic");
    grid_model_options o = grid_model_options_default();
    o.ignore_mimic = 1;
    m = NULL;
    rc = grid_urdf_load_file(DATA "mimic.urdf", &o, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(m->nq == 2 && m->nv == 2 && m->nb == 2 && m->nmimic == 0 && !m->bodies[1].joint.mimic);
    CHECK(strcmp(m->bodies[1].joint.name, "finger_right") == 0);
    CHECK_NEAR(m->bodies[1].joint.axis[1], -1.0, 0);
    grid_model_free(m);
}

/* ---- safety caps ---- */

static char *repeat_join(const char *head, const char *unit, int n, const char *tail)
{
    size_t len = strlen(head) + strlen(unit) * (size_t)n + strlen(tail) + 1;
    char *s = malloc(len);
    if (!s) return NULL;
    char *p = s;
    p += sprintf(p, "%s", head);
    for (int i = 0; i < n; i++) p += sprintf(p, "%s", unit);
    sprintf(p, "%s", tail);
    return s;
}

static void test_depth_cap(void)
{
    // robot + link + 62 skipped levels = 64: fine; one more level is refused
    for (int extra = 0; extra < 2; extra++) {
        int levels = GRID_URDF_MAX_DEPTH - 2 + extra;
        char *open = repeat_join("", "<v>", levels, "");
        char *close = repeat_join("", "</v>", levels, "");
        size_t n = strlen(open) + strlen(close) + 200;
        char *doc = malloc(n);
        snprintf(doc, n, "<robot name='r'><link name='a'>%s%s</link></robot>", open, close);
        grid_model *m = (grid_model *)1;
        grid_error err;
        int rc = load_str(doc, NULL, &m, &err);
        if (extra == 0) {
            CHECK_MSG(rc == GRID_OK, "%s", err.message);
            grid_model_free(m);
        } else {
            expect_fail(rc, m, &err, GRID_ERR_LIMIT, 1, "deeper than 64");
        }
        free(open);
        free(close);
        free(doc);
    }

    // very deep nesting (far past expat's comfort) fails the same way
    char *deep = repeat_join("<robot name='r'>", "<a>", 100000, "");
    grid_model *m = (grid_model *)1;
    grid_error err;
    int rc = load_str(deep, NULL, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_LIMIT, -1, "deeper than");
    free(deep);
}

static void test_attribute_cap(void)
{
    char *name = malloc(GRID_URDF_MAX_ATTR_LEN + 2);
    memset(name, 'n', GRID_URDF_MAX_ATTR_LEN);
    name[GRID_URDF_MAX_ATTR_LEN] = '\0';
    size_t n = GRID_URDF_MAX_ATTR_LEN + 200;
    char *doc = malloc(n);

    // exactly at the cap: kept verbatim
    snprintf(doc, n, "<robot name='r'><link name='%s'/></robot>", name);
    grid_model *m = NULL;
    grid_error err;
    int rc = load_str(doc, NULL, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc == GRID_OK) CHECK(strlen(m->frames[0].name) == GRID_URDF_MAX_ATTR_LEN);
    grid_model_free(m);

    // one past it, even on an element that is skipped
    name[GRID_URDF_MAX_ATTR_LEN] = 'n';
    name[GRID_URDF_MAX_ATTR_LEN + 1] = '\0';
    snprintf(doc, n, "<robot name='r'><link name='a'>\n<visual x='%s'/></link></robot>", name);
    m = (grid_model *)1;
    rc = load_str(doc, NULL, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_LIMIT, 2, "longer than 4096");
    free(name);
    free(doc);
}

static void test_count_and_size_caps(void)
{
    // GRID_URDF_MAX_LINKS links is fine, one more is not
    char unit[] = "<link name='l0000000'/>";
    for (int extra = 0; extra < 2; extra++) {
        int nl = GRID_URDF_MAX_LINKS + extra;
        size_t n = (size_t)nl * sizeof unit + 64;
        char *doc = malloc(n);
        char *p = doc + sprintf(doc, "<robot name='r'>");
        for (int i = 0; i < nl; i++) p += sprintf(p, "<link name='l%07d'/>", i);
        sprintf(p, "</robot>");
        grid_model *m = (grid_model *)1;
        grid_error err;
        int rc = load_str(doc, NULL, &m, &err);
        if (extra == 0) {
            // a valid document up to the roots check: many roots
            expect_fail(rc, m, &err, GRID_ERR_URDF, -1, "root links");
        } else {
            expect_fail(rc, m, &err, GRID_ERR_LIMIT, 1, "more than 4096 <link>");
        }
        free(doc);
    }

    // the byte cap is checked before anything is read
    size_t big = (size_t)GRID_URDF_MAX_BYTES + 1;
    char *doc = malloc(big);
    if (doc) {
        grid_model *m = (grid_model *)1;
        grid_error err;
        int rc = grid_urdf_load(doc, big, NULL, &m, &err);
        expect_fail(rc, m, &err, GRID_ERR_LIMIT, 0, "limit");
        free(doc);
    }
}

/* ---- names that would be dangerous if pasted into generated code ---- */

static void test_odd_names_verbatim(void)
{
    grid_model *m = NULL;
    grid_error err;
    int rc = grid_urdf_load_file(DATA "odd_names.urdf", NULL, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(strcmp(m->robot_name, "odd */ robot") == 0);
    const char *links[5] = {"base */ link", "line\nbreak", "quote\"d 'single'", "back\\slash\\", "#define X 1"};
    for (int i = 0; i < 5; i++) CHECK_MSG(grid_model_frame_index(m, links[i]) == i, "frame %d", i);
    CHECK(m->nb == 3);
    CHECK(strcmp(m->bodies[0].joint.name, "j*/1") == 0);
    CHECK(strcmp(m->bodies[1].joint.name, "j\n2") == 0);
    CHECK(strcmp(m->bodies[2].joint.name, "j\"3\\") == 0);
    CHECK(strcmp(m->frames[4].joint, "#define J4") == 0 && m->frames[4].body == 2);
    grid_model_free(m);
}

/* numbers: exponents, signs, odd spacing; the process locale does not matter */
static void test_number_forms(void)
{
    const char *text = "<robot name='r'><link name='a'/><link name='b'>"
                       "<inertial><origin xyz=' +.5\t-2E-1 \n 3. ' rpy='0 0 0'/><mass value='1e0'/>"
                       "<inertia ixx='1' ixy='-0' ixz='0' iyy='1' iyz='0' izz='1'/></inertial></link>"
                       "<joint name='j' type='prismatic'><parent link='a'/><child link='b'/>"
                       "<axis xyz='0 0 -1e-300'/></joint></robot>";
    grid_model *m = NULL;
    grid_error err;
    int rc = load_str(text, NULL, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK_NEAR(m->bodies[0].inertia.com[0], 0.5, 0);
    CHECK_NEAR(m->bodies[0].inertia.com[1], -0.2, 0);
    CHECK_NEAR(m->bodies[0].inertia.com[2], 3.0, 0);
    CHECK_NEAR(m->bodies[0].joint.axis[2], -1.0, 0);
    grid_model_free(m);

    // under a decimal-comma locale (when one is installed) "0.5" still reads as a half
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
        rc = load_str(text, NULL, &m, &err);
        CHECK_MSG(rc == GRID_OK, "%s", err.message);
        if (rc == GRID_OK) CHECK_NEAR(m->bodies[0].inertia.com[0], 0.5, 0);
        grid_model_free(m);
        setlocale(LC_NUMERIC, "C");
    }
}

static void test_options_and_free(void)
{
    grid_model_options o = grid_model_options_default();
    CHECK(o.floating_base == 0 && o.gravity == -9.81 && o.ignore_mimic == 0);
    CHECK(o.ee_joint_names == NULL && o.n_ee_joint_names == 0);
    grid_model_free(NULL);
    CHECK(grid_model_frame_index(NULL, "a") == -1);

    o.gravity = 3.5;
    grid_model *m = NULL;
    grid_error err;
    int rc = load_str("<robot name='one'><link name='only'/></robot>", &o, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    if (rc) return;
    CHECK(m->nb == 0 && m->nq == 0 && m->nv == 0 && m->nframes == 1 && m->nee == 0 && m->gravity == 3.5);
    CHECK(m->frames[0].body == -1);
    grid_model_free(m);

    // a NULL error struct is allowed: the status alone comes back
    m = (grid_model *)1;
    CHECK(grid_urdf_load_file(DATA "bad_xyz.urdf", NULL, &m, NULL) == GRID_ERR_URDF && m == NULL);
    CHECK(load_str("<robot", NULL, &m, NULL) == GRID_ERR_XML && m == NULL);

    o.gravity = NAN;
    m = (grid_model *)1;
    rc = load_str("<robot name='one'><link name='only'/></robot>", &o, &m, &err);
    expect_fail(rc, m, &err, GRID_ERR_ARG, 0, "gravity");
}

/* ---- files that are not URDFs: refused without blocking or reading them ---- */

static void expect_path_refused(const char *path, int code, const char *piece)
{
    grid_model *m = (grid_model *)1;
    grid_error err;
    int rc = grid_urdf_load_file(path, NULL, &m, &err);
    CHECK_MSG(rc == code && m == NULL, "%s: status %d: %s", path, rc, err.message);
    CHECK_MSG(strstr(err.message, path) && strstr(err.message, piece), "%s: %s", path, err.message);
}

static void test_not_regular_files(void)
{
    alarm(60);   /* a blocking open or an unbounded read ends the run instead of hanging it */
    char dir[] = "/tmp/grid-test-urdf-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char fifo[64], sparse[64];
    snprintf(fifo, sizeof fifo, "%s/robot.urdf", dir);
    snprintf(sparse, sizeof sparse, "%s/huge.urdf", dir);
    CHECK(mkfifo(fifo, 0644) == 0);
    expect_path_refused(fifo, GRID_ERR_IO, "it is a FIFO");
    expect_path_refused("/dev/zero", GRID_ERR_IO, "character device");
    expect_path_refused("/dev/urandom", GRID_ERR_IO, "character device");
    expect_path_refused(dir, GRID_ERR_IO, "directory");
    FILE *f = fopen(sparse, "wb");
    CHECK(f && ftruncate(fileno(f), 2LL << 30) == 0);
    if (f) fclose(f);
    expect_path_refused(sparse, GRID_ERR_LIMIT, "limit");
    unlink(fifo);
    unlink(sparse);
    rmdir(dir);
    alarm(0);
}

int main(void)
{
    RUN_TEST(test_small_arm);
    RUN_TEST(test_fixed_chain_merge);
    RUN_TEST(test_child_order);
    RUN_TEST(test_floating_base_option);
    RUN_TEST(test_floating_joint_in_urdf);
    RUN_TEST(test_planar_and_spherical);
    RUN_TEST(test_end_effector_names);
    RUN_TEST(test_shared_robots);
    RUN_TEST(test_malformed_files);
    RUN_TEST(test_malformed_strings);
    RUN_TEST(test_error_fields);
    RUN_TEST(test_not_regular_files);
    RUN_TEST(test_message_names_sanitised);
    RUN_TEST(test_mimic);
    RUN_TEST(test_depth_cap);
    RUN_TEST(test_attribute_cap);
    RUN_TEST(test_count_and_size_caps);
    RUN_TEST(test_odd_names_verbatim);
    RUN_TEST(test_number_forms);
    RUN_TEST(test_options_and_free);
    return check_summary("urdf");
}
