"""grid_rbd: batched rigid-body dynamics of URDF robots, exactly as Pinocchio computes them.

    import grid_rbd, numpy as np
    robot = grid_rbd.register_robot("iiwa", urdf_path="iiwa.urdf", dtype="float64")
    tau = robot.inverse_dynamics(q, qd, qdd)     # q (B, nq), qd/qdd (B, nv) -> (B, nv)

register_robot generates C code for the robot and compiles it once into a cached robot.so (codegen=True,
the default); codegen=False answers from the float64 C reference. `python -m grid_rbd cache list` shows the cache.
"""

from ._errors import (BuildError, CacheError, CudaError, DifferentiationError, GridArgumentError, GridError,
                      GridIOError, GridMemoryError, HandleClosedError, LoadError, NotAvailableError,
                      RobotNotRegisteredError, UnsupportedURDFError, URDFError)
from .handle import REFERENCE_FRAMES, RobotHandle
from .registry import get_robot, list_registered, precompile, register_robot
from . import _core, cache

__version__ = _core.PACKAGE_VERSION

__all__ = [
    "register_robot", "get_robot", "list_registered", "precompile", "cache", "RobotHandle", "REFERENCE_FRAMES",
    "GridError", "URDFError", "UnsupportedURDFError", "GridIOError", "GridArgumentError",
    "GridMemoryError", "BuildError", "CacheError", "LoadError", "CudaError", "NotAvailableError",
    "RobotNotRegisteredError", "HandleClosedError", "DifferentiationError",
    "__version__",
]
