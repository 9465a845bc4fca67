"""Runs the grid-rbd CPU benchmarks against Pinocchio and writes bench/RESULTS.md (`make bench`).

Parts:
  pinocchio  C++ timings of Pinocchio (bench/pinocchio_bench.cpp) per robot and algorithm
  grid       C timings of the generated robot.so (bench/grid_bench.c), when grid_rbd provides one; the wide-output
             methods (CRBA, M^-1: nv x nv per state) also at B = 1, 256 and 4096
  store      the store path of wide outputs (bench/store_bench.c): g1's nv x 2nv rows at B = 4096 against the
             core's store bandwidth, measured in the same run
  python     the numpy handle's call at B = 1, 16, 256, 4096 vs a Python loop over pinocchio
  register   cold / warm grid_rbd.register_robot time and peak RSS
Parts whose features are missing print "n/a" with the reason; no number is ever made up.

usage: .venv/bin/python bench/run.py [--robots iiwa,go2,..] [--quick] [--only pinocchio,grid,store,python,register]
                                     [--out bench/RESULTS.md] [--no-write]
"""
import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
BUILD = ROOT / "build" / "bench"
# GRID_BENCH_PINOCCHIO: a pinocchio_bench built elsewhere (bench/cpu_host.sh carries one to a machine without the wheel)
PIN_BENCH = Path(os.environ.get("GRID_BENCH_PINOCCHIO") or BUILD / "pinocchio_bench")
GRID_BENCH = BUILD / "grid_bench"
PARTS = ("pinocchio", "grid", "store", "python", "register")
STORE_BENCH = BUILD / "store_bench"

# algorithms compared, in table order: (grid ABI name, Pinocchio bench key, label)
ALGOS = [
    ("fk", "fk", "forward kinematics q"),
    ("rnea", "rnea", "RNEA"),
    ("nle", "nle", "nonLinearEffects"),
    ("gravity", "gravity", "generalized gravity"),
    ("crba", "crba", "CRBA"),
    ("minv", "minv", "computeMinverse(q)"),
    ("fd", "fd", "FD = M^-1 (tau - c)"),
    ("aba", "aba", "ABA"),
    ("frame_jacobian", "frame_jacobian", "frame Jacobian"),
    ("ee_pose", None, "end-effector poses [xyz rpy] (grid only)"),
    ("rnea_grad", "rnea_grad", "RNEA derivatives"),
    ("fd_grad", "fd_grad", "ABA derivatives (FD gradient)"),
    # the VJPs against the derivatives a Pinocchio user computes (and contracts) to get one
    ("rnea_vjp", "rnea_grad", "RNEA VJP g^T [dtau/dq | dtau/dqd] (vs RNEA derivatives)"),
    ("fd_vjp", "fd_grad", "FD VJP g^T [dqdd/dq | dqdd/dqd | dqdd/du] (vs ABA derivatives)"),
    ("energy", "energy", "energies (computeMechanicalEnergy)"),
    ("kinetic_energy_regressor", "kinetic_energy_regressor", "kinetic energy regressor"),
    ("potential_energy_regressor", "potential_energy_regressor", "potential energy regressor"),
    ("coriolis_matrix", "coriolis_matrix", "Coriolis matrix (computeCoriolisMatrix)"),
    ("inverse_dynamics_regressor", "inverse_dynamics_regressor", "joint torque regressor (computeJointTorqueRegressor)"),
    ("com", "com", "centre of mass and its Jacobian (centerOfMass + jacobianCenterOfMass)"),
    ("ccrba", "ccrba", "centroidal momentum matrix and momentum (ccrba)"),
    ("cmm_time_variation", "cmm_time_variation", "centroidal momentum matrix rate (dccrba)"),
    ("dccrba", None, "centroidal momentum matrix derivative dA/dq (grid only: Pinocchio has no dA/dq)"),
    ("fk_batched", "fk_batched", "one frame's position and quaternion (forwardKinematics + updateFramePlacement)"),
    ("frame_jacobian_dot", "frame_jacobian_dot",
     "frame Jacobian rate (computeJointJacobiansTimeVariation + getFrameJacobianTimeVariation)"),
    # Pinocchio has no single call: our composition of computeFrameJacobian + computeMinverse + (J M^-1 J^T)^-1
    ("osc_inertia", "osc_inertia", "operational-space inertia (vs frame Jacobian + computeMinverse + 6x6 inverse)"),
    # one target chosen per call (the frame, a tool offset): vs forwardKinematics + updateFramePlacement + rpy, and
    # computeFrameJacobian + lever arm + computeRpyJacobianInverse
    ("ee_pose_runtime", "ee_pose_runtime", "pose of a target chosen per call (vs FK + frame placement + rpy)"),
    ("ee_pose_runtime_grad", "ee_pose_runtime_grad",
     "its gradient (vs computeFrameJacobian + lever arm + computeRpyJacobianInverse)"),
]
# Pinocchio-only variants, shown for the anchors
PIN_EXTRA = [
    ("crba_world", "CRBA (WORLD convention)"),
    ("aba_world", "ABA (WORLD convention)"),
    ("minv_after_aba", "computeMinverse (q-less, after aba)"),
]
# anchors.md CPU row label -> Pinocchio bench key
ANCHOR_ROWS = {
    "forward kinematics q": "fk",
    "RNEA": "rnea",
    "nonLinearEffects": "nle",
    "CRBA": "crba",
    "computeMinverse": "minv_after_aba",
    "ABA": "aba",
    "RNEA derivatives": "rnea_grad",
    "ABA derivatives": "fd_grad",
}


def erd_robots_dir():
    """example-robot-data's robots folder, found through the installed package (or GRID_RBD_ERD_DIR)."""
    if os.environ.get("GRID_RBD_ERD_DIR"):
        return Path(os.environ["GRID_RBD_ERD_DIR"])
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    d = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return d if d.is_dir() else None


def robot_table():
    """name -> (urdf path or None, floating base, anchors.md column key or None)."""
    erd = erd_robots_dir()
    shared = Path(os.environ["GRID_RBD_ROBOTS_DIR"]) if os.environ.get("GRID_RBD_ROBOTS_DIR") else SHARED / "robots"

    def s(f):
        p = shared / f
        return p if p.is_file() else None

    def e(f):
        p = erd / f if erd else None
        return p if p and p.is_file() else None

    return {
        "iiwa": (s("iiwa.urdf"), False, "iiwa"),
        "hyq": (s("hyq.urdf") or e("hyq_description/robots/hyq_no_sensors.urdf"), False, "hyq fixed"),
        "atlas": (s("atlas.urdf"), False, "atlas fixed"),
        "go2": (s("go2.urdf"), True, None),
        "talos": (e("talos_data/robots/talos_reduced.urdf"), True, "talos ff"),
        "ur5": (e("ur_description/urdf/ur5_robot.urdf"), False, "ur5"),
        "panda": (e("panda_description/urdf/panda.urdf"), False, "panda"),
        "g1": (s("g1_29dof.urdf"), True, None),
        # not in the default set
        "h1_2": (s("h1_2.urdf"), True, None),
        "solo12": (e("solo_description/robots/solo12.urdf"), True, None),
    }


DEFAULT_ROBOTS = ["iiwa", "hyq", "atlas", "go2", "talos", "g1", "ur5", "panda"]
# the wide-output methods timed at several batch sizes (issue 11: their stores dominate), and those sizes
WIDE_ALGOS = ["crba", "minv", "rnea_grad", "fd_grad"]
WIDE_BATCHES = [1, 256, 4096]


# ---------------------------------------------------------------- anchors


def parse_anchors():
    """The CPU Pinocchio table of ../shared/anchors.md: {column key: {bench key: us}}."""
    path = SHARED / "anchors.md"
    if not path.is_file():
        return {}
    lines = path.read_text().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith("## CPU"))
    except StopIteration:
        return {}
    rows = []
    for l in lines[start + 1:]:
        if l.startswith("## "):
            break
        if l.startswith("|"):
            rows.append([c.strip() for c in l.strip().strip("|").split("|")])
    if len(rows) < 3:
        return {}
    # header cells look like "iiwa 7/7", "hyq fixed 12/12", "talos ff 39/38"
    cols = [re.sub(r"\s+\d+/\d+$", "", h) for h in rows[0][1:]]
    table = {c: {} for c in cols}
    for r in rows[2:]:
        key = ANCHOR_ROWS.get(r[0])
        if not key:
            continue
        for c, v in zip(cols, r[1:]):
            try:
                table[c][key] = float(v)
            except ValueError:
                pass
    return table


# ---------------------------------------------------------------- building


def newer(target, *sources):
    return target.exists() and all(target.stat().st_mtime >= s.stat().st_mtime for s in sources)


def cpu_build_flags():
    """The tuning flags of grid_rbd's CPU builds (grid_rbd.cache.build_command(), the build driver's own argv),
    or the documented default."""
    try:
        from grid_rbd import cache
        argv = cache.build_command()
    except Exception:  # grid_rbd not built yet: the bench still reports what it can
        return ["-O2", "-march=native"]
    return [w for w in argv[1:] if w not in ("-shared", "-fPIC", "-o", "robot.so", "robot.c", "-lm")
            and not w.startswith("-std=")]


def build_programs(need_pin, need_grid, need_store=False):
    """Builds the timing programs when missing or out of date; returns {name: error or None}."""
    BUILD.mkdir(parents=True, exist_ok=True)
    errors = {}
    if need_store:
        # the store path as the generated code has it: src/emit/lane_store.h, the library's own tuning flags
        src = [ROOT / "bench" / "store_bench.c", ROOT / "src" / "emit" / "lane_store.h"]
        cc = os.environ.get("CC", "cc")
        cmd = [cc, "-std=gnu11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
               *[f for f in cpu_build_flags() if f != "-fopenmp"], str(src[0]), "-o", str(STORE_BENCH)]
        print("building store_bench:", " ".join(cmd), flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True)
        errors["store_bench"] = None if r.returncode == 0 else r.stderr.strip()[-2000:]
    if need_grid:
        src = [ROOT / "bench" / "grid_bench.c"]  # self-contained: the methods come from the library's own rows
        if not newer(GRID_BENCH, *src, ROOT / "include" / "grid" / "abi.h"):
            cc = os.environ.get("CC", "cc")
            cmd = [cc, "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-O2", "-I", str(ROOT / "include"),
                   *map(str, src), "-ldl", "-lm", "-o", str(GRID_BENCH)]
            print("building grid_bench:", " ".join(cmd), flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True)
            errors["grid_bench"] = None if r.returncode == 0 else r.stderr.strip()[-2000:]
    if need_pin and not os.environ.get("GRID_BENCH_PINOCCHIO"):
        src = [ROOT / "bench" / "pinocchio_bench.cpp", ROOT / "bench" / "build_pinocchio_bench.sh"]
        if not newer(PIN_BENCH, *src):
            print("building pinocchio_bench (a few minutes, once)...", flush=True)
            env = dict(os.environ, PY=sys.executable)
            r = subprocess.run(["bash", str(ROOT / "bench" / "build_pinocchio_bench.sh"), str(PIN_BENCH)],
                               capture_output=True, text=True, env=env)
            errors["pinocchio_bench"] = None if r.returncode == 0 else r.stderr.strip()[-2000:]
    return errors


# ---------------------------------------------------------------- timing programs


def run_json(cmd, timeout):
    """Runs a timing program and parses its JSON; (dict, None) or (None, reason)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    try:
        return json.loads(r.stdout), None
    except json.JSONDecodeError:
        return None, f"exit {r.returncode}: {r.stderr.strip()[-300:]}"


def urdf_link_index(urdf, link):
    """Index of a link among the URDF's <link> elements in file order (grid's frame numbering)."""
    try:
        links = [l.get("name") for l in ET.parse(urdf).getroot().findall("link")]
        return links.index(link)
    except (ET.ParseError, ValueError, OSError):
        return None


def timing_args(quick):
    return ["--runs", "3", "--min-ms", "5"] if quick else ["--runs", "9", "--min-ms", "30"]


def bench_pinocchio(urdf, floating, quick):
    cmd = [str(PIN_BENCH), str(urdf), *timing_args(quick)] + (["--floating-base"] if floating else [])
    return run_json(cmd, timeout=300)


def import_grid():
    try:
        import grid_rbd  # noqa: F401
        return grid_rbd, None
    except Exception as e:  # a half-built package may fail in any way
        return None, f"import grid_rbd failed ({type(e).__name__}: {e})"


def has_mimic(urdf):
    try:
        return "<mimic" in Path(urdf).read_text(errors="replace")
    except OSError:
        return False


def register(grid_rbd, name, urdf, floating, **kw):
    """register_robot in float64; mimic joints stay independent joints, as Pinocchio's default."""
    if has_mimic(urdf):
        kw["ignore_mimic"] = True
    # device="cpu": on a machine with a GPU, "auto" would give a CUDA library, which grid_bench does not time
    # every method, the second-order ones (built only when named) included
    kw.setdefault("algorithm_list", list(grid_rbd._core.ALGORITHMS))
    return grid_rbd.register_robot(name=name, urdf_path=str(urdf), floating_base=floating, dtype="float64",
                                   device="cpu", **kw)


def grid_library(grid_rbd, name, urdf, floating):
    """The float64 robot.so of a robot: (handle, path, None) or (handle or None, None, reason)."""
    if grid_rbd is None:
        return None, None, "grid_rbd not importable"
    try:
        h = register(grid_rbd, name, urdf, floating, cache_dir=str(BUILD / "grid-cache"))
    except Exception as e:
        return None, None, f"register_robot failed ({type(e).__name__}: {str(e)[:200]})"
    so = getattr(h, "library_path", None)
    if not so or not Path(so).is_file():
        return h, None, "handle has no library_path"
    return h, so, None


def bench_wide(so, quick):
    """Per-state times of the wide-output methods at each of WIDE_BATCHES: {algo: {B: us}}, reason."""
    out = {}
    for B in WIDE_BATCHES:
        cmd = [str(GRID_BENCH), str(so), "--algos", ",".join(WIDE_ALGOS), "--pool", "256", "--batch", str(max(B, 4)),
               *timing_args(quick)]
        r, why = run_json(cmd, timeout=300)
        if r is None:
            return out, why
        for a, x in r.get("results", {}).items():
            out.setdefault(a, {})[B] = x["per_call_us"] if B == 1 else x["batch_per_state_us"]
    return out, None


def bench_store(quick):
    """store_bench on g1_29dof's gradient rows (35 x 70 doubles) at B = 4096: dict or None, reason."""
    cmd = [str(STORE_BENCH), "--n", "2450", "--batch", "4096", "--runs", "5" if quick else "15"]
    return run_json(cmd, timeout=300)


def bench_grid(so, frame, quick):
    cmd = [str(GRID_BENCH), str(so), "--pool", "256", "--batch", "256", *timing_args(quick)]
    if frame is not None:
        cmd += ["--frame", str(frame)]
    return run_json(cmd, timeout=300)


# ---------------------------------------------------------------- python overhead


def time_python(fn, quick):
    """Median seconds of fn() over several runs, each a loop of at least min_s."""
    min_s, runs = (0.02, 3) if quick else (0.1, 5)
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_s:
            break
        n *= 2 if dt > min_s / 8 else 8
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n)
    return statistics.median(out)


def python_overhead(urdf, handle, quick):
    """Rows (algo, B, grid whole-call us or None, pinocchio loop us) for a fixed-base robot."""
    import numpy as np
    import pinocchio as pin

    model = pin.buildModelFromUrdf(str(urdf))
    data = model.createData()
    rng = np.random.default_rng(0)
    rows = []
    pin_calls = {
        "rnea": lambda q, v, a: pin.rnea(model, data, q, v, a),
        "aba": lambda q, v, a: pin.aba(model, data, q, v, a),
        "crba": lambda q, v, a: pin.crba(model, data, q),
        "minv": lambda q, v, a: pin.computeMinverse(model, data, q),
    }
    grid_calls = {
        "rnea": lambda h, q, v, a: h.inverse_dynamics(q, v, a),
        "aba": lambda h, q, v, a: h.aba(q, v, a),
        "crba": lambda h, q, v, a: h.crba(q),
        "minv": lambda h, q, v, a: h.minv(q),
    }
    for algo in pin_calls:
        for B in (1, 16, 256, 4096):
            q = rng.uniform(-1, 1, (B, model.nq))
            v = rng.uniform(-1, 1, (B, model.nv))
            a = rng.uniform(-1, 1, (B, model.nv))
            pc = pin_calls[algo]

            def pin_loop():
                for i in range(B):
                    pc(q[i], v[i], a[i])

            t_pin = time_python(pin_loop, quick) * 1e6
            t_grid, t_grid_mt, why = None, None, None
            if handle is None:
                why = "no handle"
            else:
                gc = grid_calls[algo]
                try:
                    # one thread, like the Python loop; then the handle's default thread count
                    default_threads = getattr(handle, "num_threads", None)
                    if default_threads is not None:
                        handle.num_threads = 1
                    try:
                        t_grid = time_python(lambda: gc(handle, q, v, a), quick) * 1e6
                    finally:
                        if default_threads is not None:
                            handle.num_threads = default_threads
                    if default_threads is not None and default_threads > 1:
                        t_grid_mt = time_python(lambda: gc(handle, q, v, a), quick) * 1e6
                except Exception as e:
                    why = f"{type(e).__name__}: {str(e)[:80]}"
            rows.append({"algo": algo, "B": B, "grid_us": t_grid, "grid_default_threads_us": t_grid_mt,
                         "grid_why": why, "pin_loop_us": t_pin})
    return rows, (getattr(handle, "num_threads", None) if handle is not None else None)


# ---------------------------------------------------------------- register_robot cold / warm


def register_probe(name, urdf, floating, cache_dir):
    """Child-process side: time register_robot twice in one process; print JSON with peak RSS."""
    t0 = time.perf_counter()
    grid_rbd, why = import_grid()
    t_import = time.perf_counter() - t0
    res = {"import_s": t_import}
    if grid_rbd is None:
        res["error"] = why
    else:
        try:
            t0 = time.perf_counter()
            h = register(grid_rbd, name, urdf, floating, cache_dir=cache_dir)
            res["first_s"] = time.perf_counter() - t0
            res["provider"] = str(getattr(h, "provider", "unknown"))
            t0 = time.perf_counter()
            register(grid_rbd, name, urdf, floating, cache_dir=cache_dir)
            res["second_s"] = time.perf_counter() - t0
        except Exception as e:
            res["error"] = f"register_robot failed ({type(e).__name__}: {str(e)[:200]})"
    res["self_maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res["children_maxrss_kb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps(res))


def register_timing(name, urdf, floating):
    """Cold (fresh cache_dir) and warm (same dir, new process and same process) register_robot."""
    out = {"robot": name}
    with tempfile.TemporaryDirectory(prefix="grid-bench-cache-") as cache:
        for phase in ("cold", "warm"):
            cmd = [sys.executable, str(Path(__file__).resolve()), "--register-probe", name, str(urdf),
                   "1" if floating else "0", cache]
            t0 = time.perf_counter()
            res, why = run_json(cmd, timeout=600)
            wall = time.perf_counter() - t0
            if res is None:
                out[phase] = {"error": why}
                break
            res["process_wall_s"] = wall
            out[phase] = res
            if "error" in res:
                break
    return out


# ---------------------------------------------------------------- report


def fmt(x, nd=3):
    """A figure for a table: nd decimals from 1 to 10, three significant digits below 1."""
    if x is None:
        return "n/a"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1 or x == 0:
        return f"{x:.{nd}f}"
    return f"{x:.3g}"


def ratio(a, b):
    if a is None or not b:
        return "n/a"
    r = a / b
    return f"{r:.2f}" if r >= 0.1 else f"{r:.3f}"


def machine_info():
    model, cores, mhz = "unknown", 0, None
    try:
        for l in Path("/proc/cpuinfo").read_text().splitlines():
            if l.startswith("model name") and model == "unknown":
                model = l.split(":", 1)[1].strip()
            elif l.startswith("processor"):
                cores += 1
            elif l.startswith("cpu MHz") and mhz is None:
                mhz = l.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, {cores} cores" + (f", {float(mhz):.0f} MHz" if mhz else "")


def cpu_identity():
    """What the generated code is tuned for: the CPU model, what -march=native resolves to, its vector ISA."""
    model, flags = "unknown", set()
    try:
        for l in Path("/proc/cpuinfo").read_text().splitlines():
            if l.startswith("model name") and model == "unknown":
                model = l.split(":", 1)[1].strip()
            elif l.startswith("flags") and not flags:
                flags = set(l.split(":", 1)[1].split())
    except OSError:
        pass
    march = "unknown"
    r = subprocess.run([os.environ.get("CC", "cc"), "-march=native", "-Q", "--help=target"], capture_output=True,
                       text=True)
    for l in r.stdout.splitlines():
        if l.strip().startswith("-march="):
            march = l.split()[-1]
            break
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "AVX" if "avx" in flags else "SSE"
    caches = []
    for idx in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            lvl, typ, size = ((idx / f).read_text().strip() for f in ("level", "type", "size"))
        except OSError:
            continue
        if typ != "Instruction":
            caches.append(f"L{lvl} {size}")
    return {"model": model, "march": march, "isa": isa, "caches": ", ".join(caches)}


def stream_threshold(flags):
    """GRID_STREAM_MIN_BYTES of the flags (the build driver's per-CPU choice), else the header's 8 MiB"""
    for f in flags:
        if f.startswith("-DGRID_STREAM_MIN_BYTES="):
            return int(f.split("=", 1)[1])
    return 8 << 20


def lanes_line(cpu, flags):
    """The line printed beside every table: CPU, lane width, store strategy and flags of the generated code."""
    t = stream_threshold(flags)
    size = f"{t >> 20} MiB" if t >= 1 << 20 else f"{t >> 10} KiB"
    lanes = next((f.split("=", 1)[1] for f in flags if f.startswith("-DGRID_LANES=")), "4")
    return (f"- CPU: {cpu['model']} (-march=native: {cpu['march']}, {cpu['isa']}; {cpu['caches']}); generated code: "
            f"{lanes} float64 lanes per vector (GRID_LANES), outputs of a batch call streamed past the caches "
            f"(non-temporal stores) from {size} (GRID_STREAM_MIN_BYTES), flags `{' '.join(flags)}`")


def tool_version(cmd):
    exe = shutil.which(cmd[0])
    if not exe:
        return "not found"
    r = subprocess.run(cmd, capture_output=True, text=True)
    return (r.stdout or r.stderr).splitlines()[0].strip() if (r.stdout or r.stderr) else "unknown"


def robot_section(name, info):
    L = []
    pin_res = (info.get("pinocchio") or {}).get("results", {})
    grid_res = (info.get("grid") or {}).get("results", {})
    anchor = info.get("anchor") or {}
    pj = info.get("pinocchio") or {}
    base = "floating" if info["floating"] else "fixed"
    dims = f"nq {pj['nq']}, nv {pj['nv']}" if "nq" in pj else ""
    L.append(f"### {name} ({base} base{', ' + dims if dims else ''})")
    L.append("")
    L.append(f"- URDF: `{info['urdf_display']}`" + (f"; Jacobian frame `{pj.get('jacobian_frame')}` "
                                                  f"({pj.get('reference_frame')})" if pj else ""))
    if pj.get("fd_vs_aba_max_abs_diff") is not None:
        L.append(f"- Pinocchio check: FD (crba + nle + Cholesky) vs ABA, max |difference| over the pool = "
                 f"{pj['fd_vs_aba_max_abs_diff']:.1e}")
    if info.get("lanes_line"):
        L.append(info["lanes_line"])
    for k in ("pinocchio_error", "grid_error"):
        if info.get(k):
            L.append(f"- {'Pinocchio' if k.startswith('pin') else 'grid'}: n/a ({info[k]})")
    L.append("")
    L.append("| algorithm | grid B=1 µs (min) | grid B=256 µs/state | Pinocchio µs (min) | grid/Pin B=1 "
             "| grid/Pin B=256 | anchor µs | Pin/anchor | target µs (Pin/3) | B=1 meets target |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")

    def fa(x):  # an anchors.md figure, as written there
        return "n/a" if x is None else f"{x:.2f}" if x < 10 else f"{x:.3g}"

    def with_min(med, mn):
        return fmt(med) + (f" ({fmt(mn)})" if med is not None and mn is not None else "")

    for gname, pkey, label in ALGOS:
        p = pin_res.get(pkey, {}).get("median_us") if pkey else None
        p_min = pin_res.get(pkey, {}).get("min_us") if pkey else None
        g = grid_res.get(gname, {})
        g1, g256 = g.get("per_call_us"), g.get("batch_per_state_us")
        a = anchor.get(pkey) if pkey else None
        target = p / 3 if p else None
        met = "n/a" if g1 is None or target is None else ("yes" if g1 <= target else "no")
        if "error" in g:
            met = f"error: {g['error']}"
        L.append(f"| {label} | {with_min(g1, g.get('per_call_min_us'))} | {fmt(g256)} | {with_min(p, p_min)} "
                 f"| {ratio(g1, p)} | {ratio(g256, p)} | {fa(a)} | {ratio(p, a)} | {fmt(target)} | {met} |")
    for pkey, label in PIN_EXTRA:
        p = pin_res.get(pkey, {}).get("median_us")
        p_min = pin_res.get(pkey, {}).get("min_us")
        a = anchor.get(pkey)
        L.append(f"| {label} (Pinocchio only) | — | — | {with_min(p, p_min)} | — | — | {fa(a)} | {ratio(p, a)} "
                 f"| — | — |")
    wide = info.get("wide") or {}
    if wide:
        L.append("")
        L.append("Wide outputs (nv x nv per state): grid at B = " + ", ".join(map(str, WIDE_BATCHES)) +
                 " (B=1: one call; else per state of one call), against Pinocchio's C++ time above; "
                 "target: <= 1/3 at B = 256 and 4096.")
        L.append("")
        L.append("| algorithm | " + " | ".join(f"grid B={b} µs" for b in WIDE_BATCHES) + " | Pinocchio µs | " +
                 " | ".join(f"ratio B={b}" for b in WIDE_BATCHES) + " | target met (256, 4096) |")
        L.append("|---|" + "---|" * (2 * len(WIDE_BATCHES) + 2))
        labels = {g: l for g, _, l in ALGOS}
        for a in WIDE_ALGOS:
            t = wide.get(a, {})
            p = pin_res.get(a, {}).get("median_us")
            met = "n/a" if p is None or 256 not in t or 4096 not in t else \
                ("yes" if max(t[256], t[4096]) <= p / 3 else "no")
            L.append(f"| {labels[a]} | " + " | ".join(fmt(t.get(b)) for b in WIDE_BATCHES) + f" | {fmt(p)} | " +
                     " | ".join(ratio(t.get(b), p) for b in WIDE_BATCHES) + f" | {met} |")
    if info.get("wide_error"):
        L.append("")
        L.append(f"Wide outputs: n/a ({info['wide_error']})")
    bad = [n for n, g in grid_res.items() if g.get("nonfinite_outputs")]
    if bad:
        L.append("")
        L.append(f"Warning: grid produced non-finite outputs in: {', '.join(bad)}.")
    L.append("")
    return L


def python_section(rows, robot, why, provider, pin_cpp, threads):
    L = ["## Python call overhead", ""]
    if why:
        L += [f"n/a ({why})", ""]
        return L
    L.append(f"Robot {robot}, float64. grid: one numpy handle call on a (B, n) array (provider: {provider}), "
             f"with `handle.num_threads = 1`, and with the handle's default ({threads if threads else 'n/a'} "
             "threads); Pinocchio: a Python loop of B calls of the `pin` binding over the rows, one thread. "
             "Whole-batch µs (per state in brackets). The last column is B times Pinocchio's C++ per-call time "
             "from the table above (no Python).")
    L.append("")
    L.append("| algorithm | B | grid handle µs, 1 thread | grid handle µs, default threads | Pinocchio Python loop µs "
             "| grid 1 thread / Pinocchio loop | Pinocchio C++ × B µs |")
    L.append("|---|---|---|---|---|---|---|")

    def per(x, b):
        return f"{fmt(x)} ({fmt(x / b)})" if x is not None else "n/a"

    for r in rows:
        g, b = r["grid_us"], r["B"]
        gs = per(g, b) if g is not None else f"n/a ({r['grid_why']})"
        p = r["pin_loop_us"]
        c = pin_cpp.get(r["algo"], {}).get("median_us")
        L.append(f"| {r['algo']} | {b} | {gs} | {per(r.get('grid_default_threads_us'), b)} | {per(p, b)} "
                 f"| {ratio(g, p)} | {fmt(c * b if c else None)} |")
    L.append("")
    return L


def store_section(r, why, lanes):
    L = ["## Store path of wide outputs", "", lanes, ""]
    if r is None:
        return L + [f"n/a ({why})", ""]
    L.append(f"`{STORE_BENCH.relative_to(ROOT)} --n {r['n']} --batch {r['batch']}`: the rows a gradient will write, "
             f"g1_29dof's nv x 2nv = {r['n']} doubles per state, {r['batch']} states ({r['bytes'] / 2**20:.0f} MiB), "
             "from one tile of lane vectors kept in cache (the lane function's output) to memory, one core, best of "
             "runs; the ceilings are one core writing the same buffer front to back. Target: the streamed "
             "scatter (what the generated code takes at this size) >= 50% of the store bandwidth.")
    L.append("")
    L.append("| path | GB/s | of streamed bandwidth | of plain bandwidth |")
    L.append("|---|---|---|---|")
    bs, bp = r["bandwidth_stream_gbs"], r["bandwidth_plain_gbs"]
    for key, label in (("bandwidth_plain_gbs", "plain 32-byte stores, front to back (ceiling)"),
                       ("bandwidth_stream_gbs", "streaming 32-byte stores, front to back (ceiling)"),
                       ("scatter_plain_gbs", "tile scatter, cached stores (grid_scatter_)"),
                       ("scatter_stream_gbs", "tile scatter, streamed (grid_stream_scatter_)")):
        x = r[key]
        L.append(f"| {label} | {x:.2f} | {x / bs:.0%} | {x / bp:.0%} |")
    best = max(bs, bp)
    L.append("")
    L.append(f"Streamed scatter / best store bandwidth of the core = {r['scatter_stream_gbs'] / best:.0%} "
             f"(target >= 50%: {'met' if r['scatter_stream_gbs'] >= 0.5 * best else 'MISSED'}); "
             f"wrong elements: {r['wrong_elements']}.")
    L.append("")
    return L


def register_section(items):
    L = ["## register_robot cold / warm", ""]
    if not items:
        return L + ["n/a (not run)", ""]
    L.append("cold: fresh temporary cache_dir, new process; warm: same cache_dir, new process; "
             "same-process: second call in the warm process. Peak RSS: max of the probe process and the "
             "processes it waited for (compiler), from getrusage.")
    L.append("")
    L.append("| robot | provider | cold ms | warm ms (new process) | warm ms (same process) | import grid_rbd ms "
             "| peak RSS MiB | note |")
    L.append("|---|---|---|---|---|---|---|---|")

    def ms(x):
        return fmt(x * 1e3 if x is not None else None)

    for it in items:
        c, w = it.get("cold", {}), it.get("warm", {})
        err = c.get("error") or w.get("error")
        rss = [x.get(k) for x in (c, w) for k in ("self_maxrss_kb", "children_maxrss_kb") if x.get(k)]
        L.append(f"| {it['robot']} | {c.get('provider', 'n/a')} | {ms(c.get('first_s'))} | {ms(w.get('first_s'))} "
                 f"| {ms(w.get('second_s'))} | {ms(c.get('import_s'))} | {fmt(max(rss) / 1024 if rss else None, 1)} "
                 f"| {'n/a: ' + err if err else ''} |")
    L.append("")
    return L


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", help="comma-separated robot names (default: %s)" % ",".join(DEFAULT_ROBOTS))
    ap.add_argument("--quick", action="store_true", help="shorter timing loops (noisier)")
    ap.add_argument("--only", help="comma-separated parts: " + ",".join(PARTS))
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"))
    ap.add_argument("--no-write", action="store_true", help="print only, do not write --out")
    ap.add_argument("--register-probe", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.register_probe:
        name, urdf, floating, cache = args.register_probe
        register_probe(name, urdf, floating == "1", cache)
        return 0

    parts = set(args.only.split(",")) if args.only else set(PARTS)
    unknown = parts - set(PARTS)
    if unknown:
        ap.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    table = robot_table()
    names = args.robots.split(",") if args.robots else DEFAULT_ROBOTS
    for n in names:
        if n not in table:
            ap.error(f"unknown robot {n} (known: {', '.join(table)})")
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    if load_start[0] > 0.5:
        print(f"note: load average {load_start[0]:.2f} at start; other processes will slow the timings",
              file=sys.stderr)
    anchors = parse_anchors()

    # build the two programs (the Pinocchio one takes minutes the first time)
    errors = build_programs("pinocchio" in parts, "grid" in parts, "store" in parts)
    cpu = cpu_identity()
    flags = cpu_build_flags()
    print(lanes_line(cpu, flags), flush=True)
    for k, v in errors.items():
        if v:
            print(f"warning: building {k} failed:\n{v}", file=sys.stderr)

    grid_rbd, grid_why = (None, "not requested")
    if parts & {"grid", "python"}:
        grid_rbd, grid_why = import_grid()

    # per robot: Pinocchio, then grid
    robots = {}
    handles = {}
    for name in names:
        urdf, floating, col = table[name]
        info = {"floating": floating, "urdf": str(urdf) if urdf else None, "lanes_line": lanes_line(cpu, flags)}
        robots[name] = info
        if urdf is None:
            info["urdf_display"] = "absent"
            info["pinocchio_error"] = info["grid_error"] = "URDF not found, skipped"
            print(f"== {name}: URDF not found, skipped", flush=True)
            continue
        if "example-robot-data/robots/" in str(urdf):
            info["urdf_display"] = "example-robot-data/robots/" + str(urdf).split("example-robot-data/robots/")[-1]
        elif urdf.resolve().is_relative_to(SHARED.resolve()):
            info["urdf_display"] = "shared/" + str(urdf.resolve().relative_to(SHARED.resolve()))
        elif urdf.resolve().is_relative_to(ROOT.resolve()):
            # a copy inside the repository (the device's .gpu-deps): named from the repository root
            info["urdf_display"] = str(urdf.resolve().relative_to(ROOT.resolve()))
        else:
            info["urdf_display"] = str(urdf)
        if has_mimic(urdf):
            info["urdf_display"] += " (mimic joints kept independent)"
        info["anchor"] = anchors.get(col) if col else None
        print(f"== {name} ({'floating' if floating else 'fixed'}): {urdf}", flush=True)
        if "pinocchio" in parts:
            if errors.get("pinocchio_bench"):
                info["pinocchio_error"] = "pinocchio_bench did not build"
            else:
                info["pinocchio"], info["pinocchio_error"] = bench_pinocchio(urdf, floating, args.quick)
        if "grid" not in parts:
            info["grid_error"] = "not requested"
        else:
            h, so, why = grid_library(grid_rbd, name, urdf, floating) if grid_rbd else (None, None, grid_why)
            handles[name] = h
            if h is not None:
                info["grid_provider"] = str(getattr(h, "provider", "unknown"))
                if why:
                    why += f"; provider: {info['grid_provider']}"
            if so and errors.get("grid_bench"):
                why = "grid_bench did not build"
            if why:
                info["grid_error"] = why
            else:
                frame_name = (info.get("pinocchio") or {}).get("jacobian_frame")
                frame = None
                if frame_name:
                    try:
                        frame = int(h.frame_id(frame_name))
                    except Exception:
                        frame = urdf_link_index(urdf, frame_name)
                info["grid"], info["grid_error"] = bench_grid(so, frame, args.quick)
                info["wide"], info["wide_error"] = bench_wide(so, args.quick)
        for line in robot_section(name, info):
            print(line)
        sys.stdout.flush()

    # the store path of wide outputs
    store, store_why = (None, "not requested")
    if "store" in parts:
        store, store_why = (None, "store_bench did not build") if errors.get("store_bench") else bench_store(args.quick)
    store_lines = store_section(store, store_why, lanes_line(cpu, flags))
    print("\n".join(store_lines))

    # python overhead on iiwa (fixed base)
    py_rows, py_why, py_robot, py_handle, py_threads = [], None, "iiwa", None, None
    if "python" in parts:
        urdf = table["iiwa"][0]
        if urdf is None:
            py_why = "iiwa URDF not found"
        else:
            h = handles.get("iiwa")
            if h is None and grid_rbd is not None and "iiwa" not in handles:
                h, _, _ = grid_library(grid_rbd, "iiwa", urdf, False)
            py_handle = h
            print("== python call overhead", flush=True)
            py_rows, py_threads = python_overhead(urdf, h, args.quick)
    else:
        py_why = "not requested"
    py_provider = str(getattr(py_handle, "provider", "n/a")) if py_handle is not None else "n/a"
    pin_cpp = ((robots.get("iiwa") or {}).get("pinocchio") or {}).get("results", {})
    py_lines = python_section(py_rows, py_robot, py_why, py_provider, pin_cpp, py_threads)
    print("\n".join(py_lines))

    # register_robot cold / warm
    reg = []
    if "register" in parts:
        for name in (["iiwa"] if args.quick else ["iiwa", "go2"]):
            urdf, floating, _ = table[name]
            if urdf is None:
                continue
            print(f"== register_robot {name}", flush=True)
            reg.append(register_timing(name, urdf, floating))
    reg_lines = register_section(reg) if "register" in parts else ["## register_robot cold / warm", "",
                                                                    "n/a (not requested)", ""]
    print("\n".join(reg_lines))

    elapsed = time.perf_counter() - t_start
    raw = {"robots": robots, "store": store, "python_overhead": py_rows, "register": reg, "elapsed_s": elapsed,
           "cpu": cpu, "flags": flags}
    BUILD.mkdir(parents=True, exist_ok=True)
    (BUILD / "results.json").write_text(json.dumps(raw, indent=1, default=str))

    load = (load_start, os.getloadavg())
    if not args.no_write:
        write_report(Path(args.out), args, robots, store_lines + py_lines, reg_lines, elapsed, load)
        print(f"wrote {args.out} ({elapsed:.0f} s)")
    return 0


def write_report(path, args, robots, py_lines, reg_lines, elapsed, load):
    pin_version = "unknown"
    try:
        pin_version = importlib.metadata.version("pin")
    except importlib.metadata.PackageNotFoundError:
        pass
    cmd = " ".join([".venv/bin/python", "bench/run.py", *sys.argv[1:]])
    L = [
        "# grid-rbd CPU benchmarks",
        "",
        "Written by `bench/run.py` (`make bench`); see docs/benchmarks.md for what each figure measures.",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine_info()}",
        f"- compilers: {tool_version(['g++', '--version'])}; {tool_version(['cc', '--version'])}",
        f"- Pinocchio: `pin` {pin_version} wheel (C++ headers + shared libraries of the wheel), "
        "bench/pinocchio_bench.cpp built with g++ -O3, no -march=native",
        f"- Python {platform.python_version()}",
        f"- command: `{cmd}` ({elapsed:.0f} s)",
        f"- load average (1 min) at start / end: {load[0][0]:.2f} / {load[1][0]:.2f} (the machine has "
        f"{os.cpu_count()} cores; other work on it slows these single-thread timings)",
        "- the wide-output cells on an Intel Xeon with AVX-512 (the GPU host's CPU, bench/cpu_host.sh): "
        "bench/RESULTS-cpu-intel.md",
        "",
        "One thread, float64, µs. *Pinocchio µs*: one call, median of runs (fastest run in brackets; a large gap "
        "means the machine was busy), random states from a pool of 256 cycled. *grid B=1*: one `grid_<algo>()` call at batch 1 (same pool); *grid B=256*: one call at batch "
        "256, time per state. *anchor*: ../shared/anchors.md (Pinocchio 3.7 on the same machine type, AMD EPYC "
        "Zen 4 VM at 2.6 GHz, Google Benchmark on one fixed random q); its computeMinverse is the q-less "
        "overload, shown on its own row. *target*: one third of Pinocchio's time on this run.",
        "",
        "## Per robot",
        "",
    ]
    for name, info in robots.items():
        L += robot_section(name, info)
    L += py_lines
    L += reg_lines
    path.write_text("\n".join(L).rstrip() + "\n")


if __name__ == "__main__":
    sys.exit(main())
