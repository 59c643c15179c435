"""How well a regressor determines its parameters: the condition number, plain and with unit-norm columns.

One definition for the excitation design, the identification report and the M(q)/g(q) stack: the ratio of the
largest to the smallest singular value, infinite when the matrix is rank deficient or (scaled) when a column is
zero, i.e. a parameter the motion does not excite at all (Sousa & Cortesão 2014 sec. 5.2.2, the criterion of the
excitation optimization). The plain number depends on the parameters' units; the scaled one does not, so one
threshold fits every robot.
"""

from __future__ import annotations

import math

import numpy as np


def condition_number(w: np.ndarray) -> float:
    """``sigma_max / sigma_min`` of ``w`` (rows, columns); inf when ``sigma_min`` is zero."""
    singular = np.linalg.svd(np.asarray(w, dtype=float), compute_uv=False)
    return float(singular[0] / singular[-1]) if singular[-1] > 0 else math.inf


def scaled_condition_number(w: np.ndarray) -> float:
    """:func:`condition_number` of ``w`` with every column scaled to unit norm; inf when a column is zero."""
    norms = np.linalg.norm(w, axis=0)
    if not np.all(norms > 0):
        return math.inf
    return condition_number(w / norms)


def unit_column_singular_values(w: np.ndarray) -> np.ndarray:
    """Singular values of ``w`` with its nonzero columns scaled to unit norm (a zero column stays zero, so it shows
    as a zero singular value), largest first."""
    norms = np.linalg.norm(w, axis=0)
    return np.linalg.svd(w / np.where(norms > 0, norms, 1.0), compute_uv=False)
