"""The normal equations of a tall least-squares problem ``min ||A x - b||``: ``A^T A``, ``A^T b``, ``b^T b`` and the
row count, summed over blocks of rows, so a long recording never holds ``A`` whole; and their square root, a problem
of the size of ``x`` with the same minimizer and the same residual up to a constant (what the SDPs of the payload,
the F/T body and the frames robot minimize; Sousa & Cortesão 2014 eq. 64-70 compress by QR the same way)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class NormalEquations:
    """``gram = A^T A``, ``projection = A^T b``, ``b_norm2 = b^T b`` over ``rows`` rows."""

    gram: np.ndarray
    projection: np.ndarray
    b_norm2: float
    rows: int

    @classmethod
    def of(cls, a: np.ndarray, b: np.ndarray) -> NormalEquations:
        """The normal equations of the rows ``a`` (rows, n), ``b`` (rows,)."""
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        return cls(a.T @ a, a.T @ b, float(b @ b), int(a.shape[0]))

    def __add__(self, other: NormalEquations) -> NormalEquations:
        """The normal equations of both sets of rows."""
        return NormalEquations(self.gram + other.gram, self.projection + other.projection,
                               self.b_norm2 + other.b_norm2, self.rows + other.rows)

    def residual_norm2(self, x: np.ndarray) -> float:
        """``||A x - b||^2`` (never below 0 from round-off)."""
        return max(float(x @ self.gram @ x - 2 * self.projection @ x + self.b_norm2), 0.0)

    def root(self) -> tuple[np.ndarray, np.ndarray]:
        """``(R, c)`` with ``||R x - c||^2 = ||A x - b||^2 - const`` for every x, R square (an eigen-decomposition:
        ``A`` may be rank deficient)."""
        values, vectors = np.linalg.eigh(self.gram)
        root = np.sqrt(np.clip(values, 0.0, None))[:, None] * vectors.T
        return root, np.linalg.lstsq(root.T, self.projection, rcond=None)[0]
