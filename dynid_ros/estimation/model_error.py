"""How much a joint's data are worth when its misfit is model error, not noise.

The MAP data weight of FBPE (:mod:`dynid_ros.estimation.estimators`) counts each joint's residual as noise with
variance ``sigma_j^2`` and integrated autocorrelation time ``tau_j``: ``N_j / tau_j`` independent samples. A torque
the model lacks (a spring, a cable, a coupled wrist, a tool) is not noise: it is a systematic function of the
motion that repeats every time the joint passes the same state, and more samples of it do not average it out.
Read as noise, it becomes information, and the fit bends the link parameters to explain it (seen on two
real arms: link masses at 0.07-0.23x nominal).

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

More generally, a joint's residual may be a function of another joint's motion: a coupled wrist read in joint
coordinates leaves the friction and rotor inertia of the other motor in it (Wang et al. 2019 section II-B). When the
coupling diagnostic (:mod:`dynid_ros.estimation.coupling_diagnostic`) reports joints ``j`` and ``k`` as coupled, the
share of ``j``'s residual that ``k``'s motion explains is structure too, with the sweeps of ``k``'s velocity.

A share that is not significant (F test with ``N_j / tau_j`` samples, :func:`residual_structure.share_p_value`)
is noise and counts as such (``s_j = 0``); a significant one counts however small (the largest of the position,
velocity and coupled shares): a velocity-shaped misfit of the wrist joints (a Coulomb step the filter smooths) pulls
the link masses too when read as information (measured: a synthetic Panda with a spring on joint 4, link 5 at 1.10x
when only velocity shares of at least half counted, 0.98x when every significant share does). A joint whose
residual is mostly structure thus counts as a few independent samples, its data weight drops, and the link
parameters it poorly supports stay near the prior; a joint with a white residual keeps its weight. The per-joint
factors replace the single residual inflation in FBPE's data weight and posterior
(:func:`dynid_ros.estimation.estimators.fbpe` ``joint_inflation``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.estimation.coupling_diagnostic import COUPLED_SHARE, shares
from dynid_ros.estimation.residual_model import integrated_autocorrelation_time
from dynid_ros.estimation.residual_structure import (
    SIGNIFICANCE,
    STRUCTURED_SHARE,
    explained_share,
    share_p_value,
)


@dataclass
class JointInflation:
    """Per joint: variance inflation ``factor`` (module docstring), noise ``tau`` [samples], significant structured
    ``share`` (0 when not significant), ``sweeps`` of the explaining signal, and what explains it (or None)."""

    factor: np.ndarray
    tau: np.ndarray
    share: np.ndarray
    sweeps: np.ndarray
    explained_by: list[str | None]

    def to_dict(self, joints: list[str] | tuple[str, ...]) -> dict:
        """Per joint name: ``inflation``, ``autocorrelation_time``, ``structured_share``, ``explained_by``,
        ``sweeps`` (report.json ``data_weight``)."""
        return {joint: {"inflation": float(self.factor[j]), "autocorrelation_time": float(self.tau[j]),
                        "structured_share": float(self.share[j]), "explained_by": self.explained_by[j],
                        "sweeps": float(self.sweeps[j])} for j, joint in enumerate(joints)}

    @property
    def noise_inflation(self) -> np.ndarray:
        """Per joint, the part of ``factor`` that is correlated noise, ``(1 - share) tau``: what a fitted parameter
        absorbs of the residual (:attr:`dynid_ros.estimation.hyperparameters.Evidence.absorption`); the structured
        share is what the fit could not absorb, measured on its residual."""
        return (1.0 - self.share) * self.tau

    def merged(self, other: JointInflation) -> JointInflation:
        """Per joint, ``other``'s values where its residual (another fit of the same data) shows significant
        structure with a larger inflation, else ``self``'s."""
        pick = [other if other.explained_by[j] is not None and other.factor[j] > self.factor[j] else self
                for j in range(self.factor.size)]
        return JointInflation(*(np.array([getattr(p, k)[j] for j, p in enumerate(pick)])
                                for k in ("factor", "tau", "share", "sweeps")),
                              [p.explained_by[j] for j, p in enumerate(pick)])

    def reduced(self, joints: list[str] | tuple[str, ...], at_least: float = 2.0) -> list[str]:
        """Console lines for the joints whose residual is mostly structure (the report's flag,
        :data:`~dynid_ros.estimation.residual_structure.STRUCTURED_SHARE`) and whose data weight it reduced
        ``at_least`` times."""
        out = []
        for j, joint in enumerate(joints):
            ratio = self.factor[j] / max(self.tau[j], 1.0)
            if self.explained_by[j] is not None and self.share[j] >= STRUCTURED_SHARE and ratio >= at_least:
                what = self.explained_by[j]
                what = what if what.startswith("coupling") else f"a function of its {what}"
                out.append(f"joint {joint}: {100 * self.share[j]:.0f} % of its residual is {what} (a torque the "
                           f"model lacks): its data count {ratio:.0f}x less, so what only it supports stays near "
                           "the prior")
        return out


def sweeps(signal: np.ndarray) -> float:
    """Independent passes of ``signal`` through its range: total variation over range (at least 1)."""
    x = np.asarray(signal, dtype=float).reshape(-1)
    span = float(np.ptp(x)) if x.size else 0.0
    if span <= 0:
        return 1.0
    return max(float(np.sum(np.abs(np.diff(x)))) / span, 1.0)


def joint_inflation(residual: np.ndarray, q: np.ndarray, dq: np.ndarray, present: np.ndarray | None = None,
                    raw_residual: np.ndarray | None = None, ddq: np.ndarray | None = None,
                    names: list[str] | tuple[str, ...] | None = None) -> JointInflation:
    """The per-joint variance inflation of a (samples, n_dof) residual (module docstring). ``present``: the
    (samples, n_dof) mask of the entries in the fit (the others are no observations). ``raw_residual``: the same
    fit's residual against the unfiltered torque, where the structured share is measured (as in the report's
    flag, :func:`dynid_ros.estimation.residual_structure.joint_diagnostics`); None: ``residual``. ``ddq``: the
    accelerations, to count a coupling with another joint (None: not considered); ``names``: the joints' names."""
    e = np.asarray(residual, dtype=float)
    raw = e if raw_residual is None else np.asarray(raw_residual, dtype=float)
    n_dof = e.shape[1]
    names = list(names) if names is not None else [f"joint {j + 1}" for j in range(n_dof)]
    mask = np.ones(e.shape, dtype=bool) if present is None else np.asarray(present, dtype=bool).reshape(e.shape)
    coupled = _coupled_shares(raw, dq, ddq, mask)
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
        found = {k: (explained_share(raw[rows, j], v), v) for k, v in signals.items()}
        partner = int(np.argmax(coupled[j]))
        if coupled[j, partner] > 0:
            found[f"coupling with {names[partner]}"] = (float(coupled[j, partner]), np.asarray(dq)[rows, partner])
        n_raw = count / integrated_autocorrelation_time(raw[:, j], None if rows.all() else rows)
        name = max(found, key=lambda k: found[k][0])
        if share_p_value(found[name][0], n_raw) < SIGNIFICANCE:
            share[j], by[j] = found[name][0], name
            passes[j] = sweeps(found[name][1])
        structured = max(count / passes[j], tau[j])
        factor[j] = (1.0 - share[j]) * tau[j] + share[j] * structured
    return JointInflation(factor, tau, share, passes, by)


def _coupled_shares(raw: np.ndarray, dq: np.ndarray, ddq: np.ndarray | None, mask: np.ndarray) -> np.ndarray:
    """(n, n) shares of joint j's residual explained by joint k's motion, for the pairs the coupling diagnostic
    reports (both shares at least ``COUPLED_SHARE``), else 0; over the samples where every joint is observed."""
    n_dof = raw.shape[1]
    rows = mask.all(axis=1)
    if ddq is None or rows.sum() < 8 * n_dof:
        return np.zeros((n_dof, n_dof))
    if rows.all():  # the usual case: no copies of the (samples, n_dof) series (an hour of data: 20 MB each)
        share = shares(raw, np.asarray(dq), np.asarray(ddq))
    else:
        share = shares(raw[rows], np.asarray(dq)[rows], np.asarray(ddq)[rows])
    both = np.minimum(share, share.T) >= COUPLED_SHARE
    return np.where(both, share, 0.0)
