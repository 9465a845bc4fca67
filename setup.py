"""Builds grid_rbd._core: the C library (src/*/*.c) plus the CPython extension (python/grid_rbd/*.c), in one module."""
import glob
from setuptools import setup, Extension

sources = sorted(glob.glob("src/*/*.c")) + sorted(glob.glob("python/grid_rbd/*.c"))
headers = sorted(glob.glob("include/grid/*.h") + glob.glob("src/*/*.h") + glob.glob("python/grid_rbd/*.h"))

# -Werror is left to the Makefile's C build (make test-c / test-asan compile every src file with it):
# here Python's own CFLAGS (-DNDEBUG, -O3, -fwrapv) come first and may surface other warnings.
core = Extension(
    "grid_rbd._core",
    sources=sources,
    depends=headers,
    include_dirs=["include", "python/grid_rbd"],
    libraries=["expat", "m", "dl", "pthread"],
    extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra",
                        "-Wno-missing-field-initializers"],
)

setup(ext_modules=[core])
