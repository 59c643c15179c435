"""What the controller manager and a controller tell about the controller a motion goes to, asked over ROS.

:class:`ControllerProbe` asks ``<manager>/list_controllers`` (controller_manager_msgs, where installed) and the
controller's own parameters (``/<controller>/get_parameters``: ``joints``, ``allow_partial_joints_goal``,
``interface_name``), without blocking: :meth:`ControllerProbe.poll` returns the
:class:`~dynid_ros.execution.controller_check.ControllerSetup` once the answers are in, or what it waits for. A
service that does not appear within :data:`DISCOVERY_GRACE_S` is not waited for (a controller that is not
ros2_control's, e.g. sim_node's, tells nothing): what it would tell stays unknown and is not checked. A controller the
manager lists is ros2_control's: its node has the parameter services, and they are waited for up to
:data:`LISTED_GRACE_S` (discovery on a loaded machine took longer than the grace: a CI run refused a velocity
controller as one that "does not tell its command interface"). The checks themselves are
:mod:`dynid_ros.execution.controller_check`.
"""

from __future__ import annotations

import time

from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.node import Node

from dynid_ros.execution.controller_check import ControllerSetup, ControllerState

DISCOVERY_GRACE_S = 1.5
"""Seconds a service is waited for before what it would tell is left unknown."""
LISTED_GRACE_S = 15.0
"""Seconds the parameters of a controller the manager lists are waited for (its node has the service)."""

REFRESH_S = 0.5
"""A list of controllers older than this [s] is asked again (a controller being activated)."""

PARAMETERS = ("joints", "allow_partial_joints_goal", "interface_name", "interface_names")


def _value(value: object) -> object:
    """A rcl_interfaces/ParameterValue as Python (None: not set)."""
    kind = value.type
    if kind == ParameterType.PARAMETER_BOOL:
        return bool(value.bool_value)
    if kind == ParameterType.PARAMETER_STRING:
        return str(value.string_value)
    if kind == ParameterType.PARAMETER_STRING_ARRAY:
        return tuple(value.string_array_value)
    if kind == ParameterType.PARAMETER_INTEGER:
        return int(value.integer_value)
    if kind == ParameterType.PARAMETER_DOUBLE:
        return float(value.double_value)
    return None


class ControllerProbe:
    """The setup of controller ``controller`` under controller manager ``manager`` (see the module docstring)."""

    def __init__(self, node: Node, controller: str, manager: str = "/controller_manager") -> None:
        self.node, self.controller = node, controller.strip("/")
        self.manager = "/" + manager.strip("/")
        self._created = time.monotonic()
        self._params = node.create_client(GetParameters, f"/{self.controller}/get_parameters")
        self._params_request = None
        self._list = None
        self._list_type = None
        try:
            from controller_manager_msgs.srv import ListControllers  # deferred: not every ROS install has it
        except ImportError:
            node.get_logger().info("controller_manager_msgs is not installed: the controllers' states are not "
                                   "checked before moving")
        else:
            self._list_type = ListControllers
            self._list = node.create_client(ListControllers, f"{self.manager}/list_controllers")
        self._list_request, self._list_asked = None, -1.0
        self.parameters: dict[str, object] | None = None
        self.controllers: tuple[ControllerState, ...] | None = None

    def refresh(self) -> None:
        """Ask the controller manager again (its answer is kept until then)."""
        self._list_asked = -1.0

    def poll(self) -> tuple[ControllerSetup | None, str | None]:
        """``(setup, None)`` once what can be known is known, else ``(None, what it waits for)``."""
        now = time.monotonic()
        discovering = now - self._created < DISCOVERY_GRACE_S
        waiting = self._poll_list(now, discovering) or self._poll_parameters(
            discovering or (self.listed and now - self._created < LISTED_GRACE_S))
        if waiting is not None:
            return None, waiting
        parameters = self.parameters or {}
        interfaces = parameters.get("interface_names") or (
            (parameters["interface_name"],) if parameters.get("interface_name") else None)
        joints = parameters.get("joints")
        partial = parameters.get("allow_partial_joints_goal")
        return ControllerSetup(self.controller, self.manager, self.controllers,
                               tuple(joints) if isinstance(joints, tuple) else None,
                               partial if isinstance(partial, bool) else None,
                               tuple(interfaces) if interfaces else None), None

    @property
    def listed(self) -> bool:
        """Whether the controller manager's last answer lists the controller."""
        return any(c.name == self.controller for c in self.controllers or ())

    def _poll_list(self, now: float, discovering: bool) -> str | None:
        if self._list is None:
            return None
        if self._list_request is not None and self._list_request.done():
            response = self._list_request.result()
            self._list_request = None
            if response is not None:
                self.controllers = tuple(ControllerState(str(c.name), str(c.state), str(c.type))
                                         for c in response.controller)
        if self._list_request is None and now - self._list_asked > REFRESH_S:
            if self._list.service_is_ready():
                self._list_request = self._list.call_async(self._list_type.Request())
                self._list_asked = now
            elif discovering:
                return f"waiting for {self.manager}/list_controllers"
        if self.controllers is None and self._list_request is not None:
            return f"waiting for the answer of {self.manager}/list_controllers"
        return None

    def _poll_parameters(self, discovering: bool) -> str | None:
        """One request per parameter: rclcpp answers a request naming an undeclared parameter with nothing at all
        (a JointTrajectoryController has no ``interface_name``)."""
        if self.parameters is not None:
            return None
        if self._params_request is None:
            if self._params.service_is_ready():
                self._params_request = {name: self._params.call_async(GetParameters.Request(names=[name]))
                                        for name in PARAMETERS}
            elif discovering:
                return f"waiting for the parameters of /{self.controller}"
            else:
                return None
        if not all(future.done() for future in self._params_request.values()):
            return f"waiting for the parameters of /{self.controller}"
        self.parameters = {}
        for name, future in self._params_request.items():
            response = future.result()
            values = list(response.values) if response is not None else []
            self.parameters[name] = _value(values[0]) if values else None
        return None

    def destroy(self) -> None:
        """Destroy the probe's service clients."""
        self.node.destroy_client(self._params)
        if self._list is not None:
            self.node.destroy_client(self._list)
