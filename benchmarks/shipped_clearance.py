"""Benchmark: the clearance of the shipped excitation trajectories (or of any trajectory file), measured with
pinocchio + coal directly (test/support/direct_clearance.py, not through the package's collision model): one period
at 100 Hz, the table at z = 0, the margin 2 cm; and the largest speed of the flange (any frame on the last moving
joint, the hand and its tool frames included: the links, not joint frames), by pinocchio's frame velocity.

Run: ``python benchmarks/shipped_clearance.py``: one Markdown row per shipped trajectory (share of samples in
self-collision, smallest self distance and its pair, lowest point and its link, share of samples below the table,
largest flange speed). ``python benchmarks/shipped_clearance.py --trajectory FILE --urdf URDF [--package NAME=DIR]``:
the same row for a trajectory file made elsewhere (e.g. ``dynid demo --optimize``'s, ``dynid excite``'s) on the
URDF given (its ``package://NAME/`` paths resolved to DIR).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))

from dynid_ros.excitation import load_trajectory  # noqa: E402

from support.direct_clearance import direct_clearance, resolved_urdf  # noqa: E402

SHIPPED = ("panda_identification", "panda_validation", "ur5e_identification", "ur5e_validation")
RATE_HZ = 100.0


def flange_speed(urdf_text: str, joints: list[str], q: np.ndarray, dq: np.ndarray) -> tuple[float, str]:
    """The largest linear speed [m/s] over the samples of any frame carried by the last moving joint (the flange,
    the hand, a tool frame), and that frame's name; joints the motion does not move stay at their neutral."""
    model = pin.buildModelFromXML(urdf_text)
    data = model.createData()
    ids = [model.getJointId(j) for j in joints]
    last = max(ids, key=lambda i: len(model.supports[i]))  # the deepest moving joint of the chain
    frames = [k for k, frame in enumerate(model.frames) if frame.parentJoint == last and frame.type == pin.BODY]
    columns_q = [model.joints[i].idx_q for i in ids]
    columns_v = [model.joints[i].idx_v for i in ids]
    best, best_frame = 0.0, ""
    for sample_q, sample_dq in zip(q, dq):
        config, velocity = pin.neutral(model), np.zeros(model.nv)
        config[columns_q], velocity[columns_v] = sample_q, sample_dq
        pin.forwardKinematics(model, data, config, velocity)
        pin.updateFramePlacements(model, data)
        for k in frames:
            speed = float(np.linalg.norm(
                pin.getFrameVelocity(model, data, k, pin.LOCAL_WORLD_ALIGNED).linear))
            if speed > best:
                best, best_frame = speed, model.frames[k].name
    return best, best_frame


def row(name: str, trajectory_file: Path, urdf: Path, packages: dict[str, Path]) -> str:
    """One Markdown row of the table for a trajectory file on a URDF."""
    trajectory = load_trajectory(trajectory_file).trajectory
    q, dq, _ = trajectory.evaluate(np.arange(0.0, trajectory.period, 1.0 / RATE_HZ))
    text = resolved_urdf(urdf, packages)
    found = direct_clearance(text, list(trajectory.joints), q, margin=0.02)
    speed, frame = flange_speed(text, list(trajectory.joints), q, dq)
    return (f"| `{name}` | {100 * found.in_collision:.1f} % | {100 * found.self_distance:.1f} cm "
            f"({' / '.join(found.self_pair or ())}) | {100 * found.lowest:+.1f} cm ({found.lowest_link}) | "
            f"{100 * found.below_table:.1f} % | {speed:.2f} m/s ({frame}) |")


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectory", type=Path, help="a trajectory file (default: the shipped ones)")
    parser.add_argument("--urdf", type=Path, help="the URDF of --trajectory")
    parser.add_argument("--package", action="append", default=[], metavar="NAME=DIR",
                        help="resolve package://NAME/ to DIR (repeatable)")
    args = parser.parse_args()
    print("| trajectory | in self-collision | smallest self distance | lowest point | below the table | "
          "max flange speed |")
    print("|---|---|---|---|---|---|")
    if args.trajectory is not None:
        if args.urdf is None:
            parser.error("--trajectory needs --urdf")
        packages = dict(item.split("=", 1) for item in args.package)
        print(row(args.trajectory.name, args.trajectory, args.urdf, {k: Path(v) for k, v in packages.items()}))
        return
    for name in SHIPPED:
        print(row(f"{name}.yaml", ROOT / "dynid_ros" / "robot" / "trajectories" / f"{name}.yaml",
                  ROOT / "urdf" / f"{name.split('_')[0]}.urdf", {"dynid_ros": ROOT}))


if __name__ == "__main__":
    main()
