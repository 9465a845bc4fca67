"""Synthetic revolute chains for the code-size measurements of docs/emitter.md ("Schedules"): python bench/chains.py [N ...]."""
import sys


def chain_urdf(n):
    """A chain of n revolute joints with axes cycling z, y, x and non-trivial placements and inertias."""
    s = ['<?xml version="1.0"?>', f'<robot name="chain{n}">']
    for i in range(n + 1):
        s.append(f'<link name="l{i}"><inertial><origin xyz="0.01 0.02 0.1" rpy="0 0 0"/><mass value="1.{i % 10}"/>'
                 '<inertia ixx="0.05" ixy="0.001" ixz="0.002" iyy="0.04" iyz="0.003" izz="0.03"/></inertial></link>')
    for i in range(n):
        ax = ["0 0 1", "0 1 0", "1 0 0"][i % 3]
        s.append(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
                 f'<origin xyz="0 0.01 0.2" rpy="0.1 0 0.05"/><axis xyz="{ax}"/>'
                 '<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
    s.append('</robot>')
    return "\n".join(s)


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["25", "50", "100", "200"]:
        path = f"/tmp/chain{arg}.urdf"
        with open(path, "w") as f:
            f.write(chain_urdf(int(arg)))
        print(path)
