"""The derivative rows under compute-sanitizer (run by bench/gpu_session.sh sanitize): iiwa (unrolled FD composites,
their arrays interleaved over the warp) and go2 floating (rolled, lanes sharing a state), float32, B = 1 and 45,
workspace from the runtime's own pool; go2 also in output_convention="mujoco" on torch device arrays (the runtime's
device passes with the aux rows). Every output must be finite."""
import os
import sys

import numpy as np

sys.path.insert(0, "bench")
import grid_rbd  # noqa: E402
from gpu_bench import ROBOTS, random_states, register, urdf_path  # noqa: E402

robots_dir = os.environ["GRID_RBD_ROBOTS_DIR"]
for robot in ("iiwa", "go2"):
    h = register(robots_dir, robot, "float32")
    for n in (1, 45):
        q, qd, u = random_states(h, n, seed=n)
        for out in (h.inverse_dynamics_gradient(q, qd, u), h.forward_dynamics_gradient(q, qd, u),
                    h.inverse_dynamics_vjp(q, qd, u), h.forward_dynamics_vjp(q, qd, u, u)):
            assert np.isfinite(out).all(), (robot, n)
try:
    import torch
except ImportError:
    torch = None
if torch is not None and torch.cuda.is_available():
    file, floating = next((f, fb) for r, f, fb in ROBOTS if r == "go2")
    h = grid_rbd.register_robot("sanitize_go2_mj", urdf_path=urdf_path(robots_dir, file), floating_base=floating,
                                dtype="float32", device="cuda", output_convention="mujoco", verbose=False)
    q, qd, u = random_states(h, 45, seed=3)
    t = [torch.from_numpy(np.ascontiguousarray(x)).cuda() for x in (q, qd, u)]
    for out in (h.inverse_dynamics_gradient(t[0], t[1], t[2]), h.forward_dynamics_gradient(*t),
                h.inverse_dynamics_vjp(t[0], t[1], t[2]), h.forward_dynamics_vjp(t[0], t[1], t[2], t[2])):
        torch.cuda.synchronize()
        assert torch.isfinite(out).all().item()
print("sanity ok")
