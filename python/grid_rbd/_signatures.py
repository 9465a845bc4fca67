"""The signature table on the Python side: _core.signatures() (one row per batched method) by id and name, and
each row's shapes evaluated for one model."""

from . import _core

__all__ = ["ROWS", "ID", "row", "matrix_rows", "sizes_of", "concrete", "describe", "range_message", "leading_dims",
           "differentiable_inputs", "not_differentiable_message", "not_differentiable_in_message"]

# every row of src/common/signature.c, in id order (dicts: name, py_name, aliases, inputs, outputs, attrs, ...)
ROWS = _core.signatures()
# ABI name -> row id ("rnea" -> _core.ALGO_RNEA)
ID = {r["name"]: r["id"] for r in ROWS}


def row(name):
    """the row of an ABI name ("rnea") or of a handle method name / alias ("inverse_dynamics", "fd")"""
    for r in ROWS:
        if name == r["name"] or name == r["py_name"] or name in r["aliases"]:
            return r
    raise KeyError(f"no method {name!r} in the signature table")


def matrix_rows():
    """the rows of one output that is a matrix per state (rank 2 or more): the ones a flat out= block applies to"""
    return [r for r in ROWS if len(r["outputs"]) == 1 and len(r["outputs"][0]["dims"]) > 1]


def sizes_of(model):
    """symbol -> size for one _core.Model (the symbols of the rows' dims)"""
    return {"1": 1, "nq": model.nq, "nv": model.nv, "nb": model.nb, "nee": model.nee,
            "nframes": len(model.frame_names)}


def _shape(arg, sizes):
    return tuple(sizes[sym] * mul for sym, mul in arg["dims"])


def concrete(r, sizes):
    """row r for a model of these sizes: {"name", "inputs": ((name, shape, optional, desc, dims), ...),
    "outputs": ((name, shape), ...), "attrs": ((name, lo, hi, range_error), ...)}"""
    return {
        "name": r["name"],
        "inputs": tuple((a["name"], _shape(a, sizes), a["optional"], a["desc"], a["dims"]) for a in r["inputs"]),
        "outputs": tuple((a["name"], _shape(a, sizes)) for a in r["outputs"]),
        "attrs": tuple((a["name"], a["lo"], a["hi"] if isinstance(a["hi"], int) else sizes[a["hi"]], a["range_error"])
                       for a in r["attrs"]),
    }


def describe(shape, desc, dims):
    """'nv=18 tangent width' (the per-state extent of an input, as the C checks word it)"""
    sym = " x ".join(str(mul) if s == "1" else (s if mul == 1 else f"{mul}*{s}") for s, mul in dims)
    return f"{sym}={' x '.join(str(n) for n in shape)} {desc}"


def range_message(fmt, value, hi):
    """an attribute's out-of-range message: its printf format given (value, hi), as the C checks fill it"""
    return fmt % (value, hi)[:fmt.count("%")]


def leading_dims(c, py_name, inputs, dtype, dtype_name):
    """the leading (batch) dimensions of a call's present inputs (arrays or tensors, None when absent) for concrete
    row c: ValueError naming what was expected for a dtype other than `dtype`, a per-state shape other than the row's,
    or leading dimensions that differ between inputs. dtype_name(d) names a dtype as register_robot does."""
    lead = None
    for (name, shape, _opt, desc, dims), x in zip(c["inputs"], inputs):
        if x is None:
            continue
        if x.dtype != dtype:
            raise ValueError(f"{py_name}: {name} has dtype {dtype_name(x.dtype)}; this robot takes "
                             f"{dtype_name(dtype)} (cast it, or register the robot with dtype='{dtype_name(x.dtype)}')")
        s = tuple(x.shape)  # (a plain tuple: comparing torch.Size slices costs microseconds)
        k = len(s) - len(shape)
        if k < 0 or s[k:] != shape:
            raise ValueError(f"{py_name}: {name} must be (..., {', '.join(map(str, shape))}) "
                             f"({describe(shape, desc, dims)}); got {s}")
        xl = s[:k]
        if lead is None:
            lead = xl
        elif xl != lead:
            raise ValueError(f"{py_name}: {name} has leading dimensions {xl}, the inputs before it {lead}")
    return lead


# ---- what the framework front ends differentiate (the rows' derivative and vjp links) ----

def vjp_inputs(vjp_row):
    """the inputs a VJP row's output covers, in its column blocks of nv (q, qd[, u])"""
    (_, m), = [d for d in vjp_row["outputs"][0]["dims"] if d[0] == "nv"]
    return [a["name"] for a in vjp_row["inputs"] if a["name"] != "cotangent"][:m]


def differentiable_inputs(row):
    """the inputs a row with a VJP row is differentiable in: those its VJP row's output covers (vjp_inputs)"""
    return vjp_inputs(ROWS[row["vjp"]])


def default_row_names():
    """the rows a library holds when no algorithm_list names them: every one but the opt-in (second-order) rows"""
    return [r["name"] for r in ROWS if not r["opt_in"]]


def not_differentiable_message(row, front_end):
    """the DifferentiationError message of differentiating row, which has no analytic derivative in front_end ("JAX",
    "PyTorch"): a derivative row (or minv, forward dynamics' block in u) is a second derivative"""
    if row["name"].endswith(("_grad", "_vjp")) or row["name"] == "minv":
        return (f"grid_rbd: differentiating a second derivative this way: the {front_end} front end differentiates "
                f"{', '.join(r['py_name'] for r in ROWS if r['vjp'] >= 0)} once in reverse mode, then once more in "
                f"forward mode (jax.hessian, torch.func.hessian: forward over reverse, through the second-order rows)")
    return (f"grid_rbd: differentiating {row['py_name']}, which has no analytic derivative in the {front_end} "
            f"front end (differentiable: {DIFFERENTIABLE})")


# what the DifferentiationError messages list: every row with a VJP row, and the inputs it is differentiable in
DIFFERENTIABLE = "; ".join(f"{r['py_name']} in {', '.join(differentiable_inputs(r))}" for r in ROWS if r["vjp"] >= 0)


def not_differentiable_in_message(row, name):
    """the DifferentiationError message of a tangent or cotangent of input name, which row has no derivative in"""
    return (f"{row['py_name']} is differentiable in {', '.join(differentiable_inputs(row))} only, not in {name} (an "
            f"analytic derivative in {name} is not provided)")


# ---- second derivatives through the front ends: a VJP row differentiated once more ----

# the second-order row of each VJP row's method (its first-order rows' derivatives): built when named, like them
SECOND_ORDER = {"rnea_vjp": "idsva_so", "fd_vjp": "fdsva_so", "ee_pose_vjp": "ee_pose_hessian"}


def hessian_blocks(xp, so_name, outs):
    """(B, n, m nv, m nv) H[:, i, a, b] = d/dx_b of column a of the gradient of output i over x = (q, qd[, u]) (local
    tangent), from second-order row so_name's outputs; xp the array namespace (jax.numpy, torch)"""
    if so_name == "ee_pose_hessian":
        return outs[0] if isinstance(outs, (tuple, list)) else outs
    T0, T1, T2, T3 = outs  # d2/dq dq, d2/dqd dqd, d2/dq dqd ([i][j][k]: column q_j along qd_k), du dq / dM dq
    t2 = xp.swapaxes(T2, -1, -2)
    if so_name == "idsva_so":
        blocks = [[T0, T2], [t2, T1]]
    else:  # fdsva_so: T3[i][j][k] = d2 qdd_i / du_j dq_k (column u_j along q_k); nothing second order in u alone
        Z = xp.zeros_like(T0)
        blocks = [[T0, T2, xp.swapaxes(T3, -1, -2)], [t2, T1, Z], [T3, Z, Z]]
    return xp.concatenate([xp.concatenate(r, -1) for r in blocks], -2)


def second_order_missing_message(vjp_row, so_name, front_end):
    return (f"grid_rbd: differentiating {vjp_row['py_name']} (a second derivative in {front_end}) takes the "
            f"second-order row {so_name}: register the robot with '{so_name}' in algorithm_list (built only when "
            f"named)")

