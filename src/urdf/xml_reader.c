/* The expat pass over URDF bytes: safety caps, DOCTYPE refusal, and dispatch of each element to its parser. */
#include <stdio.h>
#include <string.h>
#include "urdf_reader.h"

/* mark the first n bytes of the message as the "line L, column C: " that restates err->line/column */
static void set_where(grid_error *err, int n)
{
    if (err && n > 0 && n < (int)sizeof err->message) err->where_len = n;
}

/* stop with an error that belongs to the document rather than to a link or joint */
static void stop(urdf_reader *rd, int code, const char *what, const char *detail)
{
    if (rd->status) return;
    char db[80];
    grid_error_set(rd->err, code, rd->pos.line, rd->pos.column, "line %d, column %d: %s%s%s%s", rd->pos.line,
                   rd->pos.column, what, detail ? " (" : "", detail ? grid_name_for_message(detail, db, sizeof db) : "",
                   detail ? ")" : "");
    set_where(rd->err, snprintf(NULL, 0, "line %d, column %d: ", rd->pos.line, rd->pos.column));
    rd->status = code;
    XML_StopParser(rd->parser, XML_FALSE);
}

static void here(urdf_reader *rd)
{
    rd->pos.line = (int)XML_GetCurrentLineNumber(rd->parser);
    rd->pos.column = (int)XML_GetCurrentColumnNumber(rd->parser) + 1;
}

/* the caps every element obeys, parsed or skipped: nesting depth and attribute length */
static int within_caps(urdf_reader *rd, const char *name, const char **atts)
{
    char msg[160];
    if (rd->depth >= GRID_URDF_MAX_DEPTH) {
        snprintf(msg, sizeof msg, "elements nest deeper than %d levels", GRID_URDF_MAX_DEPTH);
        stop(rd, GRID_ERR_LIMIT, msg, name);
        return 0;
    }
    if (strlen(name) > GRID_URDF_MAX_ATTR_LEN) {
        snprintf(msg, sizeof msg, "an element name is longer than %d characters", GRID_URDF_MAX_ATTR_LEN);
        stop(rd, GRID_ERR_LIMIT, msg, name);
        return 0;
    }
    for (int i = 0; atts[i]; i += 2) {
        if (strlen(atts[i]) > GRID_URDF_MAX_ATTR_LEN || strlen(atts[i + 1]) > GRID_URDF_MAX_ATTR_LEN) {
            snprintf(msg, sizeof msg, "an attribute of <%.40s> is longer than %d characters", name,
                     GRID_URDF_MAX_ATTR_LEN);
            stop(rd, GRID_ERR_LIMIT, msg, atts[i]);
            return 0;
        }
    }
    return 1;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    urdf_reader *rd = ud;
    if (rd->status) return;
    here(rd);
    if (!within_caps(rd, name, atts)) return;

    // what this element is follows from where it sits
    urdf_element kind = URDF_EL_SKIP;
    urdf_element parent = rd->depth > 0 ? (urdf_element)rd->kind[rd->depth - 1] : URDF_EL_SKIP;
    if (rd->depth == 0) {
        if (strcmp(name, "robot") != 0) {
            char nb[80];
            grid_error_set(rd->err, GRID_ERR_URDF, rd->pos.line, rd->pos.column,
                           "line %d: the document element is <%s>; a URDF starts with <robot>", rd->pos.line,
                           grid_name_for_message(name, nb, sizeof nb));
            set_where(rd->err, snprintf(NULL, 0, "line %d: ", rd->pos.line));
            rd->status = GRID_ERR_URDF;
            XML_StopParser(rd->parser, XML_FALSE);
            return;
        }
        kind = URDF_EL_ROBOT;
        urdf_start_robot(rd, atts);
    } else if (parent == URDF_EL_ROBOT) {
        if (strcmp(name, "link") == 0) {
            kind = URDF_EL_LINK;
            urdf_start_link(rd, atts);
        } else if (strcmp(name, "joint") == 0) {
            kind = URDF_EL_JOINT;
            urdf_start_joint(rd, atts);
        }
    } else if (parent == URDF_EL_LINK) {
        if (strcmp(name, "inertial") == 0) {
            kind = URDF_EL_INERTIAL;
            urdf_start_inertial(rd, atts);
        }
    } else if (parent == URDF_EL_INERTIAL) {
        urdf_inertial_child(rd, name, atts, &kind);
    } else if (parent == URDF_EL_JOINT) {
        urdf_joint_child(rd, name, atts, &kind);
    }
    rd->kind[rd->depth++] = (unsigned char)kind;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    urdf_reader *rd = ud;
    (void)name;
    if (rd->status || rd->depth == 0) return;
    urdf_element kind = (urdf_element)rd->kind[--rd->depth];
    if (kind == URDF_EL_LINK) {
        rd->link = -1;
        rd->seen = 0;
    } else if (kind == URDF_EL_INERTIAL) {
        urdf_end_inertial(rd);
    } else if (kind == URDF_EL_JOINT) {
        urdf_end_joint(rd);
        rd->joint = -1;
        rd->seen = 0;
    }
}

/* DOCTYPE opens the door to entity expansion (billion laughs) and external files: refused */
static void XMLCALL on_doctype(void *ud, const XML_Char *doctype_name, const XML_Char *sysid,
                              const XML_Char *pubid, int has_internal_subset)
{
    urdf_reader *rd = ud;
    (void)sysid;
    (void)pubid;
    (void)has_internal_subset;
    here(rd);
    stop(rd, GRID_ERR_XML, "DOCTYPE/entities are not allowed in a URDF: <!DOCTYPE>", doctype_name);
}

static void XMLCALL on_entity(void *ud, const XML_Char *entity_name, int is_parameter_entity,
                              const XML_Char *value, int value_length, const XML_Char *base,
                              const XML_Char *system_id, const XML_Char *public_id,
                              const XML_Char *notation_name)
{
    urdf_reader *rd = ud;
    (void)is_parameter_entity;
    (void)value;
    (void)value_length;
    (void)base;
    (void)system_id;
    (void)public_id;
    (void)notation_name;
    here(rd);
    stop(rd, GRID_ERR_XML, "DOCTYPE/entities are not allowed in a URDF: <!ENTITY>", entity_name);
}

int urdf_read_document(const char *bytes, size_t len, grid_robot_desc *robot, grid_error *err)
{
    urdf_reader rd;
    memset(&rd, 0, sizeof rd);
    rd.robot = robot;
    rd.err = err;
    rd.link = rd.joint = -1;
    rd.c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    rd.parser = XML_ParserCreate("UTF-8");
    if (!rd.c_locale || !rd.parser) {
        if (rd.c_locale) freelocale(rd.c_locale);
        if (rd.parser) XML_ParserFree(rd.parser);
        return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory creating the XML parser");
    }
    XML_SetUserData(rd.parser, &rd);
    XML_SetElementHandler(rd.parser, on_start, on_end);
    XML_SetStartDoctypeDeclHandler(rd.parser, on_doctype);
    XML_SetEntityDeclHandler(rd.parser, on_entity);

    enum XML_Status st = XML_Parse(rd.parser, bytes, (int)len, XML_TRUE);
    int rc = rd.status;
    if (st != XML_STATUS_OK && rc == GRID_OK) {
        // expat's own complaint: malformed or truncated XML
        enum XML_Error code = XML_GetErrorCode(rd.parser);
        int line = (int)XML_GetCurrentLineNumber(rd.parser);
        int col = (int)XML_GetCurrentColumnNumber(rd.parser) + 1;
        const char *what = XML_ErrorString(code);
        rc = grid_error_set(err, code == XML_ERROR_NO_MEMORY ? GRID_ERR_NOMEM : GRID_ERR_XML, line, col,
                            "line %d, column %d: malformed XML: %s", line, col, what ? what : "unknown error");
        set_where(err, snprintf(NULL, 0, "line %d, column %d: ", line, col));
    } else if (rc == GRID_OK && !robot->name) {
        rc = grid_error_set(err, GRID_ERR_URDF, 0, 0, "the document has no <robot> element");
    }
    XML_ParserFree(rd.parser);
    freelocale(rd.c_locale);
    return rc;
}
