#!/usr/bin/env python3
"""Where fdsva_so's float32 error comes from (bench/RESULTS.md, "fdsva_so's float32 accuracy"): its composite's
formula (src/emit/fdsva_so.h) evaluated in float64 numpy on g1_29dof floating, with all ingredients float64, every
one float32, and one at a time float32 (FD's qdd, the RNEA gradient D, idsva_so's T, M^-1) from a float32 library;
per tensor the block error (worst state) / the entries >= 0.1 off by more than 0.1 %.

    .venv/bin/python bench/fdsva_so_float32_sources.py
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import grid_rbd
from robot_cases import SHARED_ROBOTS, make_states
p = SHARED_ROBOTS / "g1_29dof.urdf"
ref = grid_rbd.register_robot("soacc_ref_g1_29dof", urdf_path=p, floating_base=True, dtype="float64", codegen=False, verbose=False)
g32 = grid_rbd.register_robot("soacc_g1_29dof", urdf_path=p, floating_base=True, dtype="float32", algorithm_list=["fdsva_so"], verbose=False)
g32b = grid_rbd.register_robot("diag32_g1", urdf_path=p, floating_base=True, dtype="float32",
                               algorithm_list=["forward_dynamics", "inverse_dynamics_gradient", "idsva_so", "minv", "inverse_dynamics"], verbose=False)
s = make_states(ref, "random", 8, seed=11)
q, v, a = (s[k].astype(np.float32) for k in ("q", "qd", "qdd"))
u = ref.inverse_dynamics(q.astype(float), v.astype(float), a.astype(float)).astype(np.float32)
Q, V, U = (x.astype(float) for x in (q, v, u))
want = ref.fdsva_so(Q, V, U)
nv = ref.nv
def pieces(h, dt):
    qq, vv, uu = (x.astype(dt) for x in (q, v, u))
    qdd = h.forward_dynamics(qq, vv, uu)
    D = h.inverse_dynamics_gradient(qq, vv, qdd)
    T = h.idsva_so(qq, vv, qdd)
    Mi = h.minv(qq)
    return [np.asarray(x, dtype=float) if not isinstance(x, tuple) else tuple(np.asarray(t, float) for t in x) for x in (qdd, D, T, Mi)]
P64 = pieces(ref, np.float64)
P32 = pieces(g32b, np.float32)
def compose(qdd, D, T, Mi):
    aq = -Mi @ D[:, :, :nv]; av = -Mi @ D[:, :, nv:]
    T1, T2, T3, T4 = T
    # T[t][b, i, j, k]; dM_j = T4[:, :, :, j]
    t1 = T1 + np.einsum("bilj,blk->bijk", T4, aq) + np.einsum("bilk,blj->bijk", T4, aq)
    t3 = T3 + np.einsum("bilj,blk->bijk", T4, av)
    o1 = -np.einsum("bil,bljk->bijk", Mi, t1)
    o2 = -np.einsum("bil,bljk->bijk", Mi, T2)
    o3 = -np.einsum("bil,bljk->bijk", Mi, t3)
    o4 = -np.einsum("bil,blmk,bmj->bijk", Mi, T4, Mi)
    return o1, o2, o3, o4
def score(got, tag):
    out = []
    for t in range(4):
        w, g = want[t].reshape(len(q), -1), got[t].reshape(len(q), -1)
        err = np.abs(g - w); sel = np.abs(w) >= 0.1
        r = err[sel] / np.abs(w[sel])
        out.append(f"{(err.max(1)/np.abs(w).max(1)).max():.1e}/{int((r > 1e-3).sum())}")
    print(f"{tag:28s}", "  ".join(out), flush=True)
score(compose(*P64), "all float64")
score(tuple(np.asarray(x, float) for x in g32.fdsva_so(q, v, u)), "generated float32")
score(compose(*P32), "float32 pieces, f64 math")
names = ["qdd", "D", "T", "Mi"]
for i in range(4):
    mix = list(P64); mix[i] = P32[i]
    score(compose(*mix), f"only {names[i]} float32")
