/* C source templates (composite bodies embedded with .incbin): the macros a body reads, the body verbatim, the undefinitions. */
#ifndef GRID_EMIT_TEMPLATE_H
#define GRID_EMIT_TEMPLATE_H

#include "target.h"
#include "writer.h"

enum { EMIT_TPL_MAX_MACROS = 32 };

/* one use of a template: the macros defined so far (undefined again by emit_tpl_end) */
typedef struct {
    ew_writer *w;
    int n;
    char names[EMIT_TPL_MAX_MACROS][48];
} emit_tpl;

void emit_tpl_begin(emit_tpl *t, ew_writer *w);
/* "#define name value" (value printf-formatted; may be empty) */
void emit_tpl_define(emit_tpl *t, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "#define name(params) callee(args extra)": a call of a per-state function in the calling convention (target.h;
   lanes: its lane form), emit_state_arglist's args and stride, extra appended (a group function's own arguments) */
void emit_tpl_define_call(emit_tpl *t, const emit_target *tg, const char *name, const char *params, const char *callee,
                          int lanes, const char *const arg[EP_NARGS], const char *stride, const char *extra);
/* the template file's text (name_start of its GRID_INCBIN) without its purpose line and the comment after it that
   documents the macros */
void emit_tpl_body(emit_tpl *t, const char *file);
/* "#undef" of every macro defined, in order */
void emit_tpl_end(emit_tpl *t);

#endif
