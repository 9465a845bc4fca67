"""Exception attributes come from the fields of the C error struct (include/grid/error.h), not from parsing
its message: URDFError.filename/line/column, CacheError.path/hint, BuildError.log_path/log_tail/hint."""

from pathlib import Path

import pytest

import grid_rbd
from grid_rbd import _core, _errors
from robot_cases import BUNDLED_IIWA


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    for var in ("GRID_RBD_VERBOSE", "GRID_RBD_CC", "GRID_RBD_CFLAGS"):
        monkeypatch.delenv(var, raising=False)


def test_the_bridge_takes_the_fields_as_arguments():
    e = _errors.error_from_status(_core.ERR_CACHE, 0, 0, "whatever the text says", None, path="/p/q",
                                  hint="do this")
    assert isinstance(e, grid_rbd.CacheError) and e.path == "/p/q" and e.hint == "do this"
    e = _errors.error_from_status(_core.ERR_BUILD, 0, 0, "no log named here", None, path="/nonexistent/x.log")
    assert e.log_path == "/nonexistent/x.log" and e.log_tail == "no log named here"
    # only where_len bytes are dropped: a message that merely starts like a position keeps its text
    e = _errors.error_from_status(_core.ERR_URDF, 9, 0, "line 9: kept", "f.urdf")
    assert str(e) == "f.urdf:9: line 9: kept"
    e = _errors.error_from_status(_core.ERR_XML, 3, 4, "line 3, column 4: dropped", "f.urdf", where_len=18)
    assert str(e) == "f.urdf:3:4: dropped" and e.detail == "line 3, column 4: dropped"
    assert _errors.STATUS_NAMES[_core.ERR_CANCELLED] == "GRID_ERR_CANCELLED"


def test_urdf_error_position_fields(tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text("<robot name='r'>\n  <link name='a'>\n</robot>\n")
    with pytest.raises(grid_rbd.URDFError) as e:
        grid_rbd.register_robot("err_xml", urdf_path=path)
    err = e.value
    assert err.code == _core.ERR_XML and err.filename == str(path) and err.line == 3 and err.column > 0
    prefix = f"line {err.line}, column {err.column}: "
    assert err.detail.startswith(prefix)
    assert str(err) == f"{path}:{err.line}:{err.column}: {err.detail[len(prefix):]}"
    # an element error: the position comes from the struct, the message is kept whole
    path.write_text("<robot name='r'>\n  <link name='a'/>\n  <link name='a'/>\n</robot>\n")
    with pytest.raises(grid_rbd.URDFError) as e:
        grid_rbd.register_robot("err_dup", urdf_path=path)
    assert e.value.line == 3 and e.value.filename == str(path) and str(e.value).endswith(e.value.detail)


def test_cache_error_path_and_hint(tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("x")
    with pytest.raises(grid_rbd.CacheError) as e:
        grid_rbd.register_robot("err_cache", urdf_path=BUNDLED_IIWA, cache_dir=blocker / "cache", verbose=False)
    assert e.value.path == str(blocker / "cache") and e.value.code == _core.ERR_CACHE
    assert "GRID_RBD_CACHE_DIR" in e.value.hint and e.value.path in str(e.value)


def test_build_error_log_path_is_the_kept_log_even_in_an_odd_directory(tmp_path, monkeypatch):
    # a cache directory whose name holds the text around the log path in the message
    cache = tmp_path / "odd; last lines:\nfull log: x"
    monkeypatch.setenv("GRID_RBD_CFLAGS", "-O2 --grid-rbd-bogus-flag")
    with pytest.raises(grid_rbd.BuildError) as e:
        grid_rbd.register_robot("err_build", urdf_path=BUNDLED_IIWA, cache_dir=cache, verbose=False)
    log = Path(e.value.log_path)
    assert log.parent == cache / "store" and log.name.endswith(".failed.log") and log.is_file()
    assert str(log) in str(e.value) and "--grid-rbd-bogus-flag" in e.value.log_tail
    assert e.value.log_tail == "".join(log.read_text().splitlines(keepends=True)[-40:])


def test_build_error_for_a_missing_compiler_has_a_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("GRID_RBD_CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(grid_rbd.BuildError) as e:
        grid_rbd.register_robot("err_nocc", urdf_path=BUNDLED_IIWA, cache_dir=tmp_path / "c", verbose=False)
    assert "GRID_RBD_CC" in e.value.hint and e.value.log_path is None
