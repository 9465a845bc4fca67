"""Hardening of argument handling: the num_threads bound and the clamp to the CPUs, fork after a threaded call,
pickling handles for spawn, out= partly overlapping an input, path types, refused dtypes and booleans, and the
adversarial cases that were already refused (kept here as regressions)."""

import os
import pathlib
import pickle
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import grid_rbd
from grid_rbd import _core
from robot_cases import SHARED_ROBOTS

IIWA = SHARED_ROBOTS / "iiwa.urdf"
pytestmark = pytest.mark.skipif(not IIWA.exists(), reason=f"{IIWA} is absent")
B_BIG = 4096


@pytest.fixture(scope="module")
def gen():
    return grid_rbd.register_robot("hard_iiwa", urdf_path=IIWA, dtype="float64", device="cpu", verbose=False)


@pytest.fixture(scope="module")
def ref():
    return grid_rbd.register_robot("hard_iiwa_ref", urdf_path=IIWA, dtype="float64", device="cpu", codegen=False)


def states(B, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (B, 7)), rng.uniform(-2, 2, (B, 7)), rng.uniform(-3, 3, (B, 7))


def run_script(code, timeout=120, prefix=""):
    """python -c code in a fresh process group (prefix: shell commands first, e.g. ulimit); (rc, stdout + stderr).
    On a timeout the whole group (forked children included) is killed and the test fails."""
    cmd = f"{prefix}{sys.executable} -c {_quote(textwrap.dedent(code))}"
    p = subprocess.Popen(["bash", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True, env=dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).parent)))
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        pytest.fail(f"timed out after {timeout} s (hung): {out}")
    return p.returncode, out


def _quote(s):
    return "'" + s.replace("'", "'\"'\"'") + "'"


# ---- 1. num_threads: a stated bound, checked before building; the threads used clamped to the CPUs ----
def test_num_threads_bound_checked_before_build(tmp_path):
    assert _core.MAX_THREADS == 1024
    for bad in (0, -1, 1025, 2**31, 2**32 + 5, 2**40):
        cache = tmp_path / f"c{bad}"
        with pytest.raises(ValueError, match=r"num_threads must be an int in 1\.\.1024"):
            grid_rbd.register_robot("hard_bad", urdf_path=IIWA, device="cpu", cache_dir=cache, num_threads=bad)
        with pytest.raises(ValueError, match=r"num_threads must be an int in 1\.\.1024"):
            grid_rbd.precompile("hard_bad", urdf_path=IIWA, device="cpu", cache_dir=cache, num_threads=bad)
        assert not cache.exists()  # refused before anything was built
    for bad in (True, 1.5, "4", np.float64(2)):
        with pytest.raises(TypeError, match="num_threads must be an int"):
            grid_rbd.register_robot("hard_bad", urdf_path=IIWA, device="cpu", cache_dir=tmp_path / "t",
                                    num_threads=bad)
    assert not (tmp_path / "t").exists()


def test_num_threads_setter_bound(gen, ref):
    for h in (gen, ref):
        h.num_threads = 3
        for bad in (0, -1, 1025, 2**31, 2**32 + 5, 2**40):
            with pytest.raises(ValueError, match=r"num_threads must be an int in 1\.\.1024"):
                h.num_threads = bad
            assert h.num_threads == 3
        with pytest.raises(TypeError, match="num_threads"):
            h.num_threads = True
        h.num_threads = 1024  # the bound itself is accepted (and clamped per call)
        assert h.num_threads == 1024
        h.num_threads = np.int64(2)
        assert h.num_threads == 2
    with pytest.raises(ValueError, match="1024"):
        gen._runner.num_threads = 2**40  # the C setter checks too: nothing is truncated
    with pytest.raises(ValueError, match="1024"):
        _core.Runner(gen._model, _core.FLOAT64, num_threads=5000)


def test_threads_used_is_clamped_to_the_cpus(gen):
    cpus = len(os.sched_getaffinity(0))
    gen.num_threads = 1024
    assert gen._runner.threads_used == min(1024, cpus)
    gen.num_threads = 1
    assert gen._runner.threads_used == 1
    gen.num_threads = os.cpu_count() or 1


def test_many_threads_under_a_memory_limit():
    """1024 requested threads (the bound) never become 1024 OpenMP threads: under ulimit -v libgomp would
    print "Thread creation failed" and end the process"""
    rc, out = run_script(f"""
        import numpy as np, grid_rbd
        h = grid_rbd.register_robot('i', urdf_path={str(IIWA)!r}, dtype='float64', device='cpu', verbose=False,
                                    num_threads=1024)
        q = np.zeros(({B_BIG}, 7))
        for m in ('inverse_dynamics', 'crba', 'minv', 'aba', 'frame_jacobian', 'forward_kinematics'):
            f = getattr(h, m)
            f(q, q, q) if m == 'aba' else (f(q, q) if m == 'inverse_dynamics' else f(q))
        h.num_threads = 1024
        h.inverse_dynamics(q, q)
        print('ok')
    """, prefix="ulimit -v 3000000; ")
    assert rc == 0 and "ok" in out, out


# ---- 2. fork after a threaded call; pickling for spawn ----
FORK_CHILD = textwrap.dedent(f"""
    import os, sys, numpy as np, grid_rbd
    h = grid_rbd.register_robot('i', urdf_path={str(IIWA)!r}, dtype='float64', device='cpu', verbose=False,
                                num_threads=2)
    rng = np.random.default_rng(0)
    q, qd = rng.uniform(-1, 1, ({B_BIG}, 7)), rng.uniform(-1, 1, ({B_BIG}, 7))
    expected = h.inverse_dynamics(q, qd)   # a multi-threaded batch: libgomp's pool now exists
    expected_m = h.crba(q)
""")


def test_fork_after_threaded_call():
    rc, out = run_script(FORK_CHILD + textwrap.dedent("""
        pid = os.fork()
        if pid == 0:
            ok = np.array_equal(h.inverse_dynamics(q, qd), expected) and np.array_equal(h.crba(q), expected_m)
            ok = ok and h._runner.threads_used == 1
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, status
        assert np.array_equal(h.inverse_dynamics(q, qd), expected)  # the parent keeps its threads
        print('ok', h._runner.threads_used)
    """), timeout=60)
    assert rc == 0 and "ok" in out, out


def test_multiprocessing_fork_pool():
    rc, out = run_script(FORK_CHILD + textwrap.dedent("""
        import multiprocessing as mp
        def work(i):
            return np.array_equal(h.inverse_dynamics(q, qd), expected) and np.array_equal(h.crba(q), expected_m)
        with mp.get_context('fork').Pool(2) as pool:
            assert pool.map(work, range(4)) == [True] * 4
        print('ok')
    """), timeout=90)
    assert rc == 0 and "ok" in out, out


def test_pickle_roundtrip(gen):
    gen.num_threads = 2
    h2 = pickle.loads(pickle.dumps(gen))
    assert h2 is not gen and h2.name == gen.name and h2.num_threads == 2
    assert h2.provider == "generated" and h2.build_info["cache_hit"] and h2.library_path == gen.library_path
    for key in ("floating_base", "dtype", "gravity", "codegen_schedule", "max_batch_size", "ee_joint_names"):
        assert h2.options[key] == gen.options[key]
    q, qd, _ = states(9)
    np.testing.assert_array_equal(h2.inverse_dynamics(q, qd), gen.inverse_dynamics(q, qd))
    gen.num_threads = os.cpu_count() or 1


def test_spawn_pool_map_over_a_handle_method():
    rc, out = run_script(f"""
        import multiprocessing as mp, numpy as np, grid_rbd
        if __name__ == '__main__':
            h = grid_rbd.register_robot('i', urdf_path={str(IIWA)!r}, dtype='float64', device='cpu', verbose=False)
            rng = np.random.default_rng(1)
            qs = [rng.uniform(-1, 1, (n, 7)) for n in (1, 5, {B_BIG})]
            with mp.get_context('spawn').Pool(2) as pool:
                got = pool.map(h.generalized_gravity, qs)
            assert all(np.array_equal(g, h.generalized_gravity(x)) for g, x in zip(got, qs))
            print('ok')
    """, timeout=180)
    assert rc == 0 and "ok" in out, out


# ---- 3. out= overlapping an input ----
def overlap_cases(B):
    """(name, method, inputs, out) with out sharing memory with an input in several ways"""
    rng = np.random.default_rng(B)
    cases = []
    for shift in (1, -1, 3):  # out a few states ahead of / behind q
        buf = rng.uniform(-1, 1, (B + 3, 7))
        qa, oa = (buf[:B], buf[shift:shift + B]) if shift > 0 else (buf[1:B + 1], buf[:B])
        cases.append((f"rnea q/out shift {shift}", "inverse_dynamics", (qa, rng.uniform(-1, 1, (B, 7))), oa))
    flat = rng.uniform(-1, 1, B * 7 + 3)  # half a row apart
    cases.append(("rnea qd/out offset 3 elements", "inverse_dynamics",
                  (rng.uniform(-1, 1, (B, 7)), flat[3:3 + 7 * B].reshape(B, 7)), flat[:7 * B].reshape(B, 7)))
    big = rng.uniform(-1, 1, B * 49 + 7 * B)  # a wide output over its input
    cases.append(("crba out over q", "crba", (big[7 * B:14 * B].reshape(B, 7),), big[:49 * B].reshape(B, 7, 7)))
    cases.append(("minv q inside out", "minv", (big[:7 * B].reshape(B, 7),), big[5:5 + 49 * B].reshape(B, 7, 7)))
    buf = rng.uniform(-1, 1, (B + 1, 7))
    cases.append(("aba u/out", "aba", (rng.uniform(-1, 1, (B, 7)), rng.uniform(-1, 1, (B, 7)), buf[1:]), buf[:B]))
    return cases


@pytest.mark.parametrize("B", [5, B_BIG])
@pytest.mark.parametrize("which", ["gen", "ref"])
def test_out_partly_overlapping_an_input(B, which, request):
    h = request.getfixturevalue(which)
    for name, method, inputs, out in overlap_cases(B):
        expected = getattr(h, method)(*[x.copy() for x in inputs])
        got = getattr(h, method)(*inputs, out=out)
        assert got is out
        np.testing.assert_array_equal(out, expected, err_msg=name)


@pytest.mark.parametrize("B", [5, B_BIG])
@pytest.mark.parametrize("which", ["gen", "ref"])
def test_out_exactly_an_input(B, which, request):
    h = request.getfixturevalue(which)
    q, qd, u = states(B, seed=B)
    for method, args, k in (("inverse_dynamics", (q, qd, u), 1), ("inverse_dynamics", (q, qd, u), 2),
                            ("nonlinear_effects", (q, qd), 1), ("generalized_gravity", (q,), 0),
                            ("aba", (q, qd, u), 2), ("forward_dynamics", (q, qd, u), 1)):
        inputs = [x.copy() for x in args]
        expected = getattr(h, method)(*args)
        got = getattr(h, method)(*inputs, out=inputs[k])
        assert got is inputs[k]
        np.testing.assert_array_equal(got, expected, err_msg=f"{method} out=input {k}")


# ---- 4. paths, dtypes, booleans ----
def test_urdf_path_bytes_and_pathlike():
    for p in (os.fsencode(str(IIWA)), IIWA, str(IIWA)):
        h = grid_rbd.register_robot("hard_path", urdf_path=p, dtype="float64", device="cpu", codegen=False)
        assert h.nq == 7 and isinstance(h.options["urdf_path"], str)
    with pytest.raises(TypeError, match="urdf_path must be a path"):
        grid_rbd.register_robot("hard_path", urdf_path=3, device="cpu", codegen=False)


def test_cache_dir_bytes_and_pathlike(tmp_path, gen):
    raw = os.fsencode(str(tmp_path)) + b"/cach\xe9\xff"  # not UTF-8
    one = dict(algorithm_list=["rnea"])   # the cache directory, not the dynamics, is under test
    h = grid_rbd.register_robot("hard_cache", urdf_path=IIWA, dtype="float64", device="cpu", verbose=False,
                                cache_dir=raw, **one)
    assert os.fsencode(h.cache_entry).startswith(raw)
    q, qd, _ = states(4)
    np.testing.assert_array_equal(h.inverse_dynamics(q, qd), gen.inverse_dynamics(q, qd))
    assert grid_rbd.precompile("hard_cache", urdf_path=IIWA, dtype="float64", device="cpu", verbose=False,
                               cache_dir=pathlib.Path(os.fsdecode(raw)), **one) == h.cache_entry
    assert os.fsencode(grid_rbd.cache.root(raw)) == raw
    assert len(grid_rbd.cache.entries(raw)) == 1 and len(grid_rbd.cache.entries(pathlib.Path(os.fsdecode(raw)))) == 1
    assert grid_rbd.cache.info("hard_cache", raw)["content_key"] == h.build_info["content_key"]
    with pytest.raises(TypeError, match="cache_dir must be a path"):
        grid_rbd.register_robot("hard_cache", urdf_path=IIWA, device="cpu", cache_dir=5)


def test_out_messages_name_numpy_dtypes(gen):
    q = np.zeros((2, 7))
    for o, name in ((np.zeros((2, 7), np.int64), "int64"), (np.zeros((2, 7), np.uint8), "uint8"),
                    (np.zeros((2, 7), np.float32), "float32"), (np.zeros((2, 7), np.complex128), "complex128")):
        with pytest.raises(ValueError) as e:
            gen.inverse_dynamics(q, q, out=o)
        msg = str(e.value)
        assert f"{name} array" in msg and "float64" in msg and "  " not in msg, msg
    ro = np.zeros((2, 7))
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="got a read-only float64 array of shape") as e:
        gen.inverse_dynamics(q, q, out=ro)
    assert "  " not in str(e.value)
    with pytest.raises(ValueError, match="got a non-contiguous float64 array") as e:
        gen.inverse_dynamics(q, q, out=np.zeros((7, 2)).T)
    assert "  " not in str(e.value)


REFUSED = [
    ("complex", lambda: np.zeros((2, 7), complex), "complex128"),
    ("complex list", lambda: [[1j] * 7] * 2, "complex128"),
    ("numeric strings", lambda: np.full((2, 7), "1.0"), "<U3"),
    ("bytes", lambda: np.full((2, 7), b"1"), "|S1"),
    ("str list", lambda: [["1"] * 7] * 2, "<U1"),
    ("objects (None)", lambda: np.full((2, 7), None), "object"),
    ("objects (Decimal-like)", lambda: np.array([[1.0] * 7, [2.0] * 7], dtype=object), "object"),
    ("None list", lambda: [[None] * 7] * 2, "object"),
]


@pytest.mark.parametrize("which", ["gen", "ref"])
@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_input_dtypes(which, case, request):
    h = request.getfixturevalue(which)
    _, make, dtname = case
    good = np.zeros((2, 7))
    for pos in range(3):
        args = [good, good, good]
        args[pos] = make()
        with pytest.raises(ValueError, match="must be a real numeric array") as e:
            h.inverse_dynamics(*args)
        msg = str(e.value)
        assert ["q", "qd", "qdd"][pos] in msg and "float64" in msg and dtname.lstrip("<|") in msg, msg


def test_accepted_input_conversions(gen):
    q, qd, _ = states(3)
    expected = gen.inverse_dynamics(np.round(q), np.round(qd))
    for conv in (lambda x: np.round(x).astype(np.int64), lambda x: np.round(x).astype(np.int32),
                 lambda x: np.round(x).tolist(), lambda x: np.round(x).astype(np.float32),
                 lambda x: np.asfortranarray(np.round(x)), lambda x: np.round(np.repeat(x, 2, axis=0))[::2]):
        np.testing.assert_array_equal(gen.inverse_dynamics(conv(q), conv(qd)), expected)
    b = np.ones((3, 7), bool)
    np.testing.assert_array_equal(gen.inverse_dynamics(b, b), gen.inverse_dynamics(np.ones((3, 7)), np.ones((3, 7))))


def test_booleans_refused_for_numeric_options(tmp_path):
    for value in (True, False, np.bool_(True)):
        with pytest.raises(ValueError, match="gravity must be a finite number"):
            grid_rbd.register_robot("hard_bool", urdf_path=IIWA, device="cpu", codegen=False, gravity=value)
        with pytest.raises(ValueError, match="max_batch_size must be a positive int"):
            grid_rbd.register_robot("hard_bool", urdf_path=IIWA, device="cpu", codegen=False, max_batch_size=value)
        with pytest.raises(ValueError, match="gravity"):
            grid_rbd.precompile("hard_bool", urdf_path=IIWA, device="cpu", cache_dir=tmp_path / "b", gravity=value)
    assert not (tmp_path / "b").exists()
    for value in (float("nan"), float("inf"), "9.81", 1j):
        with pytest.raises(ValueError, match="gravity"):
            grid_rbd.register_robot("hard_bool", urdf_path=IIWA, device="cpu", codegen=False, gravity=value)
    assert grid_rbd.register_robot("hard_bool", urdf_path=IIWA, device="cpu", codegen=False,
                                   gravity=np.float32(-3)).gravity == -3.0


def test_frame_arguments_refuse_booleans(gen):
    q = np.zeros((2, 7))
    with pytest.raises(TypeError, match="frame name or an int frame id"):
        gen.frame_jacobian(q, True)
    with pytest.raises(ValueError, match="reference_frame"):
        gen.frame_jacobian(q, reference_frame=1)


# ---- adversarial cases that were already refused (regressions) ----
def test_already_refused_cases(gen):
    q = np.zeros((4, 7))
    with pytest.raises(ValueError, match=r"q must have shape \(B, 7\)"):
        gen.inverse_dynamics(np.zeros((4, 8)), q)
    with pytest.raises(ValueError, match=r"qd must have shape \(4, 7\) to match the batch of q"):
        gen.inverse_dynamics(q, np.zeros((3, 7)))
    with pytest.raises(ValueError, match=r"q must have shape"):
        gen.inverse_dynamics(np.zeros(8), np.zeros(7))
    with pytest.raises(ValueError, match=r"qd must have shape \(7,\) \(one state"):
        gen.inverse_dynamics(np.zeros(7), np.zeros((1, 7)))
    with pytest.raises(ValueError, match=r"out must be a writable C-contiguous float64 array of shape \(4, 7\)"):
        gen.inverse_dynamics(q, q, out=np.zeros((4, 8)))
    with pytest.raises(ValueError, match="out must be a writable"):
        gen.inverse_dynamics(q, q, out=[[0.0] * 7] * 4)
    with pytest.raises(TypeError, match="qd is required"):
        gen.inverse_dynamics(q, None)
    with pytest.raises(ValueError, match="frame id 99 is out of range"):
        gen.frame_jacobian(q, 99)
    with pytest.raises(ValueError):
        gen.inverse_dynamics([[0.0] * 7, [0.0] * 6], q[:2])  # ragged
    assert gen.inverse_dynamics(np.zeros((0, 7)), np.zeros((0, 7))).shape == (0, 7)


# ---- targets chosen per call (end_effector_pose_runtime and its derivatives) ----
def test_runtime_targets_are_checked_and_named(gen, ref):
    q = states(3)[0]
    with pytest.raises(ValueError, match="unknown frame 'no_such_link'.*frames are URDF link names"):
        gen.end_effector_pose_runtime(q, ["iiwa_joint_7", "no_such_link"])
    with pytest.raises(ValueError, match=r"ee_offsets must be \(2, 3\)"):
        gen.end_effector_pose_runtime(q, ["iiwa_joint_7", 3], np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"cotangent must be \(3, 12\) \(6 per target, 2 targets\)"):
        gen.end_effector_pose_runtime_vjp(q, np.zeros((3, 6)), ["iiwa_joint_7", 3])
    with pytest.raises(ValueError, match="out= is not taken with targets"):
        gen.end_effector_pose_runtime_vjp(q, np.zeros((3, 6)), "iiwa_joint_7", out=np.zeros((3, 7)))
    with pytest.raises(ValueError, match="frame id 99 is out of range"):
        gen.end_effector_pose_runtime(q, [99])
    # one name, an int id and a link name; one offset for every target
    a = gen.end_effector_pose_runtime(q, "iiwa_joint_7", [0.1, 0, 0])
    b = gen.end_effector_pose_runtime(q, [gen.frame_id("iiwa_joint_7"), "iiwa_link_7"], [[0.1, 0, 0], [0.1, 0, 0]])
    np.testing.assert_array_equal(np.hstack([a, a]), b)


def test_a_raw_target_that_is_no_frame_gives_nan(gen, ref):
    """the rows' own rule for a per-state target whose frame id is not an integer in [0, nframes) (only the runner's
    call reaches it: the methods build targets from names and ids they checked): NaN outputs, both providers"""
    q = states(4)[0]
    nf = len(gen.frame_names)
    T = np.array([[nf, 0, 0, 0], [-1, 0, 0, 0], [0.5, 0, 0, 0], [1, 0.1, 0, 0]], dtype=np.float64)
    for h in (gen, ref):
        pose = h._call(_core.ALGO_EE_POSE_RUNTIME, (q, T), None, ())
        grad = h._call(_core.ALGO_EE_POSE_RUNTIME_GRAD, (q, T), None, ())
        assert np.isnan(pose[:3]).all() and np.isnan(grad[:3]).all(), h.provider
        assert np.isfinite(pose[3]).all() and np.isfinite(grad[3]).all(), h.provider
