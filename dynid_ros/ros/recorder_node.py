"""``recorder_node``: record topics, serialized as received, into a crash-safe rosbag2.

ROS interface:

Parameters:
    bag_path (str): bag directory to create; it must not exist ('' = ``dynid_bag_<date>_<time>``).
    topics (str[]): topics to record (default ``['/joint_states']``); their types come from the graph.
    storage (str): ``mcap`` | ``sqlite3``.
    autostart (bool): start recording as soon as the node is up (false).
    discovery_timeout (double): seconds ``~/start`` waits for the topics to appear (5).
    qos_depth (int): subscription queue depth (1000: a second at 1 kHz).

Services:
    ``~/start``, ``~/stop`` (std_srvs/Trigger).

Publishes:
    ``~/status`` (std_msgs/String, transient local, JSON: ``state`` idle|waiting|recording|stopped|failed,
    ``bag_path``, ``counts`` {topic: messages written}, ``message``, ``rates`` {JointState topic: Hz, once
    measured}, ``warnings``), on every change and at 1 Hz while recording.

A recorded JointState topic is measured live: once it has arrived for :data:`RATE_WINDOW_S`, a rate below what an
identification needs (:data:`dynid_ros.identification.sample_rate.MIN_RATE_HZ`) is logged as a warning and listed
in ``~/status``'s ``warnings``, naming the topic the robot's driver publishes at full rate (the config's
``robot: driver:``, else the driver its joint names tell, :mod:`dynid_ros.robot.drivers`): franka_ros2's
``/joint_states`` is joint_state_publisher's 30 Hz merge, ``/franka/joint_states`` its 1 kHz broadcaster.

Messages are queued as received (raw subscription, no deserialization) to a writer thread
(:class:`dynid_ros.data.bag_writer_thread.BagWriterThread`) that owns a
:class:`dynid_ros.data.bag_recorder.BagRecorder`, so disk writes never hold up the executor; the
recorder makes them durable every 0.5 s: a SIGKILL loses at most the last ~1 s; ``dynid bag repair``
makes such a bag readable. A failed write (disk full, bag removed, permission) ends the recording
at once: ``~/status`` turns ``failed`` with the reason, ``~/stop`` answers ``success: false``, and the
bag keeps what was flushed before, readable after ``dynid bag repair``. The subscriptions are
reliable unless a publisher of the topic is best effort (as ``ros2 bag record`` adapts).
"""

from __future__ import annotations

import importlib
import time
from collections import deque
from pathlib import Path

from rclpy.node import Node

from dynid_ros.data.bag_writer_thread import BagWriterThread
from dynid_ros.data.output_paths import require_absent
from dynid_ros.errors import DynidError
from dynid_ros.identification.sample_rate import rate_warning
from dynid_ros.robot.drivers import config_driver
from dynid_ros.ros.common import Param, declare_parameters, json_message, latched_qos, run, trigger_service

NAME = "recorder_node"

PARAMETERS = (
    Param("bag_path", "", "bag directory to create; must not exist ('' = dynid_bag_<date>_<time>)"),
    Param("topics", ["/joint_states"], "topics to record; types come from the ROS graph"),
    Param("storage", "mcap", "rosbag2 storage: mcap | sqlite3"),
    Param("autostart", False, "start recording when the node starts"),
    Param("discovery_timeout", 5.0, "seconds ~/start waits for the topics to appear in the graph", low=0.0),
    Param("qos_depth", 1000, "subscription queue depth", low=1, high=1000000),
)


RATE_WINDOW_S = 2.0
"""Seconds of a JointState topic's arrivals measured before its rate is judged (a mean over them: a stalled
recorder receives late, not fewer)."""

JOINT_STATE = "sensor_msgs/msg/JointState"


def message_class(type_name: str) -> type:
    """The Python class of ``pkg/msg/Type``."""
    package, _, name = type_name.replace("/msg/", "/").partition("/")
    try:
        return getattr(importlib.import_module(f"{package}.msg"), name)
    except (ImportError, AttributeError) as err:
        raise DynidError(f"message type {type_name} is not importable ({err})") from err


class RecorderNode(Node):
    """Record ``topics`` to ``bag_path`` between ``~/start`` and ``~/stop`` (see the module docstring)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NAME, **kwargs)
        self.params = declare_parameters(self, PARAMETERS)
        if self.params["storage"] not in ("mcap", "sqlite3"):
            raise DynidError(f"storage must be mcap or sqlite3, not {self.params['storage']!r}")
        self.recorder = None
        self.bag_path: Path | None = None
        self.state = "idle"
        self.message = ""
        self._subscriptions: list = []
        self._wait_timer = None
        self._wait_deadline = 0.0
        self._counts: dict[str, int] = {}  # of the last recording, once its writer is gone
        self._arrivals: dict[str, deque] = {}  # JointState topic -> arrival times [s] until its rate is judged
        self.rates: dict[str, float] = {}  # JointState topic -> its measured rate [Hz]
        self.warnings: list[str] = []
        self._write_failed = self.create_guard_condition(self._on_write_failure)  # triggered by the writer thread
        self.status_pub = self.create_publisher(type(json_message({})), "~/status", latched_qos())
        trigger_service(self, "~/start", self.start)
        trigger_service(self, "~/stop", self.stop)
        self.create_timer(1.0, self._tick)
        self._publish_status()
        if self.params["autostart"]:
            self.start()

    # ------------------------------------------------------------------------------------------

    def start(self) -> tuple[bool, str]:
        """Begin recording now, or once the topics are discovered."""
        if self.state in ("waiting", "recording"):
            return False, f"already {self.state} ({self.bag_path})"
        path = self.params["bag_path"] or time.strftime("dynid_bag_%Y%m%d_%H%M%S")
        try:  # a recording is never rewritten: an existing path is refused and left untouched
            self.bag_path = require_absent(path, "bag_path")
        except DynidError as err:
            return self._fail(str(err))
        self._wait_deadline = time.monotonic() + self.params["discovery_timeout"]
        if self._try_open():
            return True, f"recording {', '.join(self.params['topics'])} to {self.bag_path}"
        self.state, self.message = "waiting", f"waiting for topics {', '.join(self._missing_topics())}"
        self._wait_timer = self.create_timer(0.1, self._wait_for_topics)
        self._publish_status()
        return True, self.message

    def stop(self) -> tuple[bool, str]:
        """Stop recording and finish the bag."""
        if self.state == "waiting":
            self._cancel_wait()
            self.state, self.message = "stopped", "stopped before the topics appeared"
            self._publish_status()
            return True, self.message
        if self.state == "failed" and self._counts:
            return False, f"recording failed: {self.message}"
        if self.state != "recording":
            return False, f"not recording (state {self.state})"
        counts, error = self._close()
        if error is not None:
            return self._fail(self._failure_message(error))
        self.state = "stopped"
        self.message = f"wrote {self.bag_path}: " + ", ".join(f"{t} {c}" for t, c in counts.items())
        self.get_logger().info(self.message)
        self._publish_status()
        return True, self.message

    def destroy_node(self) -> None:
        """Close the bag (logging a failure), then destroy the node."""
        _, error = self._close()
        if error is not None:
            self.get_logger().error(self._failure_message(error))
        super().destroy_node()

    # ------------------------------------------------------------------------------------------

    def _topic_types(self) -> dict[str, str]:
        graph = dict(self.get_topic_names_and_types())
        return {topic: graph[topic][0] for topic in self.params["topics"] if graph.get(topic)}

    def _missing_topics(self) -> list[str]:
        found = self._topic_types()
        return [t for t in self.params["topics"] if t not in found]

    def _try_open(self) -> bool:
        types = self._topic_types()
        if len(types) < len(self.params["topics"]) and time.monotonic() < self._wait_deadline:
            return False
        if not types:
            self._fail(f"none of the topics {', '.join(self.params['topics'])} appeared within "
                       f"{self.params['discovery_timeout']} s")
            return True
        missing = [t for t in self.params["topics"] if t not in types]
        if missing:
            self.get_logger().warning(f"not recording topics that did not appear: {', '.join(missing)}")
        self._counts = {}
        self.rates, self.warnings = {}, []
        self._arrivals = {topic: deque() for topic, type_name in types.items() if type_name == JOINT_STATE}
        writer = BagWriterThread(self.bag_path, self.params["storage"], types, on_error=self._write_failed.trigger)
        writer.start()
        writer.ready.wait()
        if writer.error is not None:
            self._fail(writer.error)
            return True
        self.recorder = writer
        try:
            for topic, type_name in types.items():
                self._subscriptions.append(self.create_subscription(
                    message_class(type_name), topic, self._writer(topic), self._qos(topic), raw=True))
        except DynidError as err:
            self._close()
            self._fail(str(err))
            return True
        self.state, self.message = "recording", f"recording to {self.bag_path}"
        self.get_logger().info(f"recording {', '.join(types)} to {self.bag_path} ({self.params['storage']})")
        self._publish_status()
        return True

    def _qos(self, topic: str) -> object:
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        best_effort = any(info.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
                          for info in self.get_publishers_info_by_topic(topic))
        reliability = ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE
        return QoSProfile(depth=self.params["qos_depth"], reliability=reliability)

    def _writer(self, topic: str) -> object:
        clock = self.get_clock()

        def write(data: bytes) -> None:
            if self.recorder is not None:
                self.recorder.write(topic, data, clock.now().nanoseconds)
                arrivals = self._arrivals.get(topic)
                if arrivals is not None:
                    arrivals.append(time.monotonic())
        return write

    def _check_rates(self) -> None:
        """Judge each JointState topic's rate once it arrived for :data:`RATE_WINDOW_S` (see the module docstring)."""
        for topic, arrivals in list(self._arrivals.items()):
            if len(arrivals) < 2 or arrivals[-1] - arrivals[0] < RATE_WINDOW_S:
                continue
            del self._arrivals[topic]
            rate = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])
            self.rates[topic] = round(rate, 1)
            try:
                driver = config_driver(self.params["_config"])
            except DynidError as err:
                self.get_logger().warning(str(err))
                driver = None
            warning = rate_warning(rate, topic, driver)
            if warning:
                self.warnings.append(warning)
                self.get_logger().warning(warning)

    def _wait_for_topics(self) -> None:
        if self.state != "waiting" or self._try_open():
            self._cancel_wait()

    def _cancel_wait(self) -> None:
        if self._wait_timer is not None:
            self.destroy_timer(self._wait_timer)
            self._wait_timer = None

    def _close(self) -> tuple[dict[str, int], str | None]:
        """Stop subscribing, finish the bag; the counts and the writer's error (None if it wrote everything)."""
        for sub in self._subscriptions:
            self.destroy_subscription(sub)
        self._subscriptions = []
        if self.recorder is None:
            return {}, None
        recorder, self.recorder = self.recorder, None
        self._counts = recorder.close()
        return self._counts, recorder.error

    def _on_write_failure(self) -> None:
        """The writer thread failed: stop recording at once and say why."""
        if self.recorder is None or self.recorder.error is None:
            return
        _, error = self._close()
        self._fail(self._failure_message(error))

    def _failure_message(self, error: str) -> str:
        return (f"{error}; the messages flushed before are kept: make the bag readable with "
                f"dynid bag repair {self.bag_path}")

    def _fail(self, message: str) -> tuple[bool, str]:
        self.state, self.message = "failed", message
        self.get_logger().error(message)
        self._publish_status()
        return False, message

    def _tick(self) -> None:
        if self.recorder is not None:
            self._check_rates()
            self._publish_status()

    def _publish_status(self) -> None:
        if not self.context.ok():  # a callback may still run while the context shuts down
            return
        counts = dict(self.recorder.counts) if self.recorder is not None else self._counts
        self.status_pub.publish(json_message({"state": self.state, "bag_path": str(self.bag_path or ""),
                                              "counts": counts, "message": self.message,
                                              "rates": dict(self.rates), "warnings": list(self.warnings)}))


def main(args: list[str] | None = None) -> int:
    """Run the recorder node until Ctrl-C or shutdown; the exit code."""
    return run(RecorderNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
