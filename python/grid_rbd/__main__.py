"""`python -m grid_rbd` (also the gridc-py script): `model FILE` describes a URDF, `cache list|info|clear|dir|env`
manages the robot.so cache. `python -m grid_rbd FILE` is `model FILE`."""

import argparse
import json
import sys
import time

from . import GridError, cache, register_robot


# ---- model ----
def _model_parser(p):
    p.add_argument("urdf", help="path of the URDF file")
    p.add_argument("--floating-base", action="store_true", help="add a free-flyer root joint")
    p.add_argument("--ignore-mimic", action="store_true", help="treat <mimic> joints as independent joints")
    p.add_argument("--ee", action="append", metavar="JOINT", help="end-effector joint name (repeatable)")


def cmd_model(args):
    """parse a URDF (no code generation) and print its sizes, joints and end effectors"""
    h = register_robot("cli", urdf_path=args.urdf, floating_base=args.floating_base, codegen=False,
                       ignore_mimic=args.ignore_mimic, ee_joint_names=args.ee, dtype="float64")
    m = h._model
    print(f"robot {m.robot_name!r}: nq={h.nq} nv={h.nv} nb={h.nb} frames={len(h.frame_names)} "
          f"end effectors={h.num_ees} floating_base={h.floating_base}")
    # the model's tables are per body (one joint each, coupled mimic joints included); h.joint_names lists only the
    # joints with coordinates of their own, so every row is read from the body tables by the body's index
    print("joints (tree order; a coupled <mimic> joint has no coordinates: it follows its leader's):")
    for i, name in enumerate(m.joint_names):
        parent = m.joint_parents[i]
        mimic = m.joint_mimic[i]
        if mimic is None:
            coords = (f"q[{m.joint_idx_q[i]}:{m.joint_idx_q[i] + m.joint_nq[i]}] "
                      f"v[{m.joint_idx_v[i]}:{m.joint_idx_v[i] + m.joint_nv[i]}]")
        else:
            leader, mult, offset = mimic
            sign = "-" if offset < 0 else "+"
            coords = (f"mimics {m.joint_names[leader]!r}: q = {mult:.6g} * q[{m.joint_idx_q[i]}] {sign} {abs(offset):.6g}, "
                      f"v = {mult:.6g} * v[{m.joint_idx_v[i]}]")
        print(f"  {i:3d} {name:32s} {m.joint_types[i]:10s} {coords} body {m.body_names[i]!r} "
              f"mass {m.body_masses[i]:.4g} parent {m.body_names[parent] if parent >= 0 else 'world'!r}")
    print("end effectors:", ", ".join(h.ee_names))
    return 0


# ---- cache ----
def _printable(text):
    """text safe to print in a table: every character that is not printable (newline, tab, escape and other
    control characters) and the backslash itself written as a Python escape, so a name cannot split a line or
    reach the terminal as a control sequence"""
    text = str(text)
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(c if c.isprintable() and c != "\\" else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def _size(n):
    if not isinstance(n, (int, float)):   # a field of a damaged entry's meta.json that is missing
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _seconds(t):
    return f"{t:.2f} s" if isinstance(t, (int, float)) else "?"


def _when(e):
    t = e.get("created")
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "?"


def cmd_cache_list(args):
    rows = cache.entries(args.cache_dir)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"cache: {cache.root(args.cache_dir)}")
    if not rows:
        print("(empty)")
        return 0
    table = [("NAME", "KEY", "TARGET", "DTYPE", "NQ/NV", "SIZE", "CREATED", "STATUS")]
    for e in rows:
        names = ",".join(e.get("names") or []) or f"({e.get('name') or '-'})"
        table.append((names, e["content_key"][:12], e.get("target", "?"), e.get("dtype", "?"),
                      f"{e.get('nq', '?')}/{e.get('nv', '?')}", _size(e.get("size_bytes", 0)), _when(e),
                      "ok" if e.get("complete") else "INCOMPLETE"))
    table = [tuple(_printable(c) for c in r) for r in table]   # every cell comes from cache files
    widths = [max(len(str(r[i])) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    total = sum(e.get("size_bytes", 0) for e in rows)
    print(f"{len(rows)} entr{'y' if len(rows) == 1 else 'ies'}, {_size(total)}")
    return 0


def cmd_cache_info(args):
    e = cache.info(args.name, args.cache_dir)
    if args.json:
        print(json.dumps(e, indent=2))
        return 0
    meta = e.get("meta") or {}
    bi = e.get("build_inputs") or {}
    lines = [
        ("names", ", ".join(e.get("names") or []) or "-"),
        ("content key", e["content_key"]),
        ("input keys", ", ".join(e.get("input_keys") or []) or "-"),
        ("path", e["path"]),
        ("status", "complete (robot.so matches meta.json)" if e.get("complete") else "INCOMPLETE or corrupt"),
        ("target / dtype", f"{e.get('target', '?')} / {e.get('dtype', '?')}"),
        ("sizes", f"nq={e.get('nq', '?')} nv={e.get('nv', '?')} nb={e.get('nb', '?')} "
                  f"nframes={meta.get('nframes', '?')} nee={meta.get('nee', '?')}"),
        ("model hash", e.get("model_hash", "?")),
        ("robot.so", f"{_size(e.get('so_bytes', 0))}, sha256 {meta.get('so_sha256', '?')}"),
        ("source", f"{meta.get('source_file', '?')}, {_size(meta.get('source_bytes', 0))}"),
        ("entry size", _size(e.get("size_bytes", 0))),
        ("created", f"{meta.get('created_utc', '?')}"),
        ("compiler", f"{meta.get('compiler', '?')}  [{bi.get('compiler_version', '?')}]"),
        ("built in", f"generate {_seconds(meta.get('seconds_generate'))}, compile {_seconds(meta.get('seconds_compile'))}"),
        ("package", f"grid-rbd {meta.get('package_version', '?')}, generator {str(meta.get('generator_hash', '?'))[:16]}"),
    ]
    if bi.get("cpu"):
        lines.append(("cpu", bi["cpu"]))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k.ljust(width)}  {_printable(v)}")
    return 0


def cmd_cache_clear(args):
    root = cache.root(args.cache_dir)
    removed = cache.clear(args.name, args.cache_dir)
    what = f"{args.name!r}" if args.name else "everything"
    print(f"cleared {what} in {root}: {removed} entr{'y' if removed == 1 else 'ies'} removed")
    return 0


def cmd_cache_dir(args):
    print(cache.root(args.cache_dir))
    return 0


def cmd_cache_env(args):
    for name, (kind, doc) in cache.env_knobs().items():
        print(f"{name:22s} {kind:9s} {doc}")
    # the command CPU builds run now, from the build driver itself (the flags table of src/driver/toolchain.c,
    # with GRID_RBD_CC / GRID_RBD_CFLAGS applied): exactly the argv recorded in build_inputs.json
    try:
        argv = cache.build_command()
    except GridError as e:
        print(f"CPU build command: unavailable: {e}")
    else:
        print("CPU build command: " + " ".join(_printable(a) for a in argv))
    return 0


def build_parser():
    p = argparse.ArgumentParser(prog="python -m grid_rbd",
                                description="grid-rbd tools: describe a URDF, manage the robot.so cache.")
    sub = p.add_subparsers(dest="command", metavar="{model,cache}")
    sub.required = True
    pm = sub.add_parser("model", help="parse a URDF and describe the model")
    _model_parser(pm)
    pm.set_defaults(fn=cmd_model)

    pc = sub.add_parser("cache", help="list, inspect or clear the robot.so cache")
    pc.add_argument("--cache-dir", metavar="DIR", default=None,
                    help="cache root (default: $GRID_RBD_CACHE_DIR, $XDG_CACHE_HOME/grid-rbd, ~/.cache/grid-rbd)")
    csub = pc.add_subparsers(dest="action", metavar="{list,info,clear,dir,env}")
    csub.required = True
    cl = csub.add_parser("list", help="one line per cached library")
    cl.add_argument("--json", action="store_true", help="the raw entries as JSON")
    cl.set_defaults(fn=cmd_cache_list)
    ci = csub.add_parser("info", help="everything about one entry")
    ci.add_argument("name", help="a registered robot name or a content-key prefix (8+ hex digits)")
    ci.add_argument("--json", action="store_true", help="the raw entry as JSON")
    ci.set_defaults(fn=cmd_cache_info)
    cc = csub.add_parser("clear", help="remove one name's entry, or everything")
    cc.add_argument("name", nargs="?", default=None, help="robot name or content-key prefix (default: everything)")
    cc.set_defaults(fn=cmd_cache_clear)
    cd = csub.add_parser("dir", help="print the cache root")
    cd.set_defaults(fn=cmd_cache_dir)
    ce = csub.add_parser("env", help="the environment variables grid-rbd reads")
    ce.set_defaults(fn=cmd_cache_env)
    # --cache-dir is also accepted after the action (python -m grid_rbd cache list --cache-dir DIR)
    for sp in (cl, ci, cc, cd, ce):
        sp.add_argument("--cache-dir", metavar="DIR", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    # the original form: `python -m grid_rbd ROBOT.urdf [options]` describes the model
    if argv and argv[0] not in ("model", "cache") and not argv[0].startswith("-"):
        argv.insert(0, "model")
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (GridError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
