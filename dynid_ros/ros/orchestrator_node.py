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

ROS interface:

Parameters:
    recorder_node, excitation_node, identification_node (str): their names (``/recorder_node``, ...).
    settle_time (double): seconds recorded after the excitation is done (1.0).
    service_timeout (double): seconds to wait for the nodes' services, and for each call's answer (30).
    joint_states_timeout (double): seconds from the recording start until the recorder records and the
        excitation node has joint states (10).
    excitation_timeout (double): seconds from the excitation start until it is done; 0 = its duration
        (from its ``~/status``) + ``service_timeout`` (0).
    identify_timeout (double): seconds from the identification start until it ends (600).
    identify (bool): run the identification at the end (true).
    shutdown_when_done (bool): end the process when the run ends (false; the launch files use it to
        end the launch).

Publishes:
    ``~/status`` (std_msgs/String, transient local): JSON ``{"state": waiting|recording|exciting|
    stopping|identifying|done|aborted, "message": ...}``.
"""

from __future__ import annotations

import json
import time

from rclpy.node import Node
from std_msgs.msg import String
from std_srvs.srv import Trigger

from dynid_ros.ros.common import Param, declare_parameters, json_message, latched_qos, run

NAME = "orchestrator_node"

PARAMETERS = (
    Param("recorder_node", "/recorder_node", "name of the recorder node"),
    Param("excitation_node", "/excitation_node", "name of the excitation node"),
    Param("identification_node", "/identification_node", "name of the identification node"),
    Param("settle_time", 1.0, "seconds recorded after the excitation is done"),
    Param("service_timeout", 30.0, "seconds to wait for the nodes' services and for each call's answer"),
    Param("joint_states_timeout", 10.0, "seconds from the recording start until recorder and joint states are ready"),
    Param("excitation_timeout", 0.0, "seconds from the excitation start until done (0 = duration + service_timeout)"),
    Param("identify_timeout", 600.0, "seconds from the identification start until it ends"),
    Param("identify", True, "run the identification at the end"),
    Param("shutdown_when_done", False, "end the process when the run ends"),
)

MOVING = ("idle", "approaching", "running")
"""Excitation states in which, once started, the robot may be moving (idle: the start is pending)."""


class RunAborted(Exception):
    """Ends the run; the message is the reason."""


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
            "excite_stop": self.create_client(Trigger, f"{names['excitation']}/stop"),
            "identify": self.create_client(Trigger, f"{names['identification']}/identify"),
        }
        self.status: dict[str, dict] = {role: {} for role in names}
        self._since_ns = {role: 0 for role in names}  # statuses older than this run's call are stale
        for role in names:
            self.create_subscription(String, f"{names[role]}/status", self._status_callback(role), latched_qos())
        self.state, self.message = "waiting", "waiting for the nodes' services"
        self.status_pub = self.create_publisher(String, "~/status", latched_qos())
        self._calls: dict[str, tuple[object, float]] = {}  # name -> (future, sent at)
        self._phase_start = time.monotonic()
        self._recording_since: float | None = None
        self._done_at: float | None = None
        self._timer = self.create_timer(0.1, self._tick)
        self._publish()

    def _status_callback(self, role: str) -> object:
        def on_status(msg: String, info: object) -> None:
            stamp = info.get("source_timestamp", 0) if isinstance(info, dict) else 0
            if stamp < self._since_ns[role]:
                return
            try:
                self.status[role] = json.loads(msg.data)
            except json.JSONDecodeError:
                self.get_logger().warning(f"{role} status is not JSON: {msg.data[:80]!r}")
        return on_status

    # ------------------------------------------------------------------------------------------
    # Calls

    def _call(self, name: str, starts: str | None = None) -> None:
        """Send ``name``; ``starts``: the role whose statuses count only from now on."""
        if starts is not None:
            self._since_ns[starts] = time.time_ns()
            self.status[starts] = {}
        self._calls[name] = (self.clients_[name].call_async(Trigger.Request()), time.monotonic())

    def _answer(self, name: str) -> object | None:
        """The response of the call ``name`` (None while pending); a failed, unanswered or refused call aborts."""
        future, sent = self._calls[name]
        service = self.clients_[name].srv_name
        if not future.done():
            if time.monotonic() - sent > self.params["service_timeout"]:
                raise RunAborted(f"no answer from {service} within {self.params['service_timeout']:g} s")
            return None
        error = future.exception() if not future.cancelled() else None
        response = future.result() if error is None and not future.cancelled() else None
        if response is None:
            raise RunAborted(f"call to {service} failed: {error or 'cancelled'}")
        if not response.success:
            raise RunAborted(f"{service} refused: {response.message}")
        return response

    def _elapsed(self) -> float:
        return time.monotonic() - self._phase_start

    # ------------------------------------------------------------------------------------------
    # Steps, one per state, called at 10 Hz

    def _tick(self) -> None:
        if self.state in ("done", "aborted"):
            return
        try:
            getattr(self, f"_step_{self.state}")()
        except RunAborted as err:
            self._abort(str(err))

    def _step_waiting(self) -> None:
        needed = [c for k, c in self.clients_.items() if k != "identify" or self.params["identify"]]
        if all(c.service_is_ready() for c in needed):
            self._call("record_start", starts="recorder")
            self._set("recording", "starting the recorder")
        elif self._elapsed() > self.params["service_timeout"]:
            missing = [c.srv_name for c in needed if not c.service_is_ready()]
            raise RunAborted(f"services not available within {self.params['service_timeout']:g} s: "
                             f"{', '.join(missing)}")

    def _step_recording(self) -> None:
        if "excite_start" in self._calls or self._answer("record_start") is None:
            return
        if self._recording_since is None:  # the recorder accepted: the joint-state deadline counts from now
            self._recording_since = time.monotonic()
        recorder, excitation = self._recorder_status(), self.status["excitation"]
        if recorder.get("state") == "recording" and excitation.get("joint_states_ready"):
            self._call("excite_start", starts="excitation")
            self._phase_start = time.monotonic()
            return self._set("exciting", "starting the excitation")
        if time.monotonic() - self._recording_since > self.params["joint_states_timeout"]:
            what = ("the excitation node has received no joint states" if recorder.get("state") == "recording"
                    else f"the recorder is not recording (state {recorder.get('state', 'unknown')})")
            raise RunAborted(f"{what} {self.params['joint_states_timeout']:g} s after the recording start")

    def _recorder_status(self) -> dict:
        """The recorder's last status; its failure aborts the run."""
        recorder = self.status["recorder"]
        if recorder.get("state") == "failed":
            raise RunAborted(f"recorder failed: {recorder.get('message', '')}")
        return recorder

    def _step_exciting(self) -> None:
        if self._answer("excite_start") is None:
            return
        self._recorder_status()
        excitation = self.status["excitation"]
        if excitation.get("state") == "aborted":
            raise RunAborted(f"excitation aborted: {excitation.get('message', '')}")
        if excitation.get("state") != "done":
            limit = self.params["excitation_timeout"] or (float(excitation.get("duration") or 0.0)
                                                          + self.params["service_timeout"])
            if self._elapsed() > limit:
                raise RunAborted(f"the excitation did not end within {limit:g} s "
                                 f"(state {excitation.get('state', 'unknown')})")
            return
        if self._done_at is None:
            self._done_at = time.monotonic()
            self._set("exciting", f"excitation done; recording {self.params['settle_time']:g} s more")
        if time.monotonic() - self._done_at >= self.params["settle_time"]:
            self._call("record_stop")
            self._set("stopping", "stopping the recorder")

    def _step_stopping(self) -> None:
        answer = self._answer("record_stop")
        if answer is None:
            return
        if not self.params["identify"]:
            return self._set("done", f"recorded: {answer.message}")
        self._call("identify", starts="identification")
        self._phase_start = time.monotonic()
        self._set("identifying", "identifying")

    def _step_identifying(self) -> None:
        if self._answer("identify") is None:
            return
        ident = self.status["identification"]
        if ident.get("state") == "done":
            return self._set("done", ident.get("message", ""))
        if ident.get("state") == "failed":
            raise RunAborted(f"identification failed: {ident.get('message', '')}")
        if self._elapsed() > self.params["identify_timeout"]:
            raise RunAborted(f"the identification did not end within {self.params['identify_timeout']:g} s")

    # ------------------------------------------------------------------------------------------

    def _abort(self, reason: str) -> None:
        """End the run: stop what may move or record, then report ``aborted`` with the reason."""
        cleanup = []
        if "excite_start" in self._calls and self.status["excitation"].get("state", "idle") in MOVING:
            cleanup.append("excite_stop")
        if "record_start" in self._calls and "record_stop" not in self._calls \
                and self.status["recorder"].get("state") != "failed":
            cleanup.append("record_stop")
        for name in cleanup:
            future = self.clients_[name].call_async(Trigger.Request())
            future.add_done_callback(self._log_cleanup(self.clients_[name].srv_name))
        self.state, self.message = "aborted", reason
        self.get_logger().error(f"aborted: {reason}")
        self._publish()
        if self.params["shutdown_when_done"]:
            self._shutdown()

    def _log_cleanup(self, service: str) -> object:
        def log(future: object) -> None:
            response = None if future.cancelled() or future.exception() else future.result()
            if response is None or not response.success:
                self.get_logger().warning(f"{service}: {getattr(response, 'message', 'no answer')}")
        return log

    def _set(self, state: str, message: str) -> None:
        if (state, message) != (self.state, self.message):
            self.state, self.message = state, message
            self.get_logger().info(f"{state}: {message}")
            self._publish()
        if state == "done" and self.params["shutdown_when_done"]:
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
