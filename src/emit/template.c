/* C source templates: the macros a composite's embedded body reads, the body verbatim, and their undefinitions. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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

void emit_tpl_body(emit_tpl *t, const char *file)
{
    const char *doc = strchr(file, '\n');
    const char *body = doc ? strstr(doc + 1, "*/\n") : NULL;
    assert(body); /* a purpose line, then the comment documenting the macros */
    ew_puts(t->w, body ? body + 3 : file);
}

void emit_tpl_end(emit_tpl *t)
{
    for (int k = 0; k < t->n; k++) ew_printf(t->w, "#undef %s\n", t->names[k]);
    t->n = 0;
}
