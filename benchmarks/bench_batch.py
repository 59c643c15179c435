"""Benchmark: ``dynid batch`` throughput (bags per minute) with 1 and 2 workers of a local Dask cluster.

Bags: ``--bags`` synthetic Panda bags (7 DOF, ``--duration`` s each at 1 kHz, torque from the model plus noise:
``bench_identify.synthetic_series``, one seed per bag), identified with the default options (FBPE, friction and
armature). The wall time includes starting and stopping the cluster
(what a nightly run pays); the per-bag times are in the summary. The machine is shared: its load is saved too.

Run: ``python benchmarks/bench_batch.py [--bags 12 --duration 60]``; writes ``benchmarks/results/batch.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_identify import URDF, synthetic_series  # noqa: E402

from dynid_ros.cli.main import main as dynid  # noqa: E402
from dynid_ros.data.bag_io import write_joint_states  # noqa: E402


def run(urdf: Path, bags: list[Path], out: Path, workers: int) -> dict:
    start = time.perf_counter()
    code = dynid(["batch", "--urdf", str(urdf), "--bags", *map(str, bags), "--out", str(out), "--workers",
                  str(workers), "--no-progress"])
    wall = time.perf_counter() - start
    summary = json.loads((out / "summary.json").read_text())
    per_bag = [r["time_s"] for r in summary["bags"]]
    return {"exit_code": code, "wall_s": wall, "bags_per_minute": 60.0 * len(bags) / wall,
            "bag_time_s_median": sorted(per_bag)[len(per_bag) // 2], "n_ok": summary["n_ok"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bags", type=int, default=12)
    parser.add_argument("--duration", type=float, default=60.0)
    args = parser.parse_args()
    report = {"bags": args.bags, "bag_duration_s": args.duration, "cpus": os.cpu_count(),
              "load_average_1min_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        urdf = URDF
        bags = [write_joint_states(root / f"bag{i}", synthetic_series(args.duration, seed=i))
                for i in range(args.bags)]
        for workers in (1, 2):
            report[f"workers_{workers}"] = run(urdf, bags, root / f"out{workers}", workers)
    report["load_average_1min_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))
    (ROOT / "benchmarks" / "results" / "batch.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
