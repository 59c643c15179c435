"""Why a controller refuses a motion, with the reason the controller itself only logs: every check of
dynid_ros.execution.controller_check on what list_controllers and the controller's parameters tell (a UR driver's
controllers, a Franka's, a foreign arm's), and no reason where the controller takes the motion or nothing is known."""

from __future__ import annotations

import pytest

from dynid_ros.execution.controller_check import (
    ControllerSetup,
    ControllerState,
    activation_problem,
    controller_problem,
    interface_problem,
    joints_problem,
)

UR = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint")
JTC = "joint_trajectory_controller/JointTrajectoryController"
UR_DRIVER = (  # what the UR driver's launch leaves loaded (ur_robot_driver/config/ur_controllers.yaml)
    ControllerState("joint_state_broadcaster", "active", "joint_state_broadcaster/JointStateBroadcaster"),
    ControllerState("scaled_joint_trajectory_controller", "active", "ur_controllers/ScaledJointTrajectoryController"),
    ControllerState("joint_trajectory_controller", "inactive", JTC),
    ControllerState("forward_velocity_controller", "inactive", "velocity_controllers/JointGroupVelocityController"),
)


def test_a_controller_that_is_not_loaded_is_named_with_the_managers_controllers_and_the_active_trajectory_one():
    setup = ControllerSetup("arm_controller", controllers=UR_DRIVER)
    problem = activation_problem(setup)
    assert problem.startswith("controller arm_controller is not loaded in /controller_manager (its controllers: ")
    assert "scaled_joint_trajectory_controller (active)" in problem
    assert "joint_trajectory_controller (inactive)" in problem
    assert problem.endswith("; or set controller_name:=scaled_joint_trajectory_controller)")


def test_an_inactive_controller_is_named_with_what_is_active_and_how_to_switch():
    problem = activation_problem(ControllerSetup("joint_trajectory_controller", controllers=UR_DRIVER))
    assert problem.startswith("controller joint_trajectory_controller is inactive, not active (active: "
                              "joint_state_broadcaster, scaled_joint_trajectory_controller; ")
    assert ("ros2 control switch_controllers --activate joint_trajectory_controller --deactivate "
            "scaled_joint_trajectory_controller") in problem
    assert problem.endswith("or set controller_name:=scaled_joint_trajectory_controller)")


@pytest.mark.parametrize("controllers", [None, UR_DRIVER])
def test_an_active_controller_or_an_unknown_manager_has_no_activation_problem(controllers):
    assert activation_problem(ControllerSetup("scaled_joint_trajectory_controller", controllers=controllers)) is None


def test_a_joint_the_controller_does_not_have_is_named_with_its_joints():
    setup = ControllerSetup("scaled_joint_trajectory_controller", joints=UR, allow_partial_joints_goal=False)
    problem = joints_problem(setup, (*UR[:5], "gripper_joint"))
    assert problem == ("trajectory joint(s) gripper_joint are not joints of controller "
                       f"scaled_joint_trajectory_controller (its joints: {', '.join(UR)})")
    assert "its joints: none: its joints parameter is empty" in joints_problem(
        ControllerSetup("empty", joints=()), UR[:1])


@pytest.mark.parametrize("allow", [False, True, None])
def test_a_partial_goal_is_refused_only_where_the_controller_refuses_it(allow):
    setup = ControllerSetup("joint_trajectory_controller", joints=UR, allow_partial_joints_goal=allow)
    problem = joints_problem(setup, UR[:4])
    if allow is False:  # the jazzy default: validate_trajectory_msg refuses
        assert problem.startswith("controller joint_trajectory_controller takes goals of all its joints "
                                  "(allow_partial_joints_goal is false) and the trajectory moves 4 of its 6: joint(s) "
                                  "wrist_2_joint, wrist_3_joint missing")
    else:  # allowed, or the parameter not told: nothing to say
        assert problem is None
    assert joints_problem(setup, UR) is None
    assert joints_problem(setup, tuple(reversed(UR))) is None  # any order: the controller maps by name


def test_joints_not_told_are_not_judged():
    assert joints_problem(ControllerSetup("joint_trajectory_controller"), ("anything",)) is None


@pytest.mark.parametrize(("interfaces", "refused"), [
    (("position",), None),
    (("velocity",), "commands the 'velocity' interface (its interface_name): stream mode sends joint positions [rad], "
                    "which it would apply as velocity"),
    (("effort",), "which it would apply as effort"),
    (("position", "velocity"), "commands the 'position, velocity' interface"),
    ((), "commands the 'none' interface"),
    (None, "does not tell its command interface (no interface_name parameter)"),
])
def test_stream_mode_takes_only_a_position_controller(interfaces, refused):
    setup = ControllerSetup("forward_controller", interfaces=interfaces)
    problem = interface_problem(setup)
    if refused is None:
        assert problem is None
    else:
        assert problem.startswith("controller forward_controller ") and refused in problem
        assert "forward_position_controller" in problem or "JointGroupPositionController" in problem


def test_the_first_reason_is_given_and_the_interface_only_in_stream_mode():
    inactive_velocity = ControllerSetup("forward_velocity_controller", controllers=UR_DRIVER, joints=UR,
                                        interfaces=("velocity",))
    assert "is inactive, not active" in controller_problem(inactive_velocity, UR, stream=True)
    active = (*UR_DRIVER[:3], ControllerState("forward_velocity_controller", "active", UR_DRIVER[3].type))
    velocity = ControllerSetup("forward_velocity_controller", controllers=active, joints=UR, interfaces=("velocity",))
    assert "commands the 'velocity' interface" in controller_problem(velocity, UR, stream=True)
    assert controller_problem(velocity, UR, stream=False) is None  # a trajectory goal is not judged by interface
    assert "are not joints of controller" in controller_problem(velocity, ("elbow_joint", "tool_joint"), stream=False)
