"""``orchestrator_node``: one identification run without manual service calls.

Start recording, wait until the recorder records and the excitation node has joint states, start the
excitation, watch its ``~/status`` until ``done``, keep recording ``settle_time`` more, stop recording,
call ``~/identify`` and wait for its result. The other nodes stay usable alone; this node only calls
their services and reads their ``~/status``.

Every wait has a deadline from the parameters, and every failure (a refused or unanswered call, a
node reporting failure, a deadline) ends the run ``aborted`` with the reason: the excitation is
stopped if it may be moving, the recorder is stopped if it records, the identification is not run.
Statuses published before this run's call to a node (e.g. the latched ``done`` of an earlier run)
are ignored: a node's status counts only when its source time stamp is not older than the call.
The steps are :class:`dynid_ros.execution.orchestration.Orchestration`; this node wires them to ROS.

ROS interface:

Parameters:
    recorder_node, excitation_node, identification_node (str): their names (``/recorder_node``, ...).
    settle_time (double): seconds recorded after the excitation is done (1.0).
    service_timeout (double): seconds to wait for the nodes' services, and for each call's answer (30).
    joint_states_timeout (double): seconds from the recording start until the recorder records and the
        excitation node has joint states (10).
    excitation_timeout (double): seconds (wall clock) from the excitation start until it is done; 0 = no wall-clock
        bound: the run aborts when the excitation's ``~/status`` shows no progress (state, time on the controller's
        clock) for ``service_timeout`` while it is not ``paused`` (0).
    identify_timeout (double): seconds from the identification start until it ends (600).
    identify (bool): run the identification at the end (true).
    shutdown_when_done (bool): end the process when the run ends (false; the launch files use it to
        end the launch): exit status 0 when the run is ``done``, 1 when it is ``aborted`` (the reason
        is logged and published on ``~/status``).

Publishes:
    ``~/status`` (std_msgs/String, transient local): JSON ``{"state": waiting|recording|exciting|
    stopping|identifying|done|aborted, "message": ...}``.
"""

from __future__ import annotations

import json
import time

import rclpy
from rclpy.node import Node
from rclpy.subscription import Subscription
from std_msgs.msg import String
from std_srvs.srv import Trigger

from dynid_ros.execution.orchestration import CALLS, ROLES, Orchestration, OrchestrationSettings
from dynid_ros.ros.common import Param, declare_parameters, json_message, latched_qos, run

NAME = "orchestrator_node"

PARAMETERS = (
    Param("recorder_node", "/recorder_node", "name of the recorder node"),
    Param("excitation_node", "/excitation_node", "name of the excitation node"),
    Param("identification_node", "/identification_node", "name of the identification node"),
    Param("settle_time", 1.0, "seconds recorded after the excitation is done", low=0.0),
    Param("service_timeout", 30.0, "seconds to wait for the nodes' services and for each call's answer", low=0.0),
    Param("joint_states_timeout", 10.0, "seconds from the recording start until recorder and joint states are ready",
          low=0.0),
    Param("excitation_timeout", 0.0, "wall-clock seconds from the excitation start until done (0 = none: abort after "
          "service_timeout without progress, unless paused)",
          low=0.0),
    Param("identify_timeout", 600.0, "seconds from the identification start until it ends", low=0.0),
    Param("identify", True, "run the identification at the end"),
    Param("shutdown_when_done", False, "end the process when the run ends (exit 0 if done, 1 if aborted)"),
)


class TriggerCall:
    """A Trigger call's future as :class:`dynid_ros.execution.orchestration.Call`."""

    def __init__(self, future: object) -> None:
        self.future = future

    def done(self) -> bool:
        """Whether the future is done."""
        return self.future.done()

    def outcome(self) -> tuple[bool, str] | str:
        """``(success, message)`` of the response, or the error text (cancelled, an exception, no response)."""
        if self.future.cancelled():
            return "cancelled"
        error = self.future.exception()
        response = self.future.result() if error is None else None
        if response is None:
            return str(error or "no response")
        return bool(response.success), str(response.message)


class TriggerServices:
    """The Trigger clients of the other nodes' services (:data:`dynid_ros.execution.orchestration.CALLS`)."""

    def __init__(self, node: Node, names: dict[str, str]) -> None:
        self.clients = {call: node.create_client(Trigger, f"{names[role]}/{service}")
                        for call, (role, service) in CALLS.items()}

    def ready(self, name: str) -> bool:
        """Whether the service of call ``name`` is ready."""
        return self.clients[name].service_is_ready()

    def call(self, name: str) -> TriggerCall:
        """Send a Trigger request on call ``name``; the pending call."""
        return TriggerCall(self.clients[name].call_async(Trigger.Request()))

    def service_name(self, name: str) -> str:
        """The service name of call ``name``."""
        return self.clients[name].srv_name


class OrchestratorNode(Node):
    """Run record -> excite -> stop -> identify once (see the module docstring)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NAME, **kwargs)
        self.params = p = declare_parameters(self, PARAMETERS)
        names = {role: p[f"{role}_node"].rstrip("/") for role in ROLES}
        settings = OrchestrationSettings(p["settle_time"], p["service_timeout"], p["joint_states_timeout"],
                                         p["excitation_timeout"], p["identify_timeout"], p["identify"])
        self.triggers = TriggerServices(self, names)
        self.run = Orchestration(settings, self.triggers, self._on_change, self._log)
        self.exit_code = 0
        self._shutdown_timer = None
        for role in ROLES:
            self.create_subscription(String, f"{names[role]}/status", self._status_callback(role), latched_qos())
        self.status_pub = self.create_publisher(String, "~/status", latched_qos())
        self._timer = self.create_timer(0.1, self._tick)
        self._publish()

    @property
    def state(self) -> str:
        """The run's state."""
        return self.run.state

    @property
    def message(self) -> str:
        """The run's message."""
        return self.run.message

    def _status_callback(self, role: str) -> object:
        def on_status(msg: String, info: object) -> None:
            stamp = info.get("source_timestamp", 0) if isinstance(info, dict) else time.time_ns()
            try:
                self.run.on_status(role, json.loads(msg.data), stamp)
            except json.JSONDecodeError:
                self.get_logger().warning(f"{role} status is not JSON: {msg.data[:80]!r}")

        if hasattr(Subscription, "CallbackType"):  # rclpy >= Iron passes the message info (source time stamp)
            return on_status
        return lambda msg: on_status(msg, None)  # Humble: the time of receipt instead

    def _tick(self) -> None:
        if self.context.ok():
            self.run.tick()

    def _on_change(self) -> None:
        self._publish()
        if self.run.state == "aborted":
            for name, call in self.run.cleanup_sent:
                call.future.add_done_callback(self._log_cleanup(self.triggers.service_name(name)))
        if self.run.finished and self.params["shutdown_when_done"] and self._shutdown_timer is None:
            self.exit_code = 0 if self.run.state == "done" else 1
            self._shutdown_timer = self.create_timer(0.5, self._shutdown)

    def _log(self, level: str, message: str) -> None:
        if level == "error":  # one call site per severity: rclpy refuses to change it at a call site
            self.get_logger().error(message)
        else:
            self.get_logger().info(message)

    def _log_cleanup(self, service: str) -> object:
        def log(future: object) -> None:
            response = None if future.cancelled() or future.exception() else future.result()
            if response is None or not response.success:
                self.get_logger().warning(f"{service}: {getattr(response, 'message', 'no answer')}")
        return log

    def _shutdown(self) -> None:
        """End the process's spinning (main's loop ends, exit status ``exit_code``)."""
        rclpy.try_shutdown(context=self.context)

    def _publish(self) -> None:
        if self.context.ok():
            self.status_pub.publish(json_message({"state": self.run.state, "message": self.run.message}))


def main(args: list[str] | None = None) -> int:
    """Run the orchestrator node until Ctrl-C or shutdown; the exit code."""
    return run(OrchestratorNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
