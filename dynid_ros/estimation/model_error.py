"""How much a joint's data are worth when its misfit is model error, not noise (issue 19, item 4).

The MAP data weight of FBPE (:mod:`dynid_ros.estimation.estimators`) counts each joint's residual as noise with
variance ``sigma_j^2`` and integrated autocorrelation time ``tau_j``: ``N_j / tau_j`` independent samples. A torque
the model lacks (a spring, a cable, a coupled wrist, a tool) is not noise: it is a systematic function of the
motion that repeats every time the joint passes the same state, and more samples of it do not average it out.
Read as noise, it becomes information, and the fit bends the link parameters to explain it (the failure of
issue 19: link masses at 0.07-0.23x nominal on two real arms).

Each joint's residual ``e_j`` is split, as in :mod:`dynid_ros.estimation.residual_structure`, into a structured
part (a low-order series in the joint's own position or velocity, share ``s_j`` of the residual variance) and
the rest (share ``1 - s_j``). The rest counts as noise with its own ``tau_j`` (Sokal's estimator,
:func:`dynid_ros.estimation.residual_model.integrated_autocorrelation_time`, per joint rather than one average).
The structured part is a function of the state; it has as many independent values as the motion has independent
passes through the state space of that joint: ``n_j`` = the total variation of the explaining signal over its
range (the number of one-way sweeps; at least 1). A component constant over blocks of ``N_j / n_j`` samples has
integrated autocorrelation time ``N_j / n_j``, so the variance of any weighted sum of the residual is that of white
noise times (Kish's effective-sample-size argument applied to the two parts)::

    inflation_j = (1 - s_j) tau_j + s_j max(N_j / n_j, tau_j)

A share that is not significant (F test with ``N_j / tau_j`` samples, :func:`residual_structure.share_p_value`)
is noise and counts as such (``s_j = 0``). A joint whose residual is mostly structure thus counts as a few
independent samples, its data weight drops, and the link parameters it poorly supports stay near the prior;
a joint with a white residual keeps its weight. The per-joint factors replace the single residual inflation
in FBPE's data weight and posterior (:func:`dynid_ros.estimation.estimators.fbpe` ``joint_inflation``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.estimation.residual_model import integrated_autocorrelation_time
from dynid_ros.estimation.residual_structure import SIGNIFICANCE, explained_share, share_p_value


@dataclass
class JointInflation:
    """Per joint: variance inflation ``factor`` (module docstring), noise ``tau`` [samples], significant structured
    ``share`` (0 when not significant), ``sweeps`` of the explaining signal, and what explains it (or None)."""

    factor: np.ndarray
    tau: np.ndarray
    share: np.ndarray
    sweeps: np.ndarray
    explained_by: list[str | None]

    def merged(self, other: JointInflation) -> JointInflation:
        """Per joint, ``other``'s values where its residual (another fit of the same data) shows significant
        structure with a larger inflation, else ``self``'s."""
        pick = [other if other.explained_by[j] is not None and other.factor[j] > self.factor[j] else self
                for j in range(self.factor.size)]
        return JointInflation(*(np.array([getattr(p, k)[j] for j, p in enumerate(pick)])
                                for k in ("factor", "tau", "share", "sweeps")),
                              [p.explained_by[j] for j, p in enumerate(pick)])

    def reduced(self, joints: list[str] | tuple[str, ...], at_least: float = 2.0) -> list[str]:
        """Console lines for the joints whose data weight the structure reduced ``at_least`` times."""
        out = []
        for j, joint in enumerate(joints):
            ratio = self.factor[j] / max(self.tau[j], 1.0)
            if self.explained_by[j] is not None and ratio >= at_least:
                out.append(f"joint {joint}: {100 * self.share[j]:.0f} % of its residual is a function of its "
                           f"{self.explained_by[j]} (a torque the model lacks): its data count {ratio:.0f}x less, "
                           "so what only it supports stays near the prior")
        return out


def sweeps(signal: np.ndarray) -> float:
    """Independent passes of ``signal`` through its range: total variation over range (at least 1)."""
    x = np.asarray(signal, dtype=float).reshape(-1)
    span = float(np.ptp(x)) if x.size else 0.0
    if span <= 0:
        return 1.0
    return max(float(np.sum(np.abs(np.diff(x)))) / span, 1.0)


def joint_inflation(residual: np.ndarray, q: np.ndarray, dq: np.ndarray, present: np.ndarray | None = None,
                    raw_residual: np.ndarray | None = None) -> JointInflation:
    """The per-joint variance inflation of a (samples, n_dof) residual (module docstring). ``present``: the
    (samples, n_dof) mask of the entries in the fit (the others are no observations). ``raw_residual``: the same
    fit's residual against the unfiltered torque, where the structured share is measured (as in the report's
    flag, :func:`dynid_ros.estimation.residual_structure.joint_diagnostics`); None: ``residual``."""
    e = np.asarray(residual, dtype=float)
    raw = e if raw_residual is None else np.asarray(raw_residual, dtype=float)
    n_dof = e.shape[1]
    mask = np.ones(e.shape, dtype=bool) if present is None else np.asarray(present, dtype=bool).reshape(e.shape)
    factor, tau, share, passes = (np.ones(n_dof) for _ in range(4))
    share[:] = 0.0
    by: list[str | None] = [None] * n_dof
    for j in range(n_dof):
        rows = mask[:, j]
        count = int(rows.sum())
        if count < 8:
            continue
        tau[j] = integrated_autocorrelation_time(e[:, j], None if rows.all() else rows)
        signals = {"position": np.asarray(q)[rows, j], "velocity": np.asarray(dq)[rows, j]}
        shares = {k: explained_share(raw[rows, j], v) for k, v in signals.items()}
        name = max(shares, key=shares.get)
        n_raw = count / integrated_autocorrelation_time(raw[:, j], None if rows.all() else rows)
        if share_p_value(shares[name], n_raw) < SIGNIFICANCE:
            share[j], by[j] = shares[name], name
            passes[j] = sweeps(signals[name])
        structured = max(count / passes[j], tau[j])
        factor[j] = (1.0 - share[j]) * tau[j] + share[j] * structured
    return JointInflation(factor, tau, share, passes, by)
