"""The output pool (_outpool.c): fresh outputs are plain, correct, fully written arrays; a block is reused only after its
array is gone; the pool stays within its bounds, is released when idle, and is scoped to our outputs."""

import concurrent.futures
import os
import resource
import sys
import time

import numpy as np
import pytest

import grid_rbd
from grid_rbd import _signatures
from grid_rbd import _core
from robot_cases import BUNDLED_IIWA, make_states

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # numpy < 2
    from numpy.core.multiarray import get_handler_name

POOL = "grid_rbd_output_pool"
B = 512  # most wide outputs of the iiwa free flyer in float64 are >= 256 KiB at this batch (batch_for: the others)
# the matrix outputs, each with the inputs its row takes that the states hold (every required one; f_ext stays absent)
# (a row with a per-call target input returns a view of its fresh (B n, ...) array in the (B, n d0, ...) shape)
# (the default library's: the opt-in second-order rows are left out of it)
WIDE = {r["py_name"]: [i["name"] for i in r["inputs"] if i["name"] in ("q", "qd", "qdd", "u")]
        for r in _signatures.matrix_rows() if not any(i["name"] == "target" for i in r["inputs"]) and not r["opt_in"]}


@pytest.fixture(scope="module")
def h():
    return grid_rbd.register_robot("pool_iiwa_ff", urdf_path=BUNDLED_IIWA, floating_base=True, dtype="float64")


@pytest.fixture(autouse=True)
def pool():
    """each test starts from an empty pool with the default settings, and leaves it so"""
    saved = _core.output_pool(clear=True)
    yield
    _core.output_pool(max_bytes=saved["max_bytes"], min_bytes=saved["min_bytes"], idle_s=saved["idle_s"], clear=True)


def batch_for(h, name):
    """B, or more where a state's output is small (osc_inertia's 6x6): every output is >= 256 KiB"""
    per_state = getattr(h, name)(*inputs(h, name, batch=1)).nbytes
    return max(B, -(-(256 << 10) // per_state))


def inputs(h, name, seed=0, batch=None):
    s = make_states(h, "random", n=batch or batch_for(h, name), seed=seed)
    return [s[k] for k in WIDE[name]]


def expected(h, name, args):
    fn = getattr(h, name)
    out = np.zeros_like(fn(*args))
    return fn(*args, out=out)


def ptr(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("name", list(WIDE))
def test_fresh_output_is_a_plain_correct_array(h, name):
    args = inputs(h, name)
    want = expected(h, name, args)
    r = getattr(h, name)(*args)
    assert type(r) is np.ndarray and r.dtype == np.float64 and r.shape == want.shape
    assert r.flags.c_contiguous and r.flags.writeable and r.flags.owndata and r.base is None
    assert get_handler_name(r) == POOL, "large enough to come from the pool"
    np.testing.assert_array_equal(r, want)
    r[...] = 1.0  # writable, and the write lands in its own memory
    assert np.all(r == 1.0)
    # the handler was set around our allocation only: numpy's default serves everything else
    assert get_handler_name() != POOL
    assert get_handler_name(np.empty(r.shape)) == get_handler_name()


@pytest.mark.parametrize("name", list(WIDE))
def test_reused_block_is_fully_written(h, name):
    """a pooled block holds the last array's bytes: the kernel must write every element of the next output"""
    fn, args = getattr(h, name), inputs(h, name, seed=1)
    want = expected(h, name, args)
    r = fn(*args)
    p = ptr(r)
    r.fill(np.nan)
    del r
    hits = _core.output_pool()["hits"]
    r2 = fn(*args)
    assert ptr(r2) == p and _core.output_pool()["hits"] == hits + 1, "the freed block is reused"
    assert not np.isnan(r2).any()
    np.testing.assert_array_equal(r2, want)


@pytest.mark.parametrize("batch", [200, 512, 3100, 3260, 4000, 26000])
def test_every_size_is_reused(h, batch):
    """0.27 .. 35 MB: page-rounded and huge-page-rounded blocks (4.2 MiB rounds up to 6 MiB) all come back"""
    (q,) = inputs(h, "crba", batch=batch)
    s0 = _core.output_pool()
    r = h.crba(q)
    p = ptr(r)
    del r
    assert ptr(h.crba(q)) == p
    st = _core.output_pool()
    assert (st["hits"] - s0["hits"], st["misses"] - s0["misses"]) == (1, 1)


def test_fresh_outputs_do_not_refault(h):
    """the issue: each fresh 35 MB output (over glibc's 32 MiB mmap ceiling) was a new mapping, faulted and zero-filled
    by the kernel on first touch (about 9000 faults per call with 4 KiB pages, 500 with huge pages); reused, none"""
    (q,) = inputs(h, "crba", batch=26000)
    for _ in range(3):
        h.crba(q)
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        h.crba(q)
    per_call = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 5
    assert per_call < 50, per_call


def test_outputs_held_are_never_overwritten(h):
    """only a block whose array is gone is reused: results kept (or viewed) stay intact through later calls"""
    keep, want = [], []
    for seed in range(6):
        (q,) = inputs(h, "crba", seed=10 + seed)
        want.append(expected(h, "crba", [q]))
        keep.append(h.crba(q))
        junk = h.crba(q)  # freed at once: its block goes around the pool
        del junk
    view = h.minv(inputs(h, "minv", seed=3)[0])[5:9]  # only a view survives: it keeps its block alive
    view_want = view.copy()
    for seed in range(6):
        h.minv(inputs(h, "minv", seed=20 + seed)[0])
        h.crba(inputs(h, "crba", seed=30 + seed)[0])
    assert len({ptr(a) for a in keep}) == len(keep)
    for a, w in zip(keep, want):
        np.testing.assert_array_equal(a, w)
    np.testing.assert_array_equal(view, view_want)


def test_pool_is_bounded(h):
    cap = 4 << 20
    _core.output_pool(max_bytes=cap, idle_s=60)
    (q,) = inputs(h, "crba", batch=3000)
    live = [h.crba(q[: 300 + 100 * k]) for k in range(27)]  # 27 sizes, 0.4 .. 4.1 MB
    del live
    st = _core.output_pool()
    assert st["cached_bytes"] <= cap and 0 < st["cached_blocks"] <= 16
    big = h.crba(np.repeat(q, 2, axis=0))  # 8 MB: over the bound, never cached
    del big
    st2 = _core.output_pool()
    assert st2["cached_bytes"] <= cap and st2["unmaps"] > st["unmaps"]


def test_idle_blocks_are_released(h):
    _core.output_pool(idle_s=0.2)
    r = h.crba(inputs(h, "crba")[0])
    del r
    assert _core.output_pool()["cached_blocks"] == 1
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (_core.output_pool()["cached_blocks"] or _core.output_pool()["reaper"]):
        time.sleep(0.05)
    st = _core.output_pool()
    assert st["cached_blocks"] == 0 and st["cached_bytes"] == 0 and st["reaper"] == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_clear_returns_memory_to_the_system(h):
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    (q,) = inputs(h, "crba", batch=24000)  # a 32 MB output
    r = h.crba(q)
    del r
    assert _core.output_pool()["cached_bytes"] >= 32 << 20
    before = rss()
    _core.output_pool(clear=True)
    assert _core.output_pool()["cached_bytes"] == 0
    assert before - rss() >= 24 << 20


def test_pool_off_and_small_outputs_use_numpy(h):
    args = inputs(h, "crba")
    want = expected(h, "crba", args)
    _core.output_pool(max_bytes=0)
    r = h.crba(*args)
    assert get_handler_name(r) != POOL
    np.testing.assert_array_equal(r, want)
    _core.output_pool(max_bytes=256 << 20)
    small = h.crba(args[0][:3])  # 4 KB: numpy's allocator
    assert get_handler_name(small) != POOL
    one = h.crba(args[0][0])
    assert get_handler_name(one) != POOL and one.shape == (h.nv, h.nv)


def test_resize_of_a_pooled_output(h):
    """ndarray.resize on an array that owns pooled memory goes through the handler's realloc"""
    args = inputs(h, "crba")
    r = h.crba(*args)
    flat = r.reshape(-1).copy()
    r.resize((flat.size + 1000,), refcheck=False)
    np.testing.assert_array_equal(r[: flat.size], flat)
    r.resize((1000,), refcheck=False)
    np.testing.assert_array_equal(r, flat[:1000])


def test_concurrent_callers(h):
    """Python threads calling at once (the kernels run without the GIL) each get their own memory"""
    h.num_threads = 2
    try:
        jobs = [inputs(h, "inverse_dynamics_gradient", seed=40 + k) for k in range(8)]
        want = [expected(h, "inverse_dynamics_gradient", a) for a in jobs]

        def work(k):
            out = []
            for _ in range(6):  # two results kept, the rest freed: blocks go around the pool between threads
                out = out[-1:] + [h.inverse_dynamics_gradient(*jobs[k])]
            return out

        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            results = list(ex.map(work, range(8)))
        for k, rs in enumerate(results):
            for r in rs:
                np.testing.assert_array_equal(r, want[k])
    finally:
        h.num_threads = os.cpu_count()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_child_uses_the_pool(h):
    args = inputs(h, "crba")
    want = expected(h, "crba", args)
    r = h.crba(*args)
    del r  # a cached block the child inherits
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        ok = False
        try:
            for _ in range(3):
                ok = np.array_equal(h.crba(*args), want)
            st = _core.output_pool(clear=True)
            ok = ok and st["hits"] > 0
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
