"""The robot.so cache from Python: where it is, what it holds, clearing it (docs/cache.md has the layout)."""

import json
import os

from . import _core

__all__ = ["root", "entries", "info", "clear", "env_knobs", "build_command"]


def _dir(cache_dir):
    return None if cache_dir is None else os.fsdecode(os.fspath(cache_dir))


def root(cache_dir=None):
    """The cache root: cache_dir, else $GRID_RBD_CACHE_DIR, $XDG_CACHE_HOME/grid-rbd, ~/.cache/grid-rbd
    (nothing is created)."""
    return _core.cache_root(_dir(cache_dir))


def entries(cache_dir=None):
    """One dict per store entry, sorted by content key: content_key, names (every manifest name of the
    entry), name, path, size_bytes, so_bytes, complete (robot.so verified against meta.json), target, dtype,
    nq, nv, nb, model_hash, created (unix seconds), created_utc. A missing cache is []."""
    return json.loads(_core.cache_list_json(_dir(cache_dir)))


def info(name_or_key, cache_dir=None):
    """The entry a manifest name (or a unique content-key prefix of 8+ hex digits) names: the entries()
    fields plus meta (meta.json), build_inputs (build_inputs.json) and input_keys. GridArgumentError when
    nothing matches."""
    return json.loads(_core.cache_info_json(_dir(cache_dir), name_or_key))


def clear(name=None, cache_dir=None):
    """Remove one name (and its entry when no other name uses it), an entry by key prefix, or everything
    (name=None). Returns the number of store entries removed. Loaded libraries keep working."""
    return _core.cache_clear(_dir(cache_dir), name)


def env_knobs():
    """{name: (kind, doc)} of every environment variable grid-rbd reads; kind is 'build' (part of the build
    identity), 'generate' (part of the stage-1 key), 'location' (where the cache is) or 'runtime'."""
    return {name: (kind, doc) for name, kind, doc in _core.env_knobs()}


def build_command(target=0, cuda_arch=None):
    """The compiler argv builds use now (target 0: CPU, 1: CUDA), as the build driver makes it: its flags table
    with GRID_RBD_CC / GRID_RBD_CFLAGS (GRID_RBD_NVCC* for CUDA) applied; the "argv" of build_inputs.json."""
    return json.loads(_core.build_identity_json(target, cuda_arch))["argv"]
