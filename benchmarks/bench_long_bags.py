"""Benchmark: peak RSS and time of ``dynid identify`` (default command) on 20 s, 2 min, 10 min and 60 min bags.

The bags are 1 kHz, 7-DOF Panda joint states along the multi-sine trajectory of
``benchmarks/bench_identify.synthetic_series`` (torque from the model plus noise). They are written once,
chunk by chunk (so writing a 60-min bag does not need GBs), into ``--dir`` (default /tmp, never the repository).
Each size runs ``dynid identify`` as its own child process; its peak RSS is the child's ``ru_maxrss``
(``os.wait4``: the resource usage of that child alone).

Run: ``python benchmarks/bench_long_bags.py [--sizes 20,120,600,3600] [--dir /tmp/dynid_stream_bench]``; writes
``benchmarks/results/long_bags.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_identify import multisine_states, multisine_terms  # noqa: E402

from dynid_ros.data.bag_io import JOINT_STATE_TYPE, encode_joint_states  # noqa: E402
from dynid_ros.data.joint_states import JointStateSeries  # noqa: E402
from dynid_ros.dynamics.regressor import torques  # noqa: E402
from dynid_ros.robot.model import load_model, nominal_parameters  # noqa: E402

URDF = ROOT / "urdf" / "panda.urdf"
RATE_HZ = 1000.0
CHUNK_S = 60.0


def _chunk(model, layout, delta, mid, terms, t: np.ndarray, rng) -> JointStateSeries:
    q, dq, ddq = multisine_states(t, mid, terms)
    tau = torques(model, layout, delta, q, dq, ddq) + rng.normal(0.0, 0.05, q.shape)
    return JointStateSeries(list(model.joints), t + 1.7e9, q, dq, tau)


def write_long_bag(path: Path, duration: float, seed: int = 0) -> Path:
    """A ``duration`` s, 1 kHz Panda bag at ``path`` (MCAP), written one minute at a time."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    model = load_model(urdf=URDF)
    layout = model.layout_for()
    delta = nominal_parameters(model, layout)
    for j in range(model.n_dof):
        delta[layout.joint_index(j, "fv")] = 0.5
        delta[layout.joint_index(j, "fc")] = 0.8
        delta[layout.joint_index(j, "Ia")] = 0.05
    mid, terms = multisine_terms(model, np.random.default_rng(seed))  # bench_identify's draws
    noise = np.random.default_rng(seed + 1)
    partial = path.with_name(path.name + ".partial")
    with Writer(partial, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/joint_states", JOINT_STATE_TYPE,
                                           typestore=get_typestore(Stores.ROS2_HUMBLE))
        n_total = int(round(duration * RATE_HZ))
        for first in range(0, n_total, int(CHUNK_S * RATE_HZ)):
            t = np.arange(first, min(first + int(CHUNK_S * RATE_HZ), n_total)) / RATE_HZ
            stamps, messages = encode_joint_states(_chunk(model, layout, delta, mid, terms, t, noise))
            for stamp, data in zip(stamps.tolist(), messages):
                writer.write(connection, stamp, data)
    os.replace(partial, path)
    return path


def run_identify(bag: Path, out: Path, extra: list[str], code: str) -> dict:
    """``dynid identify`` on ``bag`` as a child process running the checkout ``code`` (its PYTHONPATH and working
    directory: ``python -m`` imports from the working directory first): wall time and the child's peak RSS [MB]."""
    command = [sys.executable, "-m", "dynid_ros.cli", "identify", "--bag", str(bag), "--urdf", str(URDF),
               "--out", str(out), *extra]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=code,
                             env={**os.environ, "PYTHONPATH": code})
    output = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    if child.returncode:
        raise SystemExit(f"dynid identify failed on {bag}:\n{output}")
    report = json.loads((out / "report.json").read_text())
    stages = next((line.split(":", 1)[1].strip() for line in output.splitlines() if line.startswith("timings")), "")
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "relative_error": report.get("relative_error"), "samples": report.get("n_samples"), "stages_s": stages}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,120,600,3600", help="bag durations [s], comma-separated")
    parser.add_argument("--dir", default="/tmp/dynid_stream_bench", help="where the bags are written (once)")
    parser.add_argument("--write-only", action="store_true", help="write the bags, run nothing")
    parser.add_argument("--extra", default="", help="extra dynid identify arguments, space-separated")
    parser.add_argument("--code", default=str(ROOT), help="checkout whose dynid runs (PYTHONPATH of the child), e.g. "
                        "the main branch for the 'before' numbers")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "long_bags.json"))
    args = parser.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for duration in [float(s) for s in args.sizes.split(",")]:
        bag = folder / f"panda_{int(duration)}s"
        if not bag.exists():
            start = time.perf_counter()
            write_long_bag(bag, duration)
            print(f"wrote {bag} in {time.perf_counter() - start:.1f} s", flush=True)
        if args.write_only:
            continue
        out = folder / f"out_{int(duration)}s"
        if out.exists():
            import shutil
            shutil.rmtree(out)
        load = os.getloadavg()
        row = {"duration_s": duration, "messages": int(duration * RATE_HZ), "load_avg_before": round(load[0], 2),
               **run_identify(bag, out, args.extra.split(), str(Path(args.code).resolve()))}
        row["load_avg_after"] = round(os.getloadavg()[0], 2)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.write_only:
        return 0
    report = {"command": "dynid identify --bag BAG --urdf urdf/panda.urdf --out OUT " + args.extra,
              "code": args.code, "cpus": os.cpu_count(), "runs": rows}
    out_file = Path(args.out)
    out_file.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
