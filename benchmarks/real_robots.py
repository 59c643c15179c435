"""Benchmark: the default identification on every real robot data set at hand, next to a plain OLS pipeline.

For each data set: identify with the DEFAULT command (``dynid identify`` options as constructed; only the joints are
named) on the first 70 % of the run, validate on the rest against the raw recorded torque (Sousa & Cortesão 2014
eq. 84). Beside it, a plain OLS pipeline in this script: the same processing, ``numpy.linalg.lstsq`` on the base
regressor, no feasibility. Reported: held-out error (total and per joint), feasibility, solver status, what was
not identified, link masses vs the nominal URDF, time.

Data sets (each skipped with a message when its files are absent):

- ``panda_gaz2019``: the real Franka Emika Panda excitation run published with Gaz et al. 2019 (GPL-3), found
  through ``DYNID_PANDA_DATA``; URDF of example-robot-data as shipped, fingers locked.

Run: ``python benchmarks/real_robots.py``; writes ``benchmarks/results/real_robots.json``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))

from dynid_ros.data.joint_states import JointStateSeries  # noqa: E402
from dynid_ros.dynamics.regressor import regressor  # noqa: E402
from dynid_ros.estimation.fit_quality import relative_error  # noqa: E402
from dynid_ros.identification.identify import identify  # noqa: E402
from dynid_ros.identification.options import IdentificationOptions  # noqa: E402
from dynid_ros.reporting.validate import evaluate_parameters, processed_window  # noqa: E402
from dynid_ros.robot.model import nominal_parameters  # noqa: E402

from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, example_robot_urdf  # noqa: E402

SPLIT = 0.7
"""Fraction of each run used for identification; the rest is held out."""


def panda_gaz2019() -> tuple[JointStateSeries, Path, list[str]] | None:
    """The real Panda run (time, q, q', tau text files), its URDF and identified joints; None when absent."""
    data = Path(os.environ.get("DYNID_PANDA_DATA", ""))
    if not os.environ.get("DYNID_PANDA_DATA") or not (data / "exciting_traj_time.txt").is_file():
        print(f"panda_gaz2019: skipped, no data at {data} (set DYNID_PANDA_DATA)")
        return None
    t = np.loadtxt(data / "exciting_traj_time.txt")
    q, dq, tau = (np.loadtxt(data / f"exciting_traj_{name}.txt").reshape(-1, 7)
                  for name in ("positions", "velocity", "torques"))
    return JointStateSeries(list(PANDA_ARM_JOINTS), t, q, dq, tau), example_robot_urdf(PANDA_ERD), \
        list(PANDA_ARM_JOINTS)


DATASETS: dict[str, Callable[[], tuple[JointStateSeries, Path, list[str]] | None]] = {
    "panda_gaz2019": panda_gaz2019,
}


def plain_ols(result, options: IdentificationOptions, fit: JointStateSeries, held) -> tuple[float, list[float]]:
    """Held-out error of OLS on ``result``'s base regressor (same processing as the default command, no
    feasibility) on the processed held-out window ``held``."""
    model, layout, base = result.model, result.layout, result.base
    train = processed_window(model, fit, options, result.processing)
    w = base.project(regressor(model, layout, train.q, train.dq, train.ddq))
    beta = np.linalg.lstsq(w, train.tau.reshape(-1), rcond=None)[0]
    tau_hat = (base.project(regressor(model, layout, held.q, held.dq, held.ddq)) @ beta).reshape(held.tau_raw.shape)
    return relative_error(held.tau_raw, tau_hat)


def run(name: str, series: JointStateSeries, urdf: Path, joints: list[str]) -> dict:
    cut = SPLIT * (series.t[-1] - series.t[0])
    fit, test = series.window(None, cut), series.window(cut, None)
    options = IdentificationOptions(joints=joints)
    start = time.perf_counter()
    result = identify(fit, options, urdf=urdf)
    seconds = time.perf_counter() - start
    model, layout = result.model, result.layout
    held_window = processed_window(model, test, options, result.processing)
    held = evaluate_parameters(model, layout, result.delta, held_window)
    ols_error, ols_per_joint = plain_ols(result, options, fit, held_window)
    nominal = nominal_parameters(model, layout)
    masses, nominal_masses = result.delta[layout.indices("m")], nominal[layout.indices("m")]
    ratio = masses / nominal_masses
    return {
        "dataset": name,
        "urdf": str(urdf),
        "joints": joints,
        "held_out_relative_error": held.relative_error,
        "held_out_relative_error_per_joint": held.relative_error_per_joint,
        "plain_ols_held_out_relative_error": ols_error,
        "plain_ols_held_out_relative_error_per_joint": ols_per_joint,
        "feasible": bool(result.feasible),
        "solver_status": result.solver_status,
        "not_identified": [m["description"] for m in result.not_identified],
        "link_masses": dict(zip(layout.links, masses.tolist())),
        "link_mass_ratio_to_nominal": dict(zip(layout.links, ratio.tolist())),
        "links_within_half_to_double_nominal": bool(np.all((ratio >= 0.5) & (ratio <= 2.0))),
        "total_mass": float(masses.sum()),
        "nominal_total_mass": float(nominal_masses.sum()),
        "identify_seconds": seconds,
        "warnings": list(result.warnings),
    }


def main() -> int:
    import logging

    logging.disable(logging.WARNING)
    rows = []
    for name, loader in DATASETS.items():
        loaded = loader()
        if loaded is None:
            continue
        row = run(name, *loaded)
        rows.append(row)
        print(f"{name}: held-out {100 * row['held_out_relative_error']:.2f} % (plain OLS "
              f"{100 * row['plain_ols_held_out_relative_error']:.2f} %), feasible {row['feasible']} "
              f"({row['solver_status']}), total mass {row['total_mass']:.2f} kg (nominal "
              f"{row['nominal_total_mass']:.2f} kg), masses/nominal "
              + " ".join(f"{r:.2f}" for r in row["link_mass_ratio_to_nominal"].values())
              + f", not identified: {', '.join(row['not_identified']) or 'none'}, {row['identify_seconds']:.1f} s")
    out = ROOT / "benchmarks" / "results" / "real_robots.json"
    out.write_text(json.dumps({"split": SPLIT, "datasets": rows}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
