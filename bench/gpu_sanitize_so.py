"""The second-order rows under compute-sanitizer (run by bench/gpu_session.sh second_order): iiwa float32's idsva_so,
fdsva_so and ee_pose_hessian at B = 1 and 7, host round trips and torch device tensors, on the library
bench/gpu_second_order.py built (the cache); every output must be finite and equal between the two paths."""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, "bench")
import grid_rbd  # noqa: E402
from gpu_bench import random_states, urdf_path  # noqa: E402
from gpu_second_order import METHODS  # noqa: E402

h = grid_rbd.register_robot("so_gpu_iiwa_float32", urdf_path=urdf_path(os.environ["GRID_RBD_ROBOTS_DIR"], "iiwa.urdf"),
                            dtype="float32", device="cuda", algorithm_list=list(METHODS) + ["forward_dynamics"],
                            verbose=False)
for n in (1, 7):
    q, qd, u = random_states(h, n, seed=n)
    for m in METHODS:
        args = tuple(x for x, _ in zip((q, qd, u), grid_rbd._signatures.row(m)["inputs"]))  # (as many as it takes)
        host = getattr(h, m)(*args)
        dev = getattr(h, m)(*(torch.from_numpy(np.ascontiguousarray(x)).cuda() for x in args))
        torch.cuda.synchronize()
        for a, b in zip(host if isinstance(host, tuple) else (host,), dev if isinstance(dev, tuple) else (dev,)):
            assert np.isfinite(a).all() and np.array_equal(a, b.cpu().numpy()), (m, n)
print("sanity ok")
