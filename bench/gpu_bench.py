#!/usr/bin/env python3
"""GPU benchmark of the CUDA target (issue 4): whole-batch times of RNEA, FD, Minv, CRBA and ABA on iiwa (fixed), go2
and g1_29dof (floating) at B = 16 .. 1048576, resident (device pointers: launch + stream sync, timed in C with a host
clock and with CUDA events; and through the Python torch path) and host round trip (numpy handle: pinned out=, plain),
the empty launch + sync in the same run, states/s against the physical bound and ratios to the published times of
../shared/anchors.md, a few compile-time variants, and the cold nvcc build time and peak RSS. Markdown + JSON to --out.

    python bench/gpu_bench.py --out DIR [--robots-dir ../shared/robots] [--budget-s 300]
    python bench/gpu_bench.py --precompile --jobs 16 [--robots-dir ...]      # every library tests and bench need
"""

import argparse
import concurrent.futures
import datetime
import json
import math
import multiprocessing
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))  # robot_cases: the test robots to precompile

import grid_rbd  # noqa: E402
from grid_rbd import _core, _signatures  # noqa: E402

ROBOTS = [("iiwa", "iiwa.urdf", False), ("go2", "go2.urdf", True), ("g1_29dof", "g1_29dof.urdf", True)]
EXTRA_ROBOTS = [("hyq", "hyq.urdf", False), ("h1_2", "h1_2.urdf", True)]  # timed only when named (gpu_wide.py --robots)
ALGOS = ["rnea", "fd", "minv", "crba", "aba", "rnea_grad", "fd_grad", "rnea_vjp", "fd_vjp"]
# issue 27's methods (--algos picks them): their inputs and outputs from the signature table (generic_*)
EXTRA_ALGOS = ["energy", "kinetic_energy_regressor", "potential_energy_regressor", "coriolis_matrix",
               "inverse_dynamics_regressor", "com", "ccrba", "cmm_time_variation", "dccrba", "fk_batched",
               "frame_jacobian_dot", "osc_inertia",
               # targets chosen per call: fed one target per state (the first end effector, a tool offset)
               "ee_pose_runtime", "ee_pose_runtime_grad", "ee_pose_runtime_vjp"]
HBM_BYTES_S = 4.8e12  # the H200 datasheet's memory bandwidth (../shared/anchors.md): a bound from bytes in and out
BATCHES = [16, 256, 1024, 65536, 1048576]
ALGO_ID = {r["name"]: r["id"] for r in _signatures.ROWS}

# ../shared/anchors.md: the spec system on an RTX 5090, fp32, whole batch, microseconds
PUBLISHED_ID = {"iiwa": {16: (11.7, 21.0), 256: (11.9, 23.3), 1024: (13.0, 27.5)},
                "go2": {16: (22.7, 32.4), 256: (21.7, 33.5), 1024: (35.1, 54.9)},
                "g1_29dof": {16: (40.1, 50.0), 256: (38.3, 53.6), 1024: (72.9, 106.0)}}
PUBLISHED_PER_PROBLEM_B256 = {("fd", "iiwa"): 0.092, ("fd", "go2"): 0.310, ("fd", "g1_29dof"): 0.800,
                              ("minv", "iiwa"): 0.050, ("aba", "iiwa"): 0.059, ("crba", "iiwa"): 0.043}
# the physical bound (H200 datasheet, fp32) in states/s; forward dynamics takes the ABA row; fp64: half
BOUND_FP32 = {("iiwa", "rnea"): 4.3e10, ("iiwa", "crba"): 3.4e10, ("iiwa", "aba"): 3.4e10, ("iiwa", "minv"): 3.4e10,
              ("iiwa", "fd"): 3.4e10, ("go2", "rnea"): 1.6e10, ("go2", "crba"): 6.3e9, ("go2", "aba"): 1.4e10,
              ("go2", "fd"): 1.4e10, ("g1_29dof", "rnea"): 8.5e9, ("g1_29dof", "crba"): 1.8e9,
              ("g1_29dof", "aba"): 5.0e9, ("g1_29dof", "fd"): 5.0e9,
              # Minv: the CRBA's bytes (the same symmetric matrix out, q in) and fewer flops than its bound's
              ("go2", "minv"): 6.3e9, ("g1_29dof", "minv"): 1.8e9,
              # the derivatives (anchors.md has no ID-gradient row for go2 and g1)
              ("iiwa", "rnea_grad"): 7.8e9, ("iiwa", "fd_grad"): 5.4e9, ("go2", "fd_grad"): 1.6e9,
              ("g1_29dof", "fd_grad"): 3.2e8}

# compile-time variants (GRID_RBD_NVCC_FLAGS replaces the tuning flags; each is its own cache entry), float32 only:
# name -> (flags, what it changes, "host" or "resident": which path is measured)
VARIANTS = {
    "zero_copy": ("-O3 -DGRID_CUDA_ZERO_COPY_MAX=4194304",
                  "host round trip up to 4 MiB per call without copies: mapped pinned memory read and written by the "
                  "kernel", "host"),
    "pack": ("-O3 -DGRID_CUDA_PACK_INPUTS=1", "host round trip: the inputs gathered in pinned memory, one copy",
             "host"),
    "out_inplace": ("-O3 -DGRID_CUDA_OUT_CHUNKED=0",
                    "wide outputs written in place, one thread per state (before the chunked tiles)", "resident"),
    "out_chunked": ("-O3 -DGRID_CUDA_OUT_CHUNKED=2",
                    "wide outputs always in 32-element chunks, also where the whole output's tile fits", "resident"),
}
VARIANT_POINTS = {  # variant -> [(robot, algo, B)]
    "zero_copy": [(r, a, b) for r, _, _ in ROBOTS for a in ("rnea", "fd", "crba") for b in (16, 256, 1024, 65536)],
    "pack": [(r, "rnea", b) for r, _, _ in ROBOTS for b in (1024, 65536)],
    "out_inplace": [(r, a, b) for r in ("go2", "g1_29dof") for a in ("crba", "minv") for b in (1024, 65536, 1048576)],
    "out_chunked": [("go2", a, b) for a in ("crba", "minv") for b in (1024, 65536, 1048576)],
}

BUILD_RESERVE_S = 100         # seconds kept for the cold builds (iiwa and g1 floating, float32)
L2_ROTATE_BYTES = 256 << 20   # rotate input sets until this many bytes are touched (about 4x the H200's L2)
HOST_MAX_BYTES = 1 << 30      # host round trips moving more than this per call are skipped


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def median(xs):
    return float(np.median(xs)) if len(xs) else float("nan")


# ---- robots and handles ----
def urdf_path(robots_dir, file):
    for d in (robots_dir, REPO / ".gpu-deps" / "robots", REPO.parent / "shared" / "robots"):
        if d and (Path(d) / file).is_file():
            return Path(d) / file
    if file == "iiwa.urdf":
        return REPO / "examples" / "robots" / "iiwa.urdf"
    raise FileNotFoundError(f"{file}: pass --robots-dir (a copy of ../shared/robots)")


def register(robots_dir, robot, dtype, variant=None, device="cuda", precompile=False, cuda_arch=None, schedule="auto"):
    file, floating = next((f, fb) for r, f, fb in ROBOTS + EXTRA_ROBOTS if r == robot)
    flags = VARIANTS[variant][0] if variant else None
    old = os.environ.get("GRID_RBD_NVCC_FLAGS")
    if flags:
        os.environ["GRID_RBD_NVCC_FLAGS"] = flags
    try:
        kw = dict(urdf_path=urdf_path(robots_dir, file), floating_base=floating, dtype=dtype, device=device,
                  verbose=False, codegen_schedule=schedule)
        name = f"bench_{robot}_{dtype}_{device}" + (f"_{variant}" if variant else "")
        if precompile:
            return grid_rbd.precompile(name, cuda_arch=cuda_arch, **kw)
        return grid_rbd.register_robot(name, max_batch_size=1024, **kw)
    finally:
        if flags:
            if old is None:
                os.environ.pop("GRID_RBD_NVCC_FLAGS", None)
            else:
                os.environ["GRID_RBD_NVCC_FLAGS"] = old


def random_states(h, n, seed):
    """q (n, nq), qd and u (n, nv) in the handle dtype: joint angles in [-pi, pi], unit quaternions"""
    rng = np.random.default_rng(seed)
    m = h._model
    q = np.empty((n, h.nq))
    for iq, nqj, kind in zip(m.joint_idx_q, m.joint_nq, m.joint_types):
        if kind == "free":
            q[:, iq:iq + 3] = rng.uniform(-1, 1, (n, 3))
            quat = rng.normal(size=(n, 4))
            q[:, iq + 3:iq + 7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        elif kind == "prismatic":
            q[:, iq] = rng.uniform(-0.5, 0.5, n)
        else:
            q[:, iq:iq + nqj] = rng.uniform(-np.pi, np.pi, (n, nqj))
    qd = rng.uniform(-1, 1, (n, h.nv))
    u = rng.uniform(-10, 10, (n, h.nv))
    return [np.ascontiguousarray(x, dtype=h.dtype) for x in (q, qd, u)]


# the row input fed by each of the bench's arrays: q, qd, then u (as qdd, u or a cotangent); f_ext stays absent.
# A row with a per-call target takes (q, target, cotangent): the target [frame id, tool offset] per state
_FEED = {"q": 0, "qd": 1, "qdd": 2, "u": 2, "cotangent": 2}
_FEED_TARGET = {"q": 0, "target": 1, "cotangent": 2}
TARGET_OFFSET = (0.05, -0.02, 0.1)


def _row_inputs(algo):
    return [a["name"] for a in _signatures.row(algo)["inputs"]]


def takes_target(algo):
    return algo in EXTRA_ALGOS and "target" in _row_inputs(algo)


def target_rows(h, like):
    """n copies of [the first end effector's frame id, TARGET_OFFSET], as like (numpy or torch, its dtype and
    device)"""
    row = [float(h.ee_frame_ids[0]), *TARGET_OFFSET]
    n = like.shape[0]
    if isinstance(like, np.ndarray):
        return np.ascontiguousarray(np.broadcast_to(np.asarray(row, like.dtype), (n, 4)))
    import torch
    return torch.tensor(row, dtype=like.dtype, device=like.device).expand(n, 4).contiguous()


def inputs_of(algo, q, qd, u, h=None):
    """(q, v, a) of an algorithm (None where it takes none); a target row's (q, target, cotangent of 6) needs h"""
    if algo in EXTRA_ALGOS:
        names = _row_inputs(algo)
        if takes_target(algo):
            cot = u[:, :6].contiguous() if hasattr(u, "contiguous") else np.ascontiguousarray(u[:, :6])
            return q, target_rows(h, q), cot if "cotangent" in names else None
        return q, qd if "qd" in names else None, u if ("qdd" in names or "u" in names) else None
    if algo in ("rnea", "rnea_grad", "rnea_vjp"):
        return q, qd, u        # u as qdd (the VJP: as its cotangent)
    if algo in ("fd", "aba", "fd_grad", "fd_vjp"):
        return q, qd, u
    return q, None, None


def input_ptrs(algo, q, v, a, ptr):
    """the input pointers of an algorithm's signature row: (q, qd, qdd | u, f_ext = NULL) or (q,)"""
    if algo in EXTRA_ALGOS:
        arrays, feed = (q, v, a), _FEED_TARGET if takes_target(algo) else _FEED
        return tuple(ptr(arrays[feed[n]]) if n in feed else 0 for n in _row_inputs(algo))
    if algo in ("rnea", "fd", "aba", "rnea_grad", "fd_grad"):
        return (ptr(q), ptr(v), ptr(a), 0)
    if algo == "rnea_vjp":   # (q, qd, cotangent, qdd = NULL, f_ext = NULL)
        return (ptr(q), ptr(v), ptr(a), 0, 0)
    if algo == "fd_vjp":     # (q, qd, u, cotangent = u, f_ext = NULL)
        return (ptr(q), ptr(v), ptr(a), ptr(a), 0)
    return (ptr(q),)


def attrs_of(h, algo):
    """the row's integer attributes: a frame is the first end effector, a reference frame LOCAL_WORLD_ALIGNED"""
    pick = {"frame": lambda: h.ee_frame_ids[0], "reference_frame": lambda: _core.LOCAL_WORLD_ALIGNED}
    return tuple(pick[a["name"]]() for a in _signatures.row(algo)["attrs"])


def out_shapes(h, algo, n):
    """the shapes of an algorithm's outputs for n states (one, or a row's several)"""
    if algo in EXTRA_ALGOS:
        c = _signatures.concrete(_signatures.row(algo), _signatures.sizes_of(h._model))
        return [(n,) + shape for _, shape in c["outputs"]]
    return [out_shape(h, algo, n)]


def out_shape(h, algo, n):
    if algo in ("rnea_grad", "fd_grad"):
        return (n, h.nv, 2 * h.nv)
    if algo in ("rnea_vjp", "fd_vjp"):
        return (n, (2 if algo == "rnea_vjp" else 3) * h.nv)
    return (n, h.nv, h.nv) if algo in ("crba", "minv") else (n, h.nv)


def method(h, algo):
    if takes_target(algo):   # (q, target, cotangent) as the bench feeds them: the target's frame and offset
        f = getattr(h, _signatures.row(algo)["py_name"])

        def call(q, target, cot=None, out=None):
            kw = {"ee_joint_names": [int(h.ee_frame_ids[0])], "ee_offsets": TARGET_OFFSET}
            return f(q, cot, **kw) if cot is not None else f(q, out=out, **kw)
        return call
    if algo in EXTRA_ALGOS:
        return getattr(h, _signatures.row(algo)["py_name"])
    return {"rnea": h.inverse_dynamics, "fd": h.forward_dynamics, "minv": h.minv, "crba": h.crba, "aba": h.aba,
            "rnea_grad": h.inverse_dynamics_gradient, "fd_grad": h.forward_dynamics_gradient,
            "rnea_vjp": h.inverse_dynamics_vjp,
            "fd_vjp": lambda q, qd, u, out=None: h.forward_dynamics_vjp(q, qd, u, u, out=out)}[algo]


# ---- measurements ----
class Bench:
    def __init__(self, args):
        self.args = args
        self.results = []
        self.skipped = []
        self.noop = {}
        self.info = {}
        import torch
        self.torch = torch
        self.stream = torch.cuda.current_stream()
        self.sptr = self.stream.cuda_stream

    def reps_for(self, t_us, lo=20, hi=200, budget_us=1.5e5):
        return int(max(lo, min(hi, budget_us / max(t_us, 1.0))))

    def empty_launch(self, lib):
        ev, wall = lib.time(0, 2, (), (), 0, (), self.sptr, 500, 50, True)
        _, wall_plain = lib.time(0, 2, (), (), 0, (), self.sptr, 500, 50, False)
        t = []
        for _ in range(200):
            t0 = time.perf_counter()
            lib.noop(self.sptr)
            self.stream.synchronize()
            t.append((time.perf_counter() - t0) * 1e6)
        return {"wall_us": median(wall_plain), "wall_with_events_us": median(wall), "event_us": median(ev),
                "python_us": median(t[20:])}

    def resident(self, h, algo, n, sets):
        """launch + sync of grid_cuda_<algo> on device tensors (C timer: host clock and events), rotating input
        sets; then the Python torch path"""
        torch = self.torch
        lib = h.cuda_library
        aid = ALGO_ID[algo]
        many = [torch.full(s, float("nan"), dtype=sets[0][0].dtype, device="cuda") for s in out_shapes(h, algo, n)]
        outs = tuple(many) if len(many) > 1 else many[0]

        def one(k, events):
            q, v, a = sets[k % len(sets)]
            return lib.time(aid, 0, input_ptrs(algo, q, v, a, lambda x: x.data_ptr() if x is not None else 0),
                            tuple(o.data_ptr() for o in many), n, attrs_of(h, algo), self.sptr, 1, 0, events)

        for k in range(3):
            one(k, False)
        _, wall = one(0, False)
        reps = self.reps_for(wall[0])
        # each call timed in C alone (Python between calls is not timed): first host clock only, then with events
        walls = [one(k, False)[1][0] for k in range(reps)]
        evs = [one(k, True)[0][0] for k in range(reps)]
        torch.cuda.synchronize()
        finite = all(bool(torch.isfinite(o).all().item()) for o in many)
        # the Python device path (argument checks, torch's stream), wall clock and torch events
        fn = method(h, algo)
        py, pyev, py_error = [], [], None
        try:
            q, v, a = sets[0]
            fn(*[x for x in (q, v, a) if x is not None], out=outs)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for k in range(min(reps, 100)):
                q, v, a = sets[k % len(sets)]
                args = [x for x in (q, v, a) if x is not None]
                t0 = time.perf_counter()
                e0.record()
                fn(*args, out=outs)
                e1.record()
                self.stream.synchronize()
                py.append((time.perf_counter() - t0) * 1e6)
                pyev.append(e0.elapsed_time(e1) * 1e3)
        except Exception as e:  # (a method the numpy handle takes only as host arrays: the C timings stand)
            py_error = f"{type(e).__name__}: {str(e)[:200]}"
            py, pyev = [float("nan")], [float("nan")]
        return {"res_us": median(walls), "res_p10_us": float(np.percentile(walls, 10)),
                "res_p90_us": float(np.percentile(walls, 90)), "res_event_us": median(evs),
                "res_py_us": median(py), "res_py_event_us": median(pyev), "reps": reps, "finite": finite,
                **({"res_py_error": py_error} if py_error else {})}

    def host(self, h, algo, n, arrays, pack_only=False):
        """the numpy handle: C-timed round trip into a pinned out=, then Python with pinned out= and plain"""
        lib = h.cuda_library
        aid = ALGO_ID[algo]
        q, v, a = arrays
        many = [h.pinned_empty(s) for s in out_shapes(h, algo, n)]
        for o in many:
            o[...] = np.nan
        pinned = tuple(many) if len(many) > 1 else many[0]
        optr = tuple(o.ctypes.data for o in many)
        ptr = lambda x: x.ctypes.data if x is not None else 0  # noqa: E731
        _, w = lib.time(aid, 1, input_ptrs(algo, q, v, a, ptr), optr, n, attrs_of(h, algo), 0, 1, 2, False)
        reps = self.reps_for(w[0])
        _, wall = lib.time(aid, 1, input_ptrs(algo, q, v, a, ptr), optr, n, attrs_of(h, algo), 0, reps, 0, False)
        finite = all(bool(np.isfinite(o).all()) for o in many)
        r = {"host_c_us": median(wall), "host_reps": reps, "host_finite": finite}
        if pack_only:
            return r
        fn = method(h, algo)
        args = [x for x in (q, v, a) if x is not None]
        for label, kw in (("host_py_pinned_us", {"out": pinned}), ("host_py_plain_us", {})):
            fn(*args, **kw)
            t = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn(*args, **kw)
                t.append((time.perf_counter() - t0) * 1e6)
            r[label] = median(t)
        return r

    def device_sets(self, n, host_arrays):
        """input sets on the device: (q, qd, u) and, while one set is smaller than L2_ROTATE_BYTES, permuted copies
        (fresh memory, the same values) so the timed calls do not all hit the L2"""
        torch = self.torch
        base = [torch.from_numpy(x).cuda() for x in host_arrays]
        per_set = sum(x.nbytes for x in host_arrays)
        k = 1 if per_set >= L2_ROTATE_BYTES else min(64, math.ceil(L2_ROTATE_BYTES / max(per_set, 1)))
        sets = [base]
        for _ in range(1, k):
            perm = torch.randperm(n, device="cuda")
            sets.append([x[perm].contiguous() for x in base])
        return sets

    def run_point(self, h, robot, dtype, algo, n, arrays, sets, variant=None, host=True, resident=True,
                  pack_only=False):
        """one (robot, dtype, algo, B): arrays = host (q, qd, u), sets = their device copies"""
        row = {"robot": robot, "dtype": dtype, "algo": algo, "B": n, "variant": variant or "default"}
        try:
            if resident:
                row.update(self.resident(h, algo, n, [inputs_of(algo, *x, h=h) for x in sets]))
            out_bytes = sum(math.prod(s) for s in out_shapes(h, algo, n)) * np.dtype(dtype).itemsize
            row["bytes_per_state"] = (out_bytes + sum(x.nbytes for x in inputs_of(algo, *arrays, h=h) if x is not None)) / n
            in_bytes = sum(x.nbytes for x in inputs_of(algo, *arrays, h=h) if x is not None)
            if host and out_bytes + in_bytes <= HOST_MAX_BYTES:
                row.update(self.host(h, algo, n, inputs_of(algo, *arrays, h=h), pack_only=pack_only))
            elif host:
                row["host_skipped"] = f"{(out_bytes + in_bytes) / 2**30:.1f} GiB per call"
        except Exception as e:  # keep going: one failure must not lose the run
            row["error"] = f"{type(e).__name__}: {e}"
            log("ERROR", robot, dtype, algo, n, variant, row["error"])
        self.results.append(row)
        return row

    def run_main(self, deadline):
        """the main grid until deadline: float32 first (the targets are fp32), then float64; per robot the batch
        sizes in increasing order, every algorithm on the same states"""
        torch = self.torch
        for dtype in ("float32", "float64"):
            for robot, _, _ in ROBOTS:
                if deadline - time.time() < 10:
                    self.skipped.append(f"{robot} {dtype}: out of time")
                    continue
                h = register(self.args.robots_dir, robot, dtype)
                lib = h.cuda_library
                if not self.info:
                    self.info = json.loads(lib.device_info())
                    self.noop = self.empty_launch(lib)
                    log("device", self.info["name"], "empty launch+sync", self.noop)
                for n in BATCHES:
                    need = {1048576: 25, 65536: 6}.get(n, 2) * (2 if dtype == "float64" else 1)
                    if deadline - time.time() < need:
                        self.skipped.append(f"{robot} {dtype} B={n}: out of time")
                        continue
                    arrays = random_states(h, n, seed=n + len(robot))
                    sets = self.device_sets(n, arrays)
                    # the host round trip: float32 at every B, float64 up to B=1024
                    host = dtype == "float32" or n <= 1024
                    for algo in ALGOS:
                        r = self.run_point(h, robot, dtype, algo, n, arrays, sets, host=host)
                        log(f"{robot:9s} {dtype} {algo:4s} B={n:<8d} res {r.get('res_us', float('nan')):10.1f} us  "
                            f"host {r.get('host_py_pinned_us', float('nan')):10.1f} us")
                    del sets
                    torch.cuda.empty_cache()
                del h
        self.noop_end = self.empty_launch(register(self.args.robots_dir, "iiwa", "float32").cuda_library)

    def run_variants(self, deadline):
        """the compile-time variants next to the default (float32)"""
        for variant, points in VARIANT_POINTS.items():
            for robot in sorted({p[0] for p in points}):
                if deadline - time.time() < 10:
                    self.skipped.append(f"variant {variant} {robot}: out of time")
                    continue
                try:
                    h = register(self.args.robots_dir, robot, "float32", variant=variant)
                except Exception as e:
                    self.skipped.append(f"variant {variant} {robot}: {type(e).__name__}: {e}")
                    continue
                for n in sorted({p[2] for p in points if p[0] == robot}):
                    if deadline - time.time() < (20 if n > 65536 else 4):
                        self.skipped.append(f"variant {variant} {robot} B={n}: out of time")
                        continue
                    arrays = random_states(h, n, seed=n + len(robot))
                    host = VARIANTS[variant][2] == "host"
                    sets = None if host else self.device_sets(n, arrays)
                    for (r, algo, b) in points:
                        if r == robot and b == n:
                            self.run_point(h, robot, "float32", algo, n, arrays, sets, variant=variant, host=host,
                                           resident=not host, pack_only=host)
                    del sets
                    self.torch.cuda.empty_cache()


# ---- cold build time and peak RSS (a child process per build, nothing else running) ----
def build_child(urdf, floating, dtype, arch):
    """runs in a fresh process: one cold CUDA build; prints JSON (the parent reads RUSAGE_CHILDREN too)"""
    with tempfile.TemporaryDirectory(prefix="grid-rbd-buildtime-") as cache:
        t0 = time.perf_counter()
        entry = grid_rbd.precompile("buildtime", urdf_path=urdf, floating_base=floating, dtype=dtype, device="cuda",
                                    cuda_arch=arch, cache_dir=cache, force_rebuild=True, verbose=False)
        wall = time.perf_counter() - t0
        meta = json.loads((Path(entry) / "meta.json").read_text())
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(json.dumps({"wall_s": wall, "meta": {k: meta.get(k) for k in meta if "second" in k or "bytes" in k},
                          "children_maxrss_mb": ru.ru_maxrss / 1024.0,
                          "self_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))


def build_times(robots_dir, arch):
    rows = []
    for robot, dtype in (("iiwa", "float32"), ("g1_29dof", "float32")):
        file, floating = next((f, fb) for r, f, fb in ROBOTS if r == robot)
        cmd = [sys.executable, __file__, "--build-child", str(urdf_path(robots_dir, file)), str(int(floating)), dtype,
               arch or ""]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        row = {"robot": robot, "floating": floating, "dtype": dtype, "wall_s": wall}
        try:
            row.update(json.loads(p.stdout.strip().splitlines()[-1]))
        except Exception:
            row["error"] = (p.stderr or p.stdout)[-800:]
        rows.append(row)
        log("build", row)
    return rows


# ---- precompile everything the GPU tests and this bench use, in parallel ----
def _precompile_job(job):
    kind, spec = job
    t0 = time.perf_counter()
    try:
        if kind == "bench":
            robots_dir, robot, dtype, variant, device, arch = spec
            register(robots_dir, robot, dtype, variant=variant, device=device, precompile=True, cuda_arch=arch)
        else:
            case_id, path, floating, ignore_mimic, dtype, device, arch = spec
            grid_rbd.precompile(f"{case_id}_gpu_{'cpu32' if device == 'cpu' else 'cuda'}", urdf_path=path,
                                floating_base=floating, ignore_mimic=ignore_mimic, dtype=dtype, device=device,
                                cuda_arch=arch if device == "cuda" else None, verbose=False)
        return job, time.perf_counter() - t0, None
    except Exception as e:
        return job, time.perf_counter() - t0, f"{type(e).__name__}: {str(e)[:300]}"


def test_jobs(arch, cases=None):
    """(case, dtype, device) of test_cuda.py's handles (CUDA float64/float32, CPU float32); cases: only these ids"""
    import robot_cases
    import test_cuda
    jobs = []
    for case in robot_cases.CASES:
        if cases and case.id not in cases:
            continue
        try:
            path = test_cuda.robot_path(case)
        except BaseException:  # pytest.skip: the robot is absent here
            continue
        for dtype, device in (("float64", "cuda"), ("float32", "cuda"), ("float32", "cpu")):
            jobs.append(("test", (case.id, str(path), case.floating_base, case.ignore_mimic, dtype, device, arch)))
    return jobs


def precompile_all(robots_dir, jobs_n, tests=True, cases=None, bench_dtypes=("float32", "float64"), variants=True):
    # the architecture once, here: the workers then need no driver (and no CUDA state crosses processes)
    from grid_rbd import cuda
    p = cuda.probe()
    arch = cuda._arch_of(p["devices"][0][1]) if p["ok"] and p["devices"] else os.environ.get("GRID_RBD_CUDA_ARCH")
    log("GPU", p["devices"] if p["ok"] else p["reason"], "-> cuda_arch", arch)
    jobs = test_jobs(arch, cases) if tests else []
    for robot, _, _ in ROBOTS if not cases else ():
        for dtype in bench_dtypes:
            jobs.append(("bench", (robots_dir, robot, dtype, None, "cuda", arch)))
    for variant, points in VARIANT_POINTS.items() if not cases and variants else ():
        for robot in sorted({p[0] for p in points}):
            jobs.append(("bench", (robots_dir, robot, "float32", variant, "cuda", arch)))

    # heaviest first (so the long builds start at once): big robots, float64, CUDA
    def weight(job):
        spec = job[1]
        name = spec[0] if job[0] == "test" else spec[1]
        big = any(k in name for k in ("g1", "atlas", "talos"))
        return (not big, "float64" not in spec, "cuda" not in spec)
    jobs.sort(key=weight)
    log(f"precompiling {len(jobs)} libraries on {jobs_n} processes")
    failed = []
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")  # no CUDA state crosses a fork
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs_n, mp_context=ctx) as pool:
        for job, secs, err in pool.map(_precompile_job, jobs):
            spec = job[1]
            what = (spec[0], spec[4], spec[5]) if job[0] == "test" else (spec[1], spec[2], spec[3] or "default")
            log(f"  {secs:6.1f} s {job[0]} {' '.join(map(str, what))} {'FAILED ' + err if err else ''}")
            if err:
                failed.append((job, err))
    log(f"precompiled in {time.perf_counter() - t0:.1f} s, {len(failed)} failed")
    return failed


# ---- report ----
def fmt(x, nd=1):
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{nd}f}"


def report(bench, builds, out_dir, started):
    out_dir.mkdir(parents=True, exist_ok=True)
    noop = bench.noop.get("wall_us", float("nan"))
    rows = [r for r in bench.results if r["variant"] == "default"]
    L = [f"# GPU benchmark: grid-rbd CUDA target ({datetime.date.today().isoformat()})", "",
         f"GPU: {bench.info.get('name')} (cc {bench.info.get('cc')}, {bench.info.get('sms')} SMs), driver "
         f"{bench.info.get('driver')}, CUDA runtime {bench.info.get('runtime')} (built with {bench.info.get('compiled_runtime')}); "
         f"block {bench.info.get('block')}, staging budget {bench.info.get('smem_max')} B/block, outputs staged up to "
         f"{bench.info.get('out_stage_max')} elements, host inputs packed: {bench.info.get('pack_inputs')}. "
         f"Host: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
         f"numpy {np.__version__}, torch {bench.torch.__version__}.", "",
         f"Empty launch + stream sync (C, host clock): **{fmt(noop, 2)} µs** (with events {fmt(bench.noop.get('wall_with_events_us'), 2)}, "
         f"event-to-event {fmt(bench.noop.get('event_us'), 2)}, from Python {fmt(bench.noop.get('python_us'), 2)}); "
         f"at the end of the run {fmt(getattr(bench, 'noop_end', {}).get('wall_us'), 2)} µs.", "",
         "Columns: **res** = launch + `cudaStreamSynchronize` of `grid_cuda_<algo>` on device pointers, host clock, timed "
         "in C (median; p10-p90 in the JSON); res ev = CUDA events recorded around the launch on the same stream; "
         "res py = the Python torch path (`h.crba(q_cuda, out=out_cuda)` + stream sync); host = the numpy handle's "
         "round trip (copy in, launch, copy out, sync): C-timed into a pinned out=, Python with a pinned out=, "
         "Python allocating a fresh array. Input sets rotate so at least 256 MiB are touched (beyond the 60 MB L2). "
         "states/s = B / res; bound = ../shared/anchors.md (fp32; halved for fp64).", ""]
    for dtype in ("float32", "float64"):
        L += [f"## {dtype}", "",
              "| robot | algo | B | res µs | res ev µs | res py µs | host C µs | host py pinned µs | host py plain µs | "
              "states/s | % bound | published res / host µs | ours / published (res, host) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            if r["dtype"] != dtype:
                continue
            n, res = r["B"], r.get("res_us")
            sps = n / (res * 1e-6) if res else None
            bound = BOUND_FP32.get((r["robot"], r["algo"]))
            if not bound and r.get("bytes_per_state"):
                # no anchor row: the memory bound of the fp32 bytes in and out (a float64 row's bytes, halved)
                bound = HBM_BYTES_S / (r["bytes_per_state"] / (2 if dtype == "float64" else 1))
            if bound and dtype == "float64":
                bound /= 2
            pct = 100 * sps / bound if sps and bound else None
            pub = "—"
            ratio = "—"
            if r["algo"] == "rnea" and n in PUBLISHED_ID.get(r["robot"], {}):
                pr, ph = PUBLISHED_ID[r["robot"]][n]
                pub = f"{pr} / {ph}"
                hp = r.get("host_py_pinned_us")
                ratio = f"{fmt(res / pr, 2) if res else '—'}, {fmt(hp / ph, 2) if hp else '—'}"
            elif (r["algo"], r["robot"]) in PUBLISHED_PER_PROBLEM_B256 and n in (256, 1024):
                pb = PUBLISHED_PER_PROBLEM_B256[(r["algo"], r["robot"])] * n
                pub = f"{pb:.1f} (per-problem B=256 x {n}{', extrapolated' if n != 256 else ''})"
                ratio = f"{fmt(res / pb, 2) if res else '—'}, —"
            err = f" **{r['error']}**" if "error" in r else ""
            fin = "" if r.get("finite", True) and r.get("host_finite", True) else " **NaN in output**"
            L.append(f"| {r['robot']} | {r['algo']} | {n} | {fmt(res)} | {fmt(r.get('res_event_us'))} | "
                     f"{fmt(r.get('res_py_us'))} | {fmt(r.get('host_c_us'))} | {fmt(r.get('host_py_pinned_us'))} | "
                     f"{fmt(r.get('host_py_plain_us'))}{' (' + r['host_skipped'] + ')' if 'host_skipped' in r else ''} | "
                     f"{sps:.3g} | {fmt(pct, 1)} | {pub} | {ratio}{err}{fin} |" if sps else
                     f"| {r['robot']} | {r['algo']} | {n} | — | — | — | — | — | — | — | — | {pub} | —{err} |")
        L.append("")
    L += targets(bench, rows, noop)
    vr = [r for r in bench.results if r["variant"] != "default"]
    if vr:
        L += ["## Compile-time variants (float32)", "",
              "| variant | robot | algo | B | res µs (variant) | res µs (default) | host C µs (variant) | host C µs (default) |",
              "|---|---|---|---|---|---|---|---|"]
        base = {(r["robot"], r["dtype"], r["algo"], r["B"]): r for r in rows}
        for r in vr:
            b = base.get((r["robot"], r["dtype"], r["algo"], r["B"]), {})
            L.append(f"| {r['variant']} ({VARIANTS[r['variant']][0]}) | {r['robot']} | {r['algo']} | {r['B']} | "
                     f"{fmt(r.get('res_us'))} | {fmt(b.get('res_us'))} | {fmt(r.get('host_c_us'))} | "
                     f"{fmt(b.get('host_c_us'))} |{' ' + r['error'] if 'error' in r else ''}")
        L.append("")
    if builds:
        L += ["## Cold CUDA build (nvcc, this machine, one build at a time)", "",
              "| robot | dtype | wall s | nvcc s | peak RSS of the build's processes MB | target |", "|---|---|---|---|---|---|"]
        for b in builds:
            tgt = "≤ 30 s" if b["robot"] == "iiwa" else "≤ 120 s"
            comp = (b.get("meta") or {}).get("seconds_compile")
            L.append(f"| {b['robot']}{' (floating)' if b['floating'] else ''} | {b['dtype']} | {fmt(b.get('wall_s'))} | "
                     f"{fmt(comp)} | {fmt(b.get('children_maxrss_mb'), 0)} | {tgt}, ≤ 4096 MB |"
                     f"{' ' + b['error'] if 'error' in b else ''}")
        L.append("")
    if bench.skipped:
        L += ["## Skipped", ""] + [f"- {s}" for s in bench.skipped] + [""]
    L.append(f"Run took {time.time() - started:.0f} s.")
    (out_dir / "gpu_bench.md").write_text("\n".join(L) + "\n")
    (out_dir / "gpu_bench.json").write_text(json.dumps(
        {"date": datetime.datetime.now().isoformat(), "device": bench.info, "empty_launch": bench.noop,
         "empty_launch_end": getattr(bench, "noop_end", None), "results": bench.results, "builds": builds,
         "skipped": bench.skipped}, indent=1))
    log("wrote", out_dir / "gpu_bench.md")


def targets(bench, rows, noop):
    """the issue's targets, each met or missed by how much"""
    by = {(r["robot"], r["dtype"], r["algo"], r["B"]): r for r in rows}
    L = ["## Targets (float32)", "", "| target | problem | ours | limit | met |", "|---|---|---|---|---|"]

    def line(t, prob, ours, limit, ok):
        L.append(f"| {t} | {prob} | {fmt(ours, 2)} | {fmt(limit, 2)} | {'yes' if ok else '**no**'} |")

    for robot, _, _ in ROBOTS:
        # B=1024 resident vs the published per-batch time
        pub = PUBLISHED_ID[robot][1024][0]
        r = by.get((robot, "float32", "rnea", 1024), {})
        res = r.get("res_us")
        if res:
            limit = pub / 3 if pub >= 20 else noop + 2
            line("B=1024 res ≤ pub/3 (or ≤ empty+2 µs when pub < 20)", f"{robot} rnea (pub {pub} µs)", res, limit,
                 res <= limit)
        for (algo, rb), pp in PUBLISHED_PER_PROBLEM_B256.items():
            if rb != robot:
                continue
            for n in (256, 1024):
                r = by.get((robot, "float32", algo, n), {})
                res = r.get("res_us")
                if res:
                    pubn = pp * n
                    limit = pubn / 3 if pubn >= 20 else noop + 2
                    line(f"B={n} res ≤ pub/3 (or ≤ empty+2 µs){' (pub extrapolated x1024)' if n == 1024 else ''}",
                         f"{robot} {algo} (pub {pubn:.1f} µs)", res, limit, res <= limit)
        # host round trip at B=1024
        r = by.get((robot, "float32", "rnea", 1024), {})
        for key in ("host_py_pinned_us", "host_py_plain_us"):
            h = r.get(key)
            if h:
                ph = PUBLISHED_ID[robot][1024][1]
                line(f"B=1024 host ≤ published host ({key})", f"{robot} rnea", h, ph, h <= ph)
    for robot, algos in (("iiwa", ("rnea", "fd", "crba")), ("go2", ("rnea", "fd", "crba")),
                         ("g1_29dof", ("crba", "minv"))):
        for algo in algos:
            r = by.get((robot, "float32", algo, 1048576), {})
            res = r.get("res_us")
            if res:
                sps = 1048576 / (res * 1e-6)
                bound = BOUND_FP32[(robot, algo)]
                line("B=1M ≥ 25% of the bound (states/s)", f"{robot} {algo}", sps, 0.25 * bound, sps >= 0.25 * bound)
    L.append("")
    return L


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / "build" / "gpu_bench")
    ap.add_argument("--robots-dir", default=os.environ.get("GRID_RBD_ROBOTS_DIR"))
    ap.add_argument("--budget-s", type=float, default=300.0,
                    help="the whole run, cold builds included, ends after this many seconds (larger cases skipped)")
    ap.add_argument("--no-build-times", action="store_true")
    ap.add_argument("--precompile", action="store_true", help="only build every library the GPU tests and bench use")
    ap.add_argument("--no-tests", action="store_true", help="with --precompile: the bench's libraries only")
    ap.add_argument("--cases", default="", help="with --precompile: only these test cases' libraries (comma-separated ids)")
    ap.add_argument("--bench-dtypes", default="float32,float64", help="with --precompile: the bench libraries' dtypes")
    ap.add_argument("--no-variants", action="store_true", help="with --precompile: not the wide-output variants")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--algos", default="", help="comma-separated subset of " + ",".join(ALGOS + EXTRA_ALGOS) +
                    " (default: " + ",".join(ALGOS) + ")")
    ap.add_argument("--build-child", nargs=4, metavar=("URDF", "FLOATING", "DTYPE", "ARCH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.algos:
        unknown = set(args.algos.split(",")) - set(ALGOS + EXTRA_ALGOS)
        if unknown:
            ap.error(f"unknown --algos {sorted(unknown)}")
        ALGOS[:] = [a for a in ALGOS + EXTRA_ALGOS if a in args.algos.split(",")]
    if args.build_child:
        urdf, floating, dtype, arch = args.build_child
        build_child(urdf, floating == "1", dtype, arch or None)
        return 0
    if args.precompile:
        return 1 if precompile_all(args.robots_dir, args.jobs, tests=not args.no_tests,
                                   cases=[c for c in args.cases.split(",") if c],
                                   bench_dtypes=args.bench_dtypes.split(","), variants=not args.no_variants) else 0
    started = time.time()
    try:
        bench = Bench(args)
    except Exception as e:  # no torch, no GPU: say so in the report rather than only on stderr
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu_bench.md").write_text(f"# GPU benchmark\n\nNot run: {type(e).__name__}: {e}\n")
        raise
    end = started + args.budget_s
    builds = []
    try:
        # the main grid, leaving BUILD_RESERVE_S for the cold builds
        bench.run_main(end - (0 if args.no_build_times else BUILD_RESERVE_S))
        if not args.no_build_times:
            if end - time.time() > BUILD_RESERVE_S * 0.6:
                arch = bench.info.get("cc", "").replace(".", "") or None
                builds = build_times(args.robots_dir, arch)
            else:
                bench.skipped.append("cold build times: out of time")
        bench.run_variants(end)
    finally:
        report(bench, builds, args.out, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
