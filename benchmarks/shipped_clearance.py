"""Benchmark: the clearance of the shipped excitation trajectories, measured with pinocchio + coal directly
(test/support/direct_clearance.py, not through the package's collision model): one period at 100 Hz, the table at
z = 0, the margin 2 cm.

Run: ``python benchmarks/shipped_clearance.py``; prints one Markdown row per shipped trajectory (share of samples in
self-collision, smallest self distance and its pair, lowest point and its link, share of samples below the table).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))

from dynid_ros.excitation import load_trajectory  # noqa: E402

from support.direct_clearance import direct_clearance, resolved_urdf  # noqa: E402

SHIPPED = ("panda_identification", "panda_validation", "ur5e_identification", "ur5e_validation")


def main() -> None:
    """Print the table."""
    print("| trajectory | in self-collision | smallest self distance | lowest point | below the table |")
    print("|---|---|---|---|---|")
    for name in SHIPPED:
        trajectory = load_trajectory(ROOT / "dynid_ros" / "robot" / "trajectories" / f"{name}.yaml").trajectory
        q = trajectory.evaluate(np.arange(0.0, trajectory.period, 0.01))[0]
        text = resolved_urdf(ROOT / "urdf" / f"{name.split('_')[0]}.urdf", {"dynid_ros": ROOT})
        found = direct_clearance(text, list(trajectory.joints), q, margin=0.02)
        print(f"| `{name}.yaml` | {100 * found.in_collision:.1f} % | {100 * found.self_distance:.1f} cm "
              f"({' / '.join(found.self_pair or ())}) | {100 * found.lowest:+.1f} cm ({found.lowest_link}) | "
              f"{100 * found.below_table:.1f} % |")


if __name__ == "__main__":
    main()
