"""recorder_node at 1 kHz: a separate publisher process sends 7-joint sensor_msgs/JointState on /joint_states
at 1 kHz for 60 s; recorder_node (its own process) records them; we count the messages in the bag
against those published (drops) and measure the recorder's CPU share from /proc (user + system time
over wall time while recording; 100 % = one core).

    python benchmarks/bench_recorder_node.py [--duration 60] [--storage mcap]

Prints the numbers and writes benchmarks/results/bench_recorder_node.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
PUBLISHER_QOS_DEPTH = 100


def publish(duration: float, rate_hz: float) -> None:
    """The publisher process: wait for one subscriber, publish for ``duration`` s, print the count."""
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = Node("bench_joint_state_publisher")
    publisher = node.create_publisher(JointState, "/joint_states",
                                      QoSProfile(depth=PUBLISHER_QOS_DEPTH, reliability=ReliabilityPolicy.RELIABLE))
    while publisher.get_subscription_count() < 1:
        rclpy.spin_once(node, timeout_sec=0.05)
    print("subscribed", flush=True)
    msg = JointState(name=JOINTS)
    count, start = 0, time.monotonic()
    period = 1.0 / rate_hz
    while (now := time.monotonic() - start) < duration:
        due = int(now / period) + 1
        while count < due:
            t = count * period
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(t * 1e9), 1_000_000_000)
            msg.position = [0.1 * t + k for k in range(7)]
            msg.velocity = [0.1] * 7
            msg.effort = [float(k) for k in range(7)]
            publisher.publish(msg)
            count += 1
        time.sleep(max(0.0, (count * period) - (time.monotonic() - start)))
    elapsed = time.monotonic() - start
    time.sleep(0.5)
    print(json.dumps({"published": count, "elapsed_s": elapsed}), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process [s]."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def call(node: object, service: str) -> object:
    import rclpy
    from std_srvs.srv import Trigger

    client = node.create_client(Trigger, service)
    if not client.wait_for_service(timeout_sec=20):
        raise SystemExit(f"{service} not available")
    future = client.call_async(Trigger.Request())
    rclpy.spin_until_future_complete(node, future, timeout_sec=30)
    return future.result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    parser.add_argument("--publisher", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.publisher:
        return publish(args.duration, args.rate)

    os.environ.update(ROS_DOMAIN_ID=str(random.randint(1, 101)), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    import rclpy
    from rclpy.node import Node

    from dynid_ros.data.bag_io import bag_info

    work = Path(tempfile.mkdtemp(prefix="bench_recorder_"))
    bag = work / "bag"
    recorder = subprocess.Popen([sys.executable, "-m", "dynid_ros.ros.recorder_node", "--ros-args",
                                 "-p", f"bag_path:={bag}", "-p", f"storage:={args.storage}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    publisher = subprocess.Popen([sys.executable, __file__, "--publisher", "--duration", str(args.duration),
                                  "--rate", str(args.rate)], stdout=subprocess.PIPE, text=True)
    rclpy.init()
    node = Node("bench_driver")
    try:
        deadline = time.monotonic() + 30
        while not node.get_publishers_info_by_topic("/joint_states") and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
        response = call(node, "/recorder_node/start")
        assert response.success, response.message
        cpu0, wall0 = cpu_seconds(recorder.pid), time.monotonic()
        assert publisher.stdout.readline().strip() == "subscribed"
        result = json.loads(publisher.stdout.readline())
        publisher.wait(timeout=30)
        cpu1, wall1 = cpu_seconds(recorder.pid), time.monotonic()
        response = call(node, "/recorder_node/stop")
        assert response.success, response.message
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        recorder.terminate()
        recorder.wait(timeout=30)
    recorded = bag_info(bag)["messages"].get("/joint_states", 0)
    numbers = {
        "benchmark": "recorder_node, 1 kHz 7-joint /joint_states from a separate process",
        "duration_s": args.duration, "rate_hz": args.rate, "storage": args.storage,
        "published": result["published"], "recorded": recorded, "dropped": result["published"] - recorded,
        "publisher_rate_hz": round(result["published"] / result["elapsed_s"], 1),
        "recorder_cpu_percent_of_one_core": round(100 * (cpu1 - cpu0) / (wall1 - wall0), 1),
        "bag_size_mb": round(sum(f.stat().st_size for f in bag.iterdir()) / 1e6, 2),
        "qos": f"reliable, keep last (publisher depth {PUBLISHER_QOS_DEPTH}, recorder depth 1000)",
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)",
        "python": platform.python_version(),
    }
    print(json.dumps(numbers, indent=2))
    out = ROOT / "benchmarks" / "results" / "bench_recorder_node.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(numbers, indent=2) + "\n")


if __name__ == "__main__":
    main()
