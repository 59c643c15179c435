"""Joint-torque regressor ``tau = Y(q, q', q'') delta`` for N samples at once (Sousa & Cortesão 2014 eq. 29).

A recursive Newton-Euler pass in body coordinates: compiled with numba, one loop over samples
(:mod:`dynid_ros.dynamics.regressor_kernel`, about 1-2 us per sample for a 7-DOF arm), or, without numba or with
``DYNID_REGRESSOR=numpy``, vectorized over samples in NumPy (the Python loops run over joints only). Columns follow
:mod:`dynid_ros.robot.parameters`; rows are sample-major. Identity tested against
``pinocchio.computeJointTorqueRegressor``.

For one body with angular velocity ``w``, angular acceleration ``dw`` and classical linear
acceleration ``a`` of its origin (gravity included as a base acceleration), the wrench about
its origin is linear in ``[m, h, I]`` (``h = m c``, ``I`` about the origin)::

    f = m a + (S(dw) + S(w)^2) h
    n = I dw + w x (I w) - S(a) h
"""

from __future__ import annotations

import os

import numpy as np

from dynid_ros.dynamics import regressor_kernel
from dynid_ros.dynamics.row_chunks import RowChunks, cached
from dynid_ros.robot.model import PRISMATIC, RobotModel
from dynid_ros.robot.parameters import ParameterLayout


def _skew_batch(v: np.ndarray) -> np.ndarray:
    """(N, 3) -> (N, 3, 3) skew matrices."""
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def _inertia_operator(w: np.ndarray) -> np.ndarray:
    """(N, 3) -> (N, 3, 6) with ``I w = L(w) [Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``."""
    out = np.zeros(w.shape[:-1] + (3, 6))
    x, y, z = w[..., 0], w[..., 1], w[..., 2]
    out[..., 0, 0], out[..., 0, 1], out[..., 0, 3] = x, y, z
    out[..., 1, 1], out[..., 1, 2], out[..., 1, 4] = x, y, z
    out[..., 2, 3], out[..., 2, 4], out[..., 2, 5] = x, y, z
    return out


def _axis_rotation(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """(N,) angles about a fixed unit axis -> (N, 3, 3) rotations (Rodrigues)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    s, c = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)


def body_regressors(model: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
                    ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Per body: the (N, 6, 10) wrench regressor ``[f; n]`` in its joint frame, and the
    (N, 3, 3) rotation and (N, 3) translation of its joint frame in its parent's.

    ``q, dq, ddq``: (N, n_bodies) coordinates of every body's joint (:meth:`RobotModel.body_motion`)."""
    n_samples = q.shape[0]
    w_parent, v_parent = [], []
    dw_parent, dv_parent = [], []
    regs, rots, trans = [], [], []
    base_dv = np.broadcast_to(-model.gravity, (n_samples, 3))
    zero = np.zeros((n_samples, 3))
    for k, kin in enumerate(model.kinematics):
        if kin.parent < 0:
            w_p, v_p, dw_p, dv_p = zero, zero, zero, base_dv
        else:
            w_p, v_p, dw_p, dv_p = w_parent[kin.parent], v_parent[kin.parent], dw_parent[kin.parent], \
                dv_parent[kin.parent]
        qk, dqk, ddqk = q[:, k], dq[:, k], ddq[:, k]
        if kin.kind == PRISMATIC:
            rot = np.broadcast_to(kin.rotation, (n_samples, 3, 3))
            p = kin.translation + np.outer(qk, kin.rotation @ kin.axis)
            s_w, s_v = np.zeros(3), kin.axis
        else:
            rot = kin.rotation @ _axis_rotation(kin.axis, qk)
            p = np.broadcast_to(kin.translation, (n_samples, 3))
            s_w, s_v = kin.axis, np.zeros(3)
        rt = np.swapaxes(rot, 1, 2)
        # Spatial velocity and (Featherstone) spatial acceleration in the body frame.
        w = np.einsum("nij,nj->ni", rt, w_p) + np.outer(dqk, s_w)
        v = np.einsum("nij,nj->ni", rt, v_p + np.cross(w_p, p)) + np.outer(dqk, s_v)
        vj_w, vj_v = np.outer(dqk, s_w), np.outer(dqk, s_v)
        dw = np.einsum("nij,nj->ni", rt, dw_p) + np.outer(ddqk, s_w) + np.cross(w, vj_w)
        dv = (np.einsum("nij,nj->ni", rt, dv_p + np.cross(dw_p, p)) + np.outer(ddqk, s_v)
              + np.cross(w, vj_v) + np.cross(v, vj_w))
        w_parent.append(w)
        v_parent.append(v)
        dw_parent.append(dw)
        dv_parent.append(dv)
        a = dv + np.cross(w, v)  # classical acceleration of the body origin
        sw, sdw = _skew_batch(w), _skew_batch(dw)
        reg = np.zeros((n_samples, 6, 10))
        reg[:, 0:3, 0] = a
        reg[:, 0:3, 1:4] = sdw + sw @ sw
        reg[:, 3:6, 1:4] = -_skew_batch(a)
        reg[:, 3:6, 4:10] = _inertia_operator(dw) + sw @ _inertia_operator(w)
        regs.append(reg)
        rots.append(rot)
        trans.append(p)
    return regs, rots, trans


def regressor(model: RobotModel, layout: ParameterLayout, q: np.ndarray, dq: np.ndarray,
              ddq: np.ndarray) -> np.ndarray:
    """Regressor for N samples: (N * n_dof, n_parameters), sample-major rows.

    Args:
        q, dq, ddq: joint positions, velocities, accelerations, each (N, n_dof), in the
            order of ``model.joints``.
    """
    return regressor_3d(model, layout, q, dq, ddq).reshape(-1, layout.n_parameters)


def regressor_3d(model: RobotModel, layout: ParameterLayout, q: np.ndarray, dq: np.ndarray,
                 ddq: np.ndarray) -> np.ndarray:
    """Regressor as an (N, n_dof, n_parameters) array.

    With mimic followers, the rows of every body's joint are computed at ``C q + o`` and projected on the
    identified joints, ``C^T Y`` (virtual work: the leader's row gets ``multiplier`` times its followers')."""
    q, dq, ddq = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, dq, ddq))
    n_samples, n_dof = q.shape
    qb, dqb, ddqb = model.body_motion(q, dq, ddq)
    out = np.zeros((n_samples, qb.shape[1], layout.n_parameters))
    if backend() == "numba":
        regressor_kernel.body_rows(qb, dqb, ddqb, *kernel_constants(model), out)
    else:
        _body_rows_numpy(model, qb, dqb, ddqb, out)
    if model.coupling is not None:
        out = np.einsum("nbp,bj->njp", out, model.coupling)
    joint_columns = {"fv": dq, "fc": np.sign(dq), "fo": np.ones_like(dq), "Ia": ddq}
    for symbol in layout.joint_terms:
        values = joint_columns[symbol]
        for j in range(n_dof):
            out[:, j, layout.joint_index(j, symbol)] = values[:, j]
    return out


BACKEND_VARIABLE = "DYNID_REGRESSOR"
"""Environment variable choosing the regressor's body rows: ``numba`` (default when numba imports) or ``numpy``."""


def backend() -> str:
    """``numba`` or ``numpy``: which implementation :func:`regressor_3d` uses (``DYNID_REGRESSOR``)."""
    wanted = os.environ.get(BACKEND_VARIABLE, "numba").strip().lower()
    return "numba" if wanted != "numpy" and regressor_kernel.AVAILABLE else "numpy"


def kernel_constants(model: RobotModel) -> tuple[np.ndarray, ...]:
    """The model's constant kinematics as the arrays :func:`regressor_kernel.body_rows` takes (rotation,
    translation, axis, prismatic, parent, chain, depth, gravity)."""
    kin = model.kinematics
    nb = len(kin)
    chain = np.zeros((nb, nb), dtype=np.int64)
    depth = np.zeros(nb, dtype=np.int64)
    for k, joint in enumerate(kin):
        ancestors = [*chain[joint.parent, :depth[joint.parent]], k] if joint.parent >= 0 else [k]
        depth[k] = len(ancestors)
        chain[k, :len(ancestors)] = ancestors
    return (np.array([j.rotation for j in kin], dtype=float), np.array([j.translation for j in kin], dtype=float),
            np.array([j.axis for j in kin], dtype=float), np.array([j.kind == PRISMATIC for j in kin]),
            np.array([j.parent for j in kin], dtype=np.int64), chain, depth, np.asarray(model.gravity, dtype=float))


def _body_rows_numpy(model: RobotModel, qb: np.ndarray, dqb: np.ndarray, ddqb: np.ndarray, out: np.ndarray
                     ) -> None:
    """The body rows ``out[:, :, :10 n_bodies]`` with the NumPy recursion (vectorized over samples)."""
    n_samples, n = qb.shape
    regs, rots, trans = body_regressors(model, qb, dqb, ddqb)
    kin = model.kinematics
    # axes[k]: (N, a, 6) motion axes [v; w] of the a ancestor joints of body k (itself included),
    # expressed in body frame k. tau_j gets the power product of its axis with body k's wrench.
    axes: list[np.ndarray] = []
    ancestors: list[list[int]] = []
    for k in range(n):
        own = np.zeros(6)
        if kin[k].kind == PRISMATIC:
            own[0:3] = kin[k].axis
        else:
            own[3:6] = kin[k].axis
        parent = kin[k].parent
        if parent >= 0:
            rt = np.swapaxes(rots[k], 1, 2)
            s = axes[parent]
            sv, sw = s[:, :, 0:3], s[:, :, 3:6]
            moved = np.empty((n_samples, s.shape[1] + 1, 6))
            moved[:, :-1, 0:3] = np.einsum("nij,naj->nai", rt, sv + np.cross(sw, trans[k][:, None, :]))
            moved[:, :-1, 3:6] = np.einsum("nij,naj->nai", rt, sw)
            moved[:, -1, :] = own
            chain = [*ancestors[parent], k]
        else:
            moved = np.broadcast_to(own, (n_samples, 1, 6))
            chain = [k]
        axes.append(moved)
        ancestors.append(chain)
        out[:, chain, 10 * k:10 * k + 10] = np.einsum("nai,nik->nak", moved, regs[k])


def torques(model: RobotModel, layout: ParameterLayout, parameters: np.ndarray, q: np.ndarray,
            dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """Predicted joint torques (N, n_dof) for the parameter vector ``parameters``, computed ``BLOCK_BYTES`` of
    regressor at a time (the regressor of a long recording is never held whole)."""
    parameters = np.asarray(parameters, dtype=float)
    q, dq, ddq = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, dq, ddq))
    step = block_samples(q.shape[1], layout.n_parameters)
    out = np.empty((q.shape[0], q.shape[1]))
    for a in range(0, q.shape[0], step):
        out[a:a + step] = regressor_3d(model, layout, q[a:a + step], dq[a:a + step], ddq[a:a + step]) @ parameters
    return out


BLOCK_BYTES = 8e6
"""Size of one block of regressor rows computed at a time (:func:`regressor_chunks`, :func:`torques`)."""
CACHE_BYTES = 64e6
"""A regressor up to this size is computed once and kept; a larger one is computed again on every pass."""


def block_samples(n_dof: int, n_columns: int) -> int:
    """Samples per block of ``BLOCK_BYTES``."""
    return max(64, int(BLOCK_BYTES // (8 * max(n_dof, 1) * max(n_columns, 1))))


def regressor_chunks(model: RobotModel, layout: ParameterLayout, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray,
                     columns: np.ndarray | None = None) -> RowChunks:
    """The regressor of N samples (columns ``columns``, e.g. the base parameters' ``independent``) as
    :class:`~dynid_ros.dynamics.row_chunks.RowChunks` of ``BLOCK_BYTES``: computed block by block on every pass
    over it, kept when it is at most ``CACHE_BYTES``."""
    q, dq, ddq = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, dq, ddq))
    n_samples, n_dof = q.shape
    index = np.arange(layout.n_parameters) if columns is None else np.asarray(columns, dtype=int)
    step = block_samples(n_dof, layout.n_parameters)

    def blocks():
        for a in range(0, n_samples, step):
            y = regressor_3d(model, layout, q[a:a + step], dq[a:a + step], ddq[a:a + step])
            yield y[:, :, index].reshape(-1, index.size)

    small = 8.0 * n_samples * n_dof * index.size <= CACHE_BYTES
    return RowChunks(cached(blocks) if small else blocks, (n_samples * n_dof, index.size))
