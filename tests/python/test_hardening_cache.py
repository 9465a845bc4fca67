"""Hardening of the robot.so cache and the URDF reader against hostile files and processes (the hardening issue,
cache items): FIFOs, devices and oversized files wherever a file is read; cache entries that do not match the model;
a concurrent `cache clear`; the `cache` command's output and the cache root's environment rules; memory maps.

Every case runs in its own subprocess with a timeout (a hang is a failure, not a stuck suite) and an address-space
limit (an unbounded read is a failure, not a machine out of memory). The library must never hang, crash, exit() or
leave a corrupt cache entry: after every damaged case the next registration is a plain hit."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from robot_cases import BUNDLED_IIWA, REPO, SYNTHETIC_URDF

PRELUDE = f"""
import json, os, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))   # an unbounded read fails here, not on the machine
import grid_rbd
from grid_rbd import _core
IIWA = {str(BUNDLED_IIWA)!r}
SYNTH = {SYNTHETIC_URDF!r}

def reg(name, **kw):
    kw.setdefault("dtype", "float64")
    kw.setdefault("verbose", False)
    kw.setdefault("device", "cpu")
    kw.setdefault("algorithm_list", ["inverse_dynamics"])  # the cache is under test: one method builds fast
    if "urdf_path" not in kw and "urdf_string" not in kw:
        kw["urdf_string"] = SYNTH
    return grid_rbd.register_robot(name, **kw)

def maxrss_mb():
    # this process's peak resident memory: VmHWM (the address space's own; getrusage's ru_maxrss survives execve, so
    # it would report the forking pytest worker's peak)
    try:
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""


def run(code, cache_dir=None, timeout=60, env=None, args=()):
    """run PRELUDE + code in a fresh interpreter; (returncode, stdout, stderr); a hang fails the test"""
    e = dict(os.environ)
    for k in ("GRID_RBD_VERBOSE", "GRID_RBD_CACHE_DIR", "XDG_CACHE_HOME"):
        e.pop(k, None)
    if cache_dir is not None:
        e["GRID_RBD_CACHE_DIR"] = str(cache_dir)
    e.update(env or {})
    p = subprocess.Popen([sys.executable, "-c", PRELUDE + textwrap.dedent(code), *args], env=e, cwd=e.get("_CWD"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"hung: killed after {timeout} s\nstdout:\n{out}\nstderr:\n{err}")
    return p.returncode, out, err


def ok(code, cache_dir=None, timeout=60, env=None):
    rc, out, err = run(code, cache_dir, timeout, env)
    assert rc == 0, f"exit status {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return out


def cli(*args, cache_dir, timeout=30):
    """`python -m grid_rbd cache ...` in a subprocess under the same limits"""
    return run("from grid_rbd.__main__ import main\nsys.exit(main(sys.argv[1:]))", cache_dir, timeout,
               args=("cache",) + args)


HIT = """
h = reg("synth")
print(json.dumps({"nq": h.nq, "hit": h.build_info["cache_hit"], "compiled": h.build_info["compiled"],
                  "entry": h.cache_entry}))
"""


def register_json(cache_dir, code=HIT, timeout=60):
    return json.loads(ok(code, cache_dir, timeout).strip().splitlines()[-1])


# ---- a cache with two robots, built once and copied for every test ----

@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = tmp_path_factory.mktemp("template") / "cache"
    ok("""
reg("synth")
reg("iiwa", urdf_path=IIWA)
""", root, timeout=300)
    return root


@pytest.fixture
def cache(template, tmp_path):
    root = tmp_path / "cache"
    shutil.copytree(template, root, symlinks=True)
    return root


def names(root):
    return json.loads((root / "manifest.json").read_text())


def pointer_of(root, content_key):
    """the bykey file naming content_key"""
    hits = [p for p in (root / "bykey").iterdir() if p.is_file() and p.read_text().strip() == content_key]
    assert len(hits) == 1, hits
    return hits[0]


def assert_healthy(root, name="synth"):
    """the next registration in a fresh process is a plain hit, and every file of the entry is regular"""
    r = register_json(root)
    assert r["hit"] and not r["compiled"] and r["nq"] == 4, r
    entry = Path(r["entry"])
    for f in ("robot.so", "meta.json", "build_inputs.json"):
        assert (entry / f).is_file() and not (entry / f).is_symlink(), f
    assert (root / "manifest.json").is_file() and not (root / "manifest.json").is_symlink()
    assert names(root)[name] == entry.name
    ptr = pointer_of(root, entry.name)
    assert ptr.stat().st_size == 65 and not ptr.is_symlink()


# ---- 1, 2: FIFOs, devices and oversized files as the URDF ----

def test_urdf_path_naming_a_fifo_without_writer_is_refused_at_once(tmp_path):
    fifo = tmp_path / "robot.urdf"
    os.mkfifo(fifo)
    out = ok(f"""
try:
    reg("x", urdf_path={str(fifo)!r})
except grid_rbd.GridIOError as e:
    print("refused:", e)
""", timeout=20)
    assert "refused:" in out and str(fifo) in out and "FIFO" in out, out


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_urdf_path_naming_a_device_is_refused_unread(device):
    out = ok(f"""
t = time.monotonic()
try:
    reg("x", urdf_path={device!r})
except grid_rbd.GridIOError as e:
    print("refused:", e)
print("seconds", time.monotonic() - t, "maxrss_mb", maxrss_mb())
""", timeout=20)
    assert "refused:" in out and device in out and "character device" in out, out
    assert float(out.split("maxrss_mb")[1]) < 400, out


def test_sparse_oversized_urdf_is_refused_without_reading_it(tmp_path):
    big = tmp_path / "huge.urdf"
    with open(big, "wb") as f:
        f.truncate(2 << 30)   # 2 GB, sparse: costs no disk
    out = ok(f"""
t = time.monotonic()
try:
    reg("x", urdf_path={str(big)!r})
except grid_rbd.URDFError as e:
    print("refused:", e)
print("seconds", time.monotonic() - t, "maxrss_mb", maxrss_mb())
""", timeout=20)
    assert "refused:" in out and str(big) in out and "limit" in out, out
    assert float(out.split("seconds")[1].split()[0]) < 1.0, out
    assert float(out.split("maxrss_mb")[1]) < 400, out


# ---- 1, 2: FIFOs, devices and oversized files in place of cache files ----

def cache_file(root, which):
    manifest = names(root)
    ck = manifest["synth"]
    return {"manifest.json": root / "manifest.json",
            "meta.json": root / "store" / ck / "meta.json",
            "build_inputs.json": root / "store" / ck / "build_inputs.json",
            "bykey": pointer_of(root, ck)}[which]


def spoil(path, how):
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    else:  # a 1 GB sparse regular file
        with open(path, "wb") as f:
            f.truncate(1 << 30)


@pytest.mark.parametrize("how", ["fifo", "dev-zero", "sparse-1GB"])
@pytest.mark.parametrize("which", ["manifest.json", "meta.json", "build_inputs.json", "bykey"])
def test_hostile_cache_file_is_a_repaired_miss_and_never_hangs(cache, which, how):
    ck = names(cache)["synth"]
    spoil(cache_file(cache, which), how)
    # the administration commands answer (the spoiled entry lists as incomplete, or the names as empty)
    for args in (("list",), ("list", "--json"), ("info", ck[:12])):
        rc, out, err = cli(*args, cache_dir=cache)
        assert rc == 0, (args, out, err)
    rc, out, err = run("""
t = time.monotonic()
h = reg("synth")
print("seconds", time.monotonic() - t, "maxrss_mb", maxrss_mb(), "nq", h.nq)
""", cache, timeout=60)
    assert rc == 0 and "nq 4" in out, (out, err)
    assert float(out.split("maxrss_mb")[1].split()[0]) < 600, out
    if which == "manifest.json":   # only names: the entry itself is a hit, and the read costs no time
        assert float(out.split("seconds")[1].split()[0]) < 0.5, out
    assert_healthy(cache)
    rc, out, err = cli("list", cache_dir=cache)
    assert rc == 0 and "INCOMPLETE" not in out, out


@pytest.mark.parametrize("damage", ["truncated robot.so", "altered robot.so", "garbage meta.json",
                                    "missing robot.so", "missing meta.json", "missing build_inputs.json",
                                    "garbage bykey", "bykey to a missing entry", "garbage manifest.json"])
def test_damaged_entry_is_a_repaired_miss(cache, damage):
    ck = names(cache)["synth"]
    entry = cache / "store" / ck
    if damage == "truncated robot.so":
        data = (entry / "robot.so").read_bytes()
        (entry / "robot.so").write_bytes(data[: len(data) // 2])
    elif damage == "altered robot.so":
        data = bytearray((entry / "robot.so").read_bytes())
        data[len(data) // 2] ^= 0xFF
        (entry / "robot.so").write_bytes(bytes(data))
    elif damage == "garbage meta.json":
        (entry / "meta.json").write_bytes(b"{\"so_sha256\": \x00\xff garbage")
    elif damage.startswith("missing"):
        (entry / damage.split()[1]).unlink()
    elif damage == "garbage bykey":
        pointer_of(cache, ck).write_text("not a key\n")
    elif damage == "bykey to a missing entry":
        pointer_of(cache, ck).write_text("0" * 64 + "\n")
    else:
        (cache / "manifest.json").write_text("[{,")
    r = register_json(cache)
    assert r["nq"] == 4 and Path(r["entry"]).name == ck, r
    assert_healthy(cache)


# ---- 3: an entry that verifies but belongs to another robot ----

def test_pointer_to_another_robots_entry_is_a_miss_that_repairs_the_pointer(cache):
    m = names(cache)
    pointer_of(cache, m["synth"]).write_text(m["iiwa"] + "\n")
    r = register_json(cache)
    assert r["nq"] == 4 and Path(r["entry"]).name == m["synth"], r
    assert_healthy(cache)
    iiwa = json.loads(ok('h = reg("iiwa", urdf_path=IIWA)\nprint(json.dumps([h.nq, h.build_info["cache_hit"]]))',
                         cache).split("\n")[-2])
    assert iiwa == [7, True]


def test_entry_files_swapped_for_another_robots_are_rebuilt(cache):
    m = names(cache)
    mine, other = cache / "store" / m["synth"], cache / "store" / m["iiwa"]
    for f in ("robot.so", "meta.json"):
        shutil.copyfile(other / f, mine / f)
    r = register_json(cache)
    assert r["nq"] == 4 and r["compiled"] and Path(r["entry"]).name == m["synth"], r
    assert json.loads((mine / "meta.json").read_text())["nq"] == 4
    assert_healthy(cache)


def test_mismatched_entry_loaded_after_the_right_one_in_the_same_process(cache):
    # the process already holds the other robot's library: the repair must not be answered from that mapping
    m = names(cache)
    out = ok(f"""
other = reg("iiwa", urdf_path=IIWA)
open({str(cache_file(cache, "bykey"))!r}, "w").write({m["iiwa"]!r} + "\\n")
h = reg("synth")
print("nq", h.nq, other.nq)
""", cache)
    assert "nq 4 7" in out, out
    assert_healthy(cache)


# ---- 4: a concurrent `cache clear` ----

CLEARER = """
stop, progress = sys.argv[1], sys.argv[2]
t0 = time.monotonic()
n = 0
while not os.path.exists(stop) and time.monotonic() - t0 < 50:
    grid_rbd.cache.clear()
    n += 1
    with open(progress + ".tmp", "w") as f:
        f.write(str(n))
    os.replace(progress + ".tmp", progress)
    time.sleep(0.002)
print("clears", n)
"""

# registers until it has done 40 registrations and the clearer 20 clears (on a loaded machine the clearer's
# interpreter may start late or run slowly: the overlap, not the wall time, is what the test needs)
REGISTRAR = """
import collections
progress = os.environ["GRID_TEST_CLEAR_PROGRESS"]
def clears():
    try:
        return int(open(progress).read() or 0)
    except (OSError, ValueError):
        return 0
fails = collections.Counter()
t0 = time.monotonic()
n = 0
while (n < 40 or clears() < 20) and time.monotonic() - t0 < 45:
    try:
        h = reg("synth")
        assert h.nq == 4
    except Exception as e:
        fails[type(e).__name__ + ": " + str(e)[:120]] += 1
    n += 1
print(json.dumps({"registrations": n, "failures": sum(fails.values()), "kinds": dict(fails), "clears": clears()}))
"""


def test_registrations_survive_a_concurrent_clear_loop(cache, tmp_path):
    stop = tmp_path / "stop"
    e = dict(os.environ, GRID_RBD_CACHE_DIR=str(cache))
    e.pop("GRID_RBD_VERBOSE", None)
    progress = tmp_path / "clears"
    clearer = subprocess.Popen([sys.executable, "-c", PRELUDE + CLEARER, str(stop), str(progress)], env=e,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out = ok(REGISTRAR, cache, timeout=90, env={"GRID_TEST_CLEAR_PROGRESS": str(progress)})
    finally:
        stop.touch()
        cout, cerr = clearer.communicate(timeout=60)
    r = json.loads(out.strip().splitlines()[-1])
    assert clearer.returncode == 0, cerr
    # the registrations overlapped the clears: at least 20 of them ran while it registered
    assert r["clears"] >= 20 and int(cout.split()[-1]) >= r["clears"], (r, cout)
    assert r["registrations"] >= 5 and r["failures"] == 0, r
    register_json(cache)   # the clearer's last clear may have removed the entry: rebuilt here, then a plain hit
    assert_healthy(cache)


# ---- 5: the cache command's output, the cache root's environment rules ----

def test_cache_env_prints_the_command_builds_use(cache):
    argv = json.loads((cache / "store" / names(cache)["synth"] / "build_inputs.json").read_text())["argv"]
    rc, out, err = cli("env", cache_dir=cache)
    assert rc == 0, err
    line = [ln for ln in out.splitlines() if ln.startswith("CPU build command: ")]
    assert line == ["CPU build command: " + " ".join(argv)], out
    # no default flags written out anywhere else (they would drift from the build driver's table)
    assert "-O3 -march=native" not in out
    rc, out, err = run("from grid_rbd.__main__ import main\nsys.exit(main(['cache', 'env']))",
                       env={"GRID_RBD_CFLAGS": "-O1 -g"})
    assert rc == 0 and "CPU build command: " in out, err
    cmd = out.split("CPU build command: ")[1].split("\n")[0].split()
    assert cmd[1:3] == ["-O1", "-g"] and "-march=native" not in cmd, cmd


def test_cache_list_escapes_hostile_names(cache):
    hostile = "evil\nname\x1b[2J\ttab\\"
    ok(f"reg({hostile!r})", cache)
    for args in (("list",), ("info", hostile)):
        rc, out, err = cli(*args, cache_dir=cache)
        assert rc == 0, err
        assert "\x1b" not in out and "\t" not in out, repr(out)
        assert "evil\\nname\\x1b[2J\\ttab\\\\" in out, out
    rc, out, err = cli("list", cache_dir=cache)
    rows = out.splitlines()[1:-1]
    assert len(rows) == 3, out   # the header, iiwa, and the one entry synth and the hostile name share


def test_relative_home_is_not_used_for_the_cache(tmp_path):
    (tmp_path / "work").mkdir()
    env = {"HOME": "relhome", "_CWD": str(tmp_path / "work")}
    rc, out, err = run("from grid_rbd.__main__ import main\nsys.exit(main(['cache', 'dir']))", env=env)
    assert rc == 1 and "HOME is a relative path" in err and "GRID_RBD_CACHE_DIR" in err, (out, err)
    out = ok("""
try:
    reg("x")
except grid_rbd.CacheError as e:
    print("refused:", e)
""", env=env)
    assert "refused:" in out and "HOME is a relative path" in out, out
    assert not (tmp_path / "work" / "relhome").exists()


def test_relative_xdg_cache_home_is_ignored(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    rc, out, err = run("from grid_rbd.__main__ import main\nsys.exit(main(['cache', 'dir']))",
                       env={"HOME": str(home), "XDG_CACHE_HOME": "rel-xdg", "_CWD": str(tmp_path)})
    assert rc == 0 and out.strip() == str(home / ".cache" / "grid-rbd"), (out, err)
    rc, out, err = run("from grid_rbd.__main__ import main\nsys.exit(main(['cache', 'dir']))",
                       env={"HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert rc == 0 and out.strip() == str(tmp_path / "xdg" / "grid-rbd"), (out, err)


# ---- 6: mappings are kept, and reused; re-registering a name releases the Python objects ----

def test_re_registering_reuses_the_mapping_and_releases_the_old_handle(cache):
    out = ok("""
import gc, weakref
def maps():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)
h = reg("synth")
h.inverse_dynamics([[0.1] * 4], [[0.0] * 4])
gc.collect()
n0 = maps()
refs = []
for i in range(30):
    h = reg("synth" if i % 2 else "synth_alias")
    h.inverse_dynamics([[0.1] * 4], [[0.0] * 4])
    refs.append(weakref.ref(h))   # the handle holds the Library and the Runner (C objects, no weak references)
gc.collect()
n1 = maps()
alive = sum(1 for a in refs[:-2] if a() is not None)
print(json.dumps({"maps_before": n0, "maps_after": n1, "alive": alive}))
""", cache)
    r = json.loads(out.strip().splitlines()[-1])
    assert r["maps_after"] <= r["maps_before"], r
    assert r["alive"] == 0, r


def test_docs_state_what_users_can_rely_on():
    text = (REPO / "docs" / "cache.md").read_text()
    for phrase in ("regular file", "FIFO", "RTLD_NODELETE", "relative", "1 MiB", "/proc/self/fd"):
        assert phrase in text, phrase


# ---- a thing that is not a directory where the cache needs one (and a directory where it needs a file) ----

def plant(path, kind, tmp_path):
    """replace path (a cache directory or file) by kind; returns what a link points at, which must survive"""
    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    target = None
    if kind == "file":
        path.write_text("not an entry\n")
    elif kind == "symlink":
        # to a directory outside the cache holding a valid copy of the entry: following the link would find it
        # complete, and removing it through the link would delete someone else's files
        target = tmp_path / "elsewhere"
        shutil.copytree(tmp_path / "cache-copy", target)
        path.symlink_to(target)
    elif kind == "dangling symlink":
        path.symlink_to(tmp_path / "nowhere")
    else:  # "directory", where a file belongs
        path.mkdir()
        (path / "inside").write_text("x")
    return target


@pytest.mark.parametrize("kind,force", [("file", False), ("symlink", False), ("dangling symlink", False),
                                        ("file", True)], ids=["file", "symlink", "dangling symlink", "force_rebuild"])
def test_non_directory_entry_is_moved_aside_and_rebuilt(cache, tmp_path, kind, force):
    ck = names(cache)["synth"]
    entry = cache / "store" / ck
    shutil.copytree(entry, tmp_path / "cache-copy")
    target = plant(entry, kind, tmp_path)
    r = json.loads(ok(f'h = reg("synth", force_rebuild={force})\n'
                      'print(json.dumps({"compiled": h.build_info["compiled"], "entry": h.cache_entry}))',
                      cache).strip().splitlines()[-1])
    assert r["compiled"] and Path(r["entry"]).name == ck, r
    assert entry.is_dir() and not entry.is_symlink()
    assert_healthy(cache)
    if target is not None:  # the link was moved aside, not followed
        assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in (tmp_path / "cache-copy").iterdir())


def test_cache_clear_removes_non_directory_entries(cache, tmp_path):
    # one of each in the store: a file (synth's entry), a dangling link (iiwa's), a link to a valid entry elsewhere
    m = names(cache)
    shutil.copytree(cache / "store" / m["synth"], tmp_path / "cache-copy")
    plant(cache / "store" / m["synth"], "file", tmp_path)
    plant(cache / "store" / m["iiwa"], "dangling symlink", tmp_path)
    linked = cache / "store" / ("a" * 64)
    linked.mkdir()
    target = plant(linked, "symlink", tmp_path)
    rc, out, err = cli("clear", cache_dir=cache)
    assert rc == 0 and "3 entries removed" in out, (out, err)
    assert [p.name for p in (cache / "store").iterdir() if len(p.name) == 64] == []
    assert (target / "robot.so").is_file() and (target / "meta.json").is_file()  # not followed
    r = register_json(cache)
    assert r["compiled"] and r["nq"] == 4, r


def test_manifest_that_is_a_directory_is_replaced(cache, tmp_path):
    ck = names(cache)["synth"]
    plant(cache / "manifest.json", "directory", tmp_path)
    for args in (("list",), ("list", "--json")):
        rc, out, err = cli(*args, cache_dir=cache)
        assert rc == 0 and ck[:12] in out, (args, out, err)  # the entries are listed
    r = register_json(cache)
    assert r["hit"], r
    assert_healthy(cache)   # manifest.json is a regular file again, naming synth
    plant(cache / "manifest.json", "directory", tmp_path)
    rc, out, err = cli("clear", cache_dir=cache)
    assert rc == 0 and "2 entries removed" in out, (out, err)
    assert (cache / "manifest.json").is_file() and names(cache) == {}


@pytest.mark.parametrize("which,kind", [("store", "file"), ("bykey", "dangling symlink")])
def test_store_or_bykey_that_is_not_a_directory_is_replaced(cache, tmp_path, which, kind):
    plant(cache / which, kind, tmp_path)
    r = json.loads(ok('h = reg("synth")\nprint(json.dumps({"compiled": h.build_info["compiled"]}))',
                      cache).strip().splitlines()[-1])
    assert r["compiled"] == (which == "store"), r  # without bykey/ the entry is found by its content key
    assert_healthy(cache)
    # and `cache clear` removes it instead of reporting success and leaving it
    plant(cache / which, kind, tmp_path)
    rc, out, err = cli("clear", cache_dir=cache)
    assert rc == 0, (out, err)
    assert not os.path.lexists(cache / which) or (cache / which).is_dir()
    assert register_json(cache)["nq"] == 4
