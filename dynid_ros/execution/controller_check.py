"""Why a controller would refuse, or refused, a motion: the checks of ros2_control's controllers, with their reasons.

A FollowJointTrajectory server answers a goal with accepted or rejected and nothing else, and a trajectory on a topic
is dropped without an answer; the reason is only in the controller's log. What the controllers check is known
(ros2_controllers, jazzy): joint_trajectory_controller.cpp ``goal_received_callback`` rejects every goal while the
controller is inactive ("Can't accept new action goals. Controller is not running."), ``topic_callback`` drops
trajectories then, and ``validate_trajectory_msg`` refuses a trajectory that names fewer joints than the
controller's ``joints`` while ``allow_partial_joints_goal`` is false ("Joints on incoming trajectory don't match the
controller joints.") or a joint that is not one of them ("Incoming joint %s doesn't match the controller's
joints."); forward_command_controller commands the interface of its ``interface_name`` (position, velocity or effort)
with whatever numbers it gets. :func:`controller_problem` runs the same checks on what the controller manager
(``list_controllers``) and the controller (its parameters) tell, before anything is sent and again after a
rejection, and says which check failed, for which joint, and what is active instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TRAJECTORY_TYPE = "JointTrajectoryController"
"""How the type names of the controllers that take FollowJointTrajectory goals end (joint_trajectory_controller's,
the UR driver's ``ur_controllers/ScaledJointTrajectoryController``)."""


@dataclass(frozen=True)
class ControllerState:
    """One controller as ``controller_manager/list_controllers`` tells it."""

    name: str
    state: str
    type: str = ""


@dataclass(frozen=True)
class ControllerSetup:
    """What is known of the controller a motion goes to; None: not known (not told, or not asked).

    Attributes:
        name: the controller's name (``controller_name``).
        manager: the controller manager's node name.
        controllers: every loaded controller (``list_controllers``).
        joints: the controller's ``joints`` parameter.
        allow_partial_joints_goal: its ``allow_partial_joints_goal`` parameter (a joint trajectory controller).
        interfaces: the command interfaces of a forward command controller (``interface_name``, or
            ``interface_names`` of a multi-interface one).
    """

    name: str
    manager: str = "/controller_manager"
    controllers: tuple[ControllerState, ...] | None = None
    joints: tuple[str, ...] | None = None
    allow_partial_joints_goal: bool | None = None
    interfaces: tuple[str, ...] | None = None

    def state_of(self, name: str) -> ControllerState | None:
        """What the controller manager told of controller ``name``; None when it told nothing of it."""
        return next((c for c in self.controllers or () if c.name == name), None)

    def active(self) -> list[str]:
        """Names of the active controllers."""
        return [c.name for c in self.controllers or () if c.state == "active"]


def activation_problem(setup: ControllerSetup) -> str | None:
    """Why the controller cannot take a motion now (not loaded, or not active), naming what is active instead; None
    when it is active or when the controller manager told nothing."""
    if setup.controllers is None:
        return None
    active = setup.active()
    listed = ", ".join(f"{c.name} ({c.state})" for c in setup.controllers) or "none"
    own = setup.state_of(setup.name)
    trajectory = [c.name for c in setup.controllers if c.state == "active" and c.name != setup.name
                  and c.type.endswith(TRAJECTORY_TYPE)]
    hint = f"; or set controller_name:={trajectory[0]}" if trajectory else ""
    if own is None:
        return f"controller {setup.name} is not loaded in {setup.manager} (its controllers: {listed}{hint})"
    if own.state != "active":
        switch = (f"ros2 control switch_controllers --activate {setup.name}"
                  + (f" --deactivate {trajectory[0]}" if trajectory else ""))
        return (f"controller {setup.name} is {own.state}, not active (active: {', '.join(active) or 'none'}; "
                f"activate it: {switch}{hint})")
    return None


def joints_problem(setup: ControllerSetup, joints: Sequence[str]) -> str | None:
    """Why the controller refuses a trajectory of ``joints`` (joint_trajectory_controller's
    ``validate_trajectory_msg``): a joint it does not have, or fewer joints than its own while
    ``allow_partial_joints_goal`` is false. None when it takes them or its joints are not known."""
    if setup.joints is None:
        return None
    theirs = ", ".join(setup.joints) or "none: its joints parameter is empty"
    unknown = [j for j in joints if j not in setup.joints]
    if unknown:
        return (f"trajectory joint(s) {', '.join(unknown)} are not joints of controller {setup.name} "
                f"(its joints: {theirs})")
    missing = [j for j in setup.joints if j not in joints]
    if missing and setup.allow_partial_joints_goal is False:
        return (f"controller {setup.name} takes goals of all its joints (allow_partial_joints_goal is false) and the "
                f"trajectory moves {len(setup.joints) - len(missing)} of its {len(setup.joints)}: joint(s) "
                f"{', '.join(missing)} missing (set allow_partial_joints_goal: true on the controller, or use a "
                f"trajectory of all its joints)")
    return None


def interface_problem(setup: ControllerSetup) -> str | None:
    """Stream mode sends positions: why the forward controller would take them as something else (its command
    interface is not ``position``), or that it does not tell its interface; None when it commands positions."""
    if setup.interfaces is None:
        return (f"controller {setup.name} does not tell its command interface (no interface_name parameter): stream "
                f"mode sends joint positions and streams only to a position controller "
                f"(position_controllers/JointGroupPositionController)")
    if tuple(setup.interfaces) != ("position",):
        what = ", ".join(setup.interfaces) or "none"
        return (f"controller {setup.name} commands the '{what}' interface (its interface_name): stream mode sends "
                f"joint positions [rad], which it would apply as {what}; use a position controller "
                f"(position_controllers/JointGroupPositionController, e.g. forward_position_controller)")
    return None


def controller_problem(setup: ControllerSetup, joints: Sequence[str], stream: bool = False) -> str | None:
    """The first reason the controller refuses a motion of ``joints`` (:func:`activation_problem`,
    :func:`joints_problem`, and in stream mode :func:`interface_problem`), or None."""
    return (activation_problem(setup) or (interface_problem(setup) if stream else None)
            or joints_problem(setup, joints))
