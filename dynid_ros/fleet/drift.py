"""Drift of one robot's parameters across identification runs (``dynid drift``): what moved, by how much, and
whether more than its uncertainty explains.

Inputs are result directories of ``dynid identify`` (or batches of ``dynid batch``, expanded into their
identified bags) of the same robot (same joints and links). Each run's time is the first stamp of its bag when a
batch summary records it, else the time the result was written (``created`` in ``parameters.yaml``); runs are put
in time order and the first is the reference.

The runs must share the prior's scales their estimates used (``report.json`` ``hyperparameters``; the stated
prior's, every scale 1, for a run without them): with scales chosen per run, a payload's mass moved a neighbour's
(test/fleet/test_drift.py: link 2 1.52 -> 0.78 kg with the mass scale x0.26 -> x1.92), a change of the estimator
read as the robot's. Runs that do not share them are refused, naming the remedy (identify with the reference's
scales, ``--hyperparameter-scales``; ``dynid batch`` gives its bags their first bag's).

Quantities: per joint the linear friction and armature (``fv``, ``fc``, ``fo``, ``Ia``, Sousa & Cortesão 2014
eq. 27), per link its ten inertial parameters (mass, first moments, inertia about the joint frame), each with the
posterior standard deviation the estimator wrote (``parameter_vector.std``; the MAP estimate with the nominal prior,
:mod:`dynid_ros.estimation.estimators`). A quantity is flagged when some run differs from the reference by more than
``k`` standard deviations of the difference, ``|x_i - x_0| > k sqrt(s_i^2 + s_0^2)`` (independent runs; default
k = 3), and the flag says it in words, from the reference to the last run: "Coulomb friction of joint j4 up 35 %".

``drift.json``: ``k``, ``runs`` (``result``, ``time``, ``source``), ``quantities`` (``owner_kind`` joint|link,
``owner``, ``parameter``, ``name``, ``unit``, ``values``, ``std``, ``z`` (per run against the reference),
``flagged``, ``first_flagged_run``, ``change``, ``change_percent``) and ``flags`` (the sentences).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError, DataError
from dynid_ros.estimation.prior import JOINT_GROUP, group_scale
from dynid_ros.reporting.result_directory import load_hyperparameter_scales, load_parameters
from dynid_ros.robot.parameters import LINK_PARAMETER_NAMES

DEFAULT_K = 3.0
SAME_SCALE = 1e-6
"""Runs' prior scales are the same when they agree to this relative tolerance (they are written as decimals)."""
BATCH_SUMMARY = "summary.json"
JOINT_TERMS: dict[str, tuple[str, str]] = {
    "fv": ("viscous friction", "N m s/rad"), "fc": ("Coulomb friction", "N m"), "fo": ("friction offset", "N m"),
    "Ia": ("armature", "kg m^2")}
"""Per-joint quantities followed across runs: words and unit (revolute joints)."""
LINK_TERMS: dict[str, tuple[str, str]] = dict(zip(LINK_PARAMETER_NAMES, (
    ("mass", "kg"), ("first moment x", "kg m"), ("first moment y", "kg m"), ("first moment z", "kg m"),
    *((f"inertia {name}", "kg m^2") for name in LINK_PARAMETER_NAMES[4:]))))
"""Per-link quantities (:data:`dynid_ros.robot.parameters.LINK_PARAMETER_NAMES`): words and unit."""


@dataclass
class Run:
    """One identification run: its result directory, time [s since the epoch], and where the time came from."""

    result: Path
    time: float
    source: str
    names: list[str]
    values: np.ndarray
    std: np.ndarray
    joints: list[str]
    links: list[str]
    scales: dict[str, float] = field(default_factory=dict)
    """The prior's scales per group its estimate used (:func:`dynid_ros.reporting.result_directory.
    load_hyperparameter_scales`)."""


@dataclass
class Quantity:
    """One parameter followed across runs (module docstring)."""

    owner_kind: str
    owner: str
    parameter: str
    name: str
    unit: str
    values: np.ndarray
    std: np.ndarray
    z: np.ndarray = field(default_factory=lambda: np.zeros(0))
    first_flagged_run: int | None = None

    @property
    def flagged(self) -> bool:
        """Whether the quantity moved beyond k standard deviations in some run."""
        return self.first_flagged_run is not None

    @property
    def change(self) -> float:
        """Change from the reference (first) run to the last."""
        return float(self.values[-1] - self.values[0])

    @property
    def change_percent(self) -> float | None:
        """Change from the reference to the last run in % of the reference; None when the reference is within
        its own uncertainty of zero (a percentage of nothing)."""
        ref = float(self.values[0])
        return None if abs(ref) <= self.std[0] or ref == 0.0 else 100.0 * self.change / abs(ref)

    def sentence(self) -> str:
        """``Coulomb friction of joint j4 up 35 %`` (module docstring), with values and the first flagged run."""
        direction = "up" if self.change >= 0 else "down"
        size = (f"{abs(self.change_percent):.0f} %" if self.change_percent is not None
                else f"by {abs(self.change):.3g} {self.unit}")
        return (f"{self.name} of {self.owner_kind} {self.owner} {direction} {size} ({self.values[0]:.4g} -> "
                f"{self.values[-1]:.4g} {self.unit}; beyond the threshold from run {self.first_flagged_run + 1} "
                f"of {len(self.values)} on)")

    def to_dict(self) -> dict:
        """The quantity's values, standard deviations, z-scores and flag for ``drift.json``."""
        return {"owner_kind": self.owner_kind, "owner": self.owner, "parameter": self.parameter, "name": self.name,
                "unit": self.unit, "values": self.values.tolist(), "std": self.std.tolist(), "z": self.z.tolist(),
                "flagged": self.flagged, "first_flagged_run": self.first_flagged_run, "change": self.change,
                "change_percent": self.change_percent}


def stamped_results(paths: list[str | Path]) -> list[tuple[Path, float | None]]:
    """Result directories with the bag's first stamp when known: a batch (``summary.json``) gives its identified
    bags; a result directory inside a batch gets its stamp from the batch summary."""
    out: list[tuple[Path, float | None]] = []
    for given in paths:
        path = Path(given)
        if (path / BATCH_SUMMARY).is_file():
            out += [(Path(r["result"]), r.get("stamp")) for r in _batch_records(path) if r.get("status") == "ok"]
        elif path.parent.joinpath(BATCH_SUMMARY).is_file():
            stamps = {Path(r["result"]).name: r.get("stamp") for r in _batch_records(path.parent)}
            out.append((path, stamps.get(path.name)))
        else:
            out.append((path, None))
    return out


def _batch_records(batch: Path) -> list[dict]:
    try:
        return list(json.loads((batch / BATCH_SUMMARY).read_text())["bags"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataError(f"{batch / BATCH_SUMMARY}: unreadable batch summary: {err}") from err


def load_run(result: Path, stamp: float | None) -> Run:
    """One run from its result directory (DataError naming it when it has no uncertainties)."""
    parameters = load_parameters(result)
    vector = parameters["parameter_vector"]
    if vector.get("std") is None:
        raise DataError(f"{result}: no parameter uncertainties (identify with --prior nominal and an estimator that "
                        f"writes them, e.g. --method fbpe)")
    if stamp is not None:
        time, source = float(stamp), "bag"
    else:
        try:
            time = dt.datetime.fromisoformat(str(parameters["created"])).timestamp()
        except (KeyError, ValueError) as err:
            raise DataError(f"{result}: no time of the run (parameters.yaml has no 'created')") from err
        source = "created"
    robot = parameters.get("robot") or {}
    return Run(result, time, source, list(vector["names"]), np.asarray(vector["values"], dtype=float),
               np.asarray(vector["std"], dtype=float), list(robot.get("joints") or []),
               list(robot.get("links") or []), load_hyperparameter_scales(result))


def load_runs(paths: list[str | Path]) -> list[Run]:
    """The runs in time order; ConfigError unless there are two or more of the same robot."""
    runs = sorted((load_run(p, s) for p, s in stamped_results(paths)), key=lambda r: (r.time, str(r.result)))
    if len(runs) < 2:
        raise ConfigError(f"--results: drift needs two runs or more, got {len(runs)}")
    first = runs[0]
    for run in runs[1:]:
        if (run.joints, run.links, run.names) != (first.joints, first.links, first.names):
            raise ConfigError(f"--results: {run.result} is not the same robot and layout as {first.result} "
                              f"(joints {', '.join(run.joints)} vs {', '.join(first.joints)})")
    for run in runs[1:]:
        names = set(first.scales) | set(run.scales)
        names = sorted(names - {"joint"} if any(g.startswith(JOINT_GROUP) for g in names) else names)
        pairs = {g: (group_scale(first.scales, g), group_scale(run.scales, g)) for g in names}
        moved = [g for g, (a, b) in pairs.items() if not np.isclose(a, b, rtol=SAME_SCALE, atol=0)]
        if moved:
            raise ConfigError(
                f"--results: {run.result} was identified with another prior than {first.result} (scales "
                + ", ".join(f"{g} x{pairs[g][0]:.3g} vs x{pairs[g][1]:.3g}" for g in moved)
                + "): a change between them would be the estimator's, not the robot's; identify every run, the "
                f"reference too, with the scales runs share (dynid identify --hyperparameter-scales {first.result}; "
                "dynid batch does so)")
    return runs


def quantities(runs: list[Run]) -> list[Quantity]:
    """Every followed quantity of the runs (joints first, then links), not yet tested."""
    index = {name: i for i, name in enumerate(runs[0].names)}
    values = np.array([r.values for r in runs])
    std = np.array([r.std for r in runs])
    out = []
    for kind, owners, terms in (("joint", runs[0].joints, JOINT_TERMS), ("link", runs[0].links, LINK_TERMS)):
        for owner in owners:
            for term, (words, unit) in terms.items():
                i = index.get(f"{owner}.{term}")
                if i is not None:
                    out.append(Quantity(kind, owner, term, words, unit, values[:, i], std[:, i]))
    return out


def flag(quantity: Quantity, k: float) -> Quantity:
    """Set ``z`` (per run, against the reference) and the first run beyond ``k`` (module docstring)."""
    scale = np.sqrt(quantity.std ** 2 + quantity.std[0] ** 2)
    diff = quantity.values - quantity.values[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), np.where(diff != 0, np.inf, 0.0))
    quantity.z = z
    beyond = np.flatnonzero(np.abs(z) > k)
    quantity.first_flagged_run = int(beyond[0]) if beyond.size else None
    return quantity


def drift(paths: list[str | Path], k: float = DEFAULT_K) -> tuple[list[Run], list[Quantity]]:
    """Runs in time order and every quantity tested at ``k`` standard deviations."""
    if not k > 0:
        raise ConfigError(f"--k must be > 0, got {k}")
    runs = load_runs(paths)
    return runs, [flag(q, k) for q in quantities(runs)]


def drift_dict(runs: list[Run], found: list[Quantity], k: float) -> dict:
    """The ``drift.json`` content (module docstring)."""
    return {"k": k,
            "runs": [{"result": str(r.result), "time": r.time,
                      "time_iso": dt.datetime.fromtimestamp(r.time, dt.timezone.utc).isoformat(timespec="seconds"),
                      "source": r.source} for r in runs],
            "quantities": [q.to_dict() for q in found],
            "flags": [q.sentence() for q in found if q.flagged]}
