/* The CUDA host runtime's plan: chunking, buffer sizes and layouts of round trips and reservations (plain C, also compiled into the runtime object as C++; no CUDA calls). */
#include <assert.h>
#include <string.h>
#include "cuda_host.h"

long long grid_cuda_in_flight(long long n)
{
    return n <= 0 ? 0 : (n + 31) / 32 * 32;
}

long long grid_cuda_slice_states(long long n, size_t work_b, long long work_max)
{
    if (work_b == 0 || n <= 0) return n;
    long long s = work_max > 0 ? work_max / (long long)work_b / 32 * 32 : 0;
    if (s < 32) s = 32;
    return s < n ? s : n;
}

long long grid_cuda_chunk_states(long long n, size_t in_b, size_t out_b, long long chunk_bytes, long long min_states)
{
    const size_t widest = in_b > out_b ? in_b : out_b;
    long long chunk = chunk_bytes / (long long)(widest ? widest : 1);
    if (chunk < min_states) chunk = min_states;
    if (chunk < 32) chunk = 32;
    return chunk < n ? chunk : n;
}

size_t grid_cuda_in_offset(const grid_cuda_plan *p, int j, long long k)
{
    assert(j >= 0 && j <= p->n_in && k >= 0);
    size_t at = 0;
    for (int i = 0; i < j; i++) at += (size_t)k * p->row[i];
    return at;
}

size_t grid_cuda_out_offset(const grid_cuda_plan *p, int j, long long k)
{
    assert(j >= 0 && j <= p->n_out && k >= 0);
    size_t at = 0;
    for (int i = 0; i < j; i++) at += (size_t)k * p->orow[i];
    return at;
}

/* the workspace of launches of at most n states (sliced) */
static size_t work_bytes(long long n, size_t work_b, long long work_max, long long *slice)
{
    *slice = grid_cuda_slice_states(n, work_b, work_max);
    return work_b ? (size_t)grid_cuda_in_flight(*slice) * work_b : 0;
}

void grid_cuda_plan_call(const grid_io_ *io, long long n, const grid_cuda_knobs *k, grid_cuda_plan *p)
{
    assert(io && k && p && n >= 0 && io->n_in <= GRID_MAX_IN && io->n_out <= GRID_MAX_OUT && io->real_bytes > 0);
    memset(p, 0, sizeof *p);
    const size_t es = (size_t)io->real_bytes;
    p->n = n;
    p->n_in = io->n_in;
    p->n_out = io->n_out;
    for (int j = 0; j < io->n_in; j++) p->in_b += p->row[j] = (size_t)io->win[j] * es;
    for (int j = 0; j < io->n_out; j++) p->out_b += p->orow[j] = (size_t)io->wout[j] * es;
    p->work_b = io->work > 0 ? (size_t)io->work : 0;
    /* small calls: no copies at all */
    p->zero_copy = k->zero_copy_max > 0 && (double)n * (double)(p->in_b + p->out_b) <= (double)k->zero_copy_max;
    if (p->zero_copy) {
        p->chunk = n;
        p->out_halves = 1;
        p->hz_bytes = (size_t)n * (p->in_b + p->out_b);
        p->dws_bytes = work_bytes(n, p->work_b, k->work_max, &p->slice);
        return;
    }
    p->chunk = grid_cuda_chunk_states(n, p->in_b, p->out_b, k->chunk_bytes, k->chunk_min_states);
    p->pack = k->pack_inputs != 0;
    p->out_halves = p->chunk < n ? 2 : 1;
    p->din_bytes = (size_t)p->chunk * p->in_b;
    p->dout_bytes = (size_t)p->out_halves * (size_t)p->chunk * p->out_b;
    if (p->pack) p->hin_bytes = 2 * (size_t)p->chunk * p->in_b;
    p->dws_bytes = work_bytes(p->chunk, p->work_b, k->work_max, &p->slice);
}

int grid_cuda_plan_reserve(const grid_robot_meta_t *m, long long max_batch, const grid_cuda_knobs *k, grid_cuda_plan *p)
{
    assert(m && k && p && max_batch >= 0);
    memset(p, 0, sizeof *p);
    const long long es = m->dtype;   /* a grid_dtype is its element size */
    /* the widest row: its inputs and its outputs per state; the largest workspace */
    long long in_w = 0, out_w = 0;
    size_t work = 0;
    for (int i = 0; i < m->n_methods; i++) {
        long long wi = 0, wo = 0;
        for (int j = 0; j < m->methods[i].n_in; j++) wi += m->methods[i].in[j].width;
        for (int j = 0; j < m->methods[i].n_out; j++) wo += m->methods[i].out[j].width;
        if (wi > in_w) in_w = wi;
        if (wo > out_w) out_w = wo;
        if (m->methods[i].work_bytes > work) work = m->methods[i].work_bytes;
    }
    if ((double)max_batch * (double)((in_w + out_w) * es) > 9.0e18) return -1;
    p->n = max_batch;
    p->in_b = (size_t)(in_w * es);
    p->out_b = (size_t)(out_w * es);
    p->work_b = work;
    p->din_bytes = (size_t)max_batch * p->in_b;
    p->chunk = grid_cuda_chunk_states(max_batch, p->in_b, p->out_b, k->chunk_bytes, k->chunk_min_states);
    p->out_halves = p->chunk < max_batch ? 2 : 1;
    /* (a batch of several chunks takes two of them, which may be more than the batch) */
    const long long out_states = p->out_halves * p->chunk > max_batch ? p->out_halves * p->chunk : max_batch;
    p->dout_bytes = (size_t)out_states * p->out_b;
    p->dws_bytes = work_bytes(p->chunk, work, k->work_max, &p->slice);
    p->pack = k->pack_inputs != 0;
    if (p->pack) p->hin_bytes = 2 * (size_t)p->chunk * p->in_b;
    if (k->zero_copy_max > 0) p->hz_bytes = (size_t)k->zero_copy_max;
    return 0;
}
