"""Excitation trajectory files (YAML) and the record they hold.

Format::

    joints: [name, ...]
    wf: 0.6283            # rad/s
    harmonics: 5
    q0: [...]             # one per joint
    a: [[L values], ...]  # one row per joint (Sousa & Cortesão 2014 eq. 78)
    b: [[L values], ...]
    period_s: 10.0
    condition_number: 41.2
    collision: {margin_m: 0.02, smallest_clearance_m: 0.034, between: panda_hand and table, at_s: 4.21,
                checked_pairs: 49, not_checked: [...], pairs_not_checked: [...], environment: [table (plane)]}
                          # optional: the clearance the optimizer kept (also in the comment lines at the top)
    limits: {position: [[lo, hi], ...], velocity: [...], acceleration: [...], effort: [...] (optional)}
                          # optional: the limits the optimizer used (a record; they may only narrow the robot's)
    info: {...}           # optional: how it was made (seed, objective, timings)

:func:`load_trajectory` checks that the trajectory starts and ends at rest and, when the file has
``limits:``, that it respects them on a 1 kHz grid; a file that fails is rejected. The robot's own
limits are the authority wherever the trajectory runs: :func:`dynid_ros.execution.robot_limits.checked_profile`.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from dynid_ros.errors import TrajectoryError
from dynid_ros.excitation.fourier import REST_TOLERANCE, FourierTrajectory, rest_residual
from dynid_ros.excitation.limits import CHECK_RATE_HZ, ExcitationLimits, check_trajectory_limits


@dataclass
class ExcitationTrajectory:
    """An excitation trajectory with the limits it was checked against.

    Attributes:
        trajectory: the Fourier coefficients; limits: as checked (margins applied), None when the file has none;
        condition_number: of the base regressor over one period
            (:func:`dynid_ros.excitation.optimizer.excitation_condition_number`);
        info: free-form metadata (seed, objective, margins found, timings).
    """

    trajectory: FourierTrajectory
    limits: ExcitationLimits | None
    condition_number: float
    info: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The trajectory file's content: coefficients, condition number, the limits checked and the info."""
        tr = self.trajectory
        out = {
            "joints": list(tr.joints),
            "wf": float(tr.wf),
            "harmonics": tr.harmonics,
            "q0": tr.q0.tolist(),
            "a": tr.a.tolist(),
            "b": tr.b.tolist(),
            "period_s": float(tr.period),
            "condition_number": float(self.condition_number),
        }
        if "collision" in self.info:
            out["collision"] = _plain(self.info["collision"])
        if self.limits is not None:
            out["limits"] = self.limits.to_dict()
        out["info"] = _plain({k: v for k, v in self.info.items() if k != "collision"})
        return out


def clearance_lines(summary: dict | None) -> list[str]:
    """What the console and the file's first lines say of the clearance an excitation keeps (``info["collision"]``:
    :meth:`dynid_ros.robot.collision_model.CollisionModel.summary`; None: not checked)."""
    if summary is None:
        return ["clearance: not checked (collision: self: false, environment: [])"]
    lines = []
    if "smallest_clearance_m" in summary:
        kept = summary.get("kept_m", summary["margin_m"])
        lines.append(f"clearance: smallest {100 * summary['smallest_clearance_m']:.1f} cm ({summary['between']} at "
                     f"t = {summary['at_s']:.2f} s; {100 * kept:.1f} cm kept there, {100 * summary['margin_m']:.1f} "
                     f"cm elsewhere; {summary['checked_pairs']} pairs of links and obstacles checked at 1 kHz)")
    elif not summary.get("checked_pairs"):
        lines.append("clearance: nothing to check (no collision geometry)")
    if summary.get("not_checked"):
        lines.append("not checked for collision: " + ", ".join(summary["not_checked"]))
    if summary.get("smaller_margins"):
        lines.append("keeping half the most they are apart: " + "; ".join(summary["smaller_margins"]))
    if summary.get("pairs_not_checked"):
        lines.append("pairs of links not checked: " + "; ".join(summary["pairs_not_checked"]))
    if summary.get("touching_at_start"):
        lines.append("near the environment at the start pose: " + ", ".join(summary["touching_at_start"]))
    if summary.get("rejected"):
        lines.append(f"{len(summary['rejected'])} better result(s) rejected by the 1 kHz collision check")
    return lines


def _plain(value: object) -> object:
    """Numpy scalars and arrays to plain Python for YAML."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def save_trajectory(path: str | Path, trajectory: ExcitationTrajectory) -> None:
    """Write ``trajectory`` to ``path`` atomically (temporary file in the same directory, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(trajectory.to_dict(), sort_keys=False, default_flow_style=None, width=120)
    if "collision" in trajectory.info:
        text = "".join(f"# {line}\n" for line in clearance_lines(trajectory.info["collision"])) + text
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_trajectory(path: str | Path) -> ExcitationTrajectory:
    """Read and check a trajectory file.

    Raises:
        TrajectoryError: missing file, invalid YAML, missing or malformed field, a trajectory that does
            not start at rest, or one that violates its limits on a 1 kHz grid (one line, naming the file).
    """
    path = Path(path)
    if not path.is_file():
        raise TrajectoryError(f"{path}: no such trajectory file")
    try:
        content = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise TrajectoryError(f"{path}: invalid YAML: {str(err).splitlines()[0]}") from err
    try:
        return _from_dict(content)
    except TrajectoryError as err:
        raise TrajectoryError(f"{path}: {err}") from err


def _from_dict(content: object) -> ExcitationTrajectory:
    if not isinstance(content, dict):
        raise TrajectoryError("a trajectory file must be a mapping")
    missing = [k for k in ("joints", "wf", "q0", "a", "b") if k not in content]
    if missing:
        raise TrajectoryError(f"missing field(s) {', '.join(missing)}")
    limits_in = content.get("limits")
    if limits_in is not None and (not isinstance(limits_in, dict)
                                  or any(k not in limits_in for k in ("position", "velocity", "acceleration"))):
        raise TrajectoryError("limits must have position, velocity and acceleration")
    try:
        trajectory = FourierTrajectory(tuple(content["joints"]), float(content["wf"]), content["q0"],
                                       content["a"], content["b"])
        limits = None if limits_in is None else ExcitationLimits(
            limits_in["position"], limits_in["velocity"], limits_in["acceleration"], limits_in.get("effort"))
    except (TypeError, ValueError) as err:
        raise TrajectoryError(f"malformed numbers: {err}") from err
    if "harmonics" in content and content["harmonics"] != trajectory.harmonics:
        raise TrajectoryError(f"harmonics is {content['harmonics']} but a and b have {trajectory.harmonics} columns")
    if "period_s" in content and not np.isclose(float(content["period_s"]), trajectory.period, rtol=1e-6):
        raise TrajectoryError(f"period_s {content['period_s']} does not match wf (2 pi / wf = {trajectory.period:.6g})")
    check_rest(trajectory)
    if limits is not None:
        check_trajectory_limits(trajectory, limits, CHECK_RATE_HZ)
    info = content.get("info") or {}
    if not isinstance(info, dict):
        raise TrajectoryError("info must be a mapping")
    if "collision" in content:
        info = {**info, "collision": content["collision"]}
    return ExcitationTrajectory(trajectory, limits, float(content.get("condition_number", np.nan)), info)


def check_rest(trajectory: FourierTrajectory) -> None:
    """Raise :class:`TrajectoryError` unless the trajectory starts (and so ends) at rest."""
    velocity, acceleration = rest_residual(trajectory)
    for name, value in (("velocity", velocity), ("acceleration", acceleration)):
        moving = np.flatnonzero(np.abs(value) > REST_TOLERANCE)
        if moving.size:
            k = int(moving[0])
            raise TrajectoryError(f"joint {trajectory.joints[k]}: {name} {value[k]:.3g} at t = 0 s; the trajectory "
                                  "must start and end at rest")
