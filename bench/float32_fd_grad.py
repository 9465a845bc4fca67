"""Measures the float32 error of dqdd/dq (iiwa) for Pinocchio's own float32 ABA derivatives and for grid-rbd float32."""
# usage: .venv/bin/python bench/float32_fd_grad.py [PINOCCHIO_FLOAT32_BINARY]  (default build/bench/pinocchio_float32)
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pinocchio as pin

import grid_rbd

REPO = Path(__file__).resolve().parents[1]
URDF = str(REPO / "examples" / "robots" / "iiwa.urdf")  # tests/python/robot_cases.py BUNDLED_IIWA
BIN = sys.argv[1] if len(sys.argv) > 1 else str(REPO / "build" / "bench" / "pinocchio_float32")
TOL, NV = 5e-3, 7

# the states of tests/python/test_defects_numerics.py::test_float32_fd_grad_at_large_accelerations, scales 1 and 5
rng = np.random.default_rng(0)
q, qd, u = (rng.standard_normal((4, NV)).astype(np.float32) for _ in range(3))
states = [(s, i, q[i], qd[i], (u * s).astype(np.float32)[i]) for s in (1, 5) for i in range(4)]
Q, QD, U = (np.array([st[k] for st in states]) for k in (2, 3, 4))

# float64 reference: Pinocchio Python in double on the float32-rounded inputs
model = pin.buildModelFromUrdf(URDF)
data = model.createData()
ref, qdd, cond = [], [], []
for x, v, t in zip(*(a.astype(np.float64) for a in (Q, QD, U))):
    pin.computeABADerivatives(model, data, x, v, t)
    ref.append(data.ddq_dq.copy())
    qdd.append(np.abs(pin.aba(model, data, x, v, t)).max())
    M = pin.crba(model, data, x)
    cond.append(np.linalg.cond(np.triu(M) + np.triu(M, 1).T))
ref = np.array(ref)

# grid-rbd float32 (codegen) and float64 (codegen=False); the first NV columns of the gradient are dqdd/dq
with tempfile.TemporaryDirectory() as cache:
    h32 = grid_rbd.register_robot("iiwa_f32_fdg", urdf_path=URDF, dtype="float32", algorithm_list=["fd_grad"],
                                  cache_dir=cache, verbose=False)
    h64 = grid_rbd.register_robot("iiwa_f64_fdg", urdf_path=URDF, dtype="float64", codegen=False, verbose=False)
    g32 = np.asarray(h32.forward_dynamics_gradient(Q, QD, U), dtype=np.float64)[..., :NV]
    g64 = np.asarray(h64.forward_dynamics_gradient(*(a.astype(np.float64) for a in (Q, QD, U))))[..., :NV]
layout = np.abs(g64 - ref).max()
assert layout < 1e-8, f"grid-rbd float64 dqdd/dq differs from Pinocchio's by {layout:.3g}: layout?"

# Pinocchio C++ in float32, double, and double on float32-rounded model constants
# %.17g: the double paths must see exactly the float32 values (%.9g round-trips only when parsed as float)
inp = f"{len(states)}\n" + "".join(" ".join(f"{float(v):.17g}" for v in np.concatenate(st[2:])) + "\n" for st in states)
out = subprocess.run([BIN, URDF], input=inp, capture_output=True, text=True, check=True).stdout
cpp = {}
for line in out.split("\n"):
    if line:
        tag, b, *vals = line.split()
        cpp.setdefault(tag, [None] * len(states))[int(b)] = np.array(vals, dtype=np.float64).reshape(NV, NV)
p32, p64, p64r = (np.array(cpp[k]) for k in ("f32", "f64", "f64r"))
cpp64 = np.abs(p64 - ref).max()
assert cpp64 < 1e-8, f"Pinocchio C++ double differs from Python by {cpp64:.3g}: inputs?"

err = lambda a: np.abs(a - ref).max(axis=(1, 2))
e_p32, e_g32, e_r = err(p32), err(g32), err(p64r)
print(f"grid-rbd float64 vs Pinocchio Python float64 dqdd/dq: {layout:.2e}; Pinocchio C++ double vs Python: {cpp64:.2e}\n")
print("| scale | state | max\\|qdd\\| | cond(M) | Pinocchio float32 err | grid-rbd float32 err "
      "| float64 on float32 constants err |")
print("|---|---|---|---|---|---|---|")
for k, (s, i, *_ ) in enumerate(states):
    mark = lambda e: f"{e:.2e}" + (" **miss**" if e >= TOL else "")
    print(f"| {s} | {i} | {qdd[k]:.1f} | {cond[k]:.3g} | {mark(e_p32[k])} | {mark(e_g32[k])} | {e_r[k]:.2e} |")
print()
for name, e in (("Pinocchio float32", e_p32), ("grid-rbd float32", e_g32), ("float64 on float32 constants", e_r)):
    k = int(e.argmax())
    print(f"- {name}: misses {TOL:g} on {int((e >= TOL).sum())} of {len(e)} states; "
          f"worst {e[k]:.3e} (scale {states[k][0]}, state {states[k][1]})")
