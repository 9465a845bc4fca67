"""Valid robots that are hard on floating point (near-zero outputs, singular or ill-conditioned mass matrices, far
origins, long chains), as URDF text: the self-check must register them in both dtypes (test_selfcheck.py,
bench/robot_sweep.py)."""


def _inertial(mass, izz=None, com="0 0 0", i=None):
    i = i or (mass * 0.01, mass * 0.01, izz if izz is not None else mass * 0.01)
    return (f'<inertial><origin xyz="{com}" rpy="0 0 0"/><mass value="{mass}"/>'
            f'<inertia ixx="{i[0]}" ixy="0" ixz="0" iyy="{i[1]}" iyz="0" izz="{i[2]}"/></inertial>')


def _robot(name, links, joints):
    return (f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(links) + "\n" + "\n".join(joints)
            + "\n</robot>\n")


def _joint(name, parent, child, xyz="0 0 0", rpy="0 0 0", axis="0 0 1", kind="revolute"):
    limit = '<limit lower="-3" upper="3" effort="10" velocity="5"/>' if kind in ("revolute", "prismatic") else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{limit}</joint>')


def scara_flipped():
    """a SCARA whose frames are turned by rpy = 3.14159265358979 about x: its gravity torques are ~1e-14"""
    links = ['<link name="base">' + _inertial(5.0) + '</link>']
    joints = []
    for k in range(3):
        links.append(f'<link name="l{k}">' + _inertial(1.0 + k, com="0.2 0.05 0.0") + '</link>')
        joints.append(_joint(f"j{k}", "base" if k == 0 else f"l{k - 1}", f"l{k}", xyz="0.3 0 0.1",
                             rpy="3.14159265358979 0 0"))
    return _robot("scara_flipped", links, joints)


def coaxial_pair():
    """two z-axis joints with their centres of mass on the axes: the nonlinear effects are zero analytically"""
    def body(mass, s):
        return (f'<inertial><origin xyz="{0.6 * s} 0 {0.8 * s}" rpy="0.3 0.2 0.1"/><mass value="{mass}"/>'
                f'<inertia ixx="0.02" ixy="0.003" ixz="0.004" iyy="0.03" iyz="0.005" izz="0.04"/></inertial>')
    # both axes along (0.6, 0, 0.8), every centre of mass on that line, full inertia tensors
    links = ['<link name="base"/>', '<link name="a">' + body(2.0, 0.1) + '</link>',
             '<link name="b">' + body(1.0, 0.3) + '</link>']
    joints = [_joint("ja", "base", "a", axis="0.6 0 0.8"),
              _joint("jb", "a", "b", xyz="0.12 0 0.16", axis="0.6 0 0.8")]
    return _robot("coaxial_pair", links, joints)


def chain(n, name=None):
    """a revolute chain of n links with alternating axes (cond(M) grows with n: about 1e7 at 150)"""
    links = ['<link name="base"/>']
    joints = []
    for k in range(n):
        links.append(f'<link name="l{k}">' + _inertial(0.5, com="0 0 0.05") + '</link>')
        axis = ("0 0 1", "0 1 0", "1 0 0")[k % 3]
        joints.append(_joint(f"j{k}", "base" if k == 0 else f"l{k - 1}", f"l{k}", xyz="0 0 0.1", axis=axis))
    return _robot(name or f"chain{n}", links, joints)


def massless_leaf():
    """a moving leaf link with no <inertial>: the mass matrix is singular (its column is zero)"""
    links = ['<link name="base"/>', '<link name="arm">' + _inertial(1.0, com="0.1 0 0") + '</link>',
             '<link name="tip"/>']
    joints = [_joint("j0", "base", "arm", axis="0 1 0"),
              _joint("j1", "arm", "tip", xyz="0.3 0 0", axis="0 1 0")]
    return _robot("massless_leaf", links, joints)


def far_origin():
    """a three-link arm whose first joint sits 1e5 m from the world origin"""
    links = ['<link name="base"/>']
    joints = []
    for k in range(3):
        links.append(f'<link name="l{k}">' + _inertial(1.0, com="0.1 0 0.02") + '</link>')
        joints.append(_joint(f"j{k}", "base" if k == 0 else f"l{k - 1}", f"l{k}",
                             xyz="100000 -100000 50000" if k == 0 else "0.25 0 0", axis=("0 0 1", "0 1 0")[k % 2]))
    return _robot("far_origin", links, joints)


def tiny_fingers():
    """an arm with a hand of near-massless finger links (1e-6 kg, 1e-12 kg m^2): cond(M) > 1e10, as icub's"""
    links = ['<link name="base"/>', '<link name="arm">' + _inertial(2.0, com="0.15 0 0") + '</link>',
             '<link name="hand">' + _inertial(0.3, com="0.03 0 0") + '</link>']
    joints = [_joint("shoulder", "base", "arm", axis="0 1 0"),
              _joint("wrist", "arm", "hand", xyz="0.3 0 0", axis="1 0 0")]
    for f in range(3):
        parent = "hand"
        for k in range(2):
            link = f"f{f}_{k}"
            links.append(f'<link name="{link}">' + _inertial(1e-6, com="0.01 0 0", i=(1e-12, 1e-12, 1e-12))
                         + '</link>')
            joints.append(_joint(f"jf{f}_{k}", parent, link, xyz=f"0.05 {0.01 * (f - 1)} 0" if k == 0 else "0.02 0 0",
                                 axis="0 1 0"))
            parent = link
    return _robot("tiny_fingers", links, joints)


# name -> URDF text
ROBOTS = {
    "scara_flipped": scara_flipped(),
    "coaxial_pair": coaxial_pair(),
    "chain150": chain(150),
    "massless_leaf": massless_leaf(),
    "far_origin": far_origin(),
    "tiny_fingers": tiny_fingers(),
}
