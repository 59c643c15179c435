"""One identification run on a robot, step by step: record -> excite -> stop -> identify, without ROS.

What ``orchestrator_node`` runs: start recording, wait until the recorder records and the excitation
node has joint states, start the excitation, watch its status until ``done``, keep recording
``settle_time`` more, stop recording, start the identification and wait for its result. Every wait
has a deadline, and every failure (a refused or unanswered call, a node reporting failure, a
deadline) ends the run ``aborted`` with the reason: the excitation is stopped if it may be moving,
the recorder is stopped if it records, the identification is not run. Statuses published before this
run's call to a node (e.g. the latched ``done`` of an earlier run) are ignored.

The node gives :class:`Orchestration` its service calls through :class:`Services` and feeds it the
other nodes' statuses (:meth:`Orchestration.on_status`); :meth:`Orchestration.tick` advances it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

CALLS = {
    "record_start": ("recorder", "start"),
    "record_stop": ("recorder", "stop"),
    "excite_start": ("excitation", "start"),
    "excite_stop": ("excitation", "stop"),
    "identify": ("identification", "identify"),
}
"""Each call: the role of the node it goes to and the name of its std_srvs/Trigger service."""

ROLES = ("recorder", "excitation", "identification")

MOVING = ("idle", "approaching", "running")
"""Excitation states in which, once started, the robot may be moving (idle: the start is pending)."""

FINAL_STATES = ("done", "aborted")



def records(recorder: dict) -> bool:
    """Whether a recorder's status says it writes messages: state ``recording`` (subscribed) and a message of every
    topic it counts. Subscribed is not enough: under load the first message may come seconds later (discovery), and
    a motion started before it would be missing from the bag."""
    counts = recorder.get("counts") or {}
    return recorder.get("state") == "recording" and bool(counts) and all(c > 0 for c in counts.values())

class RunAborted(Exception):
    """Ends the run; the message is the reason."""


class Call(Protocol):
    """A pending service call (an rclpy Future of a Trigger call, say)."""

    def done(self) -> bool:
        """Whether the call has been answered (or failed)."""

    def outcome(self) -> tuple[bool, str] | str:
        """``(success, message)`` of the answer, or the error text of a failed call."""


class Services(Protocol):
    """The node's service clients, by call name (:data:`CALLS`)."""

    def ready(self, name: str) -> bool:
        """Whether the service of call ``name`` is available."""

    def call(self, name: str) -> Call:
        """Send call ``name``; the pending call."""

    def service_name(self, name: str) -> str:
        """The service name of call ``name``, for messages."""


@dataclass(frozen=True)
class OrchestrationSettings:
    """The deadlines and options of a run (the node's parameters)."""

    settle_time: float = 1.0
    service_timeout: float = 30.0
    joint_states_timeout: float = 10.0
    excitation_timeout: float = 0.0
    """Wall-clock seconds from the excitation start until done; 0: the excitation's own progress decides (it aborts
    after ``service_timeout`` without progress while not paused)."""
    identify_timeout: float = 600.0
    identify: bool = True


class Orchestration:
    """record -> excite -> stop -> identify once; ``state`` waiting | recording | exciting | stopping |
    identifying | done | aborted, ``message`` says what it does or why it ended."""

    def __init__(self, settings: OrchestrationSettings, services: Services,
                 on_change: Callable[[], None] = lambda: None,
                 log: Callable[[str, str], None] = lambda level, message: None,
                 clock: Callable[[], float] = time.monotonic, wall_ns: Callable[[], int] = time.time_ns) -> None:
        self.settings, self.services = settings, services
        self._on_change, self._log, self.clock, self.wall_ns = on_change, log, clock, wall_ns
        self.status: dict[str, dict] = {role: {} for role in ROLES}
        self._since_ns = {role: 0 for role in ROLES}  # statuses older than this run's call are stale
        self.state, self.message = "waiting", "waiting for the nodes' services"
        self._calls: dict[str, tuple[Call, float]] = {}
        self._phase_start = clock()
        self._recording_since: float | None = None
        self._done_at: float | None = None
        self._excitation_marker: tuple | None = None  # the excitation's last (state, time, message)
        self._progress_at: float | None = None  # when it last changed, or said it is paused
        self.cleanup_sent: list[tuple[str, Call]] = []

    @property
    def finished(self) -> bool:
        """Whether the run reached a final state."""
        return self.state in FINAL_STATES

    def on_status(self, role: str, status: dict, source_stamp_ns: int) -> None:
        """A node's status (JSON content) published at ``source_stamp_ns`` (wall clock); older than this run's
        call to it: ignored."""
        if source_stamp_ns >= self._since_ns[role]:
            self.status[role] = status

    def tick(self) -> None:
        """Advance one step (called at 10 Hz); a failure aborts the run and stops what moves or records."""
        if self.finished:
            return
        try:
            getattr(self, f"_step_{self.state}")()
        except RunAborted as err:
            self._abort(str(err))

    # ------------------------------------------------------------------------------------------
    # Calls

    def _call(self, name: str, starts: str | None = None) -> None:
        """Send ``name``; ``starts``: the role whose statuses count only from now on."""
        if starts is not None:
            self._since_ns[starts] = self.wall_ns()
            self.status[starts] = {}
        self._calls[name] = (self.services.call(name), self.clock())

    def _answer(self, name: str) -> str | None:
        """The message of the call's answer (None while pending); a failed, unanswered or refused call aborts."""
        call, sent = self._calls[name]
        service = self.services.service_name(name)
        if not call.done():
            if self.clock() - sent > self.settings.service_timeout:
                raise RunAborted(f"no answer from {service} within {self.settings.service_timeout:g} s")
            return None
        outcome = call.outcome()
        if isinstance(outcome, str):
            raise RunAborted(f"call to {service} failed: {outcome}")
        success, message = outcome
        if not success:
            raise RunAborted(f"{service} refused: {message}")
        return message

    def _elapsed(self) -> float:
        return self.clock() - self._phase_start

    # ------------------------------------------------------------------------------------------
    # Steps, one per state

    def _step_waiting(self) -> None:
        needed = [name for name in CALLS if name != "identify" or self.settings.identify]
        if all(self.services.ready(name) for name in needed):
            self._call("record_start", starts="recorder")
            self._set("recording", "starting the recorder")
        elif self._elapsed() > self.settings.service_timeout:
            missing = [self.services.service_name(n) for n in needed if not self.services.ready(n)]
            raise RunAborted(f"services not available within {self.settings.service_timeout:g} s: "
                             f"{', '.join(missing)}")

    def _step_recording(self) -> None:
        if "excite_start" in self._calls or self._answer("record_start") is None:
            return
        if self._recording_since is None:  # the recorder accepted: the joint-state deadline counts from now
            self._recording_since = self.clock()
        recorder, excitation = self._recorder_status(), self.status["excitation"]
        if records(recorder) and excitation.get("joint_states_ready"):
            self._call("excite_start", starts="excitation")
            self._phase_start = self.clock()
            return self._set("exciting", "starting the excitation")
        if self.clock() - self._recording_since > self.settings.joint_states_timeout:
            subscribed = recorder.get("state") == "recording"
            what = ("the excitation node has received no joint states" if subscribed and not
                    excitation.get("joint_states_ready") else "the recorder has written no message yet" if subscribed
                    else f"the recorder is not recording (state {recorder.get('state', 'unknown')})")
            raise RunAborted(f"{what} {self.settings.joint_states_timeout:g} s after the recording start")

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
            self._excitation_deadline(excitation)
            return
        if self._done_at is None:
            self._done_at = self.clock()
            self._set("exciting", f"excitation done; recording {self.settings.settle_time:g} s more")
        if self.clock() - self._done_at >= self.settings.settle_time:
            self._call("record_stop")
            self._set("stopping", "stopping the recorder")

    def _excitation_deadline(self, excitation: dict) -> None:
        """``excitation_timeout`` (wall clock) when given; else the motion's own time: the run aborts when the
        excitation's status shows no progress (state, ``time`` on the controller's clock) for ``service_timeout``
        while it is not ``paused`` (a speed-scaled motion takes as long as it takes; a paused arm is waiting)."""
        now = self.clock()
        if self.settings.excitation_timeout:
            if self._elapsed() > self.settings.excitation_timeout:
                raise RunAborted(f"the excitation did not end within {self.settings.excitation_timeout:g} s "
                                 f"(state {excitation.get('state', 'unknown')})")
            return
        marker = (excitation.get("state"), excitation.get("time"), excitation.get("message"))
        if marker != self._excitation_marker or excitation.get("paused"):
            self._excitation_marker, self._progress_at = marker, now
        stalled = now - (self._progress_at if self._progress_at is not None else self._phase_start)
        if stalled > self.settings.service_timeout:
            where = (f", at {float(excitation['time']):.1f} s of {float(excitation.get('duration') or 0.0):.1f} s"
                     if excitation.get("time") is not None else "")
            raise RunAborted(f"the excitation made no progress for {stalled:.0f} s (state "
                             f"{excitation.get('state', 'unknown')}{where}; not paused)")

    def _step_stopping(self) -> None:
        message = self._answer("record_stop")
        if message is None:
            return
        if not self.settings.identify:
            return self._set("done", f"recorded: {message}")
        self._call("identify", starts="identification")
        self._phase_start = self.clock()
        self._set("identifying", "identifying")

    def _step_identifying(self) -> None:
        if self._answer("identify") is None:
            return
        ident = self.status["identification"]
        if ident.get("state") == "done":
            return self._set("done", ident.get("message", ""))
        if ident.get("state") == "failed":
            raise RunAborted(f"identification failed: {ident.get('message', '')}")
        if self._elapsed() > self.settings.identify_timeout:
            raise RunAborted(f"the identification did not end within {self.settings.identify_timeout:g} s")

    # ------------------------------------------------------------------------------------------

    def cleanup_calls(self) -> list[str]:
        """The calls that stop what may still move or record after this run's end (what an abort sends)."""
        cleanup = []
        if "excite_start" in self._calls and self.status["excitation"].get("state", "idle") in MOVING:
            cleanup.append("excite_stop")
        if "record_start" in self._calls and "record_stop" not in self._calls \
                and self.status["recorder"].get("state") != "failed":
            cleanup.append("record_stop")
        return cleanup

    def _abort(self, reason: str) -> None:
        """End the run: send the cleanup calls (kept in ``cleanup_sent``), then report ``aborted`` with the reason."""
        self.cleanup_sent = [(name, self.services.call(name)) for name in self.cleanup_calls()]
        self.state, self.message = "aborted", reason
        self._log("error", f"aborted: {reason}")
        self._on_change()

    def _set(self, state: str, message: str) -> None:
        if (state, message) != (self.state, self.message):
            self.state, self.message = state, message
            self._log("info", f"{state}: {message}")
            self._on_change()
