"""Benchmark: BagRecorder throughput for 60 s of 1 kHz, 7-joint ``sensor_msgs/JointState``.

Writes 60 000 pre-serialized messages as fast as possible, flushing every 500 messages (the
0.5 s flushes of a live 1 kHz recording: 120 sqlite3 commits or MCAP chunks), and reports
messages/s, wall and CPU seconds, and the CPU share the recorder would need to keep up with a
live 1 kHz stream (CPU s / 60 s). The bag's message count is checked: no message dropped.

Run: ``python benchmarks/bench_recorder.py``; writes ``benchmarks/results/recorder.json``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynid_ros.data.bag_io import JOINT_STATE_TYPE, BagRecorder, bag_info, encode_joint_states  # noqa: E402
from dynid_ros.data.joint_states import JointStateSeries  # noqa: E402


def main() -> int:
    n, joints = 60_000, 7
    rng = np.random.default_rng(0)
    series = JointStateSeries([f"panda_joint{i}" for i in range(1, joints + 1)], 1.7e9 + 1e-3 * np.arange(n),
                              *(rng.normal(size=(n, joints)) for _ in range(3)))
    stamps, messages = encode_joint_states(series)
    stamps = stamps.tolist()
    report: dict = {"messages": n, "joints": joints, "message_bytes": len(messages[0]), "storages": {}}
    for storage in ("mcap", "sqlite3"):
        with tempfile.TemporaryDirectory() as tmp:
            bag = Path(tmp) / "bag"
            wall, cpu = time.perf_counter(), time.process_time()
            with BagRecorder(bag, storage, {"/joint_states": JOINT_STATE_TYPE}, flush_period_s=1e9) as recorder:
                for k, (stamp, data) in enumerate(zip(stamps, messages)):
                    recorder.write("/joint_states", data, stamp)
                    if k % 500 == 499:
                        recorder.flush()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            stored = bag_info(bag)["messages"]["/joint_states"]
        report["storages"][storage] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                                       "messages_per_s": round(n / wall), "stored": stored, "dropped": n - stored,
                                       "cpu_share_at_1khz": round(cpu / 60.0, 4)}
    print(json.dumps(report, indent=2))
    out = ROOT / "benchmarks" / "results" / "recorder.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
