"""Exception classes of grid_rbd and the one table that maps C status codes (include/grid/error.h) to them."""

import re

__all__ = [
    "GridError", "URDFError", "UnsupportedURDFError", "GridIOError", "GridArgumentError",
    "GridMemoryError", "BuildError", "CacheError", "LoadError", "CudaError", "NotAvailableError",
]


class GridError(Exception):
    """Base class of every error grid_rbd raises on purpose.

    Errors that come from the C library carry ``code`` (a grid_status), ``line`` and ``column``
    (1-based, 0 when unknown), ``filename`` (or None) and ``detail`` (the C message)."""

    code = None
    line = 0
    column = 0
    filename = None
    detail = ""


class URDFError(GridError, ValueError):
    """The URDF is not well-formed XML, not a valid robot, or exceeds a safety cap.
    The message reads ``file:line:column: what is wrong with which element``."""


class UnsupportedURDFError(URDFError):
    """A valid URDF feature this version does not handle (planar joints, mimic joints unless ignore_mimic=True)."""


class GridIOError(GridError, OSError):
    """A file could not be read or written."""


class GridArgumentError(GridError, ValueError):
    """The C library rejected an argument (unknown frame, bad option)."""


class GridMemoryError(GridError, MemoryError):
    """An allocation in the C library failed."""


class BuildError(GridError):
    """The compiler failed or is missing. The message says which compiler and how to fix it, or holds the
    tail of the compiler log; ``log_path`` is the kept log (<cache>/store/<key>.failed.log, or None) and
    ``log_tail`` its last lines."""

    log_path = None
    log_tail = ""


class CacheError(GridError):
    """The cache directory is unusable (not creatable, read-only, full). ``path`` is the path that
    failed (or None) and ``hint`` how to fix it."""

    path = None
    hint = "set GRID_RBD_CACHE_DIR or pass cache_dir= to use a writable directory"


class LoadError(GridError):
    """A compiled robot library failed to load or its metadata does not match the model."""


class CudaError(GridError):
    """A CUDA call or kernel launch failed."""


class NotAvailableError(GridError, NotImplementedError):
    """A documented option or backend that this version does not provide yet."""


# grid_status (include/grid/error.h) -> class; keep in step with the enum (tests check it)
STATUS_CLASSES = {
    1: GridIOError,           # GRID_ERR_IO
    2: URDFError,             # GRID_ERR_XML
    3: URDFError,             # GRID_ERR_URDF
    4: UnsupportedURDFError,  # GRID_ERR_UNSUPPORTED
    5: URDFError,             # GRID_ERR_LIMIT
    6: GridMemoryError,       # GRID_ERR_NOMEM
    7: GridArgumentError,     # GRID_ERR_ARG
    8: BuildError,            # GRID_ERR_BUILD
    9: CacheError,            # GRID_ERR_CACHE
    10: LoadError,            # GRID_ERR_LOAD
    11: CudaError,            # GRID_ERR_CUDA
}

STATUS_NAMES = {
    1: "GRID_ERR_IO", 2: "GRID_ERR_XML", 3: "GRID_ERR_URDF", 4: "GRID_ERR_UNSUPPORTED",
    5: "GRID_ERR_LIMIT", 6: "GRID_ERR_NOMEM", 7: "GRID_ERR_ARG", 8: "GRID_ERR_BUILD",
    9: "GRID_ERR_CACHE", 10: "GRID_ERR_LOAD", 11: "GRID_ERR_CUDA",
}


_POSITION_PREFIX = re.compile(r"^line \d+(, column \d+)?: ")


def error_from_status(code, line, column, message, filename=None):
    """Build (not raise) the exception for a C status; called by _core's error bridge."""
    cls = STATUS_CLASSES.get(code, GridError)
    detail = message
    where = ""
    if filename is not None:
        where = str(filename)
        if line > 0:
            where += f":{line}"
            if column > 0:
                where += f":{column}"
        where += ": "
        # the position is in front already; drop the C message's own "line N, column M: "
        message = _POSITION_PREFIX.sub("", message or "", count=1)
    text = where + (message or STATUS_NAMES.get(code, f"status {code}"))
    exc = cls(text)
    exc.code = code
    exc.line = line
    exc.column = column
    exc.filename = filename
    exc.detail = detail
    if cls is BuildError:
        _add_build_details(exc)
    elif cls is CacheError:
        m = _CACHE_PATH.search(detail or "")
        exc.path = m.group(1) if m else None
    return exc


_LOG_PATH = re.compile(r"full log: (.+?); last lines:\n")
_CACHE_PATH = re.compile(r"cannot .+? '(.+)': ")


def _add_build_details(exc):
    """log_path from the message, log_tail from the kept log (its last 40 lines) or the message"""
    m = _LOG_PATH.search(exc.detail or "")
    if not m:
        return
    exc.log_path = m.group(1)
    exc.log_tail = exc.detail[m.end():]
    try:
        with open(exc.log_path, "r", encoding="utf-8", errors="replace") as f:
            exc.log_tail = "".join(f.readlines()[-40:])
    except OSError:
        pass
