"""grid-rbd's JAX and torch front ends beside the differentiable peers that run here, on the GPU, in one run: adam
(adam-robotics: its batched torch backend and its JAX backend under jit(vmap)) for the mass matrix, the bias force,
ABA and their gradients through autodiff, and pytorch_kinematics for forward kinematics, the Jacobian and the
kinematics' backward, on iiwa and g1_29dof floating (adam's models are floating-base) at B = 1, 1024, 65536, float32,
device arrays in and out, median wall clock of a call plus synchronisation. Peers are carried as wheels
(.gpu-deps/wheels); a peer call that fails is reported as such. Prints a markdown table (bench/RESULTS-gpu.md)."""

import argparse
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch
import jax
import jax.numpy as jnp

import grid_rbd
import grid_rbd.jax as gj
from gpu_frameworks import median_wall
import grid_rbd.torch as gt

REPO = Path(__file__).resolve().parents[1]


def timed(fn, reps, sync):
    """median wall clock of fn + sync (gpu_frameworks.median_wall), microseconds"""
    return median_wall(lambda: sync(fn()), reps)


def tsync(_):
    torch.cuda.synchronize()


def jsync(x):
    jax.block_until_ready(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", default="iiwa,g1_29dof")
    ap.add_argument("--batches", default="1,1024,65536")
    ap.add_argument("--robots-dir", default=str(REPO.parent / "shared" / "robots"))
    ap.add_argument("--budget-s", type=float, default=300)
    args = ap.parse_args()
    deadline = time.time() + args.budget_s
    import adam.pytorch
    import adam.jax
    import pytorch_kinematics as pk
    dev, gpu = torch.device("cuda"), jax.devices("gpu")[0]
    rows, checks = [], []

    def record(robot, B, what, ours, peer, peer_name, reps):
        """time ours and the peer's callables (a failing peer is reported, not fatal)"""
        sync = jsync if "JAX" in what else tsync
        t_ours = timed(ours, reps, sync)
        try:
            t_peer = timed(peer, reps, sync) if time.time() < deadline else float("nan")
            note = "" if t_peer == t_peer else "skipped: time budget"
        except Exception as e:  # noqa: BLE001 (a peer's failure is a result)
            t_peer, note = float("nan"), f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
            traceback.print_exc(file=sys.stderr)
        rows.append((robot, B, what, peer_name, t_ours, t_peer, note))
        print(f"{robot} B={B} {what}: ours {t_ours:.1f} us, {peer_name} {t_peer:.1f} us {note}", file=sys.stderr)

    for robot in args.robots.split(","):
        urdf = REPO / "examples" / "robots" / "iiwa.urdf" if robot == "iiwa" else \
            Path(args.robots_dir) / f"{robot}.urdf"
        h = grid_rbd.register_robot(f"peers_{robot}", urdf_path=urdf, floating_base=True, dtype="float32",
                                    device="cuda", verbose=False,
                                    algorithm_list=["crba", "nle", "aba", "rnea", "rnea_vjp", "fd_vjp",
                                                    "frame_jacobian", "fk_batched", "fk", "ee_pose", "ee_pose_vjp"])
        t, j = gt.TorchRobotHandle(h), gj.JaxRobotHandle(h)
        joints = [n for n in h.joint_names if n != "root_joint"]
        try:
            ad_t, ad_t_error = adam.pytorch.KinDynComputationsBatch(str(urdf), joints, device=dev,
                                                                    dtype=torch.float32), ""
        except Exception as e:  # noqa: BLE001 (reported in the table: its calls fail)
            ad_t, ad_t_error = None, f"adam did not load the URDF: {type(e).__name__}: {e}"
            traceback.print_exc(file=sys.stderr)
        try:
            ad_j, ad_j_error = adam.jax.KinDynComputations(str(urdf), joints), ""
        except Exception as e:  # noqa: BLE001 (reported in the table: its calls fail)
            ad_j, ad_j_error = None, f"adam.jax did not load: {type(e).__name__}: {e}"

        def unavailable(*_):
            raise RuntimeError(ad_j_error)

        class Unloaded:
            def __getattr__(self, name):
                raise RuntimeError(ad_t_error)

        ad_t = ad_t or Unloaded()

        ee = h.ee_names[0]
        chain = pk.build_serial_chain_from_urdf(urdf.read_bytes(), ee).to(dtype=torch.float32, device=dev) \
            if robot == "iiwa" else pk.build_chain_from_urdf(urdf.read_bytes()).to(dtype=torch.float32, device=dev)
        for B in map(int, args.batches.split(",")):
            reps = 50 if B <= 1024 else 10
            rng = np.random.default_rng(0)
            q = rng.uniform(-1, 1, size=(B, h.nq)).astype(np.float32)
            q[:, :3] = 0
            q[:, 3:7] = [0, 0, 0, 1]  # identity base (adam's base transform below)
            qd = rng.normal(size=(B, h.nv)).astype(np.float32)
            u = rng.normal(size=(B, h.nv)).astype(np.float32)
            tq, tqd, tu = (torch.from_numpy(x).to(dev) for x in (q, qd, u))
            jq, jqd, ju = (jax.device_put(x, gpu) for x in (q, qd, u))
            H = torch.eye(4, device=dev).expand(B, 4, 4).contiguous()
            s, sd, bv = tq[:, 7:].contiguous(), tqd[:, 6:].contiguous(), tqd[:, :6].contiguous()
            tau = tu[:, 6:].contiguous()
            jH, js, jsd, jbv, jtau = (jax.device_put(np.asarray(x.cpu()), gpu) for x in (H, s, sd, bv, tau))
            # forward quantities, torch
            record(robot, B, "mass matrix (torch)", lambda: t.crba(tq), lambda: ad_t.mass_matrix(H, s), "adam", reps)
            record(robot, B, "bias force (torch)", lambda: t.nonlinear_effects(tq, tqd),
                   lambda: ad_t.bias_force(H, s, bv, sd), "adam", reps)
            record(robot, B, "ABA (torch)", lambda: t.aba(tq, tqd, tu), lambda: ad_t.aba(H, s, bv, sd, tau), "adam",
                   reps)
            # the same quantity: the joint block of M (identity base) from both
            if not ad_t_error:
                err = float((t.crba(tq)[:, 6:, 6:] - ad_t.mass_matrix(H, s)[:, 6:, 6:]).abs().max())
                checks.append((robot, B, err / float(t.crba(tq).abs().max())))
            # gradients through autodiff (ours: the analytic VJP rows)
            sg, sdg = s.clone().requires_grad_(), sd.clone().requires_grad_()
            tqg, tqdg = tq.clone().requires_grad_(), tqd.clone().requires_grad_()
            record(robot, B, "grad of sum(bias force) in q, qd (torch)",
                   lambda: torch.autograd.grad(t.inverse_dynamics(tqg, tqdg).sum(), (tqg, tqdg)),
                   lambda: torch.autograd.grad(ad_t.bias_force(H, sg, bv, sdg).sum(), (sg, sdg)), "adam", reps)
            record(robot, B, "grad of sum(ABA) in q, qd (torch)",
                   lambda: torch.autograd.grad(t.aba(tqg, tqdg, tu).sum(), (tqg, tqdg)),
                   lambda: torch.autograd.grad(ad_t.aba(H, sg, bv, sdg, tau).sum(), (sg, sdg)), "adam", reps)
            # JAX: ours jitted, adam's jit(vmap(single-state function))
            mm = jax.jit(jax.vmap(ad_j.mass_matrix)) if ad_j else unavailable
            bf = jax.jit(jax.vmap(ad_j.bias_force)) if ad_j else unavailable
            bf_grad = jax.jit(jax.grad(lambda s, sd: jnp.sum(jax.vmap(ad_j.bias_force)(jH, s, jbv, sd)),
                                       argnums=(0, 1))) if ad_j else unavailable
            our_mm, our_bf = jax.jit(j.crba), jax.jit(j.nonlinear_effects)
            our_grad = jax.jit(jax.grad(lambda q, qd: jnp.sum(j.inverse_dynamics(q, qd)), argnums=(0, 1)))
            record(robot, B, "mass matrix (JAX)", lambda: our_mm(jq), lambda: mm(jH, js), "adam", reps)
            record(robot, B, "bias force (JAX)", lambda: our_bf(jq, jqd), lambda: bf(jH, js, jbv, jsd), "adam", reps)
            record(robot, B, "grad of sum(bias force) in q, qd (JAX)", lambda: our_grad(jq, jqd),
                   lambda: bf_grad(js, jsd), "adam", reps)
            # pytorch_kinematics: FK (all links of g1, the chain of iiwa), the Jacobian (iiwa), FK's backward
            th = s.clone()
            if robot == "iiwa":
                record(robot, B, "end-effector Jacobian (torch)", lambda: t.frame_jacobian(tq, ee, "WORLD"),
                       lambda: chain.jacobian(th), "pytorch_kinematics", reps)
                record(robot, B, "FK of the end effector (torch)", lambda: t.fk_batched(tq),
                       lambda: chain.forward_kinematics(th).get_matrix(), "pytorch_kinematics", reps)
            else:
                record(robot, B, "FK of every link (torch)", lambda: t.forward_kinematics(tq),
                       lambda: chain.forward_kinematics(th), "pytorch_kinematics", reps)
            thg = th.clone().requires_grad_()
            fk_end = (lambda x: chain.forward_kinematics(x).get_matrix()[:, :3, 3]) if robot == "iiwa" else \
                (lambda x: chain.forward_kinematics(x)[ee].get_matrix()[:, :3, 3])
            record(robot, B, "backward of an end-effector position (torch)",
                   lambda: torch.autograd.grad(t.end_effector_pose(tqg)[:, :3].sum(), tqg),
                   lambda: torch.autograd.grad(fk_end(thg).sum(), thg), "pytorch_kinematics", reps)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, jax {jax.__version__}, float32, floating base, "
          "device arrays in and out, median wall clock of a call + synchronisation\n")
    print("| robot | B | quantity | grid-rbd (µs) | peer | peer (µs) | peer / grid-rbd |")
    print("|---|---|---|---|---|---|---|")
    for robot, B, what, peer, a, b, note in rows:
        ratio = f"{b / a:.1f}x" if b == b else note
        print(f"| {robot} | {B} | {what} | {a:.1f} | {peer} | {b:.1f} | {ratio} |")
    worst = max(checks, key=lambda c: c[2]) if checks else ("-", "-", float("nan"))
    print(f"\nThe joint block of the mass matrix from grid-rbd and adam (torch) on the same states: largest relative "
          f"difference {worst[2]:.1e} ({worst[0]} B={worst[1]}; float32)")


if __name__ == "__main__":
    main()
