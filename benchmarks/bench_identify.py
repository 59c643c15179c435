"""Benchmark: a 60 s, 1 kHz, 7-DOF bag to an identified URDF, end to end.

Compares ``dynid identify`` (in process, same code path as the CLI: the bag streamed) with "the plain way":
the same bag read, a pinocchio per-sample regressor loop over every sample, numpy QR for the
base columns, and a cvxpy/Clarabel feasible least-squares problem on the stacked data.

Both run in this one process, ours first. The libraries both ways use (numpy, scipy.linalg, cvxpy, pinocchio,
rosbags) are imported before either is timed: otherwise the first way timed pays their import (cvxpy alone takes
0.7 s) and the second gets it free. What only one way needs (ours: scipy.signal, numba's cached kernels,
matplotlib for the report) counts in its time.

Run: ``python benchmarks/bench_identify.py [--duration 60]``; prints per-stage times and writes
``benchmarks/results/identify.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynid_ros.data.bag_io import read_joint_states, write_joint_states  # noqa: E402
from dynid_ros.data.joint_states import JointStateSeries  # noqa: E402
from dynid_ros.dynamics.regressor import torques  # noqa: E402
from dynid_ros.identification.identify import identify_bag  # noqa: E402
from dynid_ros.identification.options import IdentificationOptions  # noqa: E402
from dynid_ros.identification.timing import StageTimer  # noqa: E402
from dynid_ros.reporting.result_directory import write_result  # noqa: E402
from dynid_ros.robot.model import load_model, nominal_parameters  # noqa: E402

URDF = ROOT / "urdf" / "panda.urdf"


def multisine_terms(model: object, rng: np.random.Generator) -> tuple[np.ndarray, list]:
    """The mid pose and, per joint, five ``(amplitude, phase, angular frequency)`` harmonics of 0.05 Hz within a
    quarter of the joint's range (drawn from ``rng``)."""
    wf = 0.1 * np.pi
    mid = model.position_limits.mean(axis=1)
    span = 0.25 * (model.position_limits[:, 1] - model.position_limits[:, 0])
    terms = [[(span[j] / 5 * rng.uniform(0.3, 1.0) / h, rng.uniform(0, 2 * np.pi), wf * h) for h in range(1, 6)]
             for j in range(model.n_dof)]
    return mid, terms


def multisine_states(t: np.ndarray, mid: np.ndarray, terms: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, q', q'' of the multi-sine ``terms`` about ``mid`` at times ``t``."""
    q = np.zeros((t.size, len(terms)))
    dq, ddq = np.zeros_like(q), np.zeros_like(q)
    for j, harmonics in enumerate(terms):
        for amp, phase, w in harmonics:
            q[:, j] += amp * np.sin(w * t + phase)
            dq[:, j] += amp * w * np.cos(w * t + phase)
            ddq[:, j] -= amp * w * w * np.sin(w * t + phase)
        q[:, j] += mid[j]
    return q, dq, ddq


def synthetic_series(duration: float, rate: float = 1000.0, seed: int = 0) -> JointStateSeries:
    """Joint states of the Panda URDF along a multi-sine trajectory, torque from the model + noise."""
    model = load_model(urdf=URDF)
    layout = model.layout_for()
    delta = nominal_parameters(model, layout)
    rng = np.random.default_rng(seed)
    for j in range(model.n_dof):
        delta[layout.joint_index(j, "fv")] = 0.5
        delta[layout.joint_index(j, "fc")] = 0.8
        delta[layout.joint_index(j, "Ia")] = 0.05
    t = np.arange(0.0, duration, 1.0 / rate)
    mid, terms = multisine_terms(model, rng)
    q, dq, ddq = multisine_states(t, mid, terms)
    tau = torques(model, layout, delta, q, dq, ddq) + rng.normal(0.0, 0.05, q.shape)
    return JointStateSeries(list(model.joints), t + 1.7e9, q, dq, tau)


def import_shared_libraries() -> None:
    """Import what both ways use, before timing either (module docstring)."""
    import cvxpy  # noqa: F401
    import pinocchio  # noqa: F401
    import rosbags.rosbag2  # noqa: F401
    import scipy.linalg  # noqa: F401


def plain_way(bag: Path) -> dict[str, float]:
    """Per-sample pinocchio regressor + numpy QR + cvxpy/Clarabel on the stacked data."""
    import cvxpy as cp
    import pinocchio as pin
    import scipy.linalg

    times: dict[str, float] = {}
    start = time.perf_counter()
    series = read_joint_states(bag)
    times["read_bag"] = time.perf_counter() - start
    start = time.perf_counter()
    model = pin.buildModelFromUrdf(str(URDF))
    data = model.createData()
    n = model.nv
    ddq = np.gradient(series.velocity, series.t, axis=0)
    rows = [pin.computeJointTorqueRegressor(model, data, series.position[s], series.velocity[s], ddq[s]).copy()
            for s in range(len(series))]
    w = np.vstack(rows)
    times["regressor_loop"] = time.perf_counter() - start
    start = time.perf_counter()
    _, r, piv = scipy.linalg.qr(w, mode="economic", pivoting=True)
    rank = int(np.sum(np.abs(np.diag(r)) > 1e-8 * abs(r[0, 0])))
    w_b = w[:, np.sort(piv[:rank])]
    times["qr_base"] = time.perf_counter() - start
    start = time.perf_counter()
    beta = cp.Variable(rank)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(w_b @ beta - series.effort.reshape(-1))))
    problem.solve(solver=cp.CLARABEL)
    times["cvxpy_clarabel"] = time.perf_counter() - start
    times["total"] = sum(times.values())
    del n
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--skip-plain", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bag = Path(tmp) / "bag"
        series = synthetic_series(args.duration)
        write_joint_states(bag, series)
        import_shared_libraries()
        timer = StageTimer()
        start = time.perf_counter()
        result = identify_bag(bag, IdentificationOptions(), urdf=URDF, timer=timer)  # dynid identify's path
        with timer.stage("write"):
            write_result(result, Path(tmp) / "out")
        ours = time.perf_counter() - start
        plain = None if args.skip_plain else plain_way(bag)
    report = {
        "samples": len(series), "joints": len(series.names), "duration_s": args.duration,
        "dynid_total_s": round(ours, 3), "dynid_stages_s": timer.timings,
        "relative_error": result.relative_error, "feasible": result.feasible, "solver_status": result.solver_status,
        "plain_way_s": {k: round(v, 3) for k, v in plain.items()} if plain else None,
        "speedup": round(plain["total"] / ours, 2) if plain else None,
    }
    print(json.dumps(report, indent=2))
    out = ROOT / "benchmarks" / "results" / "identify.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
