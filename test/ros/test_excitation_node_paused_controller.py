"""excitation_node with a real joint_trajectory_controller whose time runs slower than the wall clock, and stops.

A speed-scaled controller (the UR driver's scaled_joint_trajectory_controller, the JTC's speed scaling in newer
releases) advances its trajectory by ``period * scaling``: a paused program is scaling 0. The JTC of the real stack
here (ros2_controllers 4.19) advances by the period its controller manager gives it; with ``use_sim_time`` the
controller manager's time is ``/clock``, which this test publishes at the speed it wants (1, then 0 for longer than
the old wall-clock deadline, then 0.5) while the manager's loop keeps running on the wall clock
(``ros2_control_node`` chose its sleep at start, before ``use_sim_time`` was set): the joint states keep coming,
the controller's trajectory time stands still, then runs at half speed. The excitation waits, reports ``paused``,
and ends ``done``, its progress following the controller's time.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import yaml

from dynid_ros.robot.resources import robot_file

from support.robots import FRANKA_STATES
from support.ros2_control_stack import (
    ControlStack,
    controllers_file,
    mock_urdf,
    node_in_stack,
    require_ros2_control,
    wait_on,
)
from support.ros_helpers import call_trigger, status_qos, write_test_trajectory

PANDA = [f"panda_joint{i}" for i in range(1, 8)]


class SimClock:
    """``/clock`` at a settable speed (simulated seconds per wall second), from 1000 s, at 250 Hz."""

    def __init__(self, spinner):
        from builtin_interfaces.msg import Time
        from rclpy.node import Node
        from rosgraph_msgs.msg import Clock

        self.node = spinner.add(Node("sim_clock", context=spinner.context))
        self.speed, self.time, self._wall = 1.0, 1000.0, time.monotonic()
        self._lock = threading.Lock()
        publisher = self.node.create_publisher(Clock, "/clock", 10)

        def tick():
            with self._lock:
                now = time.monotonic()
                self.time += (now - self._wall) * self.speed
                self._wall = now
                seconds = int(self.time)
                publisher.publish(Clock(clock=Time(sec=seconds, nanosec=int((self.time - seconds) * 1e9))))

        self.node.create_timer(0.004, tick)

    def set_speed(self, speed: float) -> None:
        with self._lock:
            self.speed = speed


ATTEMPTS = 10
"""Starts of ros2_control_node tried: each switch to /clock is a race the manager's next update (10 ms) may win; a
loaded machine delays the first /clock message more often."""


def sim_time_stack(folder, clock, urdf, controllers) -> ControlStack:
    """ros2_control_node switched to ``/clock`` before its controllers are loaded. The switch races the manager's
    first update on the new clock: an update before the first /clock message ends the process ("No clock
    received, and time argument is zero", controller_manager.cpp); that start is tried again."""
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter

    for _attempt in range(ATTEMPTS):
        stack = ControlStack(folder, urdf, controllers, joint_states=FRANKA_STATES)  # franka.launch.py's remap
        client = clock.node.create_client(SetParameters, "/controller_manager/set_parameters")
        request = SetParameters.Request(parameters=[Parameter("use_sim_time", value=True).to_parameter_msg()])
        try:
            assert client.wait_for_service(timeout_sec=30), stack.log()
            future, deadline = None, time.monotonic() + 30.0
            while stack.manager.poll() is None and time.monotonic() < deadline:
                # asked again while unanswered: a manager that ended before (its endpoints live on until their
                # lease ends) may have taken the request, or the response went out before its reader was matched
                future = client.call_async(request)
                end = time.monotonic() + 3.0
                while not future.done() and stack.manager.poll() is None and time.monotonic() < end:
                    time.sleep(0.05)
                if future.done():
                    break
            time.sleep(1.0)
            if stack.manager.poll() is None and future is not None and future.done():
                return stack
        finally:
            clock.node.destroy_client(client)
        stack.close()
    pytest.fail(f"ros2_control_node ended at each switch to /clock:\n{stack.log()[-2000:]}")


def test_a_paused_then_slowed_controller_is_waited_for_and_its_progress_followed(spinner, tmp_path):
    require_ros2_control()
    # 4 s: after a pause seen late (the status reaches this process late on a loaded machine), the rest of the motion
    # at half speed still lasts seconds, for the speed measured after the resume
    trajectory = write_test_trajectory(tmp_path / "t.yaml", period=4.0, harmonics=3, fraction=0.6)
    limits = yaml.safe_load(trajectory.read_text())["limits"]["position"]
    start = dict(zip(PANDA, np.mean(np.array(limits), axis=1).tolist()))
    urdf = mock_urdf(robot_file("panda", "urdf").read_text(), PANDA, start)
    controllers = controllers_file(tmp_path / "controllers.yaml", PANDA, 100, forward=())
    clock = SimClock(spinner)
    stack = sim_time_stack(tmp_path, clock, urdf, controllers)
    statuses: list[tuple[float, dict]] = []
    watcher = spinner.add(__import__("rclpy.node", fromlist=["Node"]).Node("watcher", context=spinner.context))
    from std_msgs.msg import String

    watcher.create_subscription(String, "/excitation_node/status",
                                lambda m: statuses.append((time.monotonic(), json.loads(m.data))), status_qos())
    try:
        stack.spawn("joint_state_broadcaster", "joint_trajectory_controller")
        parameters = {"robot": "panda", "trajectory_file": str(trajectory), "mode": "action"}
        log = tmp_path / "excitation_node.log"
        with node_in_stack("excitation_node", parameters, log) as process:
            wait_on(process, lambda: statuses and statuses[-1][1].get("joint_states_ready"), "joint states", log)
            assert call_trigger(watcher, "/excitation_node/start", timeout=60).success
            wait_on(process, lambda: statuses[-1][1].get("time", 0.0) > 1.5, "1.5 s of the motion", log)
            clock.set_speed(0.0)  # paused: longer than the nominal end + 10 s the node used to wait for
            paused_at = time.monotonic()
            time.sleep(13.0)
            during = [s for w, s in statuses if w > paused_at + 2.0]
            clock.set_speed(0.5)
            resumed = time.monotonic()
            ended = ("done", "aborted")
            last = wait_on(process, lambda: statuses[-1][1] if statuses[-1][1]["state"] in ended else None, "the end",
                           log)
        log = log.read_text()
    finally:
        stack.close()
    assert last["state"] == "done", f"{last}\n{log}"
    assert during and all(s["state"] == "running" and s["paused"] for s in during), during[-3:]
    assert np.ptp([s["progress"] for s in during]) < 0.01  # progress follows the controller's (standing) time
    slow = [s for w, s in statuses if resumed + 1.5 < w and s["state"] == "running" and s["time"] < s["duration"] - 0.5]
    assert slow and np.median([s["speed"] for s in slow]) == pytest.approx(0.5, abs=0.1), slow[-3:]
    assert not any(s.get("paused") for w, s in statuses if w > resumed + 1.5)
