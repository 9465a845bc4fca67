"""The Python example scripts under examples/ run to the end (each checks what it prints; demo.py is `make demo`'s)."""

import subprocess
import sys

import pytest

from robot_cases import REPO

SCRIPTS = sorted(p for p in (REPO / "examples").glob("*.py") if p.name != "demo.py")


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_example_runs(script):
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{script.name} failed:\n{run.stdout}\n{run.stderr}"
    assert run.stdout.strip(), f"{script.name} printed nothing"
