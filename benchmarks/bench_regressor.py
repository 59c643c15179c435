"""Benchmark: the joint-torque regressor in us per sample, Panda (7 DOF) with viscous/Coulomb/offset friction and
armature, and the base-parameter map cold and from the on-disk cache.

Compares the compiled kernel (numba, the default), the NumPy recursion (``DYNID_REGRESSOR=numpy``, the fallback)
and a plain Python loop over pinocchio's ``computeJointTorqueRegressor`` plus the friction/armature columns. Best
of ``--repeat`` runs (the machine is shared: the load average is saved with the numbers).

Run: ``python benchmarks/bench_regressor.py [--samples 20000]``; writes ``benchmarks/results/regressor.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynid_ros.dynamics import base_parameter_cache  # noqa: E402
from dynid_ros.dynamics.base_parameters import compute_base_parameters  # noqa: E402
from dynid_ros.dynamics.regressor import BACKEND_VARIABLE, regressor_3d  # noqa: E402
from dynid_ros.robot.model import load_model  # noqa: E402

URDF = ROOT / "urdf" / "panda.urdf"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def pinocchio_loop(model, layout, q, dq, ddq) -> np.ndarray:
    """The plain way: pinocchio's regressor per sample, friction and armature columns appended."""
    data = model.pin_model.createData()
    out = np.zeros((len(q), model.n_dof, layout.n_parameters))
    n_link = layout.n_link_parameters
    for s in range(len(q)):
        out[s, :, :n_link] = pin.computeJointTorqueRegressor(model.pin_model, data, q[s], dq[s], ddq[s])
        for j in range(model.n_dof):
            for symbol, value in (("fv", dq[s, j]), ("fc", np.sign(dq[s, j])), ("fo", 1.0), ("Ia", ddq[s, j])):
                out[s, j, layout.joint_index(j, symbol)] = value
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    model = load_model(urdf=URDF)
    layout = model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    rng = np.random.default_rng(0)
    n = args.samples
    q, dq, ddq = rng.uniform(-2, 2, (n, 7)), rng.normal(size=(n, 7)), rng.normal(size=(n, 7))
    report = {"robot": "panda (urdf/panda.urdf), 7 DOF", "parameters": layout.n_parameters, "samples": n,
              "load_average_1min": os.getloadavg()[0], "cpus": os.cpu_count()}
    start = time.perf_counter()
    regressor_3d(model, layout, q[:2], dq[:2], ddq[:2])
    report["numba_first_call_s"] = time.perf_counter() - start  # compile, or load numba's on-disk cache
    for backend in ("numba", "numpy"):
        os.environ[BACKEND_VARIABLE] = backend
        seconds = best(lambda: regressor_3d(model, layout, q, dq, ddq), args.repeat)
        report[f"{backend}_us_per_sample"] = 1e6 * seconds / n
    os.environ.pop(BACKEND_VARIABLE)
    m = min(n, 5000)
    seconds = best(lambda: pinocchio_loop(model, layout, q[:m], dq[:m], ddq[:m]), args.repeat)
    report["pinocchio_loop_us_per_sample"] = 1e6 * seconds / m
    with tempfile.TemporaryDirectory() as cache:
        os.environ[base_parameter_cache.CACHE_VARIABLE] = cache
        start = time.perf_counter()
        compute_base_parameters(model, layout)
        report["base_parameters_cold_s"] = time.perf_counter() - start
        report["base_parameters_cached_s"] = best(lambda: compute_base_parameters(model, layout), args.repeat)
    print(json.dumps(report, indent=2))
    out = ROOT / "benchmarks" / "results" / "regressor.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
