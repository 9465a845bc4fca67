/* URDF element parsers: attributes of <robot>, <link>, <inertial> and <joint> parts, checked into the description. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "urdf_reader.h"

int urdf_fail(urdf_reader *rd, int code, const char *fmt, ...)
{
    if (rd->status) return rd->status;
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);

    // the open link or joint gives the context
    if (rd->joint >= 0)
        grid_desc_error(rd->err, code, rd->pos, "joint", rd->robot->joints[rd->joint].name, "%s", what);
    else if (rd->link >= 0)
        grid_desc_error(rd->err, code, rd->pos, "link", rd->robot->links[rd->link].name, "%s", what);
    else
        grid_desc_error(rd->err, code, rd->pos, "robot", rd->robot->name, "%s", what);
    rd->status = code;
    XML_StopParser(rd->parser, XML_FALSE);
    return code;
}

/* the value of attribute key in expat's name/value list, NULL if absent */
static const char *attr(const char **atts, const char *key)
{
    for (int i = 0; atts[i]; i += 2)
        if (strcmp(atts[i], key) == 0) return atts[i + 1];
    return NULL;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* length of a decimal number at s ([+-] digits [. digits] [e [+-] digits]), 0 if none */
static size_t number_length(const char *s)
{
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-') i++;
    while (s[i] >= '0' && s[i] <= '9') i++, digits++;
    if (s[i] == '.') {
        i++;
        while (s[i] >= '0' && s[i] <= '9') i++, digits++;
    }
    if (digits == 0) return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t k = i + 1, exp_digits = 0;
        if (s[k] == '+' || s[k] == '-') k++;
        while (s[k] >= '0' && s[k] <= '9') k++, exp_digits++;
        if (exp_digits) i = k;
    }
    return i;
}

/* token at s spells nan or inf (any case, optional sign) */
static int names_non_finite(const char *s)
{
    if (*s == '+' || *s == '-') s++;
    return strncasecmp(s, "nan", 3) == 0 || strncasecmp(s, "inf", 3) == 0;
}

/* read exactly n numbers from attribute key of element elem; returns 1 when read, 0 when the
   attribute is absent and optional, -1 after failing rd */
static int attr_numbers(urdf_reader *rd, const char *elem, const char **atts, const char *key,
                        double *out, int n, int required)
{
    const char *s = attr(atts, key);
    char vb[80];
    if (!s) {
        if (!required) return 0;
        urdf_fail(rd, GRID_ERR_URDF, "<%s> has no %s attribute", elem, key);
        return -1;
    }
    const char *shown = grid_name_for_message(s, vb, sizeof vb);
    int found = 0;
    const char *c = s;
    for (;;) {
        while (is_space(*c)) c++;
        if (!*c) break;
        size_t len = number_length(c);
        if (len == 0 || (c[len] && !is_space(c[len]))) {
            if (names_non_finite(c))
                urdf_fail(rd, GRID_ERR_URDF, "<%s %s=\"%s\"> must be finite (nan/inf are not allowed)",
                          elem, key, shown);
            else
                urdf_fail(rd, GRID_ERR_URDF, "<%s %s=\"%s\"> is not %s", elem, key, shown,
                          n == 1 ? "a number" : "a list of numbers");
            return -1;
        }
        if (found < n) {
            char *end = NULL;
            double v = strtod_l(c, &end, rd->c_locale);
            if (end != c + len || !isfinite(v)) {
                urdf_fail(rd, GRID_ERR_URDF, "<%s %s=\"%s\"> is out of range (must be finite)", elem, key, shown);
                return -1;
            }
            out[found] = v;
        }
        found++;
        c += len;
    }
    if (found != n) {
        if (n == 1) urdf_fail(rd, GRID_ERR_URDF, "<%s %s=\"%s\"> needs one number", elem, key, shown);
        else urdf_fail(rd, GRID_ERR_URDF, "<%s %s=\"%s\"> needs %d numbers", elem, key, shown, n);
        return -1;
    }
    return 1;
}

/* a required name-like attribute, copied; NULL after failing rd */
static char *attr_name(urdf_reader *rd, const char *elem, const char **atts, const char *key)
{
    const char *s = attr(atts, key);
    if (!s) {
        urdf_fail(rd, GRID_ERR_URDF, "<%s> has no %s attribute", elem, key);
        return NULL;
    }
    if (!*s) {
        urdf_fail(rd, GRID_ERR_URDF, "<%s> has an empty %s attribute", elem, key);
        return NULL;
    }
    char *d = dup_str(s);
    if (!d) urdf_fail(rd, GRID_ERR_NOMEM, "out of memory");
    return d;
}

/* a sub-element that may appear once in the open link/joint */
static int first_time(urdf_reader *rd, unsigned bit, const char *elem, const char *in)
{
    if (rd->seen & bit) {
        urdf_fail(rd, GRID_ERR_URDF, "more than one <%s> in <%s>", elem, in);
        return 0;
    }
    rd->seen |= bit;
    return 1;
}

int urdf_start_robot(urdf_reader *rd, const char **atts)
{
    rd->robot->pos = rd->pos;
    const char *name = attr(atts, "name");
    if (!name) return urdf_fail(rd, GRID_ERR_URDF, "<robot> has no name attribute");
    rd->robot->name = dup_str(name);
    if (!rd->robot->name) return urdf_fail(rd, GRID_ERR_NOMEM, "out of memory");
    return GRID_OK;
}

int urdf_start_link(urdf_reader *rd, const char **atts)
{
    if (rd->robot->nlinks >= GRID_URDF_MAX_LINKS)
        return urdf_fail(rd, GRID_ERR_LIMIT, "more than %d <link> elements", GRID_URDF_MAX_LINKS);
    char *name = attr_name(rd, "link", atts, "name");
    if (!name) return rd->status;
    grid_link_desc *l = grid_robot_desc_add_link(rd->robot);
    if (!l) {
        free(name);
        return urdf_fail(rd, GRID_ERR_NOMEM, "out of memory");
    }
    l->name = name;
    l->pos = rd->pos;
    rd->link = rd->robot->nlinks - 1;
    rd->seen = 0;
    return GRID_OK;
}

int urdf_start_inertial(urdf_reader *rd, const char **atts)
{
    (void)atts;
    if (!first_time(rd, URDF_SEEN_INERTIAL, "inertial", "link")) return rd->status;
    rd->robot->links[rd->link].has_inertial = 1;
    rd->inertial_pos = rd->pos;
    return GRID_OK;
}

int urdf_inertial_child(urdf_reader *rd, const char *name, const char **atts, urdf_element *kind)
{
    grid_link_desc *l = &rd->robot->links[rd->link];
    *kind = URDF_EL_LEAF;
    if (strcmp(name, "origin") == 0) {
        if (!first_time(rd, URDF_SEEN_I_ORIGIN, "origin", "inertial")) return rd->status;
        if (attr_numbers(rd, "origin", atts, "xyz", l->com, 3, 0) < 0) return rd->status;
        if (attr_numbers(rd, "origin", atts, "rpy", l->rpy, 3, 0) < 0) return rd->status;
    } else if (strcmp(name, "mass") == 0) {
        if (!first_time(rd, URDF_SEEN_MASS, "mass", "inertial")) return rd->status;
        if (attr_numbers(rd, "mass", atts, "value", &l->mass, 1, 1) < 0) return rd->status;
        if (l->mass < 0) {
            char vb[80];
            return urdf_fail(rd, GRID_ERR_URDF, "<mass value=\"%s\"> is negative",
                             grid_name_for_message(attr(atts, "value"), vb, sizeof vb));
        }
    } else if (strcmp(name, "inertia") == 0) {
        static const char *const keys[6] = {"ixx", "ixy", "ixz", "iyy", "iyz", "izz"};
        if (!first_time(rd, URDF_SEEN_INERTIA, "inertia", "inertial")) return rd->status;
        for (int i = 0; i < 6; i++)
            if (attr_numbers(rd, "inertia", atts, keys[i], &l->inertia[i], 1, 1) < 0) return rd->status;
    } else {
        *kind = URDF_EL_SKIP;
    }
    return GRID_OK;
}

int urdf_end_inertial(urdf_reader *rd)
{
    rd->pos = rd->inertial_pos;
    if (!(rd->seen & URDF_SEEN_MASS)) return urdf_fail(rd, GRID_ERR_URDF, "<inertial> has no <mass>");
    if (!(rd->seen & URDF_SEEN_INERTIA)) return urdf_fail(rd, GRID_ERR_URDF, "<inertial> has no <inertia>");
    return GRID_OK;
}

int urdf_start_joint(urdf_reader *rd, const char **atts)
{
    if (rd->robot->njoints >= GRID_URDF_MAX_LINKS)
        return urdf_fail(rd, GRID_ERR_LIMIT, "more than %d <joint> elements", GRID_URDF_MAX_LINKS);
    char *name = attr_name(rd, "joint", atts, "name");
    if (!name) return rd->status;
    grid_joint_desc *j = grid_robot_desc_add_joint(rd->robot);
    if (!j) {
        free(name);
        return urdf_fail(rd, GRID_ERR_NOMEM, "out of memory");
    }
    j->name = name;
    j->pos = rd->pos;
    rd->joint = rd->robot->njoints - 1;
    rd->seen = 0;

    // the type decides how the rest is read
    const char *type = attr(atts, "type");
    if (!type) return urdf_fail(rd, GRID_ERR_URDF, "<joint> has no type attribute");
    if (strcmp(type, "revolute") == 0) j->kind = GRID_JD_REVOLUTE;
    else if (strcmp(type, "continuous") == 0) j->kind = GRID_JD_CONTINUOUS;
    else if (strcmp(type, "prismatic") == 0) j->kind = GRID_JD_PRISMATIC;
    else if (strcmp(type, "fixed") == 0) j->kind = GRID_JD_FIXED;
    else if (strcmp(type, "floating") == 0) j->kind = GRID_JD_FLOATING;
    else if (strcmp(type, "planar") == 0) j->kind = GRID_JD_PLANAR;
    else if (strcmp(type, "spherical") == 0 || strcmp(type, "ball") == 0) j->kind = GRID_JD_SPHERICAL;
    else {
        char tb[80];
        return urdf_fail(rd, GRID_ERR_URDF,
                         "unknown joint type \"%s\" "
                         "(expected revolute, continuous, prismatic, fixed, floating, planar, spherical or ball)",
                         grid_name_for_message(type, tb, sizeof tb));
    }
    return GRID_OK;
}

/* <parent link> / <child link> */
static int read_link_ref(urdf_reader *rd, const char *elem, const char **atts, unsigned bit,
                         char **dst, grid_src_pos *dst_pos)
{
    if (!first_time(rd, bit, elem, "joint")) return rd->status;
    char *name = attr_name(rd, elem, atts, "link");
    if (!name) return rd->status;
    *dst = name;
    *dst_pos = rd->pos;
    return GRID_OK;
}

int urdf_joint_child(urdf_reader *rd, const char *name, const char **atts, urdf_element *kind)
{
    grid_joint_desc *j = &rd->robot->joints[rd->joint];
    *kind = URDF_EL_LEAF;
    if (strcmp(name, "origin") == 0) {
        if (!first_time(rd, URDF_SEEN_ORIGIN, "origin", "joint")) return rd->status;
        if (attr_numbers(rd, "origin", atts, "xyz", j->xyz, 3, 0) < 0) return rd->status;
        if (attr_numbers(rd, "origin", atts, "rpy", j->rpy, 3, 0) < 0) return rd->status;
    } else if (strcmp(name, "parent") == 0) {
        return read_link_ref(rd, "parent", atts, URDF_SEEN_PARENT, &j->parent, &j->parent_pos);
    } else if (strcmp(name, "child") == 0) {
        return read_link_ref(rd, "child", atts, URDF_SEEN_CHILD, &j->child, &j->child_pos);
    } else if (strcmp(name, "axis") == 0) {
        if (!first_time(rd, URDF_SEEN_AXIS, "axis", "joint")) return rd->status;
        rd->axis_pos = rd->pos;
        if (attr_numbers(rd, "axis", atts, "xyz", j->axis, 3, 0) < 0) return rd->status;
    } else if (strcmp(name, "limit") == 0) {
        if (!first_time(rd, URDF_SEEN_LIMIT, "limit", "joint")) return rd->status;
        int r1 = attr_numbers(rd, "limit", atts, "lower", &j->lower, 1, 0);
        int r2 = r1 < 0 ? -1 : attr_numbers(rd, "limit", atts, "upper", &j->upper, 1, 0);
        if (r2 < 0 || attr_numbers(rd, "limit", atts, "effort", &j->effort, 1, 0) < 0 ||
            attr_numbers(rd, "limit", atts, "velocity", &j->velocity, 1, 0) < 0)
            return rd->status;
        j->has_lower = r1 == 1;
        j->has_upper = r2 == 1;
    } else if (strcmp(name, "dynamics") == 0) {
        if (!first_time(rd, URDF_SEEN_DYNAMICS, "dynamics", "joint")) return rd->status;
        if (attr_numbers(rd, "dynamics", atts, "damping", &j->damping, 1, 0) < 0 ||
            attr_numbers(rd, "dynamics", atts, "friction", &j->friction, 1, 0) < 0)
            return rd->status;
    } else if (strcmp(name, "mimic") == 0) {
        if (!first_time(rd, URDF_SEEN_MIMIC, "mimic", "joint")) return rd->status;
        char *leader = attr_name(rd, "mimic", atts, "joint");
        if (!leader) return rd->status;
        j->mimic_joint = leader;
        j->has_mimic = 1;
        j->mimic_pos = rd->pos;
        if (attr_numbers(rd, "mimic", atts, "multiplier", &j->mimic_multiplier, 1, 0) < 0 ||
            attr_numbers(rd, "mimic", atts, "offset", &j->mimic_offset, 1, 0) < 0)
            return rd->status;
    } else {
        *kind = URDF_EL_SKIP;
    }
    return GRID_OK;
}

int urdf_end_joint(urdf_reader *rd)
{
    grid_joint_desc *j = &rd->robot->joints[rd->joint];
    rd->pos = j->pos;
    if (!(rd->seen & URDF_SEEN_PARENT)) return urdf_fail(rd, GRID_ERR_URDF, "<joint> has no <parent link=...>");
    if (!(rd->seen & URDF_SEEN_CHILD)) return urdf_fail(rd, GRID_ERR_URDF, "<joint> has no <child link=...>");

    // joints with an axis (a direction, or a planar joint's normal) need a nonzero one; fixed and floating
    // joints ignore it; a spherical joint ignores it too, but an explicit zero axis there is malformed
    if (j->kind == GRID_JD_REVOLUTE || j->kind == GRID_JD_CONTINUOUS || j->kind == GRID_JD_PRISMATIC ||
        j->kind == GRID_JD_PLANAR || j->kind == GRID_JD_SPHERICAL) {
        double big = fmax(fabs(j->axis[0]), fmax(fabs(j->axis[1]), fabs(j->axis[2])));
        if (big == 0.0) {
            rd->pos = rd->axis_pos;
            const char *type = j->kind == GRID_JD_PRISMATIC    ? "prismatic joint needs a direction"
                             : j->kind == GRID_JD_CONTINUOUS ? "continuous joint needs a direction"
                             : j->kind == GRID_JD_PLANAR     ? "planar joint needs its plane's normal"
                             : j->kind == GRID_JD_SPHERICAL  ? "spherical joint ignores its axis, but not a zero one"
                                                             : "revolute joint needs a direction";
            return urdf_fail(rd, GRID_ERR_URDF, "<axis xyz=\"0 0 0\"> is zero; a %s", type);
        }
        // scale first so huge or tiny components neither overflow nor underflow
        for (int i = 0; i < 3; i++) j->axis[i] /= big;
        double n = sqrt(j->axis[0] * j->axis[0] + j->axis[1] * j->axis[1] + j->axis[2] * j->axis[2]);
        for (int i = 0; i < 3; i++) j->axis[i] /= n;
    }
    return GRID_OK;
}
