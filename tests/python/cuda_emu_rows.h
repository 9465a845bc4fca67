// The emulated library's entry points of every signature row, in the order of their ids (GRID_ALGO_*): the names,
// the kernels' (grid_cuda_<id>) and the host round trips' (grid_host_<id>), for the emulation harnesses.
#ifndef CUDA_EMU_ROWS_H
#define CUDA_EMU_ROWS_H
// rows a library may lack (the opt-in ones, built only when named: grid_sig_opt_in) are weak: NULL when absent (the
// harnesses call only the rows the library's metadata lists)
#define GRID_ROW(ID, id, ref, ...) \
    extern "C" __attribute__((weak)) int grid_cuda_##id(const grid_call *); \
    extern "C" __attribute__((weak)) int grid_host_##id(const grid_call *);
#include "grid/signature_rows.h"
#undef GRID_ROW
static const char *emu_names[] = {
#define GRID_ROW(ID, id, ref, ...) #id,
#include "grid/signature_rows.h"
#undef GRID_ROW
};
#define EMU_N_ALGO ((int)(sizeof emu_names / sizeof emu_names[0]))
static int (*emu_device[])(const grid_call *) = {
#define GRID_ROW(ID, id, ref, ...) grid_cuda_##id,
#include "grid/signature_rows.h"
#undef GRID_ROW
};
static int (*emu_host[])(const grid_call *) = {
#define GRID_ROW(ID, id, ref, ...) grid_host_##id,
#include "grid/signature_rows.h"
#undef GRID_ROW
};
#endif
