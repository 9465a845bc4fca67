"""The JAX and PyTorch front ends on CUDA (pytest -m gpu; skipped with the reason without a GPU and nvcc): every row on
device arrays equals the numpy handle's host round trip on the same library (float64 to 1e-14), analytic gradients on
the GPU equal the CPU front ends' (float64 to 1e-10), jit / vmap / torch.compile / a captured CUDA graph equal eager
calls, and a CPU robot refuses GPU arrays clearly."""

import numpy as np
import pytest

import grid_rbd
from grid_rbd import _signatures
from grid_rbd import cuda as gcuda
from robot_cases import CASES, make_states, robot_path, row_inputs

_ok, _why = gcuda.available()
pytestmark = [pytest.mark.gpu] + ([] if _ok else [pytest.mark.skip(reason=f"needs an NVIDIA GPU and nvcc: {_why}")])
torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import grid_rbd.jax as gj  # noqa: E402
import grid_rbd.torch as gt  # noqa: E402

B = 7
_pairs = {}


# the rows the gradient tests use (g1's whole CUDA library is the slowest build)
GRAD_ROWS = ["forward_dynamics", "forward_dynamics_vjp", "inverse_dynamics", "inverse_dynamics_vjp",
             "inverse_dynamics_gradient", "end_effector_pose", "end_effector_pose_gradient"]


def cuda_handles(case_id, dtype="float64", algorithm_list=None):
    """(numpy CUDA handle, JaxRobotHandle, TorchRobotHandle) on one CUDA library"""
    key = (case_id, dtype)
    if key not in _pairs:
        case = next(c for c in CASES if c.id == case_id)
        h = grid_rbd.register_robot(f"fw_{case_id}_{dtype}", urdf_path=robot_path(case),
                                    floating_base=case.floating_base, dtype=dtype, device="cuda", verbose=False,
                                    algorithm_list=algorithm_list)
        _pairs[key] = (h, gj.JaxRobotHandle(h), gt.TorchRobotHandle(h))
    return _pairs[key]


def close(got, want, tol):
    got = got.detach().cpu().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    err = np.abs(got - want).max() / max(1.0, np.abs(want).max()) if want.size else 0.0
    assert err <= tol, err


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("case_id", ["iiwa", "go2_ff"])
def test_every_row_on_device_arrays_equals_the_host_round_trip(case_id):
    h, j, t = cuda_handles(case_id)
    gpu = jax.devices("gpu")[0]
    for row in _signatures.ROWS:
        if row["opt_in"]:  # (left out of a default library; bench/gpu_sanitize_so.py compares theirs on device arrays)
            continue
        args = row_inputs(h, row, B)
        want = as_tuple(getattr(h, row["py_name"])(*args))                  # numpy: the host round trip
        arr = [isinstance(a, np.ndarray) for a in args]  # (a per-call target's names and offsets stay as they are)
        got_t = as_tuple(getattr(t, row["py_name"])(*[torch.from_numpy(a).cuda() if x else a
                                                       for a, x in zip(args, arr)]))
        got_j = as_tuple(getattr(j, row["py_name"])(*[jax.device_put(a, gpu) if x else a for a, x in zip(args, arr)]))
        for w, a, b in zip(want, got_t, got_j):
            assert a.is_cuda and next(iter(b.devices())).platform == "gpu"
            close(a, w, 1e-14)
            close(b, w, 1e-14)


@pytest.mark.parametrize("case_id", ["go2_ff", "g1_29dof_ff"])
def test_gradients_on_the_gpu_equal_the_cpu_front_ends(case_id):
    """the backward (torch) and grad / jacfwd (JAX) on device arrays against the CPU front ends on the reference"""
    h, j, t = cuda_handles(case_id, algorithm_list=GRAD_ROWS if case_id == "g1_29dof_ff" else None)
    case = next(c for c in CASES if c.id == case_id)
    ref = grid_rbd.register_robot(f"fw_{case_id}_ref", urdf_path=robot_path(case), floating_base=True,
                                  dtype="float64", codegen=False, verbose=False)
    tr, jr = gt.TorchRobotHandle(ref), gj.JaxRobotHandle(ref)
    s = make_states(h, "nonunit_quaternion", 3, seed=5)
    q, qd, u, g = (s[k] for k in ("q", "qd", "u", "g"))

    def torch_grads(handle, device):
        x = [torch.tensor(a, device=device, requires_grad=True) for a in (q, qd, u)]
        gg = torch.tensor(g, device=device)
        return torch.autograd.grad(handle.forward_dynamics(*x), x, gg)

    for a, b in zip(torch_grads(t, "cuda"), torch_grads(tr, "cpu")):
        close(a, b.numpy(), 1e-10)
    # torch.func on CUDA tensors: forward mode (the gradient rows) and vmap(jacrev) (the VJP rows under vmap)
    tq, tqd = torch.tensor(q, device="cuda"), torch.tensor(qd, device="cuda")
    close(torch.func.jacfwd(t.inverse_dynamics)(tq, tqd), torch.func.jacfwd(tr.inverse_dynamics)(
        torch.tensor(q), torch.tensor(qd)).numpy(), 1e-10)
    close(torch.vmap(torch.func.jacrev(t.inverse_dynamics, argnums=1))(tq, tqd),
          torch.vmap(torch.func.jacrev(tr.inverse_dynamics, argnums=1))(torch.tensor(q), torch.tensor(qd)).numpy(),
          1e-10)
    gpu, cpu = jax.devices("gpu")[0], jax.devices("cpu")[0]   # (the reference robot runs on the CPU only)
    loss = lambda hd: jax.jit(jax.grad(lambda q, qd: jnp.vdot(hd.inverse_dynamics(q, qd), g), argnums=(0, 1)))
    for a, b in zip(loss(j)(jax.device_put(q, gpu), jax.device_put(qd, gpu)),
                    loss(jr)(jax.device_put(q, cpu), jax.device_put(qd, cpu))):
        close(a, b, 1e-10)
    jf = jax.jit(jax.jacfwd(j.end_effector_pose))(jax.device_put(q, gpu))
    close(jf, jax.jit(jax.jacfwd(jr.end_effector_pose))(jax.device_put(q, cpu)), 1e-10)


def test_jit_vmap_compile_and_graph_replay_equal_eager():
    h, j, t = cuda_handles("iiwa", "float32")
    q, qd, qdd, f = row_inputs(h, _signatures.row("rnea"), B)
    want = h.inverse_dynamics(q, qd)
    gpu = jax.devices("gpu")[0]
    jq, jqd = jax.device_put(q, gpu), jax.device_put(qd, gpu)
    close(jax.jit(j.inverse_dynamics)(jq, jqd), want, 1e-6)
    qd3 = jnp.stack([jqd, 2 * jqd, -jqd])
    got = jax.jit(jax.vmap(j.inverse_dynamics, in_axes=(None, 0)))(jq, qd3)
    close(got, np.stack([h.inverse_dynamics(q, x) for x in (qd, 2 * qd, -qd)]), 1e-6)
    # vmap of a gradient: the VJP row's workspace result gets vmap's leading dimension too
    loss = jax.grad(lambda q, qd: jnp.sum(j.inverse_dynamics(q, qd) ** 2))
    got = jax.jit(jax.vmap(loss, in_axes=(None, 0)))(jq, qd3)
    close(got, np.stack([np.asarray(jax.jit(loss)(jq, x)) for x in qd3]), 1e-6)
    tq, tqd = torch.from_numpy(q).cuda(), torch.from_numpy(qd).cuda()
    close(torch.compile(lambda a, b: t.inverse_dynamics(a, b), fullgraph=True)(tq, tqd), want, 1e-6)
    g = t.capture("inverse_dynamics", tq, tqd)
    close(g.replay(), want, 1e-6)
    q2 = q[::-1].copy()
    close(g(torch.from_numpy(q2).cuda(), tqd), h.inverse_dynamics(q2, qd), 1e-6)
    host = gt.pinned_host_like(g.static_out)
    g.replay_into(host)
    torch.cuda.synchronize()
    close(host, h.inverse_dynamics(q2, qd), 1e-6)


def test_to_host_copies_into_pinned_host_memory():
    h, j, t = cuda_handles("iiwa", "float32")
    q = row_inputs(h, _signatures.row("crba"), B)[0]
    M = j.crba(jax.device_put(q, jax.devices("gpu")[0]))
    host = gj.to_host({"M": M, "n": 3})
    assert host["n"] == 3 and host["M"].sharding.memory_kind == "pinned_host"
    close(np.asarray(host["M"]), h.crba(q), 1e-6)


def test_a_cpu_robot_refuses_gpu_arrays():
    case = next(c for c in CASES if c.id == "iiwa")
    t = gt.register_robot("fw_iiwa_cpu", urdf_path=robot_path(case), device="cpu", verbose=False)
    with pytest.raises(grid_rbd.NotAvailableError, match="device='cuda'"):
        t.crba(torch.zeros(2, t.nq, device="cuda"))
    j = gj.JaxRobotHandle(t.numpy_handle)
    with pytest.raises(Exception, match="runs on the CPU; register it with device='cuda'"):
        jax.block_until_ready(j.crba(jax.device_put(np.zeros((2, t.nq), np.float32), jax.devices("gpu")[0])))
