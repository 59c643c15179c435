"""Benchmark: how many position commands per second ``excitation_node`` streams in its own process (stream mode).

The node runs as it is launched: its own process (``python -m dynid_ros.ros.excitation_node``), its own executor.
This process plays the robot: a forward_position_controller that names its joints, a controller_manager that tells
its update_rate (the stream's rate), joint states at 100 Hz that follow each command, and a subscriber that stamps
every command on arrival. Per rate asked: commands received per second while running, and the gaps between them.
(In the node tests the stand-in robot and the node share one process and one GIL, which is not what a user runs.)

Run: ``python benchmarks/bench_stream_rate.py [--rates 200,500,1000] [--period 8]``; writes
``benchmarks/results/stream_rate.json`` (with the machine's load before and after).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))

from support.ros_helpers import isolate_ros_environment, node_process, write_test_trajectory  # noqa: E402

PANDA = [f"panda_joint{i}" for i in range(1, 8)]


class Robot:
    """The stand-in controller side: joint states following the commands, command arrival times, the status."""

    def __init__(self, context: object, pose: list[float], update_rate: int) -> None:
        from rclpy.node import Node
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray, String

        self.node = Node("robot", context=context)
        self.controller = Node("forward_position_controller", context=context)
        self.controller.declare_parameter("joints", PANDA)
        self.manager = Node("controller_manager", context=context)
        self.manager.declare_parameter("update_rate", update_rate)
        self.pose, self.arrivals, self.states, self.message = list(pose), [], [], ""
        self.commands: list[list[float]] = []
        self._state_pub = self.node.create_publisher(JointState, "/joint_states", 10)
        self._state_msg = JointState
        self.node.create_timer(0.01, self._publish)
        self.node.create_subscription(Float64MultiArray, "/forward_position_controller/commands", self._command, 100)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(String, "/excitation_node/status", self._status, latched)

    def _command(self, msg: object) -> None:
        self.arrivals.append(time.monotonic())
        self.commands.append(list(msg.data))
        self.pose = list(msg.data)

    def _status(self, msg: object) -> None:
        status = json.loads(msg.data)
        self.states.append(status["state"])
        self.message = status.get("message", "")

    def _publish(self) -> None:
        self._state_pub.publish(self._state_msg(name=PANDA, position=[float(v) for v in self.pose]))


def measure(rate: int, trajectory: Path, pose: list[float], log: Path, peak_speed: float) -> dict:
    """Stream one run of ``trajectory`` at ``rate`` commands/s; the arrival statistics while running, and the
    largest step between two commands received next to the profile's peak speed times two periods (the bound the
    node keeps after a stall; a command lost on the way shows as a larger step here)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_srvs.srv import Trigger

    context = rclpy.Context()
    rclpy.init(context=context)
    robot = Robot(context, pose, rate)
    # one thread: rclpy's MultiThreadedExecutor (before ros2/rclpy#1547) spins holding the GIL while a callback waits
    # in its pool, and this process then received a fraction of the commands sent (19/s of 200, gaps over 1 s)
    executor = SingleThreadedExecutor(context=context)
    for node in (robot.node, robot.controller, robot.manager):
        executor.add_node(node)
    parameters = {"robot": "panda", "trajectory_file": str(trajectory), "mode": "stream",
                  "controller_name": "forward_position_controller", "stream_joints": PANDA, "wait_timeout": 5.0}
    try:
        with node_process("excitation_node", parameters, log):
            client = robot.node.create_client(Trigger, "/excitation_node/start")
            deadline = time.monotonic() + 20
            while not (client.service_is_ready() and "idle" in robot.states) and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            time.sleep(0.5)
            future = client.call_async(Trigger.Request())
            deadline = time.monotonic() + 60
            while "done" not in robot.states and "aborted" not in robot.states and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.01)
    finally:
        executor.shutdown()
        context.try_shutdown()
    arrivals = np.array(robot.arrivals)
    gaps_ms = 1e3 * np.diff(arrivals) if arrivals.size > 1 else np.array([np.nan])
    span = float(arrivals[-1] - arrivals[0]) if arrivals.size > 1 else float("nan")
    steps = np.abs(np.diff(np.array(robot.commands), axis=0)).max() if len(robot.commands) > 1 else float("nan")
    return {"rate_asked": rate, "started": bool(future.done() and future.result().success),
            "end_state": robot.states[-1] if robot.states else None, "message": robot.message,
            "commands": int(arrivals.size),
            "span_s": round(span, 3), "commands_per_s": round((arrivals.size - 1) / span, 1) if span > 0 else None,
            "gap_ms_median": round(float(np.median(gaps_ms)), 2),
            "gap_ms_p99": round(float(np.percentile(gaps_ms, 99)), 2),
            "gap_ms_max": round(float(np.max(gaps_ms)), 2), "max_command_step": float(steps),
            "step_bound": 2.0 * peak_speed / rate, "stall_warnings": log.read_text().count("the stream stalled")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="200,500,1000")
    parser.add_argument("--period", type=float, default=8.0, help="the test trajectory's period [s]")
    args = parser.parse_args()
    isolate_ros_environment()
    load_before = os.getloadavg()[0]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        trajectory = write_test_trajectory(Path(tmp) / "motion.yaml", period=args.period, harmonics=3)
        import yaml

        limits = np.array(yaml.safe_load(trajectory.read_text())["limits"]["position"])
        pose = limits.mean(axis=1).tolist()
        from dynid_ros.excitation.limits import sample_trajectory
        from dynid_ros.excitation.trajectory_file import load_trajectory

        peak_speed = float(np.abs(sample_trajectory(load_trajectory(trajectory).trajectory, 1000.0)[2]).max())
        for rate in (int(r) for r in args.rates.split(",")):
            runs.append(measure(rate, trajectory, pose, Path(tmp) / f"node_{rate}.log", peak_speed))
            print(json.dumps(runs[-1]))
    report = {"cpus": os.cpu_count(), "load_average_1min_before": load_before,
              "load_average_1min_after": os.getloadavg()[0], "period_s": args.period, "runs": runs}
    out = ROOT / "benchmarks" / "results" / "stream_rate.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
