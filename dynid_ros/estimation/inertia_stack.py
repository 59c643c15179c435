"""Identification from samples of the inertia matrix M(q) and the gravity vector g(q) (Gaz et al. 2019 section IV-A).

Some controllers (the Panda's FCI) return their own M(q) and g(q) at the current configuration. Both
are linear in the link parameters, so static configurations alone identify the inertial model,
with no friction, no velocity and no differentiation (Gaz et al. 2019 eq. 17-21). Per configuration
the *inertia stack* ``s = [m~(q); g(q)]`` holds the ``n(n+1)/2`` lower-triangular elements of M,
row by row (``M11, M21, M22, M31, ...``), then ``g1..gn`` (eq. 17, 19); the stacks of all
configurations give ``s = Y_s delta`` (eq. 20).

The rows of ``Y_s`` come from the joint-torque regressor at rest, which is affine in ``q''``:
``Y(q, 0, 0) = Y_g(q)`` and ``Y(q, 0, e_i) - Y(q, 0, 0)`` is the regressor of column ``i`` of M.
This is exact (no finite difference). A stack element whose regressor row is zero at every
configuration carries no information and is dropped (e.g. ``g1`` of an arm whose first axis is
vertical, Gaz et al. 2019 section V-A).

M and g contain no friction; the rotor inertia (armature) adds to the diagonal of M only if the
controller's M includes it. Base parameters are those of the stack regressor
(:func:`dynid_ros.dynamics.base_parameters.base_parameters_from_regressor`); the estimate is the package's
convex estimator (FBPE, feasible parameters) by default, or OLS (Gaz et al. 2019 eq. 21).

Input file (CSV, comma separated, ``#`` starts a comment line), one configuration per row, a header
naming the columns::

    q1,...,qn, M1_1, M2_1, M2_2, M3_1, M3_2, M3_3, ..., Mn_n, g1,...,gn

``q`` in the model's joint order [rad or m], ``M`` [kg m^2, kg m or kg], ``g`` [N m or N].
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynid_ros.dynamics.base_parameters import base_parameters_from_regressor, random_states
from dynid_ros.dynamics.regressor import regressor_3d
from dynid_ros.errors import DataError

STACK_METHODS = ("ols", "fbpe", "bpfc")
"""Estimators available for the inertia stack (rows are not per-joint torques, so no per-joint WLS)."""

ZERO_ROW_TOLERANCE = 1e-10
"""A stack element whose regressor entries all stay below this (relative to the largest) is zero."""


def lower_triangle(n: int) -> list[tuple[int, int]]:
    """``(row, column)`` of the lower-triangular elements of an n x n matrix, row by row (Gaz et al. 2019 eq. 17)."""
    return [(i, j) for i in range(n) for j in range(i + 1)]


def stack_names(n: int) -> list[str]:
    """Names of the stack elements: ``M1_1, M2_1, M2_2, ..., g1..gn`` (1-based)."""
    return [f"M{i + 1}_{j + 1}" for i, j in lower_triangle(n)] + [f"g{i + 1}" for i in range(n)]


def column_names(n: int) -> list[str]:
    """The header of the input file: ``q1..qn`` then the stack names."""
    return [f"q{i + 1}" for i in range(n)] + stack_names(n)


@dataclass
class MassMatrixSamples:
    """M(q) and g(q) at N configurations of n joints.

    Attributes:
        q: (N, n) configurations; stack: (N, n(n+1)/2 + n) inertia stacks (module docstring).
        source: where they were read from (for messages).
    """

    q: np.ndarray
    stack: np.ndarray
    source: str = ""

    @property
    def n_dof(self) -> int:
        """Number of joints ``n``."""
        return int(self.q.shape[1])

    @classmethod
    def from_matrices(cls, q: np.ndarray, mass_matrices: np.ndarray, gravity: np.ndarray,
                      source: str = "") -> MassMatrixSamples:
        """Samples from full (N, n, n) inertia matrices and (N, n) gravity vectors."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        rows, cols = np.array(lower_triangle(q.shape[1])).T
        stack = np.hstack([np.asarray(mass_matrices, dtype=float)[:, rows, cols], np.asarray(gravity, dtype=float)])
        return cls(q, stack, source)

    def write_csv(self, path: Path) -> Path:
        """Write the samples in the input format (module docstring)."""
        path = Path(path)
        with path.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(column_names(self.n_dof))
            writer.writerows(np.hstack([self.q, self.stack]).tolist())
        return path


CSV_BLOCK_ROWS = 10_000
"""Configurations of an M(q)/g(q) file parsed at a time (the text is never held whole)."""


def read_mass_matrix_csv(path: str | Path, n_dof: int) -> MassMatrixSamples:
    """Read an M(q)/g(q) file for a robot of ``n_dof`` joints (format: module docstring), line by line: memory
    holds the parsed values (``8 (2n + n(n+1)/2)`` bytes per configuration), never the text or a list of rows."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such M(q)/g(q) file")
    expected = column_names(n_dof)
    header: int | None = None
    blocks, values = [], []
    with path.open(errors="replace", newline=None) as text:
        for number, line in enumerate(text, start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if header is None:
                header = number
                _check_header(path, number, line, expected, n_dof)
                continue
            values.append(_parse_row(path, number, line, len(expected)))
            if len(values) == CSV_BLOCK_ROWS:
                blocks.append(np.array(values))
                values = []
    if header is None:
        raise DataError(f"{path}: empty M(q)/g(q) file")
    if values:
        blocks.append(np.array(values))
    if not blocks:
        raise DataError(f"{path}: no configurations after the header")
    table = np.vstack(blocks)
    return MassMatrixSamples(table[:, :n_dof], table[:, n_dof:], str(path))


def _check_header(path: Path, number: int, line: str, expected: list[str], n_dof: int) -> None:
    header = [c.strip() for c in line.split(",")]
    if header != expected:
        raise DataError(f"{path}: line {number}: header must be {len(expected)} columns "
                        f"{', '.join(expected[:3])}, ..., {expected[-1]} for a robot of {n_dof} joints "
                        f"(got {len(header)} columns starting {', '.join(header[:3])})")


def _parse_row(path: Path, number: int, line: str, width: int) -> list[float]:
    cells = line.split(",")
    if len(cells) != width:
        raise DataError(f"{path}: line {number}: {len(cells)} values, expected {width}")
    try:
        row = [float(c) for c in cells]
    except ValueError as err:
        raise DataError(f"{path}: line {number}: not a number: {err}") from err
    if not np.all(np.isfinite(row)):
        raise DataError(f"{path}: line {number}: NaN or Inf")
    return row


def stack_regressor(model, layout, q: np.ndarray) -> np.ndarray:
    """(N, n(n+1)/2 + n, n_parameters): the regressor of the inertia stack at each configuration (eq. 19).

    Columns follow ``layout`` (friction columns are zero: M and g have no friction).
    """

    q = np.atleast_2d(np.asarray(q, dtype=float))
    n_conf, n = q.shape
    ddq = np.vstack([np.zeros((1, n)), np.eye(n)])  # at rest, then a unit acceleration of each joint
    qq = np.repeat(q, n + 1, axis=0)
    y = regressor_3d(model, layout, qq, np.zeros_like(qq), np.tile(ddq, (n_conf, 1)))
    y = y.reshape(n_conf, n + 1, n, layout.n_parameters)
    gravity = y[:, 0]
    columns = y[:, 1:] - gravity[:, None]  # columns[:, c, r] = regressor of M[r, c]
    rows, cols = np.array(lower_triangle(n)).T
    return np.concatenate([columns[:, cols, rows], gravity], axis=1)


def informative_elements(y: np.ndarray) -> np.ndarray:
    """Mask of the stack elements whose regressor row is not zero at every configuration."""
    return informative_peaks(np.max(np.abs(y), axis=(0, 2)))


def informative_peaks(peak: np.ndarray) -> np.ndarray:
    """:func:`informative_elements` from each element's largest regressor entry over the configurations."""
    return peak > ZERO_ROW_TOLERANCE * max(float(peak.max()), 1e-300)


def stack_base_parameters(model, layout, seed: int = 0, n_configurations: int = 100):
    """Base parameters of the stack regressor at random configurations within the limits (eq. 20-21)."""

    q = random_states(model, n_configurations, np.random.default_rng(seed))[0]
    return base_parameters_from_regressor(stack_regressor(model, layout, q).reshape(-1, layout.n_parameters), layout)
