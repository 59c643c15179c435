"""``orchestrator_node``: one identification run without manual service calls.

Start recording, wait until the recorder records, start the excitation, watch its ``~/status``
until ``done``, keep recording ``settle_time`` more, stop recording, call ``~/identify`` and wait for
its result. An aborted excitation stops the recorder and skips the identification. The other nodes
stay usable alone; this node only calls their services.

ROS interface:

Parameters:
    recorder_node, excitation_node, identification_node (str): their names (``/recorder_node``, ...).
    settle_time (double): seconds recorded after the excitation is done (1.0).
    service_timeout (double): seconds to wait for the nodes' services (30).
    identify (bool): run the identification at the end (true).
    shutdown_when_done (bool): end the process when the run ends (false; the launch files use it to
        end the launch).

Publishes:
    ``~/status`` (std_msgs/String, transient local): JSON ``{"state": waiting|recording|exciting|
    identifying|done|failed, "message": ...}``.
"""

from __future__ import annotations

import json
import time

from rclpy.node import Node
from std_msgs.msg import String
from std_srvs.srv import Trigger

from dynid_ros.nodes.common import Param, declare_parameters, json_message, latched_qos, run

NAME = "orchestrator_node"

PARAMETERS = (
    Param("recorder_node", "/recorder_node", "name of the recorder node"),
    Param("excitation_node", "/excitation_node", "name of the excitation node"),
    Param("identification_node", "/identification_node", "name of the identification node"),
    Param("settle_time", 1.0, "seconds recorded after the excitation is done"),
    Param("service_timeout", 30.0, "seconds to wait for the nodes' services"),
    Param("identify", True, "run the identification at the end"),
    Param("shutdown_when_done", False, "end the process when the run ends"),
)


class OrchestratorNode(Node):
    """Run record -> excite -> stop -> identify once (see the module docstring)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NAME, **kwargs)
        self.params = p = declare_parameters(self, PARAMETERS)
        names = {role: p[f"{role}_node"].rstrip("/") for role in ("recorder", "excitation", "identification")}
        self.clients_ = {
            "record_start": self.create_client(Trigger, f"{names['recorder']}/start"),
            "record_stop": self.create_client(Trigger, f"{names['recorder']}/stop"),
            "excite_start": self.create_client(Trigger, f"{names['excitation']}/start"),
            "identify": self.create_client(Trigger, f"{names['identification']}/identify"),
        }
        self.status: dict[str, dict] = {}
        for role in names:
            self.create_subscription(String, f"{names[role]}/status", self._status_callback(role), latched_qos())
        self.state, self.message = "waiting", "waiting for the nodes' services"
        self.status_pub = self.create_publisher(String, "~/status", latched_qos())
        self._deadline = time.monotonic() + p["service_timeout"]
        self._calls: dict[str, object] = {}
        self._done_at: float | None = None
        self._timer = self.create_timer(0.1, self._tick)
        self._publish()

    def _status_callback(self, role: str) -> object:
        def on_status(msg: String) -> None:
            self.status[role] = json.loads(msg.data)
        return on_status

    def _call(self, name: str) -> None:
        self._calls[name] = self.clients_[name].call_async(Trigger.Request())

    def _answer(self, name: str) -> object | None:
        """The response of the pending call ``name`` (None while pending); failures end the run."""
        future = self._calls.get(name)
        if future is None or not future.done():
            return None
        response = future.result()
        return response

    def _tick(self) -> None:
        if self.state in ("done", "failed"):
            return
        if self.state == "waiting":
            needed = [c for k, c in self.clients_.items() if k != "identify" or self.params["identify"]]
            if all(c.service_is_ready() for c in needed):
                self._call("record_start")
                self._set("recording", "starting the recorder")
            elif time.monotonic() > self._deadline:
                missing = [c.srv_name for c in needed if not c.service_is_ready()]
                self._fail(f"services not available within {self.params['service_timeout']} s: {', '.join(missing)}")
        elif self.state == "recording":
            answer = self._answer("record_start")
            if answer is not None and not answer.success:
                return self._fail(f"recorder refused to start: {answer.message}")
            if answer is not None and self.status.get("recorder", {}).get("state") == "recording" \
                    and self.status.get("excitation", {}).get("joint_states_ready") \
                    and "excite_start" not in self._calls:
                self._call("excite_start")
                self._set("exciting", "starting the excitation")
            elif answer is not None and time.monotonic() > self._deadline + self.params["service_timeout"]:
                return self._stop_recorder_and_fail("the excitation node has received no joint states")
        elif self.state == "exciting":
            self._watch_excitation()
        elif self.state == "stopping":
            answer = self._answer("record_stop")
            if answer is None:
                return
            if not answer.success:
                return self._fail(f"recorder did not stop: {answer.message}")
            if not self.params["identify"]:
                return self._set("done", f"recorded: {answer.message}")
            self._call("identify")
            self._set("identifying", "identifying")
        elif self.state == "identifying":
            answer = self._answer("identify")
            if answer is None:
                return
            if not answer.success:
                return self._fail(f"identification refused: {answer.message}")
            ident = self.status.get("identification", {})
            if ident.get("state") == "done":
                self._set("done", ident.get("message", ""))
            elif ident.get("state") == "failed":
                self._fail(f"identification failed: {ident.get('message', '')}")

    def _watch_excitation(self) -> None:
        answer = self._answer("excite_start")
        if answer is None:
            return
        if not answer.success:
            return self._stop_recorder_and_fail(f"excitation refused: {answer.message}")
        excitation = self.status.get("excitation", {})
        if excitation.get("state") == "aborted":
            return self._stop_recorder_and_fail(f"excitation aborted: {excitation.get('message', '')}")
        if excitation.get("state") == "done":
            if self._done_at is None:
                self._done_at = time.monotonic()
                self._set("exciting", f"excitation done; recording {self.params['settle_time']:g} s more")
            if time.monotonic() - self._done_at >= self.params["settle_time"]:
                self._call("record_stop")
                self._set("stopping", "stopping the recorder")

    def _stop_recorder_and_fail(self, message: str) -> None:
        self._call("record_stop")
        self._fail(message)

    def _set(self, state: str, message: str) -> None:
        if (state, message) != (self.state, self.message):
            self.state, self.message = state, message
            self.get_logger().info(f"{state}: {message}")
            self._publish()
        if state == "done" and self.params["shutdown_when_done"]:
            self._shutdown()

    def _fail(self, message: str) -> None:
        self.state, self.message = "failed", message
        self.get_logger().error(message)
        self._publish()
        if self.params["shutdown_when_done"]:
            self._shutdown()

    def _shutdown(self) -> None:
        import rclpy

        self.create_timer(0.5, lambda: rclpy.try_shutdown(context=self.context))

    def _publish(self) -> None:
        self.status_pub.publish(json_message({"state": self.state, "message": self.message}))


def main(args: list[str] | None = None) -> int:
    return run(OrchestratorNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
