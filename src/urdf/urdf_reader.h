/* Shared state of the expat-driven URDF reader and the element parsers it calls. */
#ifndef GRID_URDF_READER_H
#define GRID_URDF_READER_H

#include <expat.h>
#include <locale.h>
#include "grid/urdf.h"
#include "../model/robot_desc.h"

/* what an open element means to the reader */
typedef enum {
    URDF_EL_SKIP = 0,     /* not URDF dynamics (visual, gazebo, ...): skipped with its children */
    URDF_EL_ROBOT,
    URDF_EL_LINK,
    URDF_EL_INERTIAL,
    URDF_EL_JOINT,
    URDF_EL_LEAF          /* a parsed element whose children are skipped (origin, mass, axis, ...) */
} urdf_element;

/* sub-elements already met in the open <link>/<inertial>/<joint> (each may appear once) */
enum {
    URDF_SEEN_INERTIAL = 1u << 0,
    URDF_SEEN_I_ORIGIN = 1u << 1,
    URDF_SEEN_MASS = 1u << 2,
    URDF_SEEN_INERTIA = 1u << 3,
    URDF_SEEN_ORIGIN = 1u << 4,
    URDF_SEEN_PARENT = 1u << 5,
    URDF_SEEN_CHILD = 1u << 6,
    URDF_SEEN_AXIS = 1u << 7,
    URDF_SEEN_LIMIT = 1u << 8,
    URDF_SEEN_DYNAMICS = 1u << 9,
    URDF_SEEN_MIMIC = 1u << 10
};

typedef struct {
    XML_Parser parser;
    grid_robot_desc *robot;
    grid_error *err;
    int status;                 /* first failure; GRID_OK while all is well */
    int depth;                  /* open elements */
    unsigned char kind[GRID_URDF_MAX_DEPTH + 1]; /* urdf_element of each open element, by depth */
    int link, joint;            /* index of the open <link> / <joint>, -1 outside */
    unsigned seen;              /* URDF_SEEN_* of the open link or joint */
    grid_src_pos pos;           /* start of the element being handled */
    grid_src_pos inertial_pos;  /* start of the open <inertial> */
    grid_src_pos axis_pos;      /* start of the open joint's <axis> */
    locale_t c_locale;          /* numbers are read in the C locale whatever the process uses */
} urdf_reader;

/* record the first failure at rd->pos with the open link/joint as context, and stop expat */
int urdf_fail(urdf_reader *rd, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* element handlers: each reads its attributes into rd->robot, returns GRID_OK or fails rd */
int urdf_start_robot(urdf_reader *rd, const char **atts);
int urdf_start_link(urdf_reader *rd, const char **atts);
int urdf_start_inertial(urdf_reader *rd, const char **atts);
int urdf_inertial_child(urdf_reader *rd, const char *name, const char **atts, urdf_element *kind);
int urdf_end_inertial(urdf_reader *rd);
int urdf_start_joint(urdf_reader *rd, const char **atts);
int urdf_joint_child(urdf_reader *rd, const char *name, const char **atts, urdf_element *kind);
int urdf_end_joint(urdf_reader *rd);

/* expat over the whole document into robot; GRID_OK or an error in err */
int urdf_read_document(const char *bytes, size_t len, grid_robot_desc *robot, grid_error *err);

#endif
