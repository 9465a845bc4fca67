"""`python -m grid_rbd ROBOT.urdf` (also the gridc-py script): parse a URDF and print its sizes, joints and frames."""

import argparse
import sys

from . import GridError, register_robot


def main(argv=None):
    p = argparse.ArgumentParser(prog="gridc-py", description="Parse a URDF with grid_rbd and describe the model.")
    p.add_argument("urdf", help="path of the URDF file")
    p.add_argument("--floating-base", action="store_true", help="add a free-flyer root joint")
    p.add_argument("--ignore-mimic", action="store_true", help="treat <mimic> joints as independent joints")
    p.add_argument("--ee", action="append", metavar="JOINT", help="end-effector joint name (repeatable)")
    args = p.parse_args(argv)
    try:
        h = register_robot("cli", urdf_path=args.urdf, floating_base=args.floating_base,
                           ignore_mimic=args.ignore_mimic, ee_joint_names=args.ee, dtype="float64")
    except (GridError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    m = h._model
    print(f"robot {m.robot_name!r}: nq={h.nq} nv={h.nv} nb={h.nb} frames={len(h.frame_names)} "
          f"end effectors={h.num_ees} floating_base={h.floating_base}")
    print("joints (q/v order):")
    for i, name in enumerate(h.joint_names):
        parent = m.joint_parents[i]
        print(f"  {i:3d} {name:32s} {m.joint_types[i]:10s} q[{m.joint_idx_q[i]}:{m.joint_idx_q[i] + m.joint_nq[i]}] "
              f"v[{m.joint_idx_v[i]}:{m.joint_idx_v[i] + m.joint_nv[i]}] body {m.body_names[i]!r} "
              f"mass {m.body_masses[i]:.4g} parent {h.body_names[parent] if parent >= 0 else 'world'!r}")
    print("end effectors:", ", ".join(h.ee_names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
