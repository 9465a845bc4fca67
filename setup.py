"""Builds grid_rbd._core: the C library (src/*/*.c) plus the CPython extension (python/grid_rbd/*.c), in one module."""
import glob
import hashlib
import os
import re

import numpy
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))

# the generator's own sources: any edit here changes GENERATOR_HASH and so the stage-1 cache key
GENERATOR_SOURCES = ["src/emit", "src/model", "src/urdf", "src/common", "include/grid"]


def generator_hash():
    """SHA-256 over (relative path, bytes) of every .c/.h file of the generator, in sorted path order"""
    h = hashlib.sha256(b"grid-rbd generator hash v1\0")
    files = []
    for folder in GENERATOR_SOURCES:
        for ext in ("*.c", "*.h"):
            files += glob.glob(os.path.join(HERE, folder, "**", ext), recursive=True)
    for path in sorted(set(files)):
        rel = os.path.relpath(path, HERE).replace(os.sep, "/").encode()
        with open(path, "rb") as f:
            data = f.read()
        h.update(len(rel).to_bytes(8, "little") + rel + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def package_version():
    """[project] version of pyproject.toml (the one place the version is written)"""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        m = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("pyproject.toml has no version")
    return m.group(1)


sources = sorted(glob.glob("src/*/*.c")) + sorted(glob.glob("python/grid_rbd/*.c"))
# src/runtime/*.cu: the CUDA host runtime, embedded into the library by src/runtime/cuda_sources.c (.incbin)
headers = sorted(glob.glob("include/grid/*.h") + glob.glob("src/*/*.h") + glob.glob("python/grid_rbd/*.h") +
                 glob.glob("src/runtime/*.cu"))

def xla_ffi_include():
    """jaxlib's include directory when it holds the XLA FFI C API (xla/ffi/api/c_api.h, the handlers of _xla.c), found
    without importing jax; None otherwise (the extension is built without the JAX front end)"""
    import importlib.util
    spec = importlib.util.find_spec("jaxlib")
    for root in (spec.submodule_search_locations or []) if spec else []:
        inc = os.path.join(root, "include")
        if os.path.isfile(os.path.join(inc, "xla", "ffi", "api", "c_api.h")):
            return inc
    return None


XLA_INCLUDE = xla_ffi_include()

# -Werror is left to the Makefile's C build (make test-c / test-asan compile every src file with it):
# here Python's own CFLAGS (-DNDEBUG, -O3, -fwrapv) come first and may surface other warnings.
core = Extension(
    "grid_rbd._core",
    sources=sources,
    depends=headers,
    include_dirs=["include", "python/grid_rbd", numpy.get_include()] + ([XLA_INCLUDE] if XLA_INCLUDE else []),
    define_macros=([("GRID_HAVE_XLA_FFI", "1")] if XLA_INCLUDE else []) + [
        ("GRID_GENERATOR_HASH", '"%s"' % generator_hash()),
        ("GRID_PACKAGE_VERSION", '"%s"' % package_version()),
        ("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
    ],
    libraries=["expat", "m", "dl", "pthread"],
    extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-Wno-missing-field-initializers"],
)

setup(ext_modules=[core])
