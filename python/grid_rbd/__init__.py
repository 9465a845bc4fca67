"""grid_rbd: batched rigid-body dynamics of URDF robots, exactly as Pinocchio computes them.

    import grid_rbd, numpy as np
    robot = grid_rbd.register_robot("iiwa", urdf_path="iiwa.urdf", dtype="float64")
    tau = robot.inverse_dynamics(q, qd, qdd)     # q (B, nq), qd/qdd (B, nv) -> (B, nv)
"""

from ._errors import (BuildError, CacheError, CudaError, GridArgumentError, GridError, GridIOError,
                      GridMemoryError, LoadError, NotAvailableError, UnsupportedURDFError, URDFError)
from .handle import REFERENCE_FRAMES, RobotHandle
from .registry import get_robot, register_robot

__version__ = "0.1.0"

__all__ = [
    "register_robot", "get_robot", "RobotHandle", "REFERENCE_FRAMES",
    "GridError", "URDFError", "UnsupportedURDFError", "GridIOError", "GridArgumentError",
    "GridMemoryError", "BuildError", "CacheError", "LoadError", "CudaError", "NotAvailableError",
    "__version__",
]
