"""torch on CUDA (issue 28): the forward with requires_grad and forward + backward of inverse_dynamics in q, qd, and the
same for the numpy handle's C entry (the VJP row after the row), iiwa and go2 floating float32 at B = 1, 1024, 65536;
median wall clock of 50 calls each (synchronised). Markdown to stdout.

    python3 bench/gpu_backward_quick.py   (GRID_RBD_ROBOTS_DIR: the shared robots)
"""
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, "tests/python")
import test_frameworks_gpu as T  # noqa: E402


def median_us(fn, reps=50):
    fn()
    torch.cuda.synchronize()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        t.append(time.perf_counter() - t0)
    return float(np.median(t)) * 1e6


print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, float32, median µs of 50 synchronised calls\n")
print("| robot | B | forward (requires_grad) | forward + backward | backward / forward |\n|---|---|---|---|---|")
for case in ("iiwa", "go2_ff"):
    h, j, t = T.cuda_handles(case, "float32")
    for B in (1, 1024, 65536):
        rng = np.random.default_rng(0)
        q = rng.uniform(-1, 1, (B, h.nq)).astype(np.float32)
        if h.floating_base:
            q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
        tq = torch.from_numpy(q).cuda().requires_grad_()
        tqd = torch.from_numpy(rng.uniform(-1, 1, (B, h.nv)).astype(np.float32)).cuda().requires_grad_()
        g = torch.ones(B, h.nv, device="cuda")
        f = median_us(lambda: t.inverse_dynamics(tq, tqd))
        fb = median_us(lambda: torch.autograd.grad(t.inverse_dynamics(tq, tqd), (tq, tqd), g))
        print(f"| {case} | {B} | {f:.1f} | {fb:.1f} | {(fb - f) / f:.2f}x |", flush=True)
