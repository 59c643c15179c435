"""Which base parameters the data identify, measured against the prior, and their names in words.

Each base-regressor column is scaled by the prior standard deviation of its base parameter
(``sqrt(K_i cov K_i^T)``, :mod:`dynid_ros.estimation.prior`), so a column is the torque a one-sigma
change of that parameter would produce. A pivoted QR orders the columns by how much new torque
they add; ``|R_ii|`` is the part no earlier column can mimic. Against the noise of a least-squares fit
(``s sqrt(tau_int)``, :mod:`dynid_ros.estimation.residual_model`), the data shrink the prior variance of that
direction by the factor ``1 / (1 + (|R_ii| / (s sqrt(tau_int)))^2)``: below ``NOT_IDENTIFIED_SNR``
the data say next to nothing, and the parameter is kept at the prior instead of fitted to noise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from dynid_ros.dynamics.base_parameters import BaseParameters
from dynid_ros.dynamics.row_chunks import RowChunks, as_row_chunks
from dynid_ros.errors import IdentifiabilityError
from dynid_ros.estimation.estimators import compress
from dynid_ros.estimation.residual_model import NOISE_FLOOR, residual_inflation
from dynid_ros.robot.parameters import ParameterLayout

NOT_IDENTIFIED_SNR = 0.1
"""``|R_ii| / (s sqrt(tau_int))`` below this: the data change the prior standard deviation of that base
parameter by less than 0.5 % (``1 - 1 / sqrt(1 + 0.1^2)``)."""


DEAD_COLUMN = 1e-10
"""A pivoted-QR diagonal below this fraction of the largest is a column the data do not excite at all."""

MOSTLY_UNIDENTIFIED = 0.5
"""With more than this fraction of the base parameters not identified the data identify nearly nothing."""

WORDS = {"m": "mass", "mx": "first moment x", "my": "first moment y", "mz": "first moment z",
         "Ixx": "inertia Ixx", "Ixy": "inertia Ixy", "Iyy": "inertia Iyy", "Ixz": "inertia Ixz",
         "Iyz": "inertia Iyz", "Izz": "inertia Izz", "fv": "viscous friction", "fc": "Coulomb friction",
         "fo": "torque offset", "Ia": "rotor inertia"}


EXCITATION_TOLERANCE = 1e-7
"""Without a prior to measure against: a base parameter whose unit-scaled regressor column adds less than this
(relative ``|R_ii|`` of a pivoted QR) is not excited by the data."""


def check_excited(w_b: np.ndarray | RowChunks, base: BaseParameters) -> None:
    """Raise IdentifiabilityError naming the base parameters the data do not excite at all (used where there is
    no prior to keep them at: ``--prior none``, a DH table, M(q)/g(q) samples). Works on the compressed
    ``R`` (``R^T R = W^T W``: the same column norms and pivoted QR), so ``w_b`` may come in blocks."""
    factor = compress(w_b, np.zeros(w_b.shape[0]))[0]
    norms = np.linalg.norm(factor, axis=0)
    dead = np.flatnonzero(norms <= 1e-12 * max(norms.max(), 1e-300))
    _, r, piv = scipy.linalg.qr(factor / np.where(norms > 0, norms, 1.0), mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    weak = piv[diag < EXCITATION_TOLERANCE * max(diag.max(), 1e-300)]
    bad = sorted(set(dead.tolist()) | set(weak.tolist()))
    if bad:
        names = [f"beta{i + 1} = {base.expressions[i]} ({describe_base(base, i)})" for i in bad[:6]]
        more = f" and {len(bad) - 6} more" if len(bad) > 6 else ""
        raise IdentifiabilityError(f"too little excitation: {len(bad)} base parameter(s) not identifiable from this "
                                   f"data: {'; '.join(names)}{more}")


@dataclass
class NotIdentified:
    """A base parameter kept at the prior: index, ``betaN``, its expression, in words, and the prior value."""

    index: int
    name: str
    expression: str
    description: str
    value: float

    def to_dict(self) -> dict:
        """The parameter's name, expression, description and prior value."""
        return {"name": self.name, "expression": self.expression, "description": self.description,
                "value": self.value}


def describe(symbol: str, layout: ParameterLayout) -> str:
    """``"Ia2"`` -> ``"rotor inertia of joint 2 (panda_joint2)"``; ``"m3"`` -> ``"mass of link 3 (...)"``."""
    match = re.fullmatch(r"([A-Za-z]+?)(\d+)", symbol)
    if not match or match.group(1) not in WORDS:
        return symbol
    kind, number = match.group(1), int(match.group(2))
    if kind in ("fv", "fc", "fo", "Ia"):
        return f"{WORDS[kind]} of joint {number} ({layout.joints[number - 1]})"
    return f"{WORDS[kind]} of link {number} ({layout.links[number - 1]})"


def describe_base(base: BaseParameters, i: int) -> str:
    """A base parameter in words: its own standard parameter, and how many others it groups."""
    leading = base.layout.symbols[int(base.independent[i])]
    others = int(np.count_nonzero(base.K[i])) - 1
    text = describe(leading, base.layout)
    return text + (f" combined with {others} other parameter(s)" if others > 0 else "")


def excitation_snr(w_b: np.ndarray | RowChunks, tau: np.ndarray, n_dof: int, base_std: np.ndarray,
                   rows: np.ndarray | None = None) -> np.ndarray:
    """Per base parameter, ``|R_ii| / (s sqrt(tau_int))`` of the module docstring, from the rows in the fit only
    (``rows``: their mask; the others are no observations). The pivoted QR and the least-squares fit run on the
    compression ``[R rho1]`` of the scaled ``[W tau]`` (the same Gram matrix: the same ``|R_ii|``, singular values
    and solution), so ``w_b`` may come in blocks; the residual series is computed block by block."""
    rows = np.ones(np.size(tau), dtype=bool) if rows is None else np.asarray(rows, dtype=bool).reshape(-1)
    tau = np.where(rows, tau, 0.0)
    scaled = as_row_chunks(w_b).scaled(base_std).masked(rows)
    factor, rho1, _ = compress(scaled, tau)
    _, r, piv = scipy.linalg.qr(factor, mode="economic", pivoting=True)
    coefficients, _, rank, _ = np.linalg.lstsq(factor, rho1, rcond=1e-10)
    residual = tau - scaled @ coefficients
    sigma2 = float(residual @ residual) / max(int(rows.sum()) - rank, 1)
    floor = NOISE_FLOOR * float(np.sqrt(np.mean(tau[rows] ** 2)))  # noise-free data: round-off, not information
    inflation = residual_inflation(residual.reshape(-1, n_dof), present=rows.reshape(-1, n_dof))
    noise = max(np.sqrt(sigma2 * inflation), floor, 1e-300)
    diag = np.abs(np.diag(r))
    snr = np.empty(w_b.shape[1])
    snr[piv] = np.where(diag > DEAD_COLUMN * max(diag.max(), 1e-300), diag / noise, 0.0)
    return snr


def not_identified(w_b: np.ndarray, tau: np.ndarray, base: BaseParameters, prior_mean: np.ndarray,
                   prior_cov: np.ndarray, rows: np.ndarray | None = None) -> list[NotIdentified]:
    """The base parameters the data do not identify, with their prior values ``K_i mean``
    (``prior_cov``: covariance of the standard parameters; ``rows``: mask of the rows in the fit)."""
    base_std = np.sqrt(np.clip(np.einsum("ij,jk,ik->i", base.K, prior_cov, base.K), 1e-300, None))
    snr = excitation_snr(w_b, tau, base.layout.n_dof, base_std, rows)
    values = base.K @ prior_mean
    return [NotIdentified(int(i), f"beta{i + 1}", base.expressions[i], describe_base(base, int(i)), float(values[i]))
            for i in np.flatnonzero(snr < NOT_IDENTIFIED_SNR)]
