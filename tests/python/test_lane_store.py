"""The streamed stores of wide outputs (src/emit/lane_store.h): a library that streams every batch call's outputs
gives bitwise the results of the default one, for every batch size and every alignment of out=."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import grid_rbd
from robot_cases import BUNDLED_IIWA


def default_cflags():
    """the tuning flags of CPU builds (the build driver's argv), without the per-CPU streaming threshold"""
    argv = grid_rbd.cache.build_command()
    return [w for w in argv[1:] if w not in ("-shared", "-fPIC", "-o", "robot.so", "robot.c", "-lm")
            and not w.startswith("-std=") and not w.startswith("-DGRID_STREAM_MIN_BYTES=")]


def cpu_has_avx():
    try:
        return " avx " in open("/proc/cpuinfo").read().replace("\n", " ")
    except OSError:
        return False


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(default handle, handle whose library streams from 1 byte) of iiwa, float64"""
    cache = tmp_path_factory.mktemp("lane-store-cache")
    methods = ["rnea", "crba", "minv", "aba"]   # those compared below, the same set for both libraries
    h = grid_rbd.register_robot(name="iiwa_store_default", urdf_path=str(BUNDLED_IIWA), dtype="float64",
                                cache_dir=str(cache), algorithm_list=methods)
    old = os.environ.get("GRID_RBD_CFLAGS")
    os.environ["GRID_RBD_CFLAGS"] = " ".join(default_cflags() + ["-DGRID_STREAM_MIN_BYTES=1"])
    try:
        s = grid_rbd.register_robot(name="iiwa_store_streamed", urdf_path=str(BUNDLED_IIWA), dtype="float64",
                                    cache_dir=str(cache), algorithm_list=methods)
    finally:
        if old is None:
            del os.environ["GRID_RBD_CFLAGS"]
        else:
            os.environ["GRID_RBD_CFLAGS"] = old
    assert s.library_path != h.library_path
    return h, s


@pytest.mark.skipif(not cpu_has_avx() or shutil.which("objdump") is None, reason="needs AVX and objdump")
def test_the_streaming_library_has_streaming_stores(pair):
    h, s = pair
    def count(so):
        d = subprocess.run(["objdump", "-d", so], capture_output=True, text=True, check=True).stdout
        return d.count("vmovntpd")
    assert count(s.library_path) > 0
    assert count(h.library_path) > 0  # compiled in everywhere, taken above the threshold


def misaligned_out(shape, offset):
    """an out= array of shape whose first element is offset doubles past a 64-byte boundary"""
    n = int(np.prod(shape))
    raw = np.empty(n + 16, dtype=np.float64)
    skip = (-(raw.ctypes.data // 8) % 8 + offset) % 8
    return raw[skip:skip + n].reshape(shape)


@pytest.mark.parametrize("B", [1, 3, 4, 7, 37])
def test_streamed_outputs_bitwise_equal_cached_ones(pair, B):
    h, s = pair
    rng = np.random.default_rng(B)
    q = rng.uniform(-2, 2, (B, h.nq))
    v = rng.uniform(-3, 3, (B, h.nv))
    a = rng.uniform(-5, 5, (B, h.nv))
    calls = {
        "crba": (lambda x, out: x.crba(q, out=out), (B, h.nv, h.nv)),
        "minv": (lambda x, out: x.minv(q, out=out), (B, h.nv, h.nv)),
        "rnea": (lambda x, out: x.inverse_dynamics(q, v, a, out=out), (B, h.nv)),
        "aba": (lambda x, out: x.aba(q, v, a, out=out), (B, h.nv)),
    }
    for name, (fn, shape) in calls.items():
        want = fn(h, None)
        for off in range(8):
            out = misaligned_out(shape, off)
            out.fill(np.nan)
            got = fn(s, out)
            assert np.array_equal(got, want), f"{name}, B = {B}, out= {off} doubles past a 64-byte boundary"
            assert np.shares_memory(got, out)
