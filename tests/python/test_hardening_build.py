"""Hardening of the build (issue 8, items 7 and 11): compiler flags that break the numbers are refused before
anything is compiled, over-long flag lists are refused, and the post-build self-check keeps a miscompiled or
foreign robot.so out of the cache."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import grid_rbd

REPO = Path(__file__).resolve().parents[2]
ROBOTS = REPO.parent / "shared" / "robots"
IIWA = ROBOTS / "iiwa.urdf"
GO2 = ROBOTS / "go2.urdf"

pytestmark = pytest.mark.skipif(not IIWA.is_file(), reason="../shared/robots not present")


def store_entries(cache_dir):
    """the entries (directories, temporaries included) of the cache's store; lock files are not entries"""
    store = Path(cache_dir) / "store"
    return sorted(p.name for p in store.iterdir() if p.is_dir()) if store.is_dir() else []


@pytest.mark.parametrize("env,flags", [
    ("GRID_RBD_CFLAGS", "-O2 -ffast-math"),
    ("GRID_RBD_CFLAGS", "-Ofast -march=native"),
    ("GRID_RBD_CFLAGS", "-O2 -fassociative-math -fno-signed-zeros -fno-trapping-math"),
    ("GRID_RBD_CFLAGS", "-O2 -funsafe-math-optimizations"),
    ("GRID_RBD_CFLAGS", "-O2 -ffinite-math-only"),
    ("GRID_RBD_CFLAGS", "-O2 -freciprocal-math"),
])
def test_unsafe_flags_refused_before_building(tmp_path, monkeypatch, env, flags):
    monkeypatch.setenv(env, flags)
    with pytest.raises(ValueError) as ei:
        grid_rbd.register_robot("unsafe", urdf_path=IIWA, device="cpu", cache_dir=tmp_path, verbose=False)
    msg = str(ei.value)
    assert env in msg and "wrong numbers" in msg and "remove it" in msg, msg
    assert store_entries(tmp_path) == []  # nothing compiled, nothing published


def test_unsafe_nvcc_flags_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("GRID_RBD_NVCC_FLAGS", "-O3 --use_fast_math")
    monkeypatch.setenv("GRID_RBD_CUDA_ARCH", "90")
    with pytest.raises(ValueError, match="GRID_RBD_NVCC_FLAGS contains '--use_fast_math'"):
        grid_rbd.precompile("unsafe_cuda", urdf_path=IIWA, device="cuda", cuda_arch="90", cache_dir=tmp_path,
                            verbose=False)


def test_too_many_flag_words_refused(tmp_path, monkeypatch):
    # 200 harmless words: they used to be cut at 128 words, leaving "cc: no input files"
    monkeypatch.setenv("GRID_RBD_CFLAGS", " ".join(["-O2"] + ["-Wno-unused"] * 199))
    with pytest.raises(ValueError, match="more than 64 words"):
        grid_rbd.register_robot("many", urdf_path=IIWA, device="cpu", cache_dir=tmp_path, verbose=False)


def write_cc(path, body):
    """a GRID_RBD_CC wrapper script around the real cc"""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_self_check_refuses_a_miscompiled_library(tmp_path, monkeypatch):
    # a careless wrapper that slips -ffast-math past the flag check: the library builds, the self-check runs it
    # against the float64 reference, and the entry is not published
    cc = write_cc(tmp_path / "fastcc", 'case "$*" in *--version*) exec cc "$@";; esac\nexec cc "$@" -ffast-math\n')
    monkeypatch.setenv("GRID_RBD_CC", cc)
    monkeypatch.delenv("GRID_RBD_CFLAGS", raising=False)  # the driver's -O2 (-ffast-math changes nothing at -O0)
    cache = tmp_path / "cache"
    one = dict(algorithm_list=["rnea"])   # the check runs every built method: one is refused as surely (-ffast-math:
    with pytest.raises(grid_rbd.BuildError) as ei:                          # go2's RNEA off by 2e-2, iiwa's by 0.9)
        grid_rbd.register_robot("fast", urdf_path=GO2, floating_base=True, device="cpu", cache_dir=cache,
                                verbose=False, **one)
    msg = str(ei.value)
    assert "self-check failed" in msg and "disagrees with the float64 reference" in msg, msg
    assert "relative error" in msg and "not published" in msg, msg
    assert store_entries(cache) == []
    # the next registration with a sane compiler builds and works
    monkeypatch.delenv("GRID_RBD_CC")
    h = grid_rbd.register_robot("fast", urdf_path=GO2, floating_base=True, device="cpu", cache_dir=cache,
                                verbose=False, **one)
    assert h.build_info["compiled"] and len(store_entries(cache)) == 1


def test_self_check_refuses_another_robots_library(tmp_path, monkeypatch):
    # a compiler that "builds" by copying another robot's valid robot.so must not publish it as complete
    cache = tmp_path / "cache"
    other = grid_rbd.register_robot("go2", urdf_path=GO2, floating_base=True, device="cpu", cache_dir=cache,
                                    verbose=False, algorithm_list=["rnea"])
    so = other.build_info["content_key"]
    so_path = cache / "store" / so / "robot.so"
    assert so_path.is_file()
    cc = write_cc(tmp_path / "copycc",
                  'case "$*" in *--version*) exec cc "$@";; esac\n'
                  'out=""; prev=""\nfor a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done\n'
                  f'case "$out" in *.so) cp "{so_path}" "$out";; *) exec cc "$@";; esac\n')
    monkeypatch.setenv("GRID_RBD_CC", cc)
    with pytest.raises(grid_rbd.BuildError, match="does not load as this model's"):
        grid_rbd.register_robot("iiwa", urdf_path=IIWA, device="cpu", cache_dir=cache, verbose=False,
                                algorithm_list=["rnea"])
    assert store_entries(cache) == [so]  # only go2's own entry


def test_self_check_passes_and_is_reported(tmp_path):
    # verbose output says the check ran; a hit does not run it again
    code = ("import grid_rbd, sys\n"
            f"grid_rbd.register_robot('v', urdf_path={str(IIWA)!r}, device='cpu', cache_dir={str(tmp_path)!r}, "
            "dtype='float32', verbose=True, algorithm_list=['rnea'])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "self-check passed" in r.stderr
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "self-check" not in r.stderr


def test_self_check_leaves_nothing_mapped(tmp_path):
    # precompile checks the fresh library in this process and unloads it again: a later change to the file (a
    # truncation in place, as a damaged-cache test does) must not fault the process (SIGBUS at exit)
    code = ("import grid_rbd\nfrom pathlib import Path\n"
            f"e = Path(grid_rbd.precompile('m', urdf_path={str(IIWA)!r}, dtype='float64', cache_dir={str(tmp_path)!r}, "
            "verbose=False, algorithm_list=['rnea']))\n"
            "so = e / 'robot.so'\n"
            "print('mapped', sum(str(so.resolve()) in l or 'robot.so' in l for l in open('/proc/self/maps')))\n"
            "data = so.read_bytes(); so.write_bytes(data[: len(data) // 2])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "mapped 0" in r.stdout, r.stdout


@pytest.mark.parametrize("value", ["abc", "0", "-3", "2x", "1.5", "1025"])
def test_bad_build_jobs_is_refused_naming_the_variable(tmp_path, monkeypatch, value):
    # garbage used to be ignored silently (atoi): refused before anything runs, like a bad GRID_RBD_CFLAGS
    from robot_cases import BUNDLED_IIWA
    monkeypatch.setenv("GRID_RBD_BUILD_JOBS", value)
    with pytest.raises(grid_rbd.GridArgumentError) as ei:
        grid_rbd.register_robot("jobs", urdf_path=BUNDLED_IIWA, device="cpu", cache_dir=tmp_path, verbose=False,
                                algorithm_list=["rnea"])
    msg = str(ei.value)
    assert f"GRID_RBD_BUILD_JOBS is '{value}'" in msg and "whole number from 1 to 1024" in msg, msg
    assert store_entries(tmp_path) == []


def test_valid_build_jobs_builds(tmp_path, monkeypatch):
    from robot_cases import BUNDLED_IIWA
    monkeypatch.setenv("GRID_RBD_BUILD_JOBS", " 2 ")
    h = grid_rbd.register_robot("jobs", urdf_path=BUNDLED_IIWA, device="cpu", cache_dir=tmp_path, verbose=False,
                                algorithm_list=["rnea"])
    assert h.build_info["compiled"]


@pytest.mark.parametrize("value", ["yes", "-1", "3", "1.5"])
def test_bad_verbose_env_is_refused_naming_the_variable(tmp_path, monkeypatch, value):
    # GRID_RBD_VERBOSE used to go through atoi: "yes" was silently 0
    from robot_cases import BUNDLED_IIWA
    monkeypatch.setenv("GRID_RBD_VERBOSE", value)
    with pytest.raises(grid_rbd.GridArgumentError) as ei:
        grid_rbd.register_robot("verbose", urdf_path=BUNDLED_IIWA, device="cpu", cache_dir=tmp_path, verbose=False,
                                algorithm_list=["rnea"])
    msg = str(ei.value)
    assert f"GRID_RBD_VERBOSE is '{value}'" in msg and "whole number from 0 to 2" in msg, msg
    assert store_entries(tmp_path) == []
