"""Analytic derivatives of the JAX front end: a row with gradient and VJP rows (the signature table's "derivative" and
"vjp") becomes a jax.custom_jvp whose tangent is one linear primitive: evaluated (jvp, jacfwd) from the gradient row
times the tangent, transposed (vjp, grad) into the VJP row. The q tangent is mapped to each joint's local tangent
(quaternions through their normalisation), so q's cotangent is the exact pullback onto the nq-wide q."""

import functools

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from . import _signatures
from ._errors import DifferentiationError

# an input whose Jacobian block is another row's output rather than columns of the gradient row: dqdd/du = M^-1
_BLOCK_ROWS = {"u": "minv"}


# ---- the tangent map of q: dq (nq wide) -> each joint's local tangent (nv wide) ----

def _quat_tangent(quat, dquat, wxyz):
    """2 vec(conj(u) (x) du), u = quat / |quat|: the angular velocity in the rotated frame of a change dquat"""
    if wxyz:
        quat = jnp.concatenate([quat[:, 1:], quat[:, :1]], axis=1)
        dquat = jnp.concatenate([dquat[:, 1:], dquat[:, :1]], axis=1)
    n = jnp.linalg.norm(quat, axis=1, keepdims=True)
    u = quat / n
    du = (dquat - u * jnp.sum(u * dquat, axis=1, keepdims=True)) / n
    v, w = u[:, :3], u[:, 3:]
    return 2.0 * (w * du[:, :3] - du[:, 3:] * v - jnp.cross(v, du[:, :3]))


def _rotation(quat_xyzw):
    """R of unit-normalised quaternions (B, 4) [x y z w] -> (B, 3, 3)"""
    u = quat_xyzw / jnp.linalg.norm(quat_xyzw, axis=1, keepdims=True)
    x, y, z, w = u[:, 0], u[:, 1], u[:, 2], u[:, 3]
    return jnp.stack([
        jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        jnp.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        jnp.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def q_tangent(model, convention, q, dq):
    """the local tangent (B, nv) of a change dq (B, nq) of q, joint by joint (docs/python.md, the gradient's q
    columns): revolute, continuous, prismatic: the coordinate; free: [R^T dp (MuJoCo: dp, world); the angular
    velocity of the normalised quaternion]; spherical: that angular velocity; planar [x, y, theta]: [R(theta)^T
    [dx, dy], dtheta]. Linear in dq."""
    wxyz = convention == "mujoco"
    parts = []  # (first tangent index, its columns)
    for jt, iq, iv, nq, mm in zip(model.joint_types, model.joint_idx_q, model.joint_idx_v, model.joint_nq,
                                  model.joint_mimic):
        if mm is not None or nq == 0:
            continue  # a coupled mimic joint has no coordinate of its own
        cols = []
        if jt == "free":
            p_dot = dq[:, iq:iq + 3]
            quat, dquat = q[:, iq + 3:iq + 7], dq[:, iq + 3:iq + 7]
            if wxyz:
                lin = p_dot
            else:
                lin = jnp.einsum("bji,bj->bi", _rotation(quat), p_dot)
            cols = [lin, _quat_tangent(quat, dquat, wxyz)]
        elif jt == "spherical":
            cols = [_quat_tangent(q[:, iq:iq + 4], dq[:, iq:iq + 4], wxyz)]
        elif jt == "planar":
            c, s = jnp.cos(q[:, iq + 2:iq + 3]), jnp.sin(q[:, iq + 2:iq + 3])
            dx, dy = dq[:, iq:iq + 1], dq[:, iq + 1:iq + 2]
            cols = [c * dx + s * dy, -s * dx + c * dy, dq[:, iq + 2:iq + 3]]
        else:
            assert nq == 1, jt
            cols = [dq[:, iq:iq + 1]]
        parts.append((iv, cols))
    return jnp.concatenate([c for _, cols in sorted(parts, key=lambda p: p[0]) for c in cols], axis=1)


# ---- the linear primitive: tangent_out = J(primals) [tangents], its transpose the VJP row ----

_lin_p = Primitive("grid_rbd_linearized")


def _present_names(R, present):
    """the names of row R's inputs present in a call (bit k of present: input k)"""
    return [a["name"] for i, a in enumerate(R["inputs"]) if present >> i & 1]


def _by_name(R, present, primals):
    """the call's present inputs by name (the gradient, VJP and block rows take them by name)"""
    return dict(zip(_present_names(R, present), primals))


def _present_args(R, by_name):
    """row R's inputs found in by_name, in its order, and their present bits (the flat call's operands)"""
    args, present = [], 0
    for i, a in enumerate(R["inputs"]):
        if a["name"] in by_name:
            args.append(by_name[a["name"]])
            present |= 1 << i
    return args, present


def _split_primals(args, n_primal):
    return args[:n_primal], args[n_primal:]


def _lin_impl(*args, handle, row, present, attrs, n_primal):
    """J(primals) times the tangents: the gradient row's columns, and the block rows (minv for u)"""
    primals, tangents = _split_primals(args, n_primal)
    R = _signatures.ROWS[row]
    grad = _signatures.ROWS[R["derivative"]]
    diff = _signatures.differentiable_inputs(R)
    # the gradient row takes the row's inputs (the same names, the same present ones)
    G, = call(handle, grad, list(primals), present, attrs)
    nv = handle._np.nv
    k = G.shape[-1] // nv  # the inputs the gradient row covers (q, qd: 2; q: 1)
    t = jnp.concatenate(tangents[:k], axis=1)
    out = jnp.einsum("bij,bj->bi", G, t)
    by_name = _by_name(R, present, primals)
    for name, tan in zip(diff[k:], tangents[k:]):
        block_row = _signatures.row(_BLOCK_ROWS[name])
        blk, = call(handle, block_row, [by_name[a["name"]] for a in block_row["inputs"]], 1, ())
        out = out + jnp.einsum("bij,bj->bi", blk, tan)
    return out


def _row_output(*args, handle, row, **params):
    """the abstract value of a linearised primitive: row's one output for the batch of the first operand"""
    (_, shape), = handle._rows[row]["outputs"]
    return jax.core.ShapedArray((args[0].shape[0],) + shape, args[0].dtype)


def _lin_transpose(ct, *args, handle, row, present, attrs, n_primal):
    """the cotangents of the tangents: the VJP row at the primals for the cotangent ct"""
    primals, tangents = _split_primals(args, n_primal)
    assert not any(ad.is_undefined_primal(p) for p in primals), "the primals of a linearised call are known"
    R = _signatures.ROWS[row]
    nv = handle._np.nv
    if type(ct) is ad.Zero:
        return [None] * n_primal + [jnp.zeros((primals[0].shape[0], nv), primals[0].dtype)] * len(tangents)
    vjp = _signatures.ROWS[R["vjp"]]
    by_name = _by_name(R, present, primals)
    by_name["cotangent"] = ct
    out, = call(handle, vjp, *_present_args(vjp, by_name), attrs)
    cts = [out[:, i * nv:(i + 1) * nv] for i in range(len(tangents))]
    return [None] * n_primal + [c if ad.is_undefined_primal(t) else None for c, t in zip(cts, tangents)]


def _batch_merged(prim, args, dims, **params):
    """vmap of a linearised primitive: every operand's mapped axis to the front, merged into the batch axis"""
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    flat = []
    for a, d in zip(args, dims):
        a = jnp.broadcast_to(a, (size,) + a.shape) if d is None else jnp.moveaxis(a, d, 0)
        flat.append(a.reshape((-1,) + a.shape[2:]))
    out = prim.bind(*flat, **params)
    return out.reshape((size, -1) + out.shape[1:]), 0


def _lin_jvp(primals, tangents, **params):
    raise DifferentiationError("grid_rbd: forward over forward (jacfwd(jacfwd(...))) is not available from the JAX "
                               "front end: take second derivatives forward over reverse (jax.hessian, "
                               "jacfwd(grad(...))), through the second-order rows")


def _define(prim, impl, transpose, jvp):
    """a linearised primitive's rules: impl (also its lowering), its transpose and jvp, vmap by _batch_merged"""
    prim.def_impl(impl)
    prim.def_abstract_eval(_row_output)
    mlir.register_lowering(prim, mlir.lower_fun(impl, multiple_results=False))
    ad.primitive_transposes[prim] = transpose
    ad.primitive_jvps[prim] = jvp
    batching.primitive_batchers[prim] = functools.partial(_batch_merged, prim)


_define(_lin_p, _lin_impl, _lin_transpose, _lin_jvp)


# ---- the differentiable call of one row ----

def _row_function(handle, R, present, attrs):
    """row R's FFI call on flat operands as a jax.custom_jvp (the caller defines its jvp)"""
    return jax.custom_jvp(lambda *xs: handle._flat_call(R, list(xs), present, attrs))


@functools.lru_cache(maxsize=None)
def _tangent_of_q(handle):
    """q_tangent of the handle's model as one compiled computation (eager calls would dispatch its per-joint
    operations one by one)"""
    model, conv = handle._np._model, handle._np.output_convention
    return jax.jit(lambda x, t: q_tangent(model, conv, x, t))


def _local_tangents(R, names, primals, tangents, diff, tangent_of_q, also=()):
    """the tangents of row R's inputs in diff along their local tangent (q's through tangent_of_q; None for a symbolic
    zero), after refusing a nonzero tangent of an input in neither diff nor also"""
    for name, t in zip(names, tangents):
        if name not in diff and name not in also and not isinstance(t, SymbolicZero):
            raise DifferentiationError(_signatures.not_differentiable_in_message(R, name))
    by_name = dict(zip(names, zip(primals, tangents)))
    return [None if isinstance(t, SymbolicZero) else tangent_of_q(x, t) if name == "q" else t
            for name, (x, t) in ((name, by_name[name]) for name in diff)]


@functools.lru_cache(maxsize=None)
def _cached(handle, row_id, present, attrs):
    R = _signatures.ROWS[row_id]
    names = _present_names(R, present)
    diff = _signatures.differentiable_inputs(R)
    tangent_of_q = _tangent_of_q(handle)
    f = _row_function(handle, R, present, attrs)

    def f_jvp(primals, tangents):
        out = f(*primals)
        x0 = primals[0]
        lin = [jnp.zeros((x0.shape[0], handle._np.nv), x0.dtype) if d is None else d
               for d in _local_tangents(R, names, primals, tangents, diff, tangent_of_q)]
        tout = _lin_p.bind(*primals, *lin, handle=handle, row=row_id, present=present, attrs=attrs,
                           n_primal=len(primals))
        return out, [tout]

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


@functools.lru_cache(maxsize=None)
def _forward_only(handle, row_id, present, attrs):
    R = _signatures.ROWS[row_id]
    f = _row_function(handle, R, present, attrs)

    def f_jvp(primals, tangents):
        raise DifferentiationError(_signatures.not_differentiable_message(R, "JAX"))

    f.defjvp(f_jvp)
    return f


# ---- a VJP row differentiated once more: tangent = VJP(primals, dlambda) + lambda_i H[i, a, b] dx_b ----

_so_p = Primitive("grid_rbd_second_order_linearized")


def _so_impl(*args, handle, row, present, attrs, n_primal, terms):
    """the tangent of VJP row `row` at its primals for the cotangent's tangent dlam and the covered inputs' local
    tangents dx (B, m nv); terms: (dlam present, dx present)"""
    primals, (dlam, dx) = _split_primals(args, n_primal)
    V = _signatures.ROWS[row]
    so = _signatures.row(_signatures.SECOND_ORDER[V["name"]])
    names = _present_names(V, present)
    by_name = dict(zip(names, primals))
    res = jnp.zeros((primals[0].shape[0], dx.shape[1]), primals[0].dtype)
    if terms[0]:  # linear in the cotangent: the VJP row at its tangent
        res = res + call(handle, V, [dlam if n == "cotangent" else p for n, p in zip(names, primals)], present, attrs)[0]
    if terms[1]:
        H = _signatures.hessian_blocks(jnp, so["name"], call(handle, so, *_present_args(so, by_name), ()))
        res = res + jnp.einsum("bi,biak,bk->ba", by_name["cotangent"], H, dx)
    return res


def _so_refuse(*args, **params):
    raise DifferentiationError("grid_rbd: a third derivative, or reverse mode over reverse mode (jacrev(grad(...))): "
                               "second derivatives are taken forward over reverse (jax.hessian, jacfwd(grad(...)))")


_define(_so_p, _so_impl, _so_refuse, _so_refuse)


@functools.lru_cache(maxsize=None)
def _second_order_vjp(handle, row_id, present, attrs):
    """a VJP row differentiated once more (forward over reverse: jax.hessian, jacfwd(grad)): its tangent is _so_p, the
    VJP row at the cotangent's tangent plus lambda_i H[i, a, b] dx_b, H the second-order row's blocks (hessian_blocks)
    at the same point, dx the tangents of the inputs it covers (q's in its local tangent)"""
    V = _signatures.ROWS[row_id]
    so = _signatures.row(_signatures.SECOND_ORDER[V["name"]])
    names = _present_names(V, present)
    diff = _signatures.vjp_inputs(V)
    tangent_of_q = _tangent_of_q(handle)
    f = _row_function(handle, V, present, attrs)

    def f_jvp(primals, tangents):
        out = f(*primals)
        dx = _local_tangents(V, names, primals, tangents, diff, tangent_of_q, also=("cotangent",))
        lam, dlam = dict(zip(names, zip(primals, tangents)))["cotangent"]
        nv, B = handle._np.nv, lam.shape[0]
        terms = (not isinstance(dlam, SymbolicZero), any(d is not None for d in dx))
        if terms[1] and so["id"] in handle._missing:
            raise DifferentiationError(_signatures.second_order_missing_message(V, so["name"], "JAX"))
        dlam = jnp.zeros_like(lam) if not terms[0] else dlam
        dx = jnp.concatenate([jnp.zeros((B, nv), lam.dtype) if d is None else d for d in dx], axis=1)
        tout = _so_p.bind(*primals, dlam, dx, handle=handle, row=row_id, present=present, attrs=attrs,
                          n_primal=len(primals), terms=terms)
        return out, [tout]

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


def call(handle, row, args, present, attrs):
    """a row's FFI call on flat operands -> list of outputs: analytic derivatives where the row has them (first order,
    and a VJP row's once more through its second-order row), a clear DifferentiationError when differentiated
    otherwise"""
    kind = _cached if row["vjp"] >= 0 else _second_order_vjp if row["name"] in _signatures.SECOND_ORDER else \
        _forward_only
    return kind(handle, row["id"], present, tuple(attrs))(*args)


def differentiable(handle, row, present, attrs):
    """the custom_jvp function of a row with gradient and VJP rows over its present flat inputs"""
    return _cached(handle, row["id"], present, attrs)
