"""Benchmark: peak RSS and time of the identification node and of ``dynid identify --effort-scale-file`` on short
1 kHz Panda bags, for two checkouts (before/after streaming them).

The bags are ``bench_long_bags``'s (written once into ``--dir``). Each run is its own child process; its peak RSS
is that child's ``ru_maxrss`` (``os.wait4``). The node runs as its executable (``python -m
dynid_ros.ros.identification_node`` with ``identify_on_start`` and ``shutdown_when_done``) on a random ROS domain
on localhost. ``--code`` is the checkout whose code runs (its PYTHONPATH and working directory), e.g. an export of
the commit before, for the "before" numbers.

``--configurations N`` adds ``dynid identify --mass-matrix`` on an M(q)/g(q) file of N random Panda configurations
(the nominal model's stacks plus noise; 0: not run).

Run: ``python benchmarks/bench_stream_options.py [--sizes 20,120] [--configurations 5000] [--code DIR] [--out FILE]``;
writes ``benchmarks/results/stream_options.json`` by default.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_long_bags import RATE_HZ, URDF, run_identify, write_long_bag  # noqa: E402

from dynid_ros.dynamics.base_parameters import random_states  # noqa: E402
from dynid_ros.estimation.inertia_stack import column_names, stack_regressor  # noqa: E402
from dynid_ros.robot.model import load_model, nominal_parameters  # noqa: E402

GAINS = {"panda_joint2": 2.0, "panda_joint6": 0.5}
"""The ``--effort-scale-file`` gains (any: the bench measures memory and time, not the fit)."""


def run_node(bag: Path, out: Path, code: str) -> dict:
    """The identification node's executable on ``bag``: wall time, the child's peak RSS [MB], its final status."""
    domain = str(random.SystemRandom().randint(1, 101))
    env = {**os.environ, "PYTHONPATH": code, "ROS_DOMAIN_ID": domain, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    env.pop("ROS_LOCALHOST_ONLY", None)
    command = [sys.executable, "-m", "dynid_ros.ros.identification_node", "--ros-args", "-p", f"urdf_path:={URDF}",
               "-p", f"bag_path:={bag}", "-p", f"output_dir:={out}", "-p", "identify_on_start:=true",
               "-p", "shutdown_when_done:=true"]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=code, env=env)
    output = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"identification_node failed on {bag}:\n{output}")
    report = json.loads((out / "report.json").read_text())
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "relative_error": report.get("relative_error"), "samples": report.get("n_samples")}


def write_mass_matrix_file(path: Path, configurations: int, seed: int = 0) -> Path:
    """An M(q)/g(q) CSV of ``configurations`` random Panda configurations (written once, 1000 at a time)."""
    if path.exists():
        return path
    model = load_model(urdf=URDF)
    layout = model.layout_for((), False)
    delta, rng = nominal_parameters(model, layout), np.random.default_rng(seed)
    partial = path.with_name(path.name + ".partial")
    with partial.open("w") as f:
        f.write(",".join(column_names(model.n_dof)) + "\n")
        for first in range(0, configurations, 1000):
            q = random_states(model, min(1000, configurations - first), rng)[0]
            stack = stack_regressor(model, layout, q) @ delta
            stack += rng.normal(0.0, 1e-3 * np.abs(stack).max(), stack.shape)
            np.savetxt(f, np.hstack([q, stack]), delimiter=",", fmt="%.17g")
    os.replace(partial, path)
    return path


def run_mass_matrix(csv: Path, out: Path, code: str) -> dict:
    """``dynid identify --mass-matrix`` as a child process: wall time and peak RSS [MB]."""
    command = [sys.executable, "-m", "dynid_ros.cli", "identify", "--urdf", str(URDF), "--mass-matrix", str(csv),
               "--friction", "none", "--no-armature", "--out", str(out)]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=code,
                             env={**os.environ, "PYTHONPATH": code})
    output = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"dynid identify --mass-matrix failed on {csv}:\n{output}")
    report = json.loads((out / "report.json").read_text())
    return {"seconds": round(time.perf_counter() - start, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "relative_error": report.get("relative_error"), "samples": report.get("n_samples")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,120", help="bag durations [s], comma-separated (short: shared machine)")
    parser.add_argument("--dir", default="/tmp/dynid_stream_options_bench", help="where the bags are written (once)")
    parser.add_argument("--configurations", type=int, default=0, help="--mass-matrix configurations (0: not run)")
    parser.add_argument("--code", default=str(ROOT), help="checkout whose code runs")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "stream_options.json"))
    args = parser.parse_args()
    folder, code = Path(args.dir), str(Path(args.code).resolve())
    folder.mkdir(parents=True, exist_ok=True)
    gains = folder / "gains.yaml"
    gains.write_text(yaml.safe_dump({"joints": list(GAINS), "effort_scale": list(GAINS.values())}))
    rows = []
    if args.configurations:
        csv = write_mass_matrix_file(folder / f"panda_m_g_{args.configurations}.csv", args.configurations)
        row = {"case": "dynid identify --mass-matrix", "configurations": args.configurations,
               "load_avg_before": round(os.getloadavg()[0], 2),
               **run_mass_matrix(csv, folder / f"out_mass_matrix_{args.configurations}", code)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    for duration in [float(s) for s in args.sizes.split(",") if s]:
        bag = folder / f"panda_{int(duration)}s"
        if not bag.exists():
            write_long_bag(bag, duration)
        for case in ("identification_node", "dynid identify --effort-scale-file"):
            out = folder / f"out_options_{int(duration)}s_{len(rows)}"
            load = os.getloadavg()[0]
            result = run_node(bag, out, code) if case == "identification_node" else \
                run_identify(bag, out, ["--effort-scale-file", str(gains)], code)
            row = {"case": case, "duration_s": duration, "messages": int(duration * RATE_HZ),
                   "load_avg_before": round(load, 2), **result}
            print(json.dumps(row), flush=True)
            rows.append(row)
    report = {"code": args.code, "cpus": os.cpu_count(), "runs": rows}
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
