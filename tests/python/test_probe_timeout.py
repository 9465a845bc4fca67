"""A compiler whose `--version` probe hangs (a ccache or distcc wrapper stuck on a lock, a licence server, NFS) makes
register_robot raise a BuildError naming it within GRID_RBD_PROBE_TIMEOUT, or stop at once on Ctrl-C, and leaves no
process behind.

Each case runs in a subprocess with a timeout, so the hang this guards against fails the test instead of the suite."""

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from robot_cases import SYNTHETIC_URDF

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

CHILD = textwrap.dedent("""
    import signal, sys, time, grid_rbd
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as an interactive process has it (test_build_kill.py)
    t = time.monotonic()
    try:
        grid_rbd.register_robot("hang", urdf_string=sys.argv[1], dtype="float64", device="cpu", verbose=False,
                                algorithm_list=["inverse_dynamics"])
    except grid_rbd.BuildError as e:
        print("BuildError", round(time.monotonic() - t, 2), "|", e, flush=True)
        sys.exit(3)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        sys.exit(130)
    print("built", flush=True)
""")


def hanging_cc(tmp_path):
    """a GRID_RBD_CC whose --version never answers: it starts a child in its own process group and one in a session
    of its own (which a process-group kill misses), records every pid, and waits; anything else runs the real cc"""
    pids = tmp_path / "pids"
    cc = tmp_path / "stuck-ccache"
    cc.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case "$*" in *--version*) ;; *) exec cc "$@";; esac
        sleep 1000 & echo $! >> {pids}
        setsid sleep 1000 & echo $! >> {pids}
        echo $$ >> {pids}
        wait
    """))
    cc.chmod(cc.stat().st_mode | stat.S_IXUSR)
    return cc, pids


def live(pid):
    """True while pid is a process that has not exited (a zombie awaiting its parent counts as gone)"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def recorded(pids):
    return [int(w) for w in pids.read_text().split()] if pids.exists() else []


def start(tmp_path, cc, timeout=None):
    env = dict(os.environ, GRID_RBD_CC=str(cc), GRID_RBD_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("GRID_RBD_VERBOSE", None)
    env.pop("GRID_RBD_PROBE_TIMEOUT", None)
    if timeout is not None:
        env["GRID_RBD_PROBE_TIMEOUT"] = timeout
    return subprocess.Popen([sys.executable, "-c", CHILD, SYNTHETIC_URDF], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc, pids, timeout):
    """the child's (returncode, stdout, stderr); kills it and the recorded processes when it hangs"""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        out = f"HUNG (killed after {timeout} s)\n{out}"
    return proc.returncode, out, err


def assert_nothing_left(pids, tmp_path):
    """every process the probe started is gone within 2 s; the cache holds no entry or temporary"""
    started = recorded(pids)
    assert len(started) == 3, started  # the script, its child and the setsid'd one all ran
    deadline = time.time() + 2
    while time.time() < deadline and any(live(p) for p in started):
        time.sleep(0.05)
    left = [p for p in started if live(p)]
    for p in left:  # never leave them to the rest of the suite
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"probe processes left running: {left}"
    store = tmp_path / "cache" / "store"
    assert not store.is_dir() or [p.name for p in store.iterdir() if p.is_dir()] == []


def test_hanging_compiler_probe_is_a_build_error_naming_the_compiler(tmp_path):
    cc, pids = hanging_cc(tmp_path)
    proc = start(tmp_path, cc, timeout="1")
    rc, out, err = finish(proc, pids, timeout=30)
    assert rc == 3 and out.startswith("BuildError"), (rc, out, err)
    seconds = float(out.split()[1])
    assert seconds < 8, f"the probe took {seconds} s to give up (GRID_RBD_PROBE_TIMEOUT=1)"
    msg = out.split("|", 1)[1]
    assert str(cc) in msg and "--version" in msg and "did not finish within 1 s" in msg, msg
    assert "GRID_RBD_CC" in msg and "GRID_RBD_PROBE_TIMEOUT" in msg, msg
    assert_nothing_left(pids, tmp_path)


def test_ctrl_c_stops_a_hanging_compiler_probe(tmp_path):
    cc, pids = hanging_cc(tmp_path)
    proc = start(tmp_path, cc)  # the default timeout (30 s): only Ctrl-C ends it this soon
    try:
        deadline = time.time() + 30
        while len(recorded(pids)) < 3:
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline, "the probe never started"
            time.sleep(0.05)
        time.sleep(0.3)
        t = time.time()
        proc.send_signal(signal.SIGINT)
        rc, out, err = finish(proc, pids, timeout=20)
        took = time.time() - t
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert rc == 130 and "KeyboardInterrupt" in out, (rc, out, err)
    assert took < 1.5, f"the probe took {took:.2f} s to stop after SIGINT"
    assert_nothing_left(pids, tmp_path)


@pytest.mark.parametrize("value", ["abc", "0", "-1", "inf", "nan", "1e3", "2s", "3601"])
def test_bad_probe_timeout_is_refused_naming_the_variable(tmp_path, monkeypatch, value):
    import grid_rbd
    monkeypatch.setenv("GRID_RBD_PROBE_TIMEOUT", value)
    with pytest.raises(grid_rbd.GridArgumentError) as ei:
        grid_rbd.register_robot("t", urdf_string=SYNTHETIC_URDF, device="cpu", cache_dir=tmp_path, verbose=False,
                                algorithm_list=["inverse_dynamics"])
    msg = str(ei.value)
    assert f"GRID_RBD_PROBE_TIMEOUT is '{value}'" in msg and "number of seconds from 0.001 to 3600" in msg, msg
    assert not (tmp_path / "store").is_dir() or list((tmp_path / "store").iterdir()) == []
