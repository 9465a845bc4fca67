"""Exception classes of grid_rbd and the one table that maps C status codes (include/grid/error.h) to them."""

__all__ = [
    "GridError", "URDFError", "UnsupportedURDFError", "GridIOError", "GridArgumentError",
    "GridMemoryError", "BuildError", "CacheError", "LoadError", "CudaError", "NotAvailableError",
    "HandleClosedError", "DifferentiationError",
]


class GridError(Exception):
    """Base class of every error grid_rbd raises on purpose.

    Errors that come from the C library carry ``code`` (a grid_status), ``line`` and ``column``
    (1-based, 0 when unknown), ``filename`` (or None) and ``detail`` (the C message); those that say how to
    fix them also carry ``hint``. Each comes from a field of the C error struct, not from the message text."""

    code = None
    line = 0
    column = 0
    filename = None
    detail = ""
    hint = None


class URDFError(GridError, ValueError):
    """The URDF is not well-formed XML, not a valid robot, or exceeds a safety cap.
    The message reads ``file:line:column: what is wrong with which element``."""


class UnsupportedURDFError(URDFError):
    """A valid URDF feature this version does not handle (e.g. a floating joint below another moving joint)."""


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


class DifferentiationError(GridError, NotImplementedError):
    """Differentiating, in the JAX or PyTorch front end, what has no analytic derivative there (a forward-only
    method, an input without one, a second derivative): never a silent zero."""


class HandleClosedError(GridError, RuntimeError):
    """A method of a RobotHandle after its close() (sizes, names and options stay readable)."""


class RobotNotRegisteredError(GridError, KeyError):
    """get_robot of a name no register_robot call used (a KeyError, as a dict lookup raises)."""

    def __str__(self):
        # KeyError's str() quotes its argument; this one is a sentence
        return str(self.args[0]) if self.args else ""


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
    12: GridError,            # GRID_ERR_CANCELLED (a cancelled build raises the pending KeyboardInterrupt instead)
}

STATUS_NAMES = {
    1: "GRID_ERR_IO", 2: "GRID_ERR_XML", 3: "GRID_ERR_URDF", 4: "GRID_ERR_UNSUPPORTED",
    5: "GRID_ERR_LIMIT", 6: "GRID_ERR_NOMEM", 7: "GRID_ERR_ARG", 8: "GRID_ERR_BUILD",
    9: "GRID_ERR_CACHE", 10: "GRID_ERR_LOAD", 11: "GRID_ERR_CUDA", 12: "GRID_ERR_CANCELLED",
}


def error_from_status(code, line, column, message, filename=None, *, path=None, hint=None, where_len=0):
    """Build (not raise) the exception for a C status; called by _core's error bridge with the C error's
    fields: path (GRID_ERR_CACHE: the path that failed; GRID_ERR_BUILD: the kept compiler log), hint (how to
    fix it) and where_len (the leading bytes of message that restate line and column)."""
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
        message = (message or "")[where_len:]
    text = where + (message or STATUS_NAMES.get(code, f"status {code}"))
    exc = cls(text)
    exc.code = code
    exc.line = line
    exc.column = column
    exc.filename = filename
    exc.detail = detail
    if hint:
        exc.hint = hint
    if cls is BuildError:
        exc.log_path = path
        if path:
            exc.log_tail = _log_tail(path, detail)
    elif cls is CacheError:
        exc.path = path
    elif path is not None:
        exc.path = path
    return exc


def _log_tail(path, detail):
    """the last 40 lines of the kept log (the message, which ends with its last lines, if it cannot be read)"""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-40:])
    except OSError:
        return detail or ""
