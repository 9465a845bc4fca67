"""Builds grid_rbd._core: the C library (src/*/*.c) plus the CPython extension, in one module."""
import glob
from setuptools import setup, Extension

sources = sorted(glob.glob("src/*/*.c")) + ["python/grid_rbd/_core.c"]

core = Extension(
    "grid_rbd._core",
    sources=sources,
    include_dirs=["include"],
    libraries=["expat", "m", "dl", "pthread"],
    extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-Wno-missing-field-initializers"],
)

setup(ext_modules=[core])
