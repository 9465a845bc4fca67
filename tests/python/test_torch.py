"""The PyTorch front end (grid_rbd.torch): every row of the signature table equals the numpy handle on the same
library (float64 and float32, fixed and floating bases, coupled mimic joints) eagerly, through its op, under
torch.compile(fullgraph=True) and torch.library.opcheck; analytic gradients pass gradcheck (non-unit quaternions,
f_ext present, both output conventions); what has no derivative raises; bad arguments raise clear errors."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grid_rbd import _signatures  # noqa: E402
from grid_rbd._errors import NotAvailableError  # noqa: E402
import grid_rbd.torch as gt  # noqa: E402
import robot_cases  # noqa: E402
from robot_cases import CASES, case_path, handle_for, make_states, row_inputs, row_targets  # noqa: E402

torch.set_num_threads(1)

# (case, provider, dtype): fixed and floating bases, float32, coupled mimic hands, the reference provider
HANDLES = [("iiwa", "generated", "float64"), ("iiwa", "generated", "float32"), ("go2_ff", "generated", "float64"),
           ("go2_ff", "generated", "float32"), ("h1_2_ff", "reference", "float64"),
           ("g1_29dof_ff", "reference", "float64")]
B = 5


def torch_pair(case_id, provider, dtype, convention="pinocchio"):
    case = next(c for c in CASES if c.id == case_id)
    h = handle_for(case, case_path(case, robot_cases.synthetic_dir()), provider, dtype, convention=convention)
    return h, gt.TorchRobotHandle(h)


@pytest.fixture(scope="module", params=HANDLES, ids=["-".join(p) for p in HANDLES])
def pair(request):
    """(numpy handle, TorchRobotHandle on it)"""
    return torch_pair(*request.param)


def opt_in_pair(h, t, row):
    """(h, t), or for an opt-in row (second order: a default library leaves it out) on a generated library iiwa's
    library holding it (the binding is the same for every robot; tests/python/test_second_order.py checks the others)"""
    if not row["opt_in"] or h.provider != "generated":
        return h, t
    if h.name not in ("iiwa", "iiwa_f32"):
        pytest.skip("second-order rows: their front-end binding is checked on iiwa (their values in test_second_order)")
    h = robot_cases.opt_in_handle("iiwa", str(np.dtype(h.dtype)))
    return h, gt.TorchRobotHandle(h)


def same(a, b, dtype, tol=None):
    """equal to rounding: the same compiled code on the same inputs (0 in practice; tol for two computations)"""
    a = a.detach().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    b = np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    tol = tol or (1e-14 if dtype == np.float64 else 1e-6)
    err = np.abs(a - b).max() / max(1.0, np.abs(b).max()) if a.size else 0.0
    assert err <= tol, err


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("row", _signatures.ROWS, ids=[r["name"] for r in _signatures.ROWS])
def test_every_row_equals_the_numpy_handle(pair, row):
    """eager (the library on the tensors' memory) and the op itself (what a compiled graph calls)"""
    h, t = opt_in_pair(*pair, row)
    args = row_inputs(h, row, B)
    want = as_tuple(getattr(h, row["py_name"])(*args))
    got = as_tuple(getattr(t, row["py_name"])(*[torch.from_numpy(a) if isinstance(a, np.ndarray) else a
                                                  for a in args]))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert isinstance(g, torch.Tensor) and g.dtype == t.dtype
        same(g, w, h.dtype)
    # the op on the row's own inputs (a per-call target as its per-state table)
    raw = row_inputs(h, row, B, per_state=True)
    attrs = [h.ee_frame_ids[0] if a["name"] == "frame" else 2 if a["name"] == "reference_frame" else a["lo"]
             for a in row["attrs"]]
    via_op = as_tuple(gt.op(row["name"])(t.robot_key, *[torch.from_numpy(a) for a in raw], attrs))
    want = as_tuple(h._call(row["id"], tuple(raw), None, tuple(attrs)))
    assert len(want) == len(via_op)
    for w, o in zip(want, via_op):
        same(o, w, h.dtype)


def test_single_states_out_and_arrays(pair):
    h, t = pair
    q, qd, qdd, f = row_inputs(h, _signatures.row("rnea"), B)
    tq, tqd = torch.from_numpy(q), torch.from_numpy(qd)
    same(t.crba(tq[0]), h.crba(q[:1])[0], h.dtype)
    # out= tensors are written in place (a tuple for a row of two outputs)
    out = torch.zeros(B, h.nv, dtype=t.dtype)
    assert t.inverse_dynamics(tq, tqd, out=out) is out
    same(out, h.inverse_dynamics(q, qd), h.dtype)
    c, J = torch.zeros(B, 3, dtype=t.dtype), torch.zeros(B, 3, h.nv, dtype=t.dtype)
    t.com(tq, out=(c, J))
    same(J, h.com(q)[1], h.dtype)
    # numpy arrays are taken too (as tensors), frames by name
    frame = h.body_names[-1]
    for rf in ("WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED"):
        same(t.frame_jacobian(q, frame, rf), h.frame_jacobian(q, frame, rf), h.dtype)
    # DLPack arrays (a JAX array here) are taken without a copy; float64 JAX arrays need jax_enable_x64, which this
    # module leaves alone, so the float32 robots take this branch
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.asarray(q)
    if x.dtype == q.dtype:
        same(t.crba(x), h.crba(q), h.dtype)
    # a non-contiguous view is read as it is
    wide = torch.from_numpy(np.concatenate([q, q], axis=1))[:, :h.nq]
    same(t.crba(wide), h.crba(q), h.dtype)


def test_the_eager_path_takes_plain_tensors_only(pair):
    """_core.tensor_call reads plain CPU tensors (a view at an offset too) through their data pointers and declines
    anything else (a strided view, a negative-bit view, another dtype or shape, a tensor asking for a gradient), which
    the checked path then reads with the same values or refuses"""
    h, t = pair
    if t._plain is None:
        pytest.skip("a CUDA robot's CPU tensors take the host round trip")
    R = _signatures.row("rnea")
    q, qd, *_ = row_inputs(h, R, B + 1)
    ref = h.inverse_dynamics(q[1:], qd[1:])
    tq, tqd = torch.from_numpy(q)[1:], torch.from_numpy(qd)[1:]
    kind, run = t._plain, lambda *xs: gt.tensor_call(h._runner, R["id"], xs, (), kind)
    same(run(tq, tqd), ref, h.dtype)  # (an offset view is plain)
    same(run(tq[0], tqd[0]), ref[0], h.dtype)  # one state
    assert run(tq[:0], tqd[:0]).shape == (0, h.nv)
    neg = torch.complex(torch.zeros_like(tqd), -tqd).conj().imag  # qd, read through a negative bit
    strided = torch.from_numpy(np.concatenate([qd, qd], axis=1))[1:, :h.nv]
    other = tqd.to(torch.float32 if t.dtype == torch.float64 else torch.float64)
    assert neg.is_neg() and not strided.is_contiguous()
    for x in (neg, strided, other, tqd[:, :-1], tqd[:-1], tqd.clone().requires_grad_(), tqd.tolist()):
        assert run(tq, x) is NotImplemented
    assert run(tq, None) is NotImplemented  # (qd is required)
    # out= tensors: written in place; one sharing memory with an input, or asking for a gradient, is declined
    out = torch.empty(B, h.nv, dtype=t.dtype)
    assert gt.tensor_call(h._runner, R["id"], (tq, tqd), (), kind, out) is out
    same(out, ref, h.dtype)
    for o in (tqd, out.clone().requires_grad_(), out[:, :-1], (out,)):
        assert gt.tensor_call(h._runner, R["id"], (tq, tqd), (), kind, o) is NotImplemented
    alias = tqd.clone()
    assert t.inverse_dynamics(tq, alias, out=alias) is alias
    same(alias, ref, h.dtype)
    same(t.inverse_dynamics(tq, neg), ref, h.dtype)
    same(t.inverse_dynamics(tq, strided), ref, h.dtype)
    with pytest.raises(ValueError, match="dtype"):
        t.inverse_dynamics(tq, other)


def test_bad_arguments_raise_clear_errors(pair):
    h, t = pair
    q = torch.from_numpy(row_inputs(h, _signatures.row("crba"), B)[0])
    other = torch.float32 if t.dtype == torch.float64 else torch.float64
    name, mine = str(other)[6:], str(t.dtype)[6:]
    for grad in (False, True):  # the eager fast path and the checked one
        x = q.to(other).requires_grad_(grad)
        with pytest.raises(ValueError, match=f"dtype {name}; this robot takes {mine}"):
            t.inverse_dynamics(x, torch.zeros(B, h.nv, dtype=other))
    with pytest.raises(ValueError, match=f"{h.nq}"):
        t.crba(q[:, :-1])
    with pytest.raises(ValueError, match="leading dimensions"):
        t.nonlinear_effects(q.requires_grad_(), torch.zeros(B + 1, h.nv, dtype=t.dtype))
    with pytest.raises(ValueError, match="one batch axis"):
        t.crba(torch.stack([q, q]).requires_grad_())
    with pytest.raises(ValueError, match="unknown frame"):
        t.frame_jacobian(q, "no_such_link")
    with pytest.raises(TypeError, match="positional arguments"):
        t.crba(q, q)


def test_tensors_of_another_device_are_refused_clearly():
    h, t = torch_pair("iiwa", "generated", "float64")
    meta = torch.zeros(2, h.nq, dtype=torch.float64, device="meta")
    with pytest.raises(NotAvailableError, match="takes CPU tensors .*device='cuda'"):
        t.crba(meta)


def test_register_robot_backend_torch(tmp_path):
    t = gt.register_robot("iiwa_torch_subset", urdf_path=robot_cases.BUNDLED_IIWA, dtype="float64",
                          algorithm_list=["crba"], verbose=False, cache_dir=tmp_path)
    assert isinstance(t, gt.TorchRobotHandle) and "backend='torch'" in repr(t)
    q = torch.zeros(2, t.nq, dtype=torch.float64)
    same(t.crba(q), t.numpy_handle.crba(q.numpy()), np.float64)
    with pytest.raises(NotAvailableError, match="algorithm_list"):
        t.inverse_dynamics(q, q)


# ---- torch.compile and opcheck ----

COMPILE_PAIRS = [("iiwa", "generated", "float32"), ("go2_ff", "generated", "float64")]


@pytest.mark.parametrize("case", COMPILE_PAIRS, ids=["-".join(p) for p in COMPILE_PAIRS])
def test_compiled_graphs_equal_eager(case):
    """torch.compile(fullgraph=True) traces the ops through their fake kernels: a forward with a frame attribute and a
    two-output row (inductor), and a gradient through the autograd.Function (aot_eager)"""
    h, t = torch_pair(*case)
    q, qd, qdd, f = (torch.from_numpy(a) for a in row_inputs(h, _signatures.row("rnea"), B))
    frame = h.body_names[-1]

    def fwd(q, qd):
        c, J = t.com(q)
        return 2 * t.inverse_dynamics(q, qd, f_ext=f) + 1, t.frame_jacobian(q, frame, "WORLD"), J.sum(-1) + c

    got = torch.compile(fwd, fullgraph=True)(q, qd)
    for g, w in zip(got, fwd(q, qd)):
        same(g, w.numpy(), h.dtype)

    def loss(q, qd):
        return (t.inverse_dynamics(q, qd) ** 2).sum() + t.end_effector_pose(q).sum()

    qg, qdg = q.clone().requires_grad_(), qd.clone().requires_grad_()
    want = torch.autograd.grad(loss(qg, qdg), (qg, qdg))
    got = torch.autograd.grad(torch.compile(loss, fullgraph=True, backend="aot_eager")(qg, qdg), (qg, qdg))
    for g, w in zip(got, want):
        same(g, w.numpy(), h.dtype)


def test_opcheck_every_op():
    """torch.library.opcheck (schema, fake kernel, AOT dispatch) of every row's op on a floating base"""
    h0, t0 = torch_pair("go2_ff", "generated", "float64")
    for row in _signatures.ROWS:
        # (an opt-in row: go2's default library leaves it out; the reference provider holds every row)
        h, t = (h0, t0) if not row["opt_in"] else torch_pair("go2_ff", "reference", "float64")
        tensors = [torch.from_numpy(a) for a in row_inputs(h, row, 2, per_state=True)]
        attrs = [h.ee_frame_ids[0] if a["name"] == "frame" else a["lo"] for a in row["attrs"]]
        torch.library.opcheck(gt.op(row["name"]), (t.robot_key, *tensors, attrs))


# ---- analytic derivatives ----

# float64, fixed and floating bases (non-unit quaternions), every joint type (spherical, planar), coupled mimic hands
GRAD_HANDLES = [("iiwa", "generated", "pinocchio"), ("go2_ff", "generated", "pinocchio"),
                ("go2_ff", "generated", "mujoco"), ("g1_29dof_ff", "reference", "pinocchio"),
                ("h1_2_ff", "reference", "pinocchio"), ("joints_ff", "reference", "pinocchio")]


@pytest.fixture(scope="module", params=GRAD_HANDLES, ids=["-".join(p) for p in GRAD_HANDLES])
def grad_pair(request):
    case_id, provider, convention = request.param
    return torch_pair(case_id, provider, "float64", convention)


def grad_states(h, n=2):
    """states with non-unit quaternions where the robot has them, and f_ext present, as tensors"""
    kind = "nonunit_quaternion" if any(t in ("free", "spherical") for t in h._model.joint_types) else "random"
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in make_states(h, kind, n, seed=11).items()}


def test_gradcheck(grad_pair):
    """torch.autograd.gradcheck, reverse and forward mode (central differences over every q component, quaternions
    included): inverse dynamics in q, qd (qdd and f_ext given); forward dynamics and ABA in q, qd, u; the
    end-effector pose in q"""
    h, t = grad_pair
    s = grad_states(h)
    q, qd, u = (s[k].clone().requires_grad_() for k in ("q", "qd", "u"))
    qdd, f = s["qdd"], s["f_ext"]
    # eps 5e-5, not 1e-6: the humanoids' accelerations reach 1e4 (g1) and 3e6 (h1_2's gram-scale fingers), whose
    # rounding over a step of 1e-6 alone errs by 1e-4 and more. There the accelerations' Jacobians are checked as
    # jax's check_grads does, along random directions (fast_mode): element by element, an entry of 3 beside entries
    # of 1e6 is below the differences' noise (the rows themselves are checked against Pinocchio's
    # computeABADerivatives, element by element, in test_derivatives)
    kw = dict(eps=5e-5, atol=1e-6, rtol=1e-5, check_forward_ad=True)
    kw_acc = dict(kw, fast_mode=h.nv > 30)
    assert torch.autograd.gradcheck(lambda q, qd: t.inverse_dynamics(q, qd, qdd, f), (q, qd), **kw)
    assert torch.autograd.gradcheck(lambda q, qd, u: t.forward_dynamics(q, qd, u, f), (q, qd, u), **kw_acc)
    assert torch.autograd.gradcheck(lambda q, qd, u: t.aba(q, qd, u), (q, qd, u), **kw_acc)
    if h.num_ees:
        assert torch.autograd.gradcheck(t.end_effector_pose, (q,), **kw)
    names, offsets = row_targets(h)
    assert torch.autograd.gradcheck(lambda q: t.end_effector_pose_runtime(q, names, offsets), (q,), **kw)


def test_backward_is_the_vjp_row_and_torch_func_agrees(grad_pair):
    h, t = grad_pair
    s = grad_states(h)
    q, qd = s["q"].clone().requires_grad_(), s["qd"].clone().requires_grad_()
    g = s["g"]
    cq, cqd = torch.autograd.grad(t.inverse_dynamics(q, qd), (q, qd), g)
    vjp = h.inverse_dynamics_vjp(q.detach().numpy(), qd.detach().numpy(), g.numpy())
    same(cqd, vjp[:, h.nv:], np.float64)
    if not h.floating_base and h.nq == h.nv:
        same(cq, vjp[:, :h.nv], np.float64)
    fq = torch.func.grad(lambda q: (t.inverse_dynamics(q, qd.detach()) * g).sum())(q.detach())
    same(fq, cq.numpy(), np.float64)


def test_what_has_no_derivative_raises(grad_pair):
    h, t = grad_pair
    s = grad_states(h)
    q, qd, qdd = (s[k].clone().requires_grad_() for k in ("q", "qd", "qdd"))
    with pytest.raises(gt.DifferentiationError, match="crba, which has no analytic derivative"):
        t.crba(q).sum().backward()
    with pytest.raises(gt.DifferentiationError, match="not in qdd"):
        t.inverse_dynamics(q, qd, qdd).sum().backward()
    (gq,) = torch.autograd.grad(t.inverse_dynamics(q, qd).sum(), q, create_graph=True)
    with pytest.raises(gt.DifferentiationError, match="second derivative"):
        gq.sum().backward()
    with pytest.raises(gt.DifferentiationError, match="out= is not differentiable"):
        t.inverse_dynamics(q, qd, out=torch.zeros(q.shape[0], h.nv, dtype=torch.float64))


def test_torch_func_vmap_jacrev_and_per_sample_gradients(grad_pair):
    """torch.vmap (an operand unmapped, a single state per mapped index), per-state Jacobians by vmap(jacrev) equal to
    the gradient row, and per-sample gradients by vmap(grad) equal to one backward of the summed loss"""
    h, t = grad_pair
    s = grad_states(h, 3)
    q, qd = s["q"], s["qd"]
    qd3 = torch.stack([qd, 2 * qd, -qd])
    got = torch.vmap(t.inverse_dynamics, in_dims=(None, 0))(q, qd3)
    same(got, torch.stack([t.inverse_dynamics(q, x) for x in qd3]).numpy(), np.float64)
    same(torch.vmap(t.crba)(q), t.crba(q).numpy(), np.float64)
    J = torch.vmap(torch.func.jacrev(t.inverse_dynamics, argnums=1))(q, qd)
    same(J, h.inverse_dynamics_gradient(q.numpy(), qd.numpy())[:, :, h.nv:], np.float64)
    per_sample = torch.vmap(torch.func.grad(lambda x, y: (t.inverse_dynamics(x, y) ** 2).sum()))(q, qd)
    qq = q.clone().requires_grad_()
    (t.inverse_dynamics(qq, qd) ** 2).sum().backward()
    same(per_sample, qq.grad.numpy(), np.float64)
    with pytest.raises(gt.DifferentiationError, match="second derivative"):
        torch.vmap(torch.func.jacrev(torch.func.grad(lambda x: t.inverse_dynamics(x, qd[0]).sum())))(q)


def test_forward_mode_is_the_gradient_row(grad_pair):
    """jacfwd equals jacrev (the gradient row against the VJP row, both through q's tangent map); forward mode of a
    forward-only method or a second derivative raises"""
    h, t = grad_pair
    s = grad_states(h, 2)
    q, qd, u = s["q"], s["qd"], s["u"]
    for fn, args in ((t.inverse_dynamics, (q, qd)), (t.forward_dynamics, (q, qd, u))):
        argnums = tuple(range(len(args)))
        # (two computations: the gradient row against the VJP row)
        for a, b in zip(torch.func.jacfwd(fn, argnums=argnums)(*args), torch.func.jacrev(fn, argnums=argnums)(*args)):
            same(a, b.numpy(), np.float64, tol=1e-12)
    with pytest.raises(gt.DifferentiationError, match="crba, which has no analytic derivative"):
        torch.func.jacfwd(t.crba)(q)
    with pytest.raises(gt.DifferentiationError, match="second derivative"):
        torch.func.jacfwd(torch.func.jacfwd(lambda x: t.inverse_dynamics(x, qd)))(q)

