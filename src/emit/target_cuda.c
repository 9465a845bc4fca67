/* The CUDA target's batch wrappers: staged one-thread-per-state kernels, launchers and the host round trips' descriptions (the host runtime itself is src/runtime/cuda_runtime.cu). */
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include "grid/abi.h"
#include "grid/emit.h"
#include "target_cuda.h"

/* ---- the prologue: the staging helpers (the knobs and the host runtime's interface come from cuda_host.h) ---- */

static const char cuda_config[] =
    "/* ---- the kernels' configuration: the GRID_CUDA_* knobs are in cuda_host.h (src/runtime), which every\n"
    "   CUDA robot library includes and whose runtime object (src/runtime/cuda_runtime.cu) it links ---- */\n"
    "#define GRID_CUDA_WARPS (GRID_CUDA_BLOCK / 32)\n"
    "static_assert(GRID_CUDA_BLOCK > 0 && GRID_CUDA_BLOCK <= 1024 && GRID_CUDA_BLOCK % 32 == 0,\n"
    "              \"GRID_CUDA_BLOCK must be a multiple of 32 up to 1024\");\n\n"
    "/* a staged array takes, per warp, a tile of 32 states x (w | 1) elements: the odd row stride puts\n"
    "   the 32 lanes' reads of one element in 32 different banks */\n"
    "#define GRID_TILE_(w) (GRID_CUDA_WARPS * 32 * ((w) | 1) * (int)sizeof(grid_real))\n"
    "#define GRID_FITS_(used, w) ((used) + GRID_TILE_(w) <= GRID_CUDA_SMEM_MAX)\n"
    "#define GRID_FITS_WIDE_(used, w) ((used) + GRID_TILE_(w) <= GRID_CUDA_SMEM_MAX_WIDE)\n\n"
    "/* rolled functions: GRID_G_ lanes share one state (1: a thread per state); the group's lanes meet here */\n"
    "#define GRID_GROUP_SYNC_() do { if (GRID_G_ > 1) __syncwarp(gm); } while (0)\n"
    "/* an interleaved workspace's element stride (GRID_CUDA_INTERLEAVE): a warp's lanes, or 1 */\n"
    "#define GRID_IL_ (GRID_CUDA_INTERLEAVE ? 32 : 1)\n"
    "static_assert(GRID_CUDA_GROUP >= 1 && GRID_CUDA_GROUP <= 32 && (GRID_CUDA_GROUP & (GRID_CUDA_GROUP - 1)) == 0,\n"
    "              \"GRID_CUDA_GROUP must be a power of two up to 32\");\n\n"
    "/* the rows of a warp's m states (consecutive in global memory) into its tile, coalesced */\n"
    "template <int W>\n"
    "static __device__ __forceinline__ void grid_tile_in_(grid_real *__restrict__ t, const grid_real *__restrict__ g,\n"
    "                                                     const int m, const int lane)\n{\n"
    "#pragma unroll 4\n"
    "    for (int e = lane; e < m * W; e += 32) t[(e / W) * (W | 1) + e % W] = __ldg(g + e);\n"
    "}\n\n"
    "/* a tile of zeros (an absent optional input) */\n"
    "template <int W>\n"
    "static __device__ __forceinline__ void grid_tile_zero_(grid_real *__restrict__ t, const int lane)\n{\n"
    "    for (int e = lane; e < 32 * (W | 1); e += 32) t[e] = 0;\n"
    "}\n\n"
    "/* the tile's m rows back to global memory, coalesced */\n"
    "template <int W>\n"
    "static __device__ __forceinline__ void grid_tile_out_(grid_real *__restrict__ g, const grid_real *__restrict__ t,\n"
    "                                                      const int m, const int lane)\n{\n"
    "#pragma unroll 4\n"
    "    for (int e = lane; e < m * W; e += 32) g[e] = t[(e / W) * (W | 1) + e % W];\n"
    "}\n\n"
    "/* a chunked output (grid_c_<fn>): chunk [k0, k0 + n) of the warp's m states from its 32 x 33 tile to global\n"
    "   memory, each store instruction n consecutive elements of one state; the lanes' next chunk waits for it */\n"
    "template <int W>\n"
    "static __device__ __forceinline__ void grid_chunk_out_(grid_real *__restrict__ g, const grid_real *__restrict__ t,\n"
    "                                                       const int k0, const int n, const int m, const int lane)\n{\n"
    "    __syncwarp();\n"
    "    if (lane < n) {\n"
    "#pragma unroll 4\n"
    "        for (int s = 0; s < m; s++) {\n"
    "#if GRID_CUDA_OUT_STREAM\n"
    "            __stcs(g + (long long)s * W + k0 + lane, t[s * 33 + lane]);\n"
    "#else\n"
    "            g[(long long)s * W + k0 + lane] = t[s * 33 + lane];\n"
    "#endif\n"
    "        }\n"
    "    }\n"
    "    __syncwarp();\n"
    "}\n\n";

void emit_cuda_helpers(ew_writer *w, const emit_target *t)
{
    (void)t;
    ew_puts(w, cuda_config);
}

/* ---- per method ---- */

/* one staged array of a kernel: its pointer name, width, and whether the caller may pass NULL */
typedef struct {
    char key;           /* q o v a f: suffix of the plan enumerators */
    const char *arg;    /* kernel parameter */
    long long width;
    int optional;       /* NULL stands for zeros */
} stage_array;

/* the arrays a kernel of variant vr touches, in staging priority order: q, the output, v, a, fext */
static int stage_arrays(const emit_entry *e, const emit_variant *vr, stage_array out[2 + EP_COUNT])
{
    int n = 0;
    const long long nout = e->row->out[0].width;
    out[n++] = (stage_array){'q', "q", emit_param_width(e, EP_Q), 0};
    if (nout > 0) out[n++] = (stage_array){'o', "o", nout, 0};
    if (nout > 32) out[n++] = (stage_array){'c', "o", 32, 0}; /* the chunk tile of grid_c_<fn>, when there is one */
    for (int p = EP_V; p < EP_COUNT; p++)
        if (vr->reads[p])
            out[n++] = (stage_array){emit_param_name(p)[0], emit_param_name(p), emit_param_width(e, p),
                                     emit_param_optional(e, p)};
    return n;
}

/* The shared-memory plan of a kernel, as enumerators the compiler folds: grid_p_<fn>_<k> is the byte offset
   of array k's tiles (-1: read or written in place), grid_p_<fn>_u<k> the bytes used after it, and
   grid_p_<fn>_smem the dynamic shared memory a block takes. Arrays are staged in priority order while they
   fit GRID_CUDA_SMEM_MAX; the output only when at most GRID_CUDA_OUT_STAGE_MAX wide. */
static void write_plan(ew_writer *w, const char *fn, const stage_array *arr, int n)
{
    /* GRID_OC_<fn>: the chunked output's mode (GRID_CUDA_OUT_CHUNKED) when grid_c_<fn> exists, else 0 */
    ew_printf(w, "#if defined(GRID_CHUNKED_%s)\n#define GRID_OC_%s GRID_CUDA_OUT_CHUNKED\n#else\n#define GRID_OC_%s 0\n#endif\n",
              fn, fn, fn);
    ew_puts(w, "enum {\n");
    char prev[64] = "0";
    for (int i = 0; i < n; i++) {
        const stage_array *s = &arr[i];
        /* inputs and narrow outputs fit the normal budget; a wide output the wide one */
        const char *fits = "GRID_FITS_";
        char cond[160] = "";
        if (s->key == 'o') {
            snprintf(cond, sizeof cond, "%lld <= GRID_CUDA_OUT_STAGE_MAX ? GRID_FITS_(%s, %lld) : GRID_OC_%s != 2 && ",
                     s->width, prev, s->width, fn);
            fits = "GRID_FITS_WIDE_";
        } else if (s->key == 'c') {
            snprintf(cond, sizeof cond, "GRID_OC_%s && grid_p_%s_o < 0 && ", fn, fn);
            fits = "GRID_FITS_WIDE_";
        }
        ew_printf(w, "    grid_p_%s_%c = (%s%s(%s, %lld)) ? %s : -1,\n", fn, s->key, cond, fits, prev, s->width, prev);
        ew_printf(w, "    grid_p_%s_u%c = grid_p_%s_%c < 0 ? %s : %s + GRID_TILE_(%lld),\n", fn, s->key, fn, s->key, prev,
                  prev, s->width);
        snprintf(prev, sizeof prev, "grid_p_%s_u%c", fn, s->key);
    }
    ew_printf(w, "    grid_p_%s_smem = %s\n};\n", fn, prev);
}

/* the kernel of one per-state function: one thread per state, each warp staging its 32 states' rows */
/* the CUDA target (its per-state functions take the stride parameter) */
static const emit_target *cuda(void) { return emit_target_get(GRID_TARGET_CUDA); }

/* the arguments of a per-state call on state b in the calling convention (target.h): its inputs, the output out_fmt
   (with the width out_n), fr, rf, the workspace ws and the stride 1; then extra (a group function's own) */
static void state_call_args(ew_writer *w, const emit_entry *e, const emit_variant *vr, const char *out_fmt, long long out_n,
                            const char *ws, const char *extra)
{
    char text[EP_COUNT][96], out[64];
    const char *arg[EP_NARGS];
    emit_state_inputs(e, vr, text, arg);
    snprintf(out, sizeof out, out_fmt, out_n);
    arg[EP_OUT] = out;
    arg[EP_FRAME] = "fr";
    arg[EP_WS] = ws;
    emit_state_arglist(w, cuda(), 0, arg, "1");
    if (extra) ew_puts(w, extra);
}

static void write_kernel(ew_writer *w, const emit_entry *e, const emit_variant *vr)
{
    const char *fn = vr->fn;
    const long long nout = e->row->out[0].width;
    stage_array arr[2 + EP_COUNT];
    const int n = stage_arrays(e, vr, arr);
    ew_printf(w, "#ifndef GRID_KERNEL_%s\n#define GRID_KERNEL_%s\n", fn, fn);
    ew_printf(w, "/* %s: the plan of its shared-memory tiles, then the kernel */\n", fn);
    write_plan(w, fn, arr, n);
    ew_printf(w, "static __global__ void __launch_bounds__(GRID_CUDA_BLOCK, GRID_CUDA_MIN_BLOCKS)\n"
                 "grid_k_%s(const grid_real *__restrict__ q, const grid_real *__restrict__ v, const grid_real *__restrict__ a,\n"
                 "    const grid_real *__restrict__ f, const grid_real *__restrict__ g, grid_real *__restrict__ o, const long long n,\n"
                 "    const int fr, const int rf%s)\n{\n",
              fn, vr->work > 0 ? ",\n    grid_real *__restrict__ ws, const long long wst" : "");
    ew_puts(w, "    extern __shared__ __align__(16) unsigned char grid_smem_[];\n"
               "    const int lane = (int)(threadIdx.x & 31), warp = (int)(threadIdx.x >> 5);\n"
               "    const long long b0 = ((long long)blockIdx.x * (blockDim.x >> 5) + warp) * 32; /* the warp's first state */\n"
               "    if (b0 >= n) return; /* the whole warp is past the batch */\n"
               "    const int m = n - b0 < 32 ? (int)(n - b0) : 32;\n"
               "    /* lanes past the batch compute a copy of the warp's last state (the warp stays converged) and store nothing */\n"
               "    const int l = lane < m ? lane : m - 1;\n"
               "    (void)v; (void)a; (void)f; (void)g;\n");
    /* a rolled function's workspace: a plain array per lane (not strided like the state arrays); lanes past the
       batch have their own, so no two threads share one */
    if (vr->work > 0)
        ew_puts(w, vr->interleaved ? "    /* interleaved over the warp (GRID_IL_ = 32), or contiguous per lane */\n"
                                     "    grid_real *const wsl = ws + (GRID_IL_ > 1 ? b0 * wst + lane : (b0 + lane) * wst);\n"
                                   : "    grid_real *const wsl = ws + (b0 + lane) * wst;\n");
    const char *wsarg = vr->work > 0 ? "wsl" : "0";
    const char *ptr[EP_COUNT] = {"0", "0", "0", "0", "0"}; /* q v a f g arguments of the per-state call */
    static const char *const staged[EP_COUNT] = {"sq", "sv", "sa", "sf", "sg"};
    for (int i = 0; i < n; i++) {
        const stage_array *s = &arr[i];
        if (s->key == 'o' || s->key == 'c') continue;
        const long long wd = s->width;
        char name[8];
        snprintf(name, sizeof name, "s%c", s->key);
        ew_printf(w, "    /* %s: staged when the plan has room, else read in place */\n", s->arg);
        if (s->optional)
            ew_printf(w, "    const grid_real *%s = %s ? %s + (b0 + l) * %lld : grid_zeros_; /* NULL: zeros */\n", name, s->arg,
                      s->arg, wd);
        else
            ew_printf(w, "    const grid_real *%s = %s + (b0 + l) * %lld;\n", name, s->arg, wd);
        ew_printf(w, "    if (grid_p_%s_%c >= 0) {\n"
                     "        grid_real *t = (grid_real *)(grid_smem_ + grid_p_%s_%c) + warp * 32 * (%lld | 1);\n",
                  fn, s->key, fn, s->key, wd);
        if (s->optional)
            ew_printf(w, "        if (%s) grid_tile_in_<%lld>(t, %s + b0 * %lld, m, lane);\n"
                         "        else grid_tile_zero_<%lld>(t, lane);\n",
                      s->arg, wd, s->arg, wd, wd);
        else
            ew_printf(w, "        grid_tile_in_<%lld>(t, %s + b0 * %lld, m, lane);\n", wd, s->arg, wd);
        ew_printf(w, "        %s = t + l * (%lld | 1);\n    }\n", name, wd);
        for (int p = 0; p < EP_COUNT; p++)
            if (emit_param_name(p)[0] == s->key) ptr[p] = staged[p];
    }
    if (nout > 32) {
        /* a wide output in chunks of 32 elements through the warp's 32 x 33 tile (grid_c_<fn>) */
        ew_printf(w, "#if GRID_OC_%s\n"
                     "    if constexpr (grid_p_%s_c >= 0) {\n"
                     "        static_assert(GRID_CHUNKED_%s == %lld, \"the chunked function's width is the output's\");\n"
                     "        grid_real *tc = (grid_real *)(grid_smem_ + grid_p_%s_c) + warp * 32 * 33;\n"
                     "        __syncwarp();\n"
                     "        grid_c_%s(%s, %s, %s, %s, %s, tc + lane * 33, fr, rf, 1, tc, o + b0 * %lld, m, lane);\n"
                     "        return;\n"
                     "    }\n"
                     "#endif\n",
                  fn, fn, fn, nout, fn, fn, ptr[0], ptr[1], ptr[2], ptr[3], ptr[4], nout);
    }
    char sname[96];
    snprintf(sname, sizeof sname, "grid_s_%s", fn);
    if (nout > 0) {
        ew_printf(w, "    /* outputs: through a tile when the plan has room (every lane writes its own row), else in place */\n"
                     "    grid_real *so = o + (b0 + l) * %lld, *to = 0;\n"
                     "    if (grid_p_%s_o >= 0) {\n"
                     "        to = (grid_real *)(grid_smem_ + grid_p_%s_o) + warp * 32 * (%lld | 1);\n"
                     "        so = to + lane * (%lld | 1);\n"
                     "    }\n"
                     "    __syncwarp();\n"
                     "    if (grid_p_%s_o >= 0 || lane < m) ",
                  nout, fn, fn, nout, nout, fn);
        const char *arg[EP_NARGS] = {ptr[0], ptr[1], ptr[2], ptr[3], ptr[4], "so", "fr", "rf", wsarg};
        emit_state_call(w, cuda(), 0, sname, arg, "1");
        ew_printf(w, ";\n"
                     "    if (grid_p_%s_o >= 0) {\n"
                     "        __syncwarp();\n"
                     "        grid_tile_out_<%lld>(o + b0 * %lld, to, m, lane);\n"
                     "    }\n",
                  fn, nout, nout);
    } else {
        const char *arg[EP_NARGS] = {ptr[0], ptr[1], ptr[2], ptr[3], ptr[4], "o", "fr", "rf", wsarg};
        ew_puts(w, "    __syncwarp();\n    if (lane < m) ");
        emit_state_call(w, cuda(), 0, sname, arg, "1");
        ew_puts(w, ";\n");
    }
    ew_printf(w, "}\n#endif /* GRID_KERNEL_%s */\n\n", fn);
}

/* the split kernel of a function written in pieces as well (GRID_SPLIT_<fn> of emit_state.c): a thread per piece and
   state, block k running piece k % GRID_SPLIT_<fn> of its GRID_CUDA_BLOCK states (so every warp runs one piece's
   code), inputs read and outputs written in place */
static void write_split_kernel(ew_writer *w, const emit_entry *e, const emit_variant *vr)
{
    const char *fn = vr->fn;
    ew_printf(w, "#if defined(GRID_SPLIT_%s) && !defined(GRID_XKERNEL_%s)\n#define GRID_XKERNEL_%s\n", fn, fn, fn);
    ew_printf(w, "static __global__ void __launch_bounds__(GRID_CUDA_BLOCK, GRID_CUDA_MIN_BLOCKS)\n"
                 "grid_kx_%s(const grid_real *__restrict__ q, const grid_real *__restrict__ v, const grid_real *__restrict__ a,\n"
                 "    const grid_real *__restrict__ f, const grid_real *__restrict__ g, grid_real *__restrict__ o, const long long n,\n"
                 "    const int fr, const int rf)\n{\n"
                 "    const int piece = (int)(blockIdx.x %% GRID_SPLIT_%s);\n"
                 "    const long long b = (long long)(blockIdx.x / GRID_SPLIT_%s) * blockDim.x + threadIdx.x;\n"
                 "    if (b >= n) return;\n"
                 "    (void)v; (void)a; (void)f; (void)g;\n"
                 "    grid_sx_%s(piece, ",
              fn, fn, fn, fn);
    state_call_args(w, e, vr, "o + b * %lld", e->row->out[0].width, "0", NULL);
    ew_puts(w, ");\n}\n#endif\n\n");
}

/* a rolled function with a wide output (more than a warp's 32 elements) also has a group kernel */
static int group_form(const emit_entry *e, const emit_variant *vr) { return vr->grouped && vr->work > 0 && e->row->out[0].width > 32; }

/* a rolled function's group kernel: GRID_CUDA_GROUP lanes per state, reading and writing global memory in place
   (the lanes of a group read the same inputs; a columns loop's lanes write consecutive elements), the group's
   workspace is the state's; lanes past the batch exit, and the live lanes' mask is what the groups sync on */
static void write_group_kernel(ew_writer *w, const emit_entry *e, const emit_variant *vr)
{
    const char *fn = vr->fn;
    ew_printf(w, "#ifndef GRID_GKERNEL_%s\n#define GRID_GKERNEL_%s\n", fn, fn);
    ew_printf(w, "static __global__ void __launch_bounds__(GRID_CUDA_BLOCK, GRID_CUDA_MIN_BLOCKS)\n"
                 "grid_kg_%s(const grid_real *__restrict__ q, const grid_real *__restrict__ v, const grid_real *__restrict__ a,\n"
                 "    const grid_real *__restrict__ f, const grid_real *__restrict__ g, grid_real *__restrict__ o, const long long n,\n"
                 "    const int fr, const int rf,\n"
                 "    grid_real *__restrict__ ws, const long long wst)\n{\n",
              fn);
    ew_puts(w, "    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x, b = t / GRID_CUDA_GROUP;\n"
               "    /* the warp's live lanes: those whose state is in the batch */\n"
               "    const long long live = n * GRID_CUDA_GROUP - (t & ~31LL);\n"
               "    const unsigned gm = live >= 32 ? 0xffffffffu : (1u << (live > 0 ? live : 0)) - 1u;\n"
               "    if (b >= n) return;\n"
               "    (void)v; (void)a; (void)f; (void)g;\n");
    ew_printf(w, "    grid_s_%s<GRID_CUDA_GROUP>(", fn);
    state_call_args(w, e, vr, "o + b * %lld", e->row->out[0].width, "ws + b * wst", ", (int)(t & (GRID_CUDA_GROUP - 1)), gm");
    ew_printf(w, ");\n}\n#endif /* GRID_GKERNEL_%s */\n\n", fn);
}

/* the launch of one kernel on s, with the shared-memory opt-in when its plan needs more than 48 KB; a function
   with workspace is launched in slices over c->work (device memory, whole warps of states) or, when the caller
   passed none, over stream-ordered scratch of at most GRID_CUDA_WORK_MAX bytes */
static void launch_one_thread(ew_writer *w, const emit_entry *e, const emit_variant *vr, const char *ind);
static void write_launch(ew_writer *w, const emit_entry *e, const emit_variant *vr, const char *ind)
{
    const char *fn = vr->fn;
    /* a small batch of a split function: a thread per piece and state; else the launch below */
    ew_printf(w, "#ifdef GRID_SPLIT_%s\n"
                 "%sif (n <= GRID_SPLIT_MAX_%s && blocks * GRID_SPLIT_%s <= 2147483647LL) {\n"
                 "%s    const int bs = grid_cuda_block_of(n * GRID_SPLIT_%s);\n"
                 "%s    grid_kx_%s<<<(unsigned)((n + bs - 1) / bs * GRID_SPLIT_%s), bs, 0, s>>>(q, v, a, f, g, o, n, fr, rf);\n"
                 "%s} else\n"
                 "#endif\n"
                 "%s{\n",
              fn, ind, fn, fn, ind, fn, ind, fn, fn, ind, ind);
    launch_one_thread(w, e, vr, ind);
    ew_printf(w, "%s}\n", ind);
}

/* write_launch's one-thread-per-state (or group) launch */
static void launch_one_thread(ew_writer *w, const emit_entry *e, const emit_variant *vr, const char *ind)
{
    const char *fn = vr->fn;
    ew_printf(w, "%sif (grid_p_%s_smem > 48 * 1024 &&\n"
                 "%s    (e = cudaFuncSetAttribute(grid_k_%s, cudaFuncAttributeMaxDynamicSharedMemorySize, grid_p_%s_smem)) != cudaSuccess)\n"
                 "%s    return grid_cuda_fail_(e, \"raising the shared memory of grid_k_%s\");\n",
              ind, fn, ind, fn, fn, ind, fn);
    if (vr->work == 0) {
        ew_printf(w, "%sgrid_k_%s<<<(unsigned)blocks, GRID_CUDA_BLOCK, grid_p_%s_smem, s>>>(q, v, a, f, g, o, n, fr, rf);\n", ind,
                  fn, fn);
        return;
    }
    ew_printf(w, "%s{\n"
                 "%s    /* %lld reals of workspace per state in flight */\n"
                 "%s    const size_t wb = %lldu * sizeof(grid_real);\n"
                 "%s    void *ws = c->work;\n"
                 "%s    long long slice = (long long)(c->work_bytes / wb) / 32 * 32;\n"
                 "%s    if (!ws) {\n"
                 "%s        slice = grid_cuda_slice_states(n, wb, GRID_CUDA_WORK_MAX);\n"
                 "%s        const int rc = grid_cuda_scratch_((size_t)grid_cuda_in_flight(slice) * wb, c->stream, &ws);\n"
                 "%s        if (rc) return rc;\n"
                 "%s    } else if (slice < 32) {\n"
                 "%s        return 7; /* c->work holds less than one warp's workspace */\n"
                 "%s    }\n"
                 "%s    for (long long off = 0; off < n; off += slice) {\n"
                 "%s        const long long k = n - off < slice ? n - off : slice;\n"
                 "%s        const unsigned kb = (unsigned)((k + GRID_CUDA_BLOCK - 1) / GRID_CUDA_BLOCK);\n",
              ind, ind, vr->work, ind, vr->work, ind, ind, ind, ind, ind, ind, ind, ind, ind, ind, ind, ind);
    /* the slice's arguments, shared by the thread and the group kernel */
    ew_writer args;
    ew_init(&args);
    for (int p = 0; p < EP_COUNT; p++) {
        const char *nm = emit_param_name(p);
        const long long wd = emit_param_width(e, p);
        if (wd == 0) ew_printf(&args, "%s, ", nm);
        else if (emit_param_optional(e, p)) ew_printf(&args, "%s ? %s + off * %lld : %s, ", nm, nm, wd, nm);
        else ew_printf(&args, "%s + off * %lld, ", nm, wd);
    }
    ew_printf(&args, "o + off * %lld, k, fr, rf, (grid_real *)ws, %lldLL", e->row->out[0].width, vr->work);
    const char *av = args.buf && !args.oom ? args.buf : "";
    /* a wide output: GRID_CUDA_GROUP lanes per state (grid_kg_<fn>) */
    if (group_form(e, vr)) ew_printf(w, "%s        const int gs = grid_cuda_block_of(k * GRID_CUDA_GROUP);\n"
                 "%s        if (GRID_CUDA_GROUP > 1 && %lldLL >= GRID_CUDA_GROUP_MIN_OUT)\n"
                 "%s            grid_kg_%s<<<(unsigned)((k * GRID_CUDA_GROUP + gs - 1) / gs), gs, 0, s>>>(%s);\n"
                 "%s        else\n"
                 "%s            grid_k_%s<<<kb, GRID_CUDA_BLOCK, grid_p_%s_smem, s>>>(%s);\n",
              ind, ind, e->row->out[0].width, ind, fn, av, ind, ind, fn, fn, av);
    else ew_printf(w, "%s        grid_k_%s<<<kb, GRID_CUDA_BLOCK, grid_p_%s_smem, s>>>(%s);\n", ind, fn, fn, av);
    if (args.oom) w->oom = 1;
    ew_free(&args);
    ew_printf(w, "%s    }\n"
                 "%s    if (!c->work) {\n"
                 "%s        const int rc = grid_cuda_scratch_done_(ws, c->stream);\n"
                 "%s        if (rc) return rc;\n"
                 "%s    }\n"
                 "%s}\n",
              ind, ind, ind, ind, ind, ind);
}

/* a staged composite's kernels: its callees' (each guarded, so a callee's own row shares them) and the product
   -M^-1 dtau, a thread per state and output column (the column's nv outputs, each summed over j in order) */
static void write_stage_kernels(ew_writer *w, const emit_entry *e, const emit_variant *vr)
{
    for (int k = 0; k < EMIT_STAGES; k++) {
        write_kernel(w, e->stage[k], e->stage_variant[k]);
        if (group_form(e->stage[k], e->stage_variant[k])) write_group_kernel(w, e->stage[k], e->stage_variant[k]);
        write_split_kernel(w, e->stage[k], e->stage_variant[k]);
    }
    const long long nv = e->stage[0]->row->out[0].width, n2 = 2 * nv;
    assert(e->row->out[0].width == nv * n2);
    ew_printf(w, "/* %s's product d qdd / dx = -M^-1 dtau: a thread per state and column */\n"
                 "static __global__ void __launch_bounds__(GRID_CUDA_BLOCK, GRID_CUDA_MIN_BLOCKS)\n"
                 "grid_kp_%s(const grid_real *__restrict__ Mi, const grid_real *__restrict__ dt, grid_real *__restrict__ o,\n"
                 "    const long long n)\n{\n"
                 "    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x, b = t / %lld;\n"
                 "    if (b >= n) return;\n"
                 "    const int c = (int)(t - b * %lld);\n"
                 "    const grid_real *m = Mi + b * %lld, *d = dt + b * %lld + c;\n"
                 "    grid_real *y = o + b * %lld + c;\n"
                 "    for (int r = 0; r < %lld; r++) {\n"
                 "        grid_real s = 0;\n"
                 "        for (int j = 0; j < %lld; j++) s -= m[r * %lld + j] * d[j * %lld];\n"
                 "        y[r * %lld] = s;\n"
                 "    }\n}\n\n",
              vr->fn, vr->fn, n2, n2, nv * nv, nv * n2, nv * n2, nv, nv, nv, n2, n2);
}

/* 1 when a staged composite's FD and M^-1 run in one launch for batches up to GRID_CUDA_FUSE_MAX (grid_ka_<fn>):
   both written without workspace, so a thread calls either in place */
static int fused_first_stage(const emit_entry *e) { return e->stage_variant[0]->work == 0 && e->stage_variant[2]->work == 0; }

/* grid_ka_<fn>: the staged composite's first stage in one launch: blocks [0, fdb) run FD, a thread per state; the
   rest M^-1, a thread per piece and state where it is split (as grid_kx_minv), else per state; inputs and outputs in
   place. GRID_KA_MINV_BLOCKS_<fn>(n, blocks) is the launch's M^-1 block count. */
static void write_fused_first_stage(ew_writer *w, const emit_entry *e, const char *fn)
{
    const emit_entry *fd = e->stage[0], *mi = e->stage[2];
    const emit_variant *fv = e->stage_variant[0], *mv = e->stage_variant[2];
    const long long nv = fd->row->out[0].width, nm = mi->row->out[0].width;
    ew_puts(w, "#if GRID_CUDA_FUSE_MAX > 0 /* off by default: not compiled then */\n");
    ew_printf(w, "#ifdef GRID_SPLIT_%s\n"
                 "#define GRID_KA_MINV_BLOCKS_%s(n, blocks) ((n) <= GRID_SPLIT_MAX_%s ? (blocks) * GRID_SPLIT_%s : (blocks))\n"
                 "#else\n#define GRID_KA_MINV_BLOCKS_%s(n, blocks) (blocks)\n#endif\n",
              mv->fn, fn, mv->fn, mv->fn, fn);
    ew_printf(w, "/* %s's first stage: %s (a thread per state) and %s in one launch */\n"
                 "static __global__ void __launch_bounds__(GRID_CUDA_BLOCK, GRID_CUDA_MIN_BLOCKS)\n"
                 "grid_ka_%s(const grid_real *__restrict__ q, const grid_real *__restrict__ v, const grid_real *__restrict__ a,\n"
                 "    const grid_real *__restrict__ f, grid_real *__restrict__ qdd, grid_real *__restrict__ Mi, const long long n,\n"
                 "    const unsigned fdb)\n{\n"
                 "    const grid_real *const g = 0;\n"
                 "    const int fr = 0, rf = 0;\n"
                 "    (void)v; (void)a; (void)f; (void)g;\n"
                 "    if (blockIdx.x < fdb) {\n"
                 "        const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "        if (b >= n) return;\n"
                 "        grid_s_%s(",
              fn, fv->fn, mv->fn, fn, fv->fn);
    state_call_args(w, fd, fv, "qdd + b * %lld", nv, "0", NULL);
    ew_printf(w, ");\n"
                 "        return;\n"
                 "    }\n"
                 "    const unsigned k = blockIdx.x - fdb;\n"
                 "#ifdef GRID_SPLIT_%s\n"
                 "    if (n <= GRID_SPLIT_MAX_%s) {\n"
                 "        const long long b = (long long)(k / GRID_SPLIT_%s) * blockDim.x + threadIdx.x;\n"
                 "        if (b >= n) return;\n"
                 "        grid_sx_%s((int)(k %% GRID_SPLIT_%s), ",
              mv->fn, mv->fn, mv->fn, mv->fn, mv->fn);
    state_call_args(w, mi, mv, "Mi + b * %lld", nm, "0", NULL);
    ew_printf(w, ");\n"
                 "        return;\n"
                 "    }\n"
                 "#endif\n"
                 "    const long long b = (long long)k * blockDim.x + threadIdx.x;\n"
                 "    if (b >= n) return;\n"
                 "    grid_s_%s(",
              mv->fn);
    state_call_args(w, mi, mv, "Mi + b * %lld", nm, "0", NULL);
    ew_puts(w, ");\n}\n#endif\n\n");
}

/* The staged form of composite e (docs/cuda.md "Staged FD gradient"): per slice of the batch, qdd = FD, M^-1 and
   the RNEA gradient at qdd into device arrays by their own rows' launchers (split pieces where a function has them,
   else a thread or a group per state), then grid_kp_<fn>. A state's work thus spreads over its callees' pieces and
   columns instead of one thread. The arrays (and the callees' workspace after them) come from c->work when the
   caller passed it, else from stream-ordered scratch of at most GRID_CUDA_STAGED_BYTES (the callees then take their
   own). For batches up to GRID_CUDA_FUSE_MAX (0 by default), FD and M^-1 share a launch (grid_ka_<fn>). */
static void write_staged(ew_writer *w, const emit_entry *e, const emit_variant *vr)
{
    const char *fn = vr->fn;
    const long long nv = e->stage[0]->row->out[0].width, nq = emit_param_width(e, EP_Q),
                    nf = emit_param_width(e, EP_F);
    long long cw = 0; /* the callees' workspace per state (they run one after another) */
    for (int k = 0; k < EMIT_STAGES; k++)
        if (e->stage_variant[k]->work > cw) cw = e->stage_variant[k]->work;
    assert(emit_param_width(e, EP_V) == nv && emit_param_width(e, EP_A) == nv && e->work >= nv + 3 * nv * nv + cw);
    write_stage_kernels(w, e, vr);
    if (fused_first_stage(e)) write_fused_first_stage(w, e, fn);
    ew_printf(w, "static int grid_st_%s(const grid_call *c, const grid_real *q_, const grid_real *v_, const grid_real *a_,\n"
                 "    const grid_real *f_, grid_real *o_, const long long n_)\n{\n"
                 "    const int fr = 0, rf = 0;\n"
                 "    const grid_real *const g = 0;\n"
                 "    const cudaStream_t s = (cudaStream_t)c->stream;\n"
                 "    cudaError_t e;\n"
                 "    /* per state: qdd (%lld), M^-1 (%lld x %lld), dtau (%lld x %lld); the callees' workspace (%lld reals) */\n"
                 "    const size_t ob = %lldu * sizeof(grid_real), cb = %lldu * sizeof(grid_real);\n"
                 "    void *ws = c->work;\n"
                 "    long long slice = grid_cuda_slice_states(n_, ob, GRID_CUDA_STAGED_BYTES);\n"
                 "    if (ws) {\n"
                 "        const long long fit = (long long)(c->work_bytes / (ob + cb)) / 32 * 32;\n"
                 "        if (fit < 32) return 7; /* c->work holds less than one warp's workspace */\n"
                 "        if (slice > fit) slice = fit;\n"
                 "    } else {\n"
                 "        const int rc = grid_cuda_scratch_((size_t)slice * ob, c->stream, &ws);\n"
                 "        if (rc) return rc;\n"
                 "    }\n"
                 "    grid_real *const qdd = (grid_real *)ws, *const Mi = qdd + slice * %lld, *const dt = Mi + slice * %lld;\n"
                 "    grid_call cc = *c;\n"
                 "    cc.work = c->work ? (void *)(dt + slice * %lld) : 0;\n"
                 "    cc.work_bytes = c->work ? c->work_bytes - (size_t)slice * ob : 0;\n"
                 "    for (long long at = 0; at < n_; at += slice) {\n"
                 "        const grid_call *const c = &cc;\n"
                 "        const long long n = n_ - at < slice ? n_ - at : slice, blocks = (n + GRID_CUDA_BLOCK - 1) / GRID_CUDA_BLOCK;\n"
                 "        const grid_real *const q = q_ + at * %lld, *const v = v_ + at * %lld, *const f = f_ ? f_ + at * %lld : f_;\n"
                 "        (void)c; (void)g; (void)v; (void)f;\n",
              fn, nv, nv, nv, nv, 2 * nv, cw, nv + 3 * nv * nv, cw, nv, nv * nv, 2 * nv * nv, nq, nv, nf);
    /* FD and M^-1 (stages 0 and 2: independent), then the RNEA gradient at qdd (stage 1) */
    static const char *const what[EMIT_STAGES] = {"qdd = FD(q, qd, u, f_ext)", "dtau at qdd", "M^-1"};
    static const char *const arrays[EMIT_STAGES][2] = {{"a_ + at * %lld", "qdd"}, {"qdd", "dt"}, {"0", "Mi"}};
    const int fused = fused_first_stage(e);
    if (fused)
        ew_printf(w, "#if GRID_CUDA_FUSE_MAX > 0\n"
                     "        if (n <= GRID_CUDA_FUSE_MAX) { /* FD and M^-1 in one launch */\n"
                     "            const int bs = grid_cuda_block_of(n);\n"
                     "            const long long fb = (n + bs - 1) / bs, mb = GRID_KA_MINV_BLOCKS_%s(n, fb);\n"
                     "            grid_ka_%s<<<(unsigned)(fb + mb), bs, 0, s>>>(q, v, a_ + at * %lld, f, qdd, Mi, n, "
                     "(unsigned)fb);\n"
                     "        } else\n"
                     "#endif\n"
                     "        {\n",
                  fn, fn, nv);
    static const int order[EMIT_STAGES] = {0, 2, 1};
    for (int i = 0; i < EMIT_STAGES; i++) {
        const int k = order[i];
        ew_printf(w, "        { /* %s */\n            const grid_real *const a = ", what[k]);
        ew_printf(w, arrays[k][0], nv);
        ew_printf(w, ";\n            grid_real *const o = %s;\n            (void)a;\n", arrays[k][1]);
        write_launch(w, e->stage[k], e->stage_variant[k], "            ");
        ew_puts(w, "        }\n");
        if (fused && i == 1) ew_puts(w, "        }\n");
    }
    ew_printf(w, "        const int ps = grid_cuda_block_of(n * %lld);\n"
                 "        grid_kp_%s<<<(unsigned)((n * %lld + ps - 1) / ps), ps, 0, s>>>(Mi, dt, o_ + at * %lld, n);\n"
                 "    }\n"
                 "    if (!c->work) {\n"
                 "        const int rc = grid_cuda_scratch_done_(ws, c->stream);\n"
                 "        if (rc) return rc;\n"
                 "    }\n"
                 "    e = cudaGetLastError();\n"
                 "    return e == cudaSuccess ? 0 : grid_cuda_fail_(e, \"launching the stages of grid_cuda_%s\");\n}\n\n",
              2 * nv, fn, 2 * nv, 2 * nv * nv, fn);
}

/* the device entry of e->split: slices of the packed block in stream-ordered scratch (at most GRID_CUDA_STAGED_BYTES),
   each divided into the row's outputs by grid_kq_<name>, a thread per element (reads coalesced) */
static void write_split_cuda(ew_writer *w, const emit_target *t, const emit_entry *e)
{
    const grid_method_info *r = e->split;
    const long long W = e->row->out[0].width;
    ew_printf(w, "/* %s: its %d outputs from %s's block of %lld elements per state */\n"
                 "static __global__ void __launch_bounds__(GRID_CUDA_BLOCK)\n"
                 "grid_kq_%s(const grid_real *__restrict__ pk, const long long n",
              r->name, r->n_out, e->row->name, W, r->name);
    for (int k = 0; k < r->n_out; k++) ew_printf(w, ", grid_real *__restrict__ o%d", k);
    ew_printf(w, ")\n{\n"
                 "    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "    if (t >= n * %lldLL) return;\n"
                 "    const long long b = t / %lldLL;\n"
                 "    const int x = (int)(t - b * %lldLL);\n",
              W, W, W);
    long long off = 0;
    for (int k = 0; k < r->n_out; k++) {
        ew_printf(w, "    %sif (x < %lld) o%d[b * %lldLL + (x - %lld)] = pk[t];\n", k ? "else " : "", off + r->out[k].width, k,
                  r->out[k].width, off);
        off += r->out[k].width;
    }
    assert(off == W);
    ew_printf(w, "}\n\n%s int grid_cuda_%s(const grid_call *c)\n{\n", t->export_fn, r->name);
    emit_write_checks(w, r);
    ew_printf(w, "    const cudaStream_t s = (cudaStream_t)c->stream;\n"
                 "    const long long n = c->batch, S = grid_cuda_slice_states(n, %lldu * sizeof(grid_real), GRID_CUDA_STAGED_BYTES);\n"
                 "    void *pkv = 0;\n"
                 "    const int rs = grid_cuda_scratch_((size_t)S * %lldu * sizeof(grid_real), c->stream, &pkv);\n"
                 "    if (rs) return rs;\n"
                 "    grid_real *const pk = (grid_real *)pkv;\n",
              W, W);
    emit_write_slice_setup(w, e, "grid_cuda_");
    ew_printf(w, "        if (!rc) {\n"
                 "            const long long tot = k * %lldLL;\n"
                 "            grid_kq_%s<<<(unsigned)((tot + GRID_CUDA_BLOCK - 1) / GRID_CUDA_BLOCK), GRID_CUDA_BLOCK, 0, s>>>(pk, k",
              W, r->name);
    for (int k = 0; k < r->n_out; k++) ew_printf(w, ", (grid_real *)c->out[%d] + at * %lldLL", k, r->out[k].width);
    ew_printf(w, ");\n"
                 "            const cudaError_t e = cudaGetLastError();\n"
                 "            if (e != cudaSuccess) rc = grid_cuda_fail_(e, \"launching grid_kq_%s\");\n"
                 "        }\n"
                 "    }\n"
                 "    const int rd = grid_cuda_scratch_done_(pkv, c->stream);\n"
                 "    return rc ? rc : rd;\n}\n\n",
              r->name);
}

/* the host entries of row r: grid_host_<row> (host pointers: the round trip on the library's stream, through
   grid_cuda_<row>, whose per-state workspace is the row's work_bytes) and the ABI's grid_<row> */
static void write_host_entries(ew_writer *w, const emit_target *t, const grid_method_info *r)
{
    ew_printf(w, "/* %s on host arrays: copied in, launched and copied out on the library's stream, synchronised */\n",
              r->name);
    ew_printf(w, "%s int grid_host_%s(const grid_call *c)\n{\n", t->export_fn, r->name);
    emit_write_checks(w, r);
    ew_printf(w, "    const grid_io_ io = {grid_cuda_%s, %d, %d, {", r->name, r->n_in, r->n_out);
    for (int k = 0; k < r->n_in; k++) {
        if (r->in[k].optional) ew_printf(w, "%sc->in[%d] ? %lldLL : 0LL", k ? ", " : "", k, r->in[k].width);
        else ew_printf(w, "%s%lldLL", k ? ", " : "", r->in[k].width);
    }
    ew_puts(w, "}, {");
    for (int k = 0; k < r->n_out; k++) ew_printf(w, "%s%lldLL", k ? ", " : "", r->out[k].width);
    ew_printf(w, "}, (int)sizeof(grid_real), %zuLL};\n"
                 "    return grid_cuda_round_trip_(c, &io);\n}\n\n", r->work_bytes);
    /* the ABI's host entry point (include/grid/abi.h) */
    ew_printf(w, "%s int grid_%s(const grid_call *c)\n{\n    return grid_host_%s(c);\n}\n\n", t->export_fn, r->name, r->name);
}

void emit_cuda_widened(ew_writer *w, const emit_target *t, const grid_method_info *r)
{
    const long long per = emit_widened_reals(r);
    ew_puts(w, "#ifndef GRID_WIDEN_\n#define GRID_WIDEN_\n"
               "/* a float32 slice as float64 (a widened entry's inputs), and back (its outputs), on the stream */\n"
               "static __global__ void grid_widen_k_(const grid_real *__restrict__ s, double *__restrict__ d, const long long n)\n{\n"
               "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n"
               "        d[i] = s[i];\n}\n\n"
               "static __global__ void grid_narrow_k_(const double *__restrict__ s, grid_real *__restrict__ d, const long long n)\n{\n"
               "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n"
               "        d[i] = (grid_real)s[i];\n}\n\n"
               "static const void *grid_widen_(const grid_real *s, double *d, const long long n, const cudaStream_t st)\n{\n"
               "    const long long b = (n + 255) / 256;\n"
               "    if (n > 0) grid_widen_k_<<<(unsigned)(b < 4096 ? b : 4096), 256, 0, st>>>(s, d, n);\n    return d;\n}\n\n"
               "static void grid_narrow_(const double *s, grid_real *d, const long long n, const cudaStream_t st)\n{\n"
               "    const long long b = (n + 255) / 256;\n"
               "    if (n > 0) grid_narrow_k_<<<(unsigned)(b < 4096 ? b : 4096), 256, 0, st>>>(s, d, n);\n}\n#endif\n\n");
    ew_printf(w, "extern \"C\" int grid_cuda_f64_%s(const grid_call *c); /* the library's float64 part */\n\n"
                 "/* %s on device arrays: computed in float64 by the library's float64 part, slices of float64 scratch "
                 "from the stream's pool */\n%s int grid_cuda_%s(const grid_call *c)\n{\n",
              r->name, r->name, t->export_fn, r->name);
    emit_write_checks(w, r);
    ew_printf(w, "    const cudaStream_t s = (cudaStream_t)c->stream;\n"
                 "    const long long n = c->batch, S = grid_cuda_slice_states(n, %lldu * sizeof(double), GRID_CUDA_STAGED_BYTES),\n"
                 "                    K = n < S ? n : S;\n"
                 "    void *xv = 0;\n"
                 "    const int rs = grid_cuda_scratch_((size_t)K * %lldu * sizeof(double), c->stream, &xv);\n"
                 "    if (rs) return rs;\n"
                 "    double *const x = (double *)xv;\n",
              per, per);
    emit_write_widened_loop(w, r, "cuda_", ", s");
    ew_printf(w, "    const cudaError_t e = cudaGetLastError();\n"
                 "    const int rd = grid_cuda_scratch_done_(xv, c->stream);\n"
                 "    return rc ? rc : e != cudaSuccess ? grid_cuda_fail_(e, \"widening or rounding the slices of grid_cuda_%s\") : rd;\n}\n\n",
              r->name);
    write_host_entries(w, t, r);
}

void emit_cuda_batch(ew_writer *w, const emit_target *t, const emit_entry *e)
{
    const grid_method_info *r = e->row;
    const int nvar = emit_variant_count(e);
    /* one thread per state is the only mapping the kernels implement so far */
    assert(r->gpu_map == GRID_GPU_THREAD && r->n_out == 1); /* (a row of several outputs: e->split, r packed) */
    /* one kernel per distinct per-state function (shared with other methods through the guard) */
    for (int k = 0; k < nvar; k++) {
        const emit_variant *vr = emit_variant_at(e, k);
        int dup = 0;
        for (int j = 0; j < k; j++) dup |= strcmp(emit_variant_at(e, j)->fn, vr->fn) == 0;
        if (!dup) write_kernel(w, e, vr);
        if (!dup && group_form(e, vr)) write_group_kernel(w, e, vr);
        if (!dup) write_split_kernel(w, e, vr);
    }
    /* a staged composite (one function in every slot) */
    if (e->stage[0]) {
        for (int k = 1; k < nvar; k++) assert(strcmp(emit_variant_at(e, k)->fn, emit_variant_at(e, 0)->fn) == 0);
        write_staged(w, e, emit_variant_at(e, 0));
    }

    /* device pointers, the caller's stream, no synchronisation */
    ew_printf(w, "/* %s on device arrays: launched on c->stream, not synchronised */\n", r->name);
    ew_printf(w, "%s int grid_cuda_%s(const grid_call *c)\n{\n", e->split ? "static" : t->export_fn, r->name);
    emit_write_checks(w, e->row);
    emit_write_pointers(w, e);
    ew_puts(w, "    const long long n = c->batch, blocks = (n + GRID_CUDA_BLOCK - 1) / GRID_CUDA_BLOCK;\n"
               "    if (blocks > 2147483647LL) return 7;\n");
    emit_write_attrs(w, e);
    ew_puts(w, "    const cudaStream_t s = (cudaStream_t)c->stream;\n"
               "    cudaError_t e;\n");
    if (e->stage[0])
        ew_printf(w, "    if (n <= GRID_CUDA_STAGED_MAX) return grid_st_%s(c, q, v, a, f, o, n);\n", emit_variant_at(e, 0)->fn);
    if (nvar > 1) {
        emit_write_selector(w, e);
        for (int k = 0; k < nvar; k++) {
            ew_printf(w, "    case %d:\n", k);
            write_launch(w, e, emit_variant_at(e, k), "        ");
            ew_puts(w, "        break;\n");
        }
        ew_puts(w, "    }\n");
    } else {
        write_launch(w, e, emit_variant_at(e, 0), "    ");
    }
    ew_printf(w, "    e = cudaGetLastError();\n"
                 "    return e == cudaSuccess ? 0 : grid_cuda_fail_(e, \"launching grid_cuda_%s\");\n}\n\n",
              r->name);
    if (e->split) {
        write_split_cuda(w, t, e);
        r = e->split;
    }

    write_host_entries(w, t, r);
}
