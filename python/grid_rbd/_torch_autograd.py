"""Analytic derivatives of the PyTorch front end: a row with a VJP row (the signature table's "vjp") runs under an
autograd.Function whose backward is that VJP row, its q block pulled back from each joint's local tangent onto the
nq-wide q (quaternions through their normalisation), and whose forward-mode rule is the gradient row times the
tangents; every other row, and every derivative row, runs under one whose backward and forward-mode rules raise
DifferentiationError, so nothing is ever differentiated to a silent zero."""

import inspect

import torch

from . import _signatures
from ._errors import DifferentiationError

_is_wrapped = torch._C._functorch.is_functorch_wrapped_tensor


# ---- the pullback of q: a cotangent of the local tangent (nv wide) -> the cotangent of q (nq wide) ----

def _quat_pullback(quat, ct, wxyz):
    """the transpose of dquat -> 2 vec(conj(u) (x) du), u = quat / |quat| (the rotated frame's angular velocity of a
    change dquat): for omega = A du, du = (I - u u^T) dquat / |quat|, it is (I - u u^T) A^T ct / |quat|"""
    if wxyz:
        quat = torch.cat([quat[..., 1:], quat[..., :1]], dim=-1)
    n = torch.linalg.vector_norm(quat, dim=-1, keepdim=True)
    u = quat / n
    v, w = u[..., :3], u[..., 3:]
    # A = 2 [w I - [v]x | -v], so A^T ct = 2 [w ct + v x ct; -v . ct]
    g = 2.0 * torch.cat([w * ct + torch.linalg.cross(v, ct, dim=-1), -(v * ct).sum(-1, keepdim=True)], dim=-1)
    out = (g - u * (u * g).sum(-1, keepdim=True)) / n
    if wxyz:
        out = torch.cat([out[..., 3:], out[..., :3]], dim=-1)
    return out


def _quat_tangent(quat, dquat, wxyz):
    """2 vec(conj(u) (x) du), u = quat / |quat|: the rotated frame's angular velocity of a change dquat"""
    if wxyz:
        quat = torch.cat([quat[..., 1:], quat[..., :1]], dim=-1)
        dquat = torch.cat([dquat[..., 1:], dquat[..., :1]], dim=-1)
    n = torch.linalg.vector_norm(quat, dim=-1, keepdim=True)
    u = quat / n
    du = (dquat - u * (u * dquat).sum(-1, keepdim=True)) / n
    v, w = u[..., :3], u[..., 3:]
    return 2.0 * (w * du[..., :3] - du[..., 3:] * v - torch.linalg.cross(v, du[..., :3], dim=-1))


def _rotate(quat_xyzw, c):
    """R c for the rotation R of the normalised quaternions (..., 4) [x y z w]: c + w t + v x t, t = 2 v x c"""
    u = quat_xyzw / torch.linalg.vector_norm(quat_xyzw, dim=-1, keepdim=True)
    v, w = u[..., :3], u[..., 3:]
    t = 2.0 * torch.linalg.cross(v, c, dim=-1)
    return c + w * t + torch.linalg.cross(v, t, dim=-1)


def q_is_tangent(model):
    """1 when q's change is its local tangent (every joint one coordinate, nq = nv): the pullback is the identity"""
    return model.nq == model.nv and all(jt not in ("free", "spherical", "planar") for jt in model.joint_types)


class QMap:
    """The map the gradients' q columns use (docs/python.md), joint by joint, from a change dq (..., nq) of q to the
    local tangent (..., nv): revolute, continuous, prismatic: the coordinate; free: [R^T dp (MuJoCo: dp, world); the
    normalised quaternion's angular velocity]; spherical: that angular velocity; planar [x, y, theta]: [R(theta)^T
    [dx, dy], dtheta]. tangent(q, dq) applies it (forward mode), pullback(q, ct) its transpose (reverse mode: a mimic
    joint's coordinate gets zero, it has none)."""

    def __init__(self, model, convention):
        self.nq, self.nv, self.wxyz = model.nq, model.nv, convention == "mujoco"
        one_q, one_v, self.multi = [], [], []
        for jt, iq, iv, nq, mm in zip(model.joint_types, model.joint_idx_q, model.joint_idx_v, model.joint_nq,
                                      model.joint_mimic):
            if mm is not None or nq == 0:
                continue
            if jt in ("free", "spherical", "planar"):
                self.multi.append((jt, iq, iv))
            else:
                assert nq == 1, jt
                one_q.append(iq)
                one_v.append(iv)
        # the one-coordinate joints as runs of consecutive coordinates (slices: a tensor index costs 10x more)
        self.runs = []
        for iq, iv in zip(one_q, one_v):
            if self.runs and self.runs[-1][0] + self.runs[-1][2] == iq and self.runs[-1][1] + self.runs[-1][2] == iv:
                self.runs[-1][2] += 1
            else:
                self.runs.append([iq, iv, 1])

    def tangent(self, q, dq):
        out = dq.new_zeros(dq.shape[:-1] + (self.nv,))
        for iq, iv, n in self.runs:
            out[..., iv:iv + n] = dq[..., iq:iq + n]
        wxyz = self.wxyz
        for jt, iq, iv in self.multi:
            if jt == "free":
                quat = q[..., iq + 3:iq + 7]
                dp = dq[..., iq:iq + 3]
                if wxyz:
                    out[..., iv:iv + 3] = dp
                else:  # R^T dp: the rotation of the conjugate quaternion
                    out[..., iv:iv + 3] = _rotate(torch.cat([-quat[..., :3], quat[..., 3:]], dim=-1), dp)
                out[..., iv + 3:iv + 6] = _quat_tangent(quat, dq[..., iq + 3:iq + 7], wxyz)
            elif jt == "spherical":
                out[..., iv:iv + 3] = _quat_tangent(q[..., iq:iq + 4], dq[..., iq:iq + 4], wxyz)
            else:
                c, s = torch.cos(q[..., iq + 2]), torch.sin(q[..., iq + 2])
                dx, dy = dq[..., iq], dq[..., iq + 1]
                out[..., iv] = c * dx + s * dy
                out[..., iv + 1] = -s * dx + c * dy
                out[..., iv + 2] = dq[..., iq + 2]
        return out

    def pullback(self, q, ct):
        out = ct.new_zeros(ct.shape[:-1] + (self.nq,))
        for iq, iv, n in self.runs:
            out[..., iq:iq + n] = ct[..., iv:iv + n]
        wxyz = self.wxyz
        for jt, iq, iv in self.multi:
            if jt == "free":
                c_lin, c_ang = ct[..., iv:iv + 3], ct[..., iv + 3:iv + 6]
                quat = q[..., iq + 3:iq + 7]
                if wxyz:
                    out[..., iq:iq + 3] = c_lin
                else:  # lin = R^T dp, so dp's cotangent is R c_lin
                    out[..., iq:iq + 3] = _rotate(quat, c_lin)
                out[..., iq + 3:iq + 7] = _quat_pullback(quat, c_ang, wxyz)
            elif jt == "spherical":
                out[..., iq:iq + 4] = _quat_pullback(q[..., iq:iq + 4], ct[..., iv:iv + 3], wxyz)
            else:
                c, s = torch.cos(q[..., iq + 2]), torch.sin(q[..., iq + 2])
                a, b = ct[..., iv], ct[..., iv + 1]
                out[..., iq] = c * a - s * b
                out[..., iq + 1] = s * a + c * b
                out[..., iq + 2] = ct[..., iv + 2]
        return out


# ---- the autograd.Functions ----

# robot key -> the TorchRobotHandle that runs its rows (the Functions take the key, a string a traced graph keeps)
FRONTS = {}


def _vmap_rule(info, in_dims, key, row_id, attrs, *inputs):
    """a row under torch.vmap: each input's mapped dimension moved to the front (an unmapped input expanded to it)
    and merged with the batch axis, one call, the outputs split back (mapped along dimension 0)"""
    front = FRONTS[key]
    V = info.batch_size
    c = front.concrete_rows[row_id]
    first = None  # the logical leading dimensions of the call (the first present input's)
    flat = []
    for (name, shape, *_), x, d in zip(c["inputs"], inputs, in_dims[3:]):
        if x is None:
            flat.append(None)
            continue
        x = x.movedim(d, 0) if d is not None else x.expand(V, *x.shape)
        lead = tuple(x.shape[1:x.dim() - len(shape)])
        first = lead if first is None else first
        flat.append(x.reshape((-1,) + tuple(shape)))
    out = front.call(_signatures.ROWS[row_id], flat, attrs)
    outs = out if isinstance(out, tuple) else (out,)
    outs = tuple(o.reshape((V,) + first + tuple(shape)) for o, (_, shape) in zip(outs, c["outputs"]))
    return (outs, (0,) * len(outs)) if isinstance(out, tuple) else (outs[0], 0)


class ForwardOnly(torch.autograd.Function):
    """a row without analytic derivatives (or a VJP row inside a backward): its backward raises"""

    @staticmethod
    def forward(key, row_id, attrs, *inputs):
        return FRONTS[key].run(row_id, inputs, attrs)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.row_id = inputs[1]

    vmap = staticmethod(_vmap_rule)

    @staticmethod
    def backward(ctx, *grads):
        raise DifferentiationError(_signatures.not_differentiable_message(_signatures.ROWS[ctx.row_id], "PyTorch"))



class Differentiable(torch.autograd.Function):
    """a row with a VJP row: the backward is that row at the saved inputs for the output's cotangent"""

    @staticmethod
    def forward(key, row_id, attrs, *inputs):
        return FRONTS[key].run(row_id, inputs, attrs)

    @staticmethod
    def setup_context(ctx, inputs, output):
        key, row_id, attrs, *xs = inputs
        ctx.key, ctx.row_id, ctx.attrs = key, row_id, attrs
        ctx.save_for_backward(*xs)
        ctx.save_for_forward(*xs)

    vmap = staticmethod(_vmap_rule)

    @staticmethod
    def backward(ctx, grad):
        R = _signatures.ROWS[ctx.row_id]
        front, xs = FRONTS[ctx.key], ctx.saved_tensors
        diff, V, picks = _VJP_PLANS[ctx.row_id]
        need = ctx.needs_input_grad
        for i, name in enumerate(a["name"] for a in R["inputs"]):
            if need[3 + i] and name not in diff:
                raise DifferentiationError(_signatures.not_differentiable_in_message(R, name))
        # (a sum's cotangent arrives expanded, stride 0: made contiguous, the row takes the library's direct path)
        grad = grad.contiguous()
        vjp_inputs = [grad if k is None else xs[k] if k >= 0 else None for k in picks]
        if torch.is_grad_enabled():
            # a VJP row has no VJP row: under create_graph it runs as ForwardOnly, so a second derivative raises
            ct = front.call(V, vjp_inputs, ctx.attrs)
        else:  # no graph over the backward (create_graph=False): the row on the tensors directly
            ct = front.run(V["id"], vjp_inputs, ctx.attrs)
        nv = front.nv
        grads = [None] * len(R["inputs"])
        for k, name in enumerate(diff):
            if not need[3 + k]:
                continue
            g = ct[..., k * nv:(k + 1) * nv] if len(diff) > 1 else ct
            if name == "q" and front.q_map is not None:
                g = front.pull_q(xs[0], g)
            grads[k] = g
        return (None, None, None, *grads)


def _vjp_plan(R):
    """what a backward of row R reads: the inputs it is differentiable in, its VJP row and, per input of that row, the
    position of R's input it takes (None: the cotangent, -1: absent)"""
    names = [a["name"] for a in R["inputs"]]
    V = _signatures.ROWS[R["vjp"]]
    picks = tuple(None if a["name"] == "cotangent" else names.index(a["name"]) if a["name"] in names else -1
                  for a in V["inputs"])
    assert names[0] == "q"
    return tuple(_signatures.differentiable_inputs(R)), V, picks


# (a constant table: torch.compile traces the backward, and a dict read there is a guarded constant)
_VJP_PLANS = {R["id"]: _vjp_plan(R) for R in _signatures.ROWS if R["vjp"] >= 0}


class EagerDifferentiable(torch.autograd.Function):
    """Differentiable's rule where no torch.func transform, forward-mode level or torch.compile is present, as an
    old-style Function: torch binds a setup_context Function's arguments to its signature on every call (measured
    6 us of a 10 us forward)"""

    @staticmethod
    def forward(ctx, key, row_id, attrs, *inputs):
        ctx.key, ctx.row_id, ctx.attrs = key, row_id, attrs
        ctx.save_for_backward(*inputs)
        return FRONTS[key].run(row_id, inputs, attrs)

    backward = Differentiable.backward


# the forward-mode rules, in subclasses: torch.compile cannot trace a Function with a custom jvp, and the front end
# uses these only while a forward-mode tangent may be present (a dual level open, torch.func's tensors)
class ForwardOnlyJvp(ForwardOnly):
    @staticmethod
    def jvp(ctx, *tangents):
        raise DifferentiationError(_signatures.not_differentiable_message(_signatures.ROWS[ctx.row_id], "PyTorch"))


class DifferentiableJvp(Differentiable):
    @staticmethod
    def jvp(ctx, *tangents):
        """forward mode: the gradient row times the inputs' tangents (q's mapped to the local tangent), and M^-1
        times u's (forward dynamics)"""
        R = _signatures.ROWS[ctx.row_id]
        front, xs = FRONTS[ctx.key], ctx.saved_tensors
        names = [a["name"] for a in R["inputs"]]
        diff = _signatures.differentiable_inputs(R)
        for name, t in zip(names, tangents[3:]):
            # (forward AD hands a zero tangent to an input that has none; torch.func only real ones)
            if t is not None and name not in diff and (_is_wrapped(t) or bool(t.any())):
                raise DifferentiationError(_signatures.not_differentiable_in_message(R, name))
        by_name = dict(zip(names, xs))
        tan = dict(zip(names, tangents[3:]))
        G_row = _signatures.ROWS[R["derivative"]]
        G = front.call(G_row, [by_name.get(a["name"]) for a in G_row["inputs"]], ctx.attrs)
        nv = front.nv
        k = G.shape[-1] // nv  # the inputs the gradient row covers (q, qd: 2; q: 1)
        lin = []
        for name in diff[:k]:
            t = tan.get(name)
            if t is None:
                t = G.new_zeros(G.shape[:-2] + (nv,))
            elif name == "q" and front.q_map is not None:
                t = front.q_map.tangent(by_name["q"], t)
            lin.append(t)
        out = torch.einsum("...ij,...j->...i", G, torch.cat(lin, dim=-1))
        for name in diff[k:]:  # u: dqdd/du = M^-1
            if tan.get(name) is not None:
                Minv = front.call(_signatures.row("minv"), [by_name["q"]], ())
                out = out + torch.einsum("...ij,...j->...i", Minv, tan[name])
        return out


class SecondOrderVjp(ForwardOnly):
    """a VJP row with a second-order row (_signatures.SECOND_ORDER), differentiated once more in forward mode (forward
    over reverse: torch.func.hessian, jacfwd(jacrev)): the tangent is the VJP row at the cotangent's tangent plus
    lambda_i H[i, a, b] dx_b (hessian_blocks at the same point; q's tangent mapped to its local tangent). Its backward
    (reverse over reverse) raises, as ForwardOnly's."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        key, row_id, attrs, *xs = inputs
        ctx.key, ctx.row_id, ctx.attrs = key, row_id, attrs
        ctx.save_for_forward(*xs)

    @staticmethod
    def jvp(ctx, *tangents):
        V = _signatures.ROWS[ctx.row_id]
        so = _signatures.row(_signatures.SECOND_ORDER[V["name"]])
        front, xs = FRONTS[ctx.key], ctx.saved_tensors
        names = [a["name"] for a in V["inputs"]]
        diff = _signatures.vjp_inputs(V)
        by_name, tan = dict(zip(names, xs)), dict(zip(names, tangents[3:]))
        for name, t in tan.items():
            if t is not None and name not in diff and name != "cotangent" and (_is_wrapped(t) or bool(t.any())):
                raise DifferentiationError(_signatures.not_differentiable_in_message(V, name))
        lam = by_name["cotangent"]
        res = None
        if tan.get("cotangent") is not None:  # linear in the cotangent: the VJP row at its tangent
            res = front.call(V, [tan["cotangent"] if n == "cotangent" else by_name[n] for n in names], ctx.attrs)
        dx = [tan.get(name) for name in diff]
        if any(d is not None for d in dx):
            if so["id"] in front._missing:
                raise DifferentiationError(_signatures.second_order_missing_message(V, so["name"], "PyTorch"))
            nv = front.nv
            dx = [lam.new_zeros(lam.shape[:-1] + (nv,)) if d is None else
                  front.q_map.tangent(by_name["q"], d) if name == "q" and front.q_map is not None else d
                  for name, d in zip(diff, dx)]
            H = _signatures.hessian_blocks(torch, so["name"], front.call(so, [by_name.get(a["name"])
                                                                              for a in so["inputs"]], ()))
            term = torch.einsum("...i,...iak,...k->...a", lam, H, torch.cat(dx, dim=-1))
            res = term if res is None else res + term
        return res if res is not None else lam.new_zeros(lam.shape[:-1] + (len(diff) * front.nv,))


# Function.apply binds its arguments to forward's signature on every call (torch's _bind_default_args); computed once
# here, inspect.signature returns it at once (about 20 us a call saved)
for _fn in (ForwardOnly, Differentiable, ForwardOnlyJvp, DifferentiableJvp, SecondOrderVjp):
    _fn.forward.__signature__ = inspect.signature(_fn.forward)
