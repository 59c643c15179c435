"""ControllerProbe on real rclpy: a controller's parameter service that has not appeared yet. One the controller
manager does not list (not ros2_control's) is not waited for past the discovery grace; one it lists is (its node has
the service: on a loaded CI machine discovery took longer than the grace, and a velocity controller was refused as
one that "does not tell its command interface")."""

from __future__ import annotations

import time

from rclpy.node import Node

from dynid_ros.execution.controller_check import ControllerState
from dynid_ros.ros import controller_probe
from dynid_ros.ros.controller_probe import ControllerProbe


def _poll_after(probe: ControllerProbe, seconds: float) -> tuple[object, str | None]:
    time.sleep(seconds)
    return probe.poll()


def test_a_listed_controllers_parameters_are_waited_for_past_the_grace(spinner, monkeypatch):
    monkeypatch.setattr(controller_probe, "DISCOVERY_GRACE_S", 0.2)
    monkeypatch.setattr(controller_probe, "LISTED_GRACE_S", 1.5)
    node = spinner.add(Node("probe_test", context=spinner.context))
    unlisted = ControllerProbe(node, "ghost_controller", manager="/no_manager")
    setup, waiting = _poll_after(unlisted, 0.4)
    assert waiting is None and setup.interfaces is None and setup.joints is None  # unknown, not waited for
    listed = ControllerProbe(node, "slow_controller", manager="/no_manager")
    listed.controllers = (ControllerState("slow_controller", "active", "forward_command_controller/x"),)
    setup, waiting = _poll_after(listed, 0.4)
    assert setup is None and waiting == "waiting for the parameters of /slow_controller"
    setup, waiting = _poll_after(listed, 1.3)  # past LISTED_GRACE_S: left unknown
    assert waiting is None and setup.interfaces is None
