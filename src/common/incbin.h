/* GRID_INCBIN: a file's bytes embedded in the library at build time (.incbin, path relative to the repository root where every build runs). */
#ifndef GRID_INCBIN_H
#define GRID_INCBIN_H

/* name##_start .. name##_end: the bytes of file, NUL-terminated, hidden (never exported from a shared object) */
#define GRID_INCBIN(name, file)                                                                             \
    __asm__(".pushsection .rodata\n.balign 16\n.globl " #name "_start\n.hidden " #name "_start\n" #name    \
            "_start:\n.incbin \"" file "\"\n.globl " #name "_end\n.hidden " #name "_end\n" #name "_end:\n"  \
            ".byte 0\n.popsection\n");                                                                      \
    extern const char name##_start[] __attribute__((visibility("hidden")));                                 \
    extern const char name##_end[] __attribute__((visibility("hidden")))

#endif
