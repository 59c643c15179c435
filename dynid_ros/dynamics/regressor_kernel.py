"""Compiled body-rows kernel of the joint-torque regressor (Sousa & Cortesão 2014 eq. 29), one sample at a time.

Why a numba kernel (measured on this project's 2-core machine, Panda 7 DOF, viscous/Coulomb/offset friction and
armature, ``benchmarks/bench_regressor.py``): the vectorized NumPy recursion of :mod:`dynid_ros.dynamics.regressor`
costs about 30 us per sample (hundreds of small (N, 3, 3) temporaries per joint), a Python loop over pinocchio's own
``computeJointTorqueRegressor`` about 15 us (the C++ is fast, the per-sample Python call and copy are not), and this
kernel about 1-2 us: the same recursion compiled to one loop over samples, every intermediate a few doubles on the
stack. pinocchio's code generation would need CppADCodeGen or CasADi builds that its PyPI wheel does not ship; a
C++ extension would need a compiler at install time. numba installs as a wheel and compiles at first use (a few
seconds, then cached on disk by numba: ``NUMBA_CACHE_DIR`` relocates it).

The recursion is the one of :func:`dynid_ros.dynamics.regressor.body_regressors`: velocities and (Featherstone)
spatial accelerations of every body in its joint frame, the (6, 10) wrench regressor ``[f; n]`` of each body about
its origin, and the power product of every ancestor joint's motion axis (carried down into the body's frame) with
that wrench. Without numba, :data:`AVAILABLE` is False and the NumPy path is used.
"""

from __future__ import annotations

import numpy as np

try:  # optional compiled path; the NumPy recursion is the fallback
    import numba

    AVAILABLE = True
except ImportError:  # pragma: no cover - depends on the platform's wheels
    numba = None
    AVAILABLE = False


def _cross(a0: float, a1: float, a2: float, b0: float, b1: float, b2: float) -> tuple[float, float, float]:
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


def _body_rows(q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, rotation: np.ndarray, translation: np.ndarray,
               axis: np.ndarray, prismatic: np.ndarray, parent: np.ndarray, chain: np.ndarray, depth: np.ndarray,
               gravity: np.ndarray, out: np.ndarray) -> None:
    """Fill ``out[s, j, 10 k: 10 k + 10]`` (sample s, body joint j, body k) for every sample; ``out`` is zeroed.

    ``q, dq, ddq``: (N, nb) body coordinates. ``rotation`` (nb, 3, 3), ``translation`` (nb, 3): placement of each
    joint frame in its parent's at zero; ``axis`` (nb, 3); ``prismatic`` (nb,) bool; ``parent`` (nb,) (-1: base);
    ``chain[k, :depth[k]]``: ancestors of body k, root first, k last.
    """
    n_samples, nb = q.shape
    w = np.zeros((nb, 3))
    v = np.zeros((nb, 3))
    dw = np.zeros((nb, 3))
    dv = np.zeros((nb, 3))
    axes = np.zeros((nb, nb, 6))  # axes[k, i]: motion axis [v; w] of ancestor chain[k, i], in frame k
    rot = np.zeros((3, 3))
    reg = np.zeros((6, 10))
    for s in range(n_samples):
        for k in range(nb):
            ax0, ax1, ax2 = axis[k, 0], axis[k, 1], axis[k, 2]
            qk, dqk, ddqk = q[s, k], dq[s, k], ddq[s, k]
            p0, p1, p2 = translation[k, 0], translation[k, 1], translation[k, 2]
            if prismatic[k]:
                for i in range(3):
                    for j in range(3):
                        rot[i, j] = rotation[k, i, j]
                p0 += qk * (rotation[k, 0, 0] * ax0 + rotation[k, 0, 1] * ax1 + rotation[k, 0, 2] * ax2)
                p1 += qk * (rotation[k, 1, 0] * ax0 + rotation[k, 1, 1] * ax1 + rotation[k, 1, 2] * ax2)
                p2 += qk * (rotation[k, 2, 0] * ax0 + rotation[k, 2, 1] * ax1 + rotation[k, 2, 2] * ax2)
                sw0, sw1, sw2, sv0, sv1, sv2 = 0.0, 0.0, 0.0, ax0, ax1, ax2
            else:
                c, sn = np.cos(qk), np.sin(qk)
                # Rodrigues: c I + s K + (1 - c) a a^T, then R = R0 @ that.
                e00, e01, e02 = c + (1 - c) * ax0 * ax0, -sn * ax2 + (1 - c) * ax0 * ax1, sn * ax1 + (1 - c) * ax0 * ax2
                e10, e11, e12 = sn * ax2 + (1 - c) * ax1 * ax0, c + (1 - c) * ax1 * ax1, -sn * ax0 + (1 - c) * ax1 * ax2
                e20, e21, e22 = -sn * ax1 + (1 - c) * ax2 * ax0, sn * ax0 + (1 - c) * ax2 * ax1, c + (1 - c) * ax2 * ax2
                for i in range(3):
                    r0, r1, r2 = rotation[k, i, 0], rotation[k, i, 1], rotation[k, i, 2]
                    rot[i, 0] = r0 * e00 + r1 * e10 + r2 * e20
                    rot[i, 1] = r0 * e01 + r1 * e11 + r2 * e21
                    rot[i, 2] = r0 * e02 + r1 * e12 + r2 * e22
                sw0, sw1, sw2, sv0, sv1, sv2 = ax0, ax1, ax2, 0.0, 0.0, 0.0
            pk = parent[k]
            if pk < 0:
                wp0, wp1, wp2, vp0, vp1, vp2 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
                dwp0, dwp1, dwp2 = 0.0, 0.0, 0.0
                dvp0, dvp1, dvp2 = -gravity[0], -gravity[1], -gravity[2]
            else:
                wp0, wp1, wp2, vp0, vp1, vp2 = w[pk, 0], w[pk, 1], w[pk, 2], v[pk, 0], v[pk, 1], v[pk, 2]
                dwp0, dwp1, dwp2 = dw[pk, 0], dw[pk, 1], dw[pk, 2]
                dvp0, dvp1, dvp2 = dv[pk, 0], dv[pk, 1], dv[pk, 2]
            c0, c1, c2 = _cross(wp0, wp1, wp2, p0, p1, p2)
            u0, u1, u2 = vp0 + c0, vp1 + c1, vp2 + c2
            c0, c1, c2 = _cross(dwp0, dwp1, dwp2, p0, p1, p2)
            t0, t1, t2 = dvp0 + c0, dvp1 + c1, dvp2 + c2
            # R^T x: column dot products
            w0 = rot[0, 0] * wp0 + rot[1, 0] * wp1 + rot[2, 0] * wp2 + dqk * sw0
            w1 = rot[0, 1] * wp0 + rot[1, 1] * wp1 + rot[2, 1] * wp2 + dqk * sw1
            w2 = rot[0, 2] * wp0 + rot[1, 2] * wp1 + rot[2, 2] * wp2 + dqk * sw2
            v0 = rot[0, 0] * u0 + rot[1, 0] * u1 + rot[2, 0] * u2 + dqk * sv0
            v1 = rot[0, 1] * u0 + rot[1, 1] * u1 + rot[2, 1] * u2 + dqk * sv1
            v2 = rot[0, 2] * u0 + rot[1, 2] * u1 + rot[2, 2] * u2 + dqk * sv2
            a0, a1, a2 = _cross(w0, w1, w2, dqk * sw0, dqk * sw1, dqk * sw2)
            dw0 = rot[0, 0] * dwp0 + rot[1, 0] * dwp1 + rot[2, 0] * dwp2 + ddqk * sw0 + a0
            dw1 = rot[0, 1] * dwp0 + rot[1, 1] * dwp1 + rot[2, 1] * dwp2 + ddqk * sw1 + a1
            dw2 = rot[0, 2] * dwp0 + rot[1, 2] * dwp1 + rot[2, 2] * dwp2 + ddqk * sw2 + a2
            a0, a1, a2 = _cross(w0, w1, w2, dqk * sv0, dqk * sv1, dqk * sv2)
            b0, b1, b2 = _cross(v0, v1, v2, dqk * sw0, dqk * sw1, dqk * sw2)
            dv0 = rot[0, 0] * t0 + rot[1, 0] * t1 + rot[2, 0] * t2 + ddqk * sv0 + a0 + b0
            dv1 = rot[0, 1] * t0 + rot[1, 1] * t1 + rot[2, 1] * t2 + ddqk * sv1 + a1 + b1
            dv2 = rot[0, 2] * t0 + rot[1, 2] * t1 + rot[2, 2] * t2 + ddqk * sv2 + a2 + b2
            w[k, 0], w[k, 1], w[k, 2], v[k, 0], v[k, 1], v[k, 2] = w0, w1, w2, v0, v1, v2
            dw[k, 0], dw[k, 1], dw[k, 2], dv[k, 0], dv[k, 1], dv[k, 2] = dw0, dw1, dw2, dv0, dv1, dv2
            # classical acceleration of the origin
            c0, c1, c2 = _cross(w0, w1, w2, v0, v1, v2)
            la0, la1, la2 = dv0 + c0, dv1 + c1, dv2 + c2
            # f = m a + (S(dw) + S(w)^2) h ;  n = (L(dw) + S(w) L(w)) I - S(a) h
            reg[0, 0], reg[1, 0], reg[2, 0] = la0, la1, la2
            reg[0, 1], reg[0, 2], reg[0, 3] = -w1 * w1 - w2 * w2, -dw2 + w0 * w1, dw1 + w0 * w2
            reg[1, 1], reg[1, 2], reg[1, 3] = dw2 + w0 * w1, -w0 * w0 - w2 * w2, -dw0 + w1 * w2
            reg[2, 1], reg[2, 2], reg[2, 3] = -dw1 + w0 * w2, dw0 + w1 * w2, -w0 * w0 - w1 * w1
            reg[3, 1], reg[3, 2], reg[3, 3] = 0.0, la2, -la1
            reg[4, 1], reg[4, 2], reg[4, 3] = -la2, 0.0, la0
            reg[5, 1], reg[5, 2], reg[5, 3] = la1, -la0, 0.0
            # L(x) rows: [x0, x1, 0, x2, 0, 0], [0, x0, x1, 0, x2, 0], [0, 0, 0, x0, x1, x2]
            # S(w) L(w): row i = sum_j S_ij L(w)_j
            for i in range(3):
                for j in range(6):
                    reg[3 + i, 4 + j] = 0.0
            reg[3, 4], reg[3, 5], reg[3, 7] = dw0, dw1, dw2
            reg[4, 5], reg[4, 6], reg[4, 8] = dw0, dw1, dw2
            reg[5, 7], reg[5, 8], reg[5, 9] = dw0, dw1, dw2
            # S(w) = [[0, -w2, w1], [w2, 0, -w0], [-w1, w0, 0]] applied to L(w)'s rows l0, l1, l2
            # l0 = (w0, w1, 0, w2, 0, 0), l1 = (0, w0, w1, 0, w2, 0), l2 = (0, 0, 0, w0, w1, w2)
            reg[3, 5] += -w2 * w0
            reg[3, 6] += -w2 * w1
            reg[3, 8] += -w2 * w2
            reg[3, 7] += w1 * w0
            reg[3, 8] += w1 * w1
            reg[3, 9] += w1 * w2
            reg[4, 4] += w2 * w0
            reg[4, 5] += w2 * w1
            reg[4, 7] += w2 * w2
            reg[4, 7] += -w0 * w0
            reg[4, 8] += -w0 * w1
            reg[4, 9] += -w0 * w2
            reg[5, 4] += -w1 * w0
            reg[5, 5] += -w1 * w1
            reg[5, 7] += -w1 * w2
            reg[5, 5] += w0 * w0
            reg[5, 6] += w0 * w1
            reg[5, 8] += w0 * w2
            # ancestors' axes carried into frame k, then the power products
            n_anc = depth[k]
            if pk >= 0:
                for i in range(n_anc - 1):
                    sv0_, sv1_, sv2_ = axes[pk, i, 0], axes[pk, i, 1], axes[pk, i, 2]
                    sw0_, sw1_, sw2_ = axes[pk, i, 3], axes[pk, i, 4], axes[pk, i, 5]
                    c0, c1, c2 = _cross(sw0_, sw1_, sw2_, p0, p1, p2)
                    u0, u1, u2 = sv0_ + c0, sv1_ + c1, sv2_ + c2
                    for r in range(3):
                        axes[k, i, r] = rot[0, r] * u0 + rot[1, r] * u1 + rot[2, r] * u2
                        axes[k, i, 3 + r] = rot[0, r] * sw0_ + rot[1, r] * sw1_ + rot[2, r] * sw2_
            axes[k, n_anc - 1, 0], axes[k, n_anc - 1, 1], axes[k, n_anc - 1, 2] = sv0, sv1, sv2
            axes[k, n_anc - 1, 3], axes[k, n_anc - 1, 4], axes[k, n_anc - 1, 5] = sw0, sw1, sw2
            for i in range(n_anc):  # rows 0-2 of reg are zero past column 3, rows 3-5 in column 0
                row = chain[k, i]
                x0, x1, x2 = axes[k, i, 0], axes[k, i, 1], axes[k, i, 2]
                x3, x4, x5 = axes[k, i, 3], axes[k, i, 4], axes[k, i, 5]
                out[s, row, 10 * k] = x0 * reg[0, 0] + x1 * reg[1, 0] + x2 * reg[2, 0]
                for col in range(1, 4):
                    out[s, row, 10 * k + col] = (x0 * reg[0, col] + x1 * reg[1, col] + x2 * reg[2, col]
                                                 + x3 * reg[3, col] + x4 * reg[4, col] + x5 * reg[5, col])
                for col in range(4, 10):
                    out[s, row, 10 * k + col] = x3 * reg[3, col] + x4 * reg[4, col] + x5 * reg[5, col]


if AVAILABLE:
    try:  # compiled once per machine, then loaded from numba's on-disk cache
        _cross = numba.njit(cache=True, inline="always")(_cross)
        _body_rows = numba.njit(cache=True)(_body_rows)
    except RuntimeError:  # no writable cache location (read-only install and home): compile in every process
        _cross = numba.njit(inline="always")(_cross)
        _body_rows = numba.njit()(_body_rows)


def body_rows(q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, rotation: np.ndarray, translation: np.ndarray,
              axis: np.ndarray, prismatic: np.ndarray, parent: np.ndarray, chain: np.ndarray, depth: np.ndarray,
              gravity: np.ndarray, out: np.ndarray) -> None:
    """Compiled :func:`_body_rows` (see there); raises RuntimeError without numba."""
    if not AVAILABLE:
        raise RuntimeError("the compiled regressor needs numba (pip install numba)")
    _body_rows(np.ascontiguousarray(q), np.ascontiguousarray(dq), np.ascontiguousarray(ddq), rotation, translation,
               axis, prismatic, parent, chain, depth, gravity, out)
