"""Identification from torques of unknown sign, ``|tau|`` only (Pennese et al. 2021, Algorithm 1, T-PBPR).

Some controllers (the KUKA KR5 Sixx) report only the absolute value of the motor currents. Assuming the
torque keeps its sign while ``|tau_j|`` stays above a small threshold (Pennese et al. 2021 section III),
each joint's signal splits into *segments* of one unknown sign. A tree over the segment signs is
searched level by level: each level adds one segment (a block of regressor rows), each node branches
into its two signs, every node is scored by the residual of the feasibility-constrained fit, and only
the ``beam`` best nodes (the paper's ``w``) are expanded. The paper scores nodes with the penalty-based
retrieval (PBPR, its eq. 6-7); here the score is the package's convex estimator: the least residual
over physically consistent parameters (FBPE fit stage, Sousa & Cortesão 2014 eq. 74, with the
pseudo-inertia LMI of Traversaro et al. 2016). Infeasible sign patterns (e.g. all signs flipped, which
OLS fits as well with negative masses) cannot reach a small residual. The first level enumerates all
``2^s0`` sign patterns of the first ``s0`` segments, ``s0`` the smallest number (at least ``initial``)
whose rows determine the base parameters (Algorithm 1 lines 3-8). With the signs, the signed torque of
the segments goes through the usual identification (Algorithm 1 line 17).

Scoring is cheap: the segments never overlap, so the Gram matrix ``W^T W`` and ``||tau||^2`` of a level
are the same for every node and only ``W^T tau = sum_i s_i W_i^T |tau_i|`` depends on the signs. One
parametrized cvxpy problem per search is re-solved with new data for every node.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from dynid_ros.dynamics.feasibility import (
    DEFAULT_EPS,
    SOLVED,
    link_matrix_expressions,
    link_scales,
    parameter_scales,
    solve,
)
from dynid_ros.errors import ConfigError, DataError
from dynid_ros.estimation.estimators import PRIOR_EPS


@dataclass
class SignSearchOptions:
    """Settings of the sign search.

    Attributes:
        beam: nodes kept and expanded per level (``w`` of Pennese et al. 2021; the paper used 5).
        initial: fewest segments enumerated exhaustively at the first level (``s0``; the paper used 5).
        max_initial: most segments of the first level (``2^max_initial`` fits at most).
        threshold: per joint, ``|tau|`` below ``threshold`` times the joint's largest ``|tau|`` is "near zero"
            (the samples are left out and split segments).
        noise_factor: ... or below ``noise_factor`` times the joint's noise level (robust std of raw minus
            filtered ``|tau|``), whichever is larger.
        min_samples: shorter segments are left out.
        edge_s: seconds left out at both ends of a segment, where the low-pass filter has smeared the
            folded ``|tau|`` of the zero crossing (its minimum is raised, not zero); None: half a period of
            the torque filter's cutoff.
        dip: a local minimum of ``|tau|`` below ``dip`` times its neighbouring maxima also splits a segment.
        fill_gaps: after the search, the samples near zero torque (between segments) get the sign of the best
            node's feasible fit and enter the final identification (not in Pennese et al. 2021, which leaves them
            out; there ``|tau|`` is below the threshold, so a wrong sign costs little). Measured in
            ``benchmarks/bench_torque_signs.py`` (seeds 0-2): torque error on a new motion 0.144 / 0.169 / 0.158 %
            without, 0.139 / 0.136 / 0.145 % with (signed torque: 0.109 / 0.106 / 0.133 %).
    """

    beam: int = 5
    initial: int = 5
    max_initial: int = 10
    threshold: float = 0.05
    noise_factor: float = 4.0
    min_samples: int = 5
    edge_s: float | None = None
    dip: float = 0.5
    fill_gaps: bool = True

    def check(self) -> None:
        """Raise ConfigError for invalid values."""
        if int(self.beam) != self.beam or self.beam < 1:
            raise ConfigError(f"--beam must be a positive integer, got {self.beam!r}")
        if not 1 <= self.initial <= self.max_initial <= 16:
            raise ConfigError(f"sign search: need 1 <= initial ({self.initial}) <= max_initial "
                              f"({self.max_initial}) <= 16")
        if not (0.0 <= self.threshold < 1.0 and self.noise_factor >= 0.0 and self.min_samples >= 1
                and 0.0 < self.dip < 1.0 and (self.edge_s is None or self.edge_s >= 0.0)):
            raise ConfigError("sign search: threshold and dip must be in [0, 1), noise_factor and edge_s >= 0, "
                              "min_samples >= 1")


@dataclass
class Segment:
    """Samples ``start:stop`` of joint ``joint`` where ``|tau|`` stays above the threshold (one sign)."""

    joint: int
    start: int
    stop: int

    @property
    def size(self) -> int:
        """Number of samples in the segment."""
        return self.stop - self.start


@dataclass
class SignSearch:
    """What the sign search found.

    Attributes:
        segments: in the order the tree added them.
        signs: +1 or -1 per segment.
        thresholds: per joint, the ``|tau|`` below which samples are near zero.
        initial: ``s0``, segments enumerated at the first level.
        costs: relative feasible residual ``||tau - W beta|| / ||tau||`` (rows weighted by 1 / noise per joint)
            of the best node at each level.
        n_problems: convex problems solved; seconds: time of the search.
        beta: base parameters of the best node's feasible fit (all segments).
    """

    segments: list[Segment]
    signs: np.ndarray
    thresholds: np.ndarray
    initial: int
    costs: list[float] = field(default_factory=list)
    n_problems: int = 0
    seconds: float = 0.0
    beta: np.ndarray | None = None

    def sample_signs(self, n_samples: int, n_dof: int) -> np.ndarray:
        """(n_samples, n_dof) of +1/-1 inside the segments, 0 elsewhere (sign unknown, left out)."""
        out = np.zeros((n_samples, n_dof))
        for segment, sign in zip(self.segments, self.signs):
            out[segment.start:segment.stop, segment.joint] = sign
        return out

    def summary(self) -> str:
        """One line: segments, signs per joint, problems solved."""
        n_dof = 1 + max((s.joint for s in self.segments), default=0)
        per_joint = []
        for j in range(n_dof):
            chosen = sorted((s.start, sign) for s, sign in zip(self.segments, self.signs) if s.joint == j)
            per_joint.append("".join("+" if sign > 0 else "-" for _, sign in chosen))
        return (f"{len(self.segments)} segments (s0 {self.initial}), signs per joint in time order "
                f"{' '.join(per_joint)}; {self.n_problems} feasible fits in {self.seconds:.1f} s, final relative "
                f"residual {100 * self.costs[-1]:.2f} %")


def noise_levels(tau_abs: np.ndarray, tau_raw_abs: np.ndarray) -> np.ndarray:
    """Per joint, the robust standard deviation (1.4826 MAD) of raw minus filtered ``|tau|``."""
    diff = tau_raw_abs - tau_abs
    return 1.4826 * np.median(np.abs(diff - np.median(diff, axis=0)), axis=0)


def thresholds(tau_abs: np.ndarray, tau_raw_abs: np.ndarray, options: SignSearchOptions) -> np.ndarray:
    """Per joint: ``max(threshold * max|tau_j|, noise_factor * noise_j)`` (module docstring)."""
    return np.maximum(options.threshold * np.max(tau_abs, axis=0),
                      options.noise_factor * noise_levels(tau_abs, tau_raw_abs))


def find_segments(tau_abs: np.ndarray, limit: np.ndarray, min_samples: int, edge: int = 0,
                  dip: float = 0.5) -> list[Segment]:
    """Segments of one sign per joint, in time order: runs of samples with ``|tau_j| > limit_j``, split again at
    every local minimum deeper than ``dip`` times the lower of its neighbouring maxima (a zero crossing the
    low-pass filter has lifted above the threshold; a split without a crossing only adds a segment), less
    ``edge`` samples at each end; runs shorter than ``min_samples`` are left out."""
    import scipy.signal

    segments = []
    for j in range(tau_abs.shape[1]):
        x = tau_abs[:, j]
        minima, props = scipy.signal.find_peaks(-x, prominence=0.0)
        cuts = minima[x[minima] <= dip / (1.0 - dip) * props["prominences"]]
        above = x > limit[j]
        above[cuts] = False
        edges = np.flatnonzero(np.diff(np.concatenate([[False], above, [False]]).astype(int)))
        segments += [Segment(j, int(a) + edge, int(b) - edge) for a, b in zip(edges[::2], edges[1::2])
                     if b - a - 2 * edge >= min_samples]
    return sorted(segments, key=lambda s: (s.start, s.joint))


class FeasibleResidual:
    """The least residual over feasible parameters for a Gram matrix and a ``W^T tau``, as a reusable cvxpy problem.

    ``min ||R K delta - rho||`` subject to the link LMIs and the bounds, with ``R^T R = W^T W`` and
    ``R^T rho = W^T tau``; ``||tau - W K delta||^2 = ||R K delta - rho||^2 + ||tau||^2 - ||rho||^2``.
    """

    def __init__(self, K: np.ndarray, layout, consistency: str, bounds, solver: str, prior: np.ndarray | None) -> None:
        import cvxpy as cp


        self.K, self.solver = np.asarray(K, dtype=float), solver
        scales = link_scales(prior, layout)
        self.size = parameter_scales(layout, scales)
        eps = PRIOR_EPS if prior is not None else DEFAULT_EPS
        self.x = cp.Variable(layout.n_parameters)
        self.a = cp.Parameter((self.K.shape[0], layout.n_parameters))
        self.b = cp.Parameter(self.K.shape[0])
        delta = cp.multiply(self.size, self.x)
        matrices = link_matrix_expressions(delta, layout, consistency, scales)
        constraints = [m >> eps * np.eye(m.shape[0]) for m in matrices] + bounds.constraints(delta, layout, self.size)
        self.problem = cp.Problem(cp.Minimize(cp.norm(self.a @ self.x - self.b, 2)), constraints)
        self.solved = 0

    def set_gram(self, gram: np.ndarray, energy: float) -> None:
        """The rows of the current level: ``W^T W`` and ``||tau||^2``."""
        values, vectors = np.linalg.eigh(gram)
        keep = values > 1e-12 * max(values.max(), 1e-300)
        self.r = np.sqrt(values[keep])[:, None] * vectors[:, keep].T
        self.r_pinv = vectors[:, keep] / np.sqrt(values[keep])[None, :]
        self.gram, self.energy = gram, energy
        self.norm = np.sqrt(max(energy, 1e-300))
        a = np.zeros(self.a.shape)
        a[: self.r.shape[0]] = (self.r @ self.K) * self.size / self.norm
        self.a.value = a

    def cost(self, wt_tau: np.ndarray) -> tuple[float, np.ndarray | None]:
        """Relative residual ``||tau - W beta|| / ||tau||`` of the best feasible ``beta``, and ``beta``."""

        rho = self.r_pinv.T @ wt_tau
        b = np.zeros(self.b.shape)
        b[: rho.size] = rho / self.norm
        self.b.value = b
        status, _ = solve(self.problem, self.solver)
        self.solved += 1
        if status not in SOLVED:
            return np.inf, None
        beta = self.K @ (self.size * np.asarray(self.x.value))
        residual2 = float(beta @ self.gram @ beta - 2.0 * beta @ wt_tau + self.energy)
        return float(np.sqrt(max(residual2, 0.0) / max(self.energy, 1e-300))), beta


def search_signs(w_b3: np.ndarray, tau_abs: np.ndarray, segments: list[Segment], scorer: FeasibleResidual,
                 options: SignSearchOptions, limits: np.ndarray, weights: np.ndarray | None = None) -> SignSearch:
    """The beam search over segment signs (Pennese et al. 2021 Algorithm 1 lines 3-16).

    Args:
        w_b3: base regressor (N, n_dof, n_base); tau_abs: ``|tau|`` (N, n_dof).
        weights: per joint row weight (``1 / noise``): without it the residual is dominated by the strong joints
            and a wrong sign on a weak joint (a wrist) costs almost nothing.
    """
    weights = np.ones(w_b3.shape[1]) if weights is None else np.asarray(weights, dtype=float)
    start = time.perf_counter()
    if not segments:
        raise DataError("no torque segments above the threshold: nothing to identify from |tau|")
    grams, products, energies = [], [], []
    for s in segments:
        rows = weights[s.joint] * w_b3[s.start:s.stop, s.joint, :]
        values = weights[s.joint] * tau_abs[s.start:s.stop, s.joint]
        grams.append(rows.T @ rows)
        products.append(rows.T @ values)
        energies.append(float(values @ values))
    grams_sum = np.cumsum(grams, axis=0)
    n_base = w_b3.shape[2]
    full, plain, rank = None, np.zeros((n_base, n_base)), 0  # the rank of the rows, judged without the weights
    for k, s in enumerate(segments):  # the first prefix of segments that determines every base parameter
        rows = w_b3[s.start:s.stop, s.joint, :]
        plain += rows.T @ rows
        rank = np.linalg.matrix_rank(plain / max(np.abs(plain).max(), 1e-300), tol=1e-9)
        if rank == n_base:
            full = k + 1
            break
    if full is None:
        raise DataError(f"the torque segments determine only {rank} of {n_base} base parameters: "
                        f"too little excitation for --abs-effort")
    s0 = min(max(options.initial, full), options.max_initial, len(segments))
    energies_sum = np.cumsum(energies)
    scorer.set_gram(grams_sum[s0 - 1], energies_sum[s0 - 1])
    nodes = []  # (cost, signs, beta, W^T tau of the signed rows so far)
    for pattern in itertools.product((1.0, -1.0), repeat=s0):
        signs = np.array(pattern)
        wt_tau = np.tensordot(signs, products[:s0], axes=1)
        nodes.append((*scorer.cost(wt_tau), signs, wt_tau))
    nodes = sorted(nodes, key=lambda node: node[0])[: options.beam]
    costs = [nodes[0][0]]
    for k in range(s0, len(segments)):
        scorer.set_gram(grams_sum[k], energies_sum[k])
        children = []
        for _, _, signs, wt_tau in nodes:
            for sign in (1.0, -1.0):
                child_wt_tau = wt_tau + sign * products[k]  # the parent's sum plus the new segment
                children.append((*scorer.cost(child_wt_tau), np.append(signs, sign), child_wt_tau))
        nodes = sorted(children, key=lambda node: node[0])[: options.beam]
        costs.append(nodes[0][0])
    if not np.isfinite(nodes[0][0]):
        raise DataError("no sign pattern of the torque segments admits physically consistent parameters")
    return SignSearch(segments, nodes[0][2].astype(int), limits, s0, costs, scorer.solved,
                      time.perf_counter() - start, nodes[0][1])
