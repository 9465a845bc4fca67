"""The robot.so cache through register_robot: layout, hits, rebuilds, concurrency, crashes, corruption, errors,
hostile names, progress output, precompile, the `python -m grid_rbd cache` tool and the environment-knob table.

Each test that builds uses its own cache directory (tmp_path), so the counts of compiles are its own."""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import grid_rbd
from grid_rbd import _core
from robot_cases import BUNDLED_IIWA, REPO, SYNTHETIC_URDF, make_states

KEY = re.compile(r"^[0-9a-f]{64}$")
# what these tests build: the two methods check_results calls (the cache, not the dynamics, is under test; a library
# of two methods compiles in a fraction of the time of every method's)
METHODS = ["inverse_dynamics", "minv"]
ENTRY_FILES = {"robot.c", "robot.so", "meta.json", "build_inputs.json", "robot.build.log"}


@pytest.fixture(autouse=True)
def _no_verbose_env(monkeypatch):
    monkeypatch.delenv("GRID_RBD_VERBOSE", raising=False)


def register(name, cache_dir, **kw):
    kw.setdefault("dtype", "float64")
    kw.setdefault("verbose", False)
    kw.setdefault("algorithm_list", METHODS)
    return grid_rbd.register_robot(name, urdf_path=kw.pop("urdf_path", BUNDLED_IIWA), cache_dir=cache_dir, **kw)


def check_results(h):
    """the handle's answers equal the float64 reference's on a few states"""
    ref = grid_rbd.register_robot("cache_ref", urdf_path=BUNDLED_IIWA, dtype="float64", codegen=False,
                                  floating_base=h.floating_base)
    s = make_states(ref, "random", 4)
    np.testing.assert_allclose(h.inverse_dynamics(s["q"], s["qd"], s["qdd"]),
                               ref.inverse_dynamics(s["q"], s["qd"], s["qdd"]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h.minv(s["q"]), ref.minv(s["q"]), rtol=1e-10, atol=1e-12)


def fake_compiler(tmp_path, slow_marker=None, sleep=0, log=None):
    """a cc wrapper: logs each compile (not --version) to `log`, sleeps `sleep` s while `slow_marker` exists
    (touching <slow_marker>.started first), then execs the real cc"""
    cc = shutil.which("cc")
    script = tmp_path / "cc-wrapper.sh"
    body = "#!/bin/sh\ncase \" $* \" in\n  *\" -shared \"*)\n"
    if log:
        body += f"    echo compile >> '{log}'\n"
    if slow_marker:
        body += f"    if [ -f '{slow_marker}' ]; then touch '{slow_marker}.started'; sleep {sleep}; fi\n"
    body += f"    ;;\nesac\nexec '{cc}' \"$@\"\n"
    script.write_text(body)
    script.chmod(0o755)
    return script


# ---- cold, warm, layout ----
def test_cold_then_warm_and_the_layout(tmp_path):
    cold = register("layout_iiwa", tmp_path)
    info = cold.build_info
    assert info["compiled"] is True and info["cache_hit"] is False
    assert cold.provider == "generated"
    check_results(cold)

    # warm: a stage-1 hit, no generation, no compile; best of 3 timed (model parse + lookup + dlopen)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        warm = register("layout_iiwa", tmp_path)
        times.append(time.perf_counter() - t)
    assert warm.build_info["cache_hit"] is True and warm.build_info["compiled"] is False
    assert warm.library_path == cold.library_path
    print(f"\nwarm register_robot (iiwa, cache hit): best {min(times) * 1e3:.2f} ms, "
          f"grid_build {warm.build_info['seconds'] * 1e3:.2f} ms")
    assert min(times) < 0.25, f"a cache hit took {min(times):.3f} s (target 50 ms)"
    check_results(warm)

    # layout
    root = tmp_path
    manifest = json.loads((root / "manifest.json").read_text())
    key = info["content_key"]
    assert manifest["layout_iiwa"] == key and KEY.match(key)
    assert (root / "manifest.lock").exists()
    entry = root / "store" / key
    assert Path(cold.cache_entry) == entry and Path(cold.library_path) == entry / "robot.so"
    assert ENTRY_FILES <= {p.name for p in entry.iterdir()}
    pointer = root / "bykey" / info["input_key"]
    assert pointer.read_text().strip() == key
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["model_hash"] == info["model_hash"] and meta["dtype"] == "float64" and meta["nv"] == 7
    assert meta["so_bytes"] == (entry / "robot.so").stat().st_size
    assert meta["package_version"] == grid_rbd.__version__ == _core.PACKAGE_VERSION
    assert meta["generator_hash"] == _core.GENERATOR_HASH and KEY.match(_core.GENERATOR_HASH)
    assert json.loads((entry / "build_inputs.json").read_text())["target"] == "c"
    # the source bakes the model hash in; the hash covers the URDF bytes and the canonical options
    assert info["model_hash"] in (entry / "robot.c").read_text()
    opts = grid_rbd.registry.options_json(warm.options)
    assert opts == json.dumps(json.loads(opts), sort_keys=True, separators=(",", ":"))
    assert set(json.loads(opts)) == {"floating_base", "ee_joint_names", "gravity", "ignore_mimic", "dtype",
                                     "codegen_schedule", "target", "algorithms"}
    assert info["model_hash"] == _core.model_hash(BUNDLED_IIWA.read_bytes(), opts)


def test_options_that_change_generation_change_the_key_and_others_do_not(tmp_path):
    base = register("opt_base", tmp_path).build_info
    same = register("opt_other_name", tmp_path, max_batch_size=7, num_threads=1).build_info
    assert same["cache_hit"] and same["content_key"] == base["content_key"]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["opt_base"] == manifest["opt_other_name"] == base["content_key"]
    for kw in ({"gravity": -9.0}, {"dtype": "float32"}, {"ee_joint_names": ["iiwa_joint_5"]},
               {"algorithm_list": ["minv", "crba"]}):
        other = register("opt_changed", tmp_path, **kw).build_info
        assert other["input_key"] != base["input_key"] and other["content_key"] != base["content_key"], kw


def test_cache_dir_argument_and_environment_variable(tmp_path, monkeypatch):
    env_dir, arg_dir = tmp_path / "from_env", tmp_path / "from_arg"
    monkeypatch.setenv("GRID_RBD_CACHE_DIR", str(env_dir))
    h = grid_rbd.register_robot("env_iiwa", urdf_path=BUNDLED_IIWA, dtype="float64", verbose=False, algorithm_list=METHODS)
    assert Path(h.library_path).is_relative_to(env_dir)
    h2 = register("arg_iiwa", arg_dir)  # cache_dir= wins over the variable
    assert Path(h2.library_path).is_relative_to(arg_dir) and h2.build_info["compiled"]
    assert grid_rbd.cache.root() == str(env_dir) and grid_rbd.cache.root(arg_dir) == str(arg_dir)


def test_force_rebuild_recompiles(tmp_path):
    first = register("force_iiwa", tmp_path).build_info
    again = register("force_iiwa", tmp_path, force_rebuild=True)
    assert again.build_info["compiled"] and not again.build_info["cache_hit"]
    assert again.build_info["content_key"] == first["content_key"]
    check_results(again)


def test_generator_edit_with_identical_output_does_not_recompile(tmp_path):
    """a different generator hash misses stage 1, regenerates the same bytes and reuses the entry (stage 2)"""
    h = register("gen_iiwa", tmp_path)
    lib = _core.Library(h._model, BUNDLED_IIWA.read_bytes(), grid_rbd.registry.options_json(h.options), "gen_iiwa",
                        _core.FLOAT64, cache_dir=str(tmp_path), generator_hash="0" * 64,
                        methods=tuple(grid_rbd._signatures.ID[n] for n in h.options["algorithm_list"]))
    assert not lib.cache_hit and not lib.compiled
    assert lib.content_key == h.build_info["content_key"] and lib.input_key != h.build_info["input_key"]


def test_precompile_builds_without_a_handle(tmp_path):
    entry = grid_rbd.precompile("pre_iiwa", urdf_path=BUNDLED_IIWA, dtype="float32", floating_base=True,
                                cache_dir=tmp_path, verbose=False, algorithm_list=METHODS)
    assert Path(entry).parent == tmp_path / "store" and ENTRY_FILES <= set(os.listdir(entry))
    with pytest.raises(KeyError):
        grid_rbd.get_robot("pre_iiwa")
    h = grid_rbd.register_robot("pre_iiwa", urdf_path=BUNDLED_IIWA, dtype="float32", floating_base=True,
                                cache_dir=tmp_path, verbose=False, algorithm_list=METHODS)
    assert h.build_info["cache_hit"] and h.cache_entry == entry
    assert grid_rbd.get_robot("pre_iiwa") is h


def test_reference_provider_is_reachable(tmp_path):
    h = register("ref_only", tmp_path / "unused", codegen=False)
    assert h.provider == "reference" and h.library_path is None and h.build_info is None
    assert not (tmp_path / "unused").exists()  # the reference never touches the cache


def test_num_threads(tmp_path):
    h = register("threads_iiwa", tmp_path, algorithm_list=["aba"])
    assert h.num_threads == (os.cpu_count() or 1)
    s = make_states(h, "high_velocity", 2048)
    expected = h.aba(s["q"], s["qd"], s["u"])
    for n in (1, 2, 3):
        h.num_threads = n
        assert h.num_threads == n
        np.testing.assert_array_equal(h.aba(s["q"], s["qd"], s["u"]), expected)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="num_threads"):
            h.num_threads = bad
    with pytest.raises(TypeError, match="num_threads"):
        h.num_threads = 1.5
    assert register("threads_iiwa", tmp_path, num_threads=1, algorithm_list=["aba"]).num_threads == 1
    with pytest.raises(ValueError, match="num_threads"):
        register("threads_iiwa", tmp_path, num_threads=0)


# ---- robustness ----
CHILD = textwrap.dedent("""
    import json, sys, numpy as np, grid_rbd
    h = grid_rbd.register_robot("child_iiwa", urdf_path=sys.argv[1], dtype="float64", cache_dir=sys.argv[2],
                                verbose=False, algorithm_list=["generalized_gravity", "inverse_dynamics", "minv"])
    q = np.linspace(-1, 1, 7)[None]
    print(json.dumps({"info": h.build_info, "g": h.generalized_gravity(q).tolist()}))
""")


def run_child(cache_dir, env):
    return subprocess.Popen([sys.executable, "-c", CHILD, str(BUNDLED_IIWA), str(cache_dir)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_registering_at_once_compile_once(tmp_path):
    log = tmp_path / "compiles.log"
    marker = tmp_path / "slow"
    marker.touch()  # the compile takes 2 s more: the second process surely arrives while the first builds
    cc = fake_compiler(tmp_path, slow_marker=marker, sleep=2, log=log)
    env = dict(os.environ, GRID_RBD_CC=str(cc))
    procs = [run_child(tmp_path / "cache", env) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    results = [json.loads(out) for out, _ in outs]
    assert log.read_text().count("compile") == 1
    assert sorted(r["info"]["compiled"] for r in results) == [False, True]
    assert results[0]["info"]["content_key"] == results[1]["info"]["content_key"]
    ref = grid_rbd.register_robot("two_ref", urdf_path=BUNDLED_IIWA, dtype="float64", codegen=False)
    expected = ref.generalized_gravity(np.linspace(-1, 1, 7)[None])
    for r in results:
        np.testing.assert_allclose(r["g"], expected, rtol=1e-12, atol=1e-12)


def test_process_killed_during_the_build_leaves_nothing_loadable(tmp_path):
    marker = tmp_path / "slow"
    marker.touch()
    cc = fake_compiler(tmp_path, slow_marker=marker, sleep=60)
    env = dict(os.environ, GRID_RBD_CC=str(cc))
    cache = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(BUNDLED_IIWA), str(cache)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    started = Path(str(marker) + ".started")
    deadline = time.time() + 120
    while not started.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "the compiler never started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the process and its compiler, mid-build
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()

    store = cache / "store"
    assert [p.name for p in store.iterdir() if KEY.match(p.name)] == []  # no entry was published
    assert any(p.name.startswith(".tmp-") for p in store.iterdir())   # only the killed build's temporary
    assert list((cache / "bykey").iterdir()) == []
    manifest = cache / "manifest.json"
    assert not manifest.exists() or "child_iiwa" not in json.loads(manifest.read_text())
    assert grid_rbd.cache.entries(cache) == []

    marker.unlink()  # same compiler path (same key), now fast
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRID_RBD_CC", str(cc))
        h = grid_rbd.register_robot("child_iiwa", urdf_path=BUNDLED_IIWA, dtype="float64", cache_dir=cache,
                                    verbose=False, algorithm_list=["generalized_gravity", "inverse_dynamics", "minv"])
    assert h.build_info["compiled"]
    check_results(h)


@pytest.mark.parametrize("damage", ["truncated", "altered"])
def test_damaged_library_in_the_store_is_detected_and_rebuilt(tmp_path, damage):
    # precompile: built and verified, but not loaded in this process (changing a mapped file would crash it)
    entry = Path(grid_rbd.precompile("damaged_iiwa", urdf_path=BUNDLED_IIWA, dtype="float64", cache_dir=tmp_path,
                                     verbose=False, algorithm_list=METHODS))
    so = entry / "robot.so"
    data = bytearray(so.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data[len(data) // 2] ^= 0xFF
    so.write_bytes(bytes(data))
    assert grid_rbd.cache.info("damaged_iiwa", tmp_path)["complete"] is False
    h = register("damaged_iiwa", tmp_path)
    assert h.build_info["compiled"] and not h.build_info["cache_hit"]
    assert Path(h.cache_entry) == entry
    assert grid_rbd.cache.info("damaged_iiwa", tmp_path)["complete"] is True
    check_results(h)


def test_unwritable_cache_dir_is_a_cache_error_naming_the_path(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    bad = blocker / "cache"  # its parent is a regular file: cannot be created, even by root
    with pytest.raises(grid_rbd.CacheError) as e:
        register("ro_iiwa", bad)
    assert str(bad) in str(e.value) and "cache_dir=" in str(e.value) and "GRID_RBD_CACHE_DIR" in str(e.value)
    assert e.value.path is not None and str(blocker) in e.value.path
    assert "cache_dir=" in e.value.hint


def test_missing_compiler_is_a_build_error_saying_how_to_fix_it(tmp_path, monkeypatch):
    monkeypatch.setenv("GRID_RBD_CC", "/nonexistent/cc")
    with pytest.raises(grid_rbd.BuildError) as e:
        register("nocc_iiwa", tmp_path)
    text = str(e.value)
    assert "/nonexistent/cc" in text and "GRID_RBD_CC" in text


def test_compiler_error_is_a_build_error_with_the_log_tail(tmp_path, monkeypatch):
    monkeypatch.setenv("GRID_RBD_CFLAGS", "-O2 --grid-rbd-bogus-flag")
    with pytest.raises(grid_rbd.BuildError) as e:
        register("badflag_iiwa", tmp_path)
    text = str(e.value)
    assert "--grid-rbd-bogus-flag" in text and "last lines" in text
    assert e.value.log_path and Path(e.value.log_path).is_file()
    assert "--grid-rbd-bogus-flag" in e.value.log_tail
    assert grid_rbd.cache.entries(tmp_path) == []


# ---- hostile names ----
HOSTILE = [
    'a */ int x; /* b',
    'line one&#10;#define M 1&#10;line three',
    'q &quot;quoted&quot; and \'single\'',
    'back\\slash\\',
    '#define link_1 2 /*',
    '*/ #include &lt;stdio.h&gt; //',
    'trailing backslash \\',
    '??/ trigraph ??= and %:',
]


def hostile_urdf():
    """the synthetic robot with every link and joint renamed to a hostile string (unique per element)"""
    text = SYNTHETIC_URDF
    names = re.findall(r'(?:link|joint) name="([^"]+)"', text)
    mapping = {n: f"{n} {HOSTILE[i % len(HOSTILE)]}" for i, n in enumerate(dict.fromkeys(names))}
    def sub(m):
        return f'{m.group(1)}="{mapping[m.group(2)]}"'
    return re.sub(r'(name|link)="([^"]+)"', lambda m: sub(m) if m.group(2) in mapping else m.group(0), text)


@pytest.mark.parametrize("floating_base", [False, True], ids=["fixed", "floating"])
def test_hostile_names_compile_and_behave_like_plain_names(tmp_path, floating_base):
    # (the methods compared below: the names reach the comments of every algorithm family)
    methods = ["rnea", "crba", "minv", "aba", "fk", "ee_pose", "frame_jacobian"]
    plain = grid_rbd.register_robot("plain_syn", urdf_string=SYNTHETIC_URDF, dtype="float64", cache_dir=tmp_path,
                                    floating_base=floating_base, verbose=False, algorithm_list=methods)
    hostile = grid_rbd.register_robot("hostile_syn", urdf_string=hostile_urdf(), dtype="float64",
                                      cache_dir=tmp_path, floating_base=floating_base, verbose=False,
                                      algorithm_list=methods)
    assert hostile.provider == "generated" and hostile.build_info["compiled"]
    assert any("*/" in n for n in hostile.frame_names) and any("\n" in n for n in hostile.joint_names)
    source = (Path(hostile.cache_entry) / "robot.c").read_text()
    # the preprocessor text inside names never becomes a line of its own
    assert not any(line.lstrip().startswith(("#define M", "#define link_1", "#include <stdio.h>", "%:"))
                   for line in source.splitlines())
    s = make_states(plain, "random", 6)
    for name, fn in [
        ("rnea", lambda h: h.inverse_dynamics(s["q"], s["qd"], s["qdd"], f_ext=s["f_ext"])),
        ("crba", lambda h: h.crba(s["q"])), ("minv", lambda h: h.minv(s["q"])),
        ("aba", lambda h: h.aba(s["q"], s["qd"], s["u"])), ("fk", lambda h: h.forward_kinematics(s["q"])),
        ("ee", lambda h: h.end_effector_pose(s["q"])),
        ("jac", lambda h: h.frame_jacobian(s["q"], len(h.frame_names) - 1, "WORLD")),
    ]:
        np.testing.assert_array_equal(fn(hostile), fn(plain), err_msg=name)


# ---- progress ----
def test_progress_on_stderr_when_verbose_and_silence_otherwise(tmp_path, capfd):
    register("quiet_iiwa", tmp_path / "a", verbose=False)
    register("quiet_iiwa", tmp_path / "a", verbose=False)
    out, err = capfd.readouterr()
    assert err == "" and out == ""

    register("loud_iiwa", tmp_path / "b", verbose=True)
    out, err = capfd.readouterr()
    lines = err.splitlines()
    assert out == ""
    for stage in ("generating C source", "generated", "compiling robot.so with", "compiled in", "cached at"):
        assert any(stage in line for line in lines), (stage, err)
    assert all(line.startswith("grid-rbd: loud_iiwa: ") for line in lines), err
    assert re.search(r"compiled in \d+\.\d+ s", err) and len(lines) <= 6

    # a cache hit has nothing to report, verbose or not
    assert register("loud_iiwa", tmp_path / "b", verbose=True).build_info["cache_hit"]
    assert capfd.readouterr() == ("", "")


# ---- the cache tool ----
def cli(*args, cache_dir):
    r = subprocess.run([sys.executable, "-m", "grid_rbd", "cache", "--cache-dir", str(cache_dir), *args],
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def test_cache_cli_list_info_clear(tmp_path):
    a = register("cli_iiwa", tmp_path).build_info
    b = register("cli_iiwa_ff", tmp_path, floating_base=True).build_info
    rc, out, err = cli("list", cache_dir=tmp_path)
    assert rc == 0, err
    assert str(tmp_path) in out and "cli_iiwa " in out and "cli_iiwa_ff" in out
    assert a["content_key"][:12] in out and b["content_key"][:12] in out and "2 entries" in out
    rc, out, _ = cli("list", "--json", cache_dir=tmp_path)
    assert {e["content_key"] for e in json.loads(out)} == {a["content_key"], b["content_key"]}

    rc, out, err = cli("info", "cli_iiwa_ff", cache_dir=tmp_path)
    assert rc == 0 and b["content_key"] in out and "complete" in out and "nq=14" in out, err
    rc, out, _ = cli("info", a["content_key"][:10], cache_dir=tmp_path)
    assert rc == 0 and a["content_key"] in out
    rc, out, err = cli("info", "no_such_robot", cache_dir=tmp_path)
    assert rc == 1 and "no_such_robot" in err

    rc, out, err = cli("clear", "cli_iiwa", cache_dir=tmp_path)
    assert rc == 0 and "1 entry removed" in out, err
    assert not (tmp_path / "store" / a["content_key"]).exists() and (tmp_path / "store" / b["content_key"]).exists()
    rc, out, _ = cli("clear", cache_dir=tmp_path)
    assert rc == 0 and "1 entry removed" in out
    rc, out, _ = cli("list", cache_dir=tmp_path)
    assert "(empty)" in out
    rc, out, _ = cli("dir", cache_dir=tmp_path)
    assert out.strip() == str(tmp_path)


def test_model_command_still_works():
    for argv in (["model", str(BUNDLED_IIWA)], [str(BUNDLED_IIWA)]):
        r = subprocess.run([sys.executable, "-m", "grid_rbd", *argv], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "nq=7" in r.stdout and "iiwa_joint_7" in r.stdout, r.stderr


# ---- environment knobs ----
C_READ = re.compile(r'\b(?:getenv|grid_env|secure_getenv)\s*\(\s*"([A-Za-z_][A-Za-z0-9_]*)"')
PY_READ = re.compile(r'os\.(?:environ(?:\.get)?\s*[\[(]|getenv\s*\()\s*["\']([A-Za-z_][A-Za-z0-9_]*)["\']')


def test_every_environment_variable_read_is_in_the_knob_table():
    knobs = grid_rbd.cache.env_knobs()
    assert knobs and all(kind in ("build", "generate", "location", "runtime") for kind, _ in knobs.values())
    read = {}
    for folder, pattern, exts in ((REPO / "src", C_READ, ("*.c", "*.h")), (REPO / "python", PY_READ, ("*.py",)),
                                  (REPO / "python", C_READ, ("*.c", "*.h"))):
        for ext in exts:
            for path in folder.rglob(ext):
                for name in pattern.findall(path.read_text(errors="replace")):
                    read.setdefault(name, set()).add(str(path.relative_to(REPO)))
    assert "GRID_RBD_CC" in read and "GRID_RBD_CACHE_DIR" in read  # the scan sees the library's reads
    missing = {n: sorted(p) for n, p in read.items() if n not in knobs}
    assert not missing, f"environment variables read but missing from src/driver/env_knobs.c: {missing}"
    # and every GRID_ knob documented in docs/cache.md
    doc = (REPO / "docs" / "cache.md").read_text()
    assert [n for n in knobs if n.startswith("GRID_") and n not in doc] == []
