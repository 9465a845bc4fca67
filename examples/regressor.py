"""grid-rbd joint torque regressor: identify an unknown payload on a KUKA iiwa's flange from measured torques.

The "measured" torques come from a second robot whose URDF has a 2.5 kg payload welded to the last link; the nominal
robot's regressor Y (tau = Y . pi) turns their difference from the nominal torques into the last body's parameter
change, by linear least squares over a batch of states.
"""

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

import grid_rbd

URDF = Path(__file__).resolve().parent / "robots" / "iiwa.urdf"
MASS, COM = 2.5, np.array([0.02, -0.01, 0.12])  # the payload: a point mass in the flange (link 7) frame


def with_payload(urdf):
    root = ET.fromstring(urdf.read_text())
    link = ET.SubElement(root, "link", name="payload")
    inertial = ET.SubElement(link, "inertial")
    ET.SubElement(inertial, "origin", xyz=" ".join(map(str, COM)), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=str(MASS))
    ET.SubElement(inertial, "inertia", ixx="0", ixy="0", ixz="0", iyy="0", iyz="0", izz="0")
    joint = ET.SubElement(root, "joint", name="payload_joint", type="fixed")
    ET.SubElement(joint, "parent", link="iiwa_link_7")
    ET.SubElement(joint, "child", link="payload")
    return ET.tostring(root, encoding="unicode")


def main():
    kw = dict(dtype="float64", algorithm_list=["inverse_dynamics", "inverse_dynamics_regressor"])
    nominal = grid_rbd.register_robot("iiwa_nominal", urdf_path=URDF, **kw)
    loaded = grid_rbd.register_robot("iiwa_loaded", urdf_string=with_payload(URDF), **kw)

    rng = np.random.default_rng(3)
    B = 200
    q = rng.uniform(-2.0, 2.0, (B, nominal.nq))
    qd = rng.uniform(-1.5, 1.5, (B, nominal.nv))
    qdd = rng.uniform(-3.0, 3.0, (B, nominal.nv))
    measured = loaded.inverse_dynamics(q, qd, qdd)

    Y = nominal.inverse_dynamics_regressor(q, qd, qdd)  # (B, nv, 10 nb)
    last = slice(10 * (nominal.nb - 1), 10 * nominal.nb)  # the last body's 10 columns (m, m c, I at its origin)
    dtau = measured - nominal.inverse_dynamics(q, qd, qdd)
    dpi, *_ = np.linalg.lstsq(Y[:, :, last].reshape(-1, 10), dtau.reshape(-1), rcond=None)

    m, c = dpi[0], dpi[1:4] / dpi[0]
    print(f"inverse_dynamics_regressor(q, qd, qdd) -> {Y.shape} (B, nv, 10 nb)")
    print(f"identified payload from {B} states: mass {m:.6f} kg (true {MASS}), centre of mass {np.round(c, 6)} m "
          f"(true {COM})")
    residual = np.abs(Y[:, :, last] @ dpi - dtau).max()
    print(f"largest torque residual of the fit: {residual:.1e} N m")
    assert abs(m - MASS) < 1e-9 and np.abs(c - COM).max() < 1e-9 and residual < 1e-9


if __name__ == "__main__":
    main()
