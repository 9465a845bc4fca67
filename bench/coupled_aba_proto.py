"""Design prototype (issue 9's open cost target, not part of the package): the articulated-body algorithm with
mimic couplings, checked against the dense solve of G^T M G with Pinocchio's M and RNEA.

A group is a leader and the joints that mimic it. Its members (the leader with multiplier 1 included) do not
eliminate a coordinate of their own: each hands its parent the composite inertia X^T IA X and bias X^T (IA c + pA)
(as CRBA does) and three group terms, alpha = IA m S + AL, beta = m S^T AL + BE, gamma = m S^T pA + GA, which the
parent accumulates as AL += X^T alpha, BE += beta + alpha^T m S, GA += gamma + alpha^T c. The group's one
coordinate is eliminated where the group hangs: at the leader when every other member is below it (h1_2's
fingers: U = IA S + AL, D = S^T IA S + 2 S^T AL + BE, u = tau - S^T pA - GA, then the standard step), or at the
common parent of several top members (panda's fingers: U = AL, D = BE, u = tau - GA subtracted from that body's
IA and pA before its own step). The forward pass is the standard one; a member adds m S qdd_group.
Work per member is a CRBA-style composite update: O(n), no mass matrix.

    .venv/bin/python bench/coupled_aba_proto.py ../shared/robots/h1_2.urdf ff      # or fixed; panda.urdf fixed
"""
import sys, numpy as np, pinocchio as pin, xml.etree.ElementTree as ET

def load(path, floating):
    model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    root = ET.parse(path).getroot()
    mim = {}
    for j in root.findall('joint'):
        m = j.find('mimic')
        if m is not None and j.get('type') != 'fixed':
            mim[j.get('name')] = (m.get('joint'), float(m.get('multiplier') or 1.0), float(m.get('offset') or 0.0))
    return model, mim

def spatial(model, data, q, v):
    pin.forwardKinematics(model, data, q, v)
    nb = model.njoints
    X = [None] * nb; S = [None] * nb; I = [None] * nb
    for i in range(1, nb):
        X[i] = data.liMi[i].inverse().action          # parent motion -> child frame
        S[i] = np.array(data.joints[i].S).reshape(6, -1)
        I[i] = model.inertias[i].matrix()
    return X, S, I

def cross_m(v):
    w, l = v[3:], v[:3]
    def hat(a): return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    M = np.zeros((6, 6)); M[:3, :3] = hat(w); M[:3, 3:] = hat(l); M[3:, 3:] = hat(w)
    return M

def group_aba(model, X, S, I, v, tau, role, mult, host_of, TAU_OWN, GROUP):
    """role[i]: 0 plain, 1 member (leader included, mult[i] relative to the group coordinate); host_of[i]: for a
    member, the group id; group g: host body H (not a member), coordinate index gi."""
    nb = model.njoints
    vel = [np.zeros(6)] * nb; c = [np.zeros(6)] * nb; IA = [None] * nb; pA = [None] * nb
    AL = [np.zeros(6) for _ in range(nb)]; BE = [0.0] * nb; GA = [0.0] * nb
    qd = {}
    for i in range(1, nb):
        p = model.parents[i]; iv = model.joints[i].idx_v; n = model.joints[i].nv
        vJ = S[i] @ v[iv:iv + n]
        vel[i] = X[i] @ (vel[p] if p > 0 else np.zeros(6)) + vJ
        c[i] = cross_m(vel[i]) @ vJ
        IA[i] = I[i].copy(); pA[i] = -cross_m(vel[i]).T @ (I[i] @ vel[i])   # v x* (I v)
    U = [None] * nb; Dinv = [None] * nb; uu = [None] * nb
    gU = {}; gD = {}; gu = {}
    for i in range(nb - 1, 0, -1):
        p = model.parents[i]; iv = model.joints[i].idx_v; n = model.joints[i].nv
        if role[i] == 2:                          # a group's leader with the group below it: eliminate here
            s0 = S[i][:, 0]
            Ug = IA[i] @ s0 + AL[i]
            Dg = s0 @ Ug + s0 @ AL[i] + BE[i]
            ug = TAU_OWN[i][0] - s0 @ pA[i] - GA[i]
            U[i] = Ug.reshape(6, 1); Dinv[i] = np.array([[1.0 / Dg]]); uu[i] = np.array([ug])
            if p == 0: continue
            Ia = IA[i] - np.outer(Ug, Ug) / Dg
            pa = pA[i] + Ia @ c[i] + Ug * ug / Dg
            IA[p] = IA[p] + X[i].T @ Ia @ X[i]
            pA[p] = pA[p] + X[i].T @ pa
            continue
        if role[i] == 1:                          # member: no elimination, composite pass-up
            ms = mult[i] * S[i][:, 0]
            alpha = IA[i] @ ms + AL[i]
            beta = ms @ AL[i] + BE[i]
            gamma = ms @ pA[i] + GA[i]
            AL[p] = AL[p] + X[i].T @ alpha
            BE[p] += beta + alpha @ ms
            GA[p] += gamma + alpha @ c[i]
            IA[p] = IA[p] + X[i].T @ IA[i] @ X[i]
            pA[p] = pA[p] + X[i].T @ (IA[i] @ c[i] + pA[i])
            continue
        # a host: eliminate its group's coordinate first (a_H is this body's own acceleration)
        for g, (H, gi) in host_of.items():
            if H != i: continue
            Ug, Dg = AL[i], BE[i]; ug = tau[gi] - GA[i]
            gU[g], gD[g], gu[g] = Ug.copy(), Dg, ug
            IA[i] = IA[i] - np.outer(Ug, Ug) / Dg
            pA[i] = pA[i] + Ug * ug / Dg
        U[i] = IA[i] @ S[i]; D = S[i].T @ U[i]; Dinv[i] = np.linalg.inv(D)
        uu[i] = TAU_OWN[i] - S[i].T @ pA[i]
        if p == 0: continue
        Ia = IA[i] - U[i] @ Dinv[i] @ U[i].T
        pa = pA[i] + Ia @ c[i] + U[i] @ Dinv[i] @ uu[i]
        IA[p] = IA[p] + X[i].T @ Ia @ X[i]
        pA[p] = pA[p] + X[i].T @ pa
    a = [None] * nb; qdd = {}
    grav = np.array([0, 0, 9.81, 0, 0, 0.0])
    gq = {}
    for i in range(1, nb):
        p = model.parents[i]
        ap = a[p] if p > 0 else grav
        ai = X[i] @ ap + c[i]
        if role[i] == 2:
            x = Dinv[i] @ (uu[i] - U[i].T @ ai)
            qdd[i] = x; gq[GROUP[i]] = x[0]
            a[i] = ai + S[i] @ x
            continue
        if role[i] == 1:
            g = GROUP[i]
            a[i] = ai + mult[i] * S[i][:, 0] * gq[g]
            qdd[i] = mult[i] * gq[g]
            continue
        x = Dinv[i] @ (uu[i] - U[i].T @ ai)
        qdd[i] = x
        a[i] = ai + S[i] @ x
        for g, (H, gi) in host_of.items():
            if H == i: gq[g] = (gu[g] - gU[g] @ a[i]) / gD[g]
    return qdd, gq

if __name__ == '__main__':
    path, floating = sys.argv[1], sys.argv[2] == 'ff'
    model, mim = load(path, floating)
    data = model.createData()
    names = list(model.names)
    jid = {n: i for i, n in enumerate(names)}
    # groups: leader -> members (leader first), host = parent of the topmost members
    leaders = sorted({l for (l, m, o) in mim.values()})
    role = [0] * model.njoints; mult = [1.0] * model.njoints; GROUP = [None] * model.njoints
    host_of = {}
    for g, L in enumerate(leaders):
        members = [jid[L]] + [jid[f] for f, (l, m, o) in mim.items() if l == L]
        for k in members:
            role[k] = 1; GROUP[k] = g
        for f, (l, m, o) in mim.items():
            if l == L: mult[jid[f]] = m
        tops = {model.parents[k] for k in members if role[model.parents[k]] == 0 or GROUP[model.parents[k]] != g}
        top_members = [k for k in members if GROUP[model.parents[k]] != g]
        if top_members == [jid[L]]:
            role[jid[L]] = 2
        else:
            assert len(tops) == 1 and all(h != tops for h, _ in host_of.values()), (L, tops)
            host_of[g] = (tops.pop(), model.joints[jid[L]].idx_v)
    rng = np.random.default_rng(1)
    worst = 0.0
    for trial in range(5):
        q = pin.neutral(model)
        off = 7 if floating else 0
        if floating:
            q[:3] = rng.uniform(-1, 1, 3); qq = rng.normal(size=4); q[3:7] = qq / np.linalg.norm(qq)
        q[off:] = rng.uniform(-1, 1, model.nq - off)
        v = rng.uniform(-3, 3, model.nv)
        # enforce the couplings on q and v
        for f, (L, m, o) in mim.items():
            q[model.joints[jid[f]].idx_q] = m * q[model.joints[jid[L]].idx_q] + o
            v[model.joints[jid[f]].idx_v] = m * v[model.joints[jid[L]].idx_v]
        indep = [i for i in range(1, model.njoints) if names[i] not in mim]
        # G: full v = G v_c
        cols = []
        for i in indep:
            for k in range(model.joints[i].nv): cols.append(model.joints[i].idx_v + k)
        G = np.zeros((model.nv, len(cols)))
        for c_, col in enumerate(cols): G[col, c_] = 1.0
        for f, (L, m, o) in mim.items():
            G[model.joints[jid[f]].idx_v, cols.index(model.joints[jid[L]].idx_v)] = m
        tau_c = rng.uniform(-5, 5, len(cols))
        M = pin.crba(model, data, q); M = np.triu(M) + np.triu(M, 1).T
        h = pin.rnea(model, data, q, v, np.zeros(model.nv))
        qdd_c = np.linalg.solve(G.T @ M @ G, tau_c - G.T @ h)
        # the group ABA: tau on full coordinates (the user's tau on independent ones; a group's at its leader)
        tau_full = np.zeros(model.nv)
        for c_, col in enumerate(cols): tau_full[col] = tau_c[c_]
        TAU_OWN = [None] + [tau_full[model.joints[i].idx_v: model.joints[i].idx_v + model.joints[i].nv] for i in range(1, model.njoints)]
        X, S, I = spatial(model, data, q, v)
        qdd, gq = group_aba(model, X, S, I, v, tau_full, role, mult, host_of, TAU_OWN, GROUP)
        qdd_full = np.zeros(model.nv)
        for i in range(1, model.njoints):
            iv = model.joints[i].idx_v; n = model.joints[i].nv
            qdd_full[iv:iv + n] = qdd[i]
        err = np.abs(qdd_full[cols] - qdd_c).max() / max(1, np.abs(qdd_c).max())
        worst = max(worst, err)
        # the full-coordinate accelerations are G qdd_c
        err2 = np.abs(qdd_full - G @ qdd_c).max() / max(1, np.abs(qdd_c).max())
        worst = max(worst, err2)
    print(path.split('/')[-1], 'floating' if floating else 'fixed', 'groups', len(leaders), 'worst rel err', worst)
