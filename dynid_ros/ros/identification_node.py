"""``identification_node``: identify the robot from a bag and publish the updated URDF.

ROS interface:

Parameters:
    urdf_path (str) or robot_description (str, URDF text): the nominal robot ('' both: a message on
        ``robot_description_topic`` if set, else the config's robot.urdf); meshes are not needed.
    xacro_args (str[]): ``name:=value`` arguments of a ``.urdf.xacro`` urdf_path.
    bag_path (str): rosbag2 with the joint states (read when ``~/identify`` is called, so it may be set
        later with ``ros2 param set``; streamed as ``dynid identify --bag`` streams it, so memory does not grow
        with the bag's length). output_dir (str): result directory ('' = ``dynid_result_<date>_<time>``).
    The options of ``dynid identify`` (unset = the config's ``identification:`` section, else the CLI default):
    joints (str[]), topic (str), start, end (double, seconds from the first message; -1 = unset),
    friction (str[]: viscous, coulomb, offset | none), armature (str: true | false), method (ols | wls |
    fbpe | bpfc), consistency (physical | full), solver (clarabel | scs), effort_scale (double[]),
    prior (nominal | none), total_mass (double[2]).
    update_robot_state_publisher (bool): also set ``robot_state_publisher_node``'s ``robot_description``
    (rcl_interfaces/SetParameters, waiting at most ``parameter_timeout`` s). identify_on_start (bool).
    shutdown_when_done (bool): end the process after an identification: exit 0 if done, 1 if failed.

Services:
    ``~/identify`` (std_srvs/Trigger): answers at once (refused when busy or the bag is missing); the
    identification runs in a worker thread, off the executor; ``~/status`` and ``~/report`` tell the end.

Publishes (std_msgs/String, reliable, transient local, depth 1):
    ``~/robot_description``: the identified URDF. ``~/report``: ``report.json`` of ``dynid identify``.
    ``~/status``: JSON ``{"state": idle|running|done|failed, "message", "output_dir"}``.

A robot the config describes beyond a URDF is identified by the same entry as ``dynid identify --config``
(:mod:`dynid_ros.variants.config_robot`): with a ``coupling:`` section the bag is in motor coordinates and the
URDF's joints are driven through the coupling; with ``robot: frames:`` no URDF is needed (``bag_path`` may then be a
CSV at ``robot.csv_rate_hz``), ``output_dir`` gets ``frames_result.yaml``, ``~/report`` carries its content as JSON
and no ``~/robot_description`` is published (a frames robot has no URDF).

Writes the same files as ``dynid identify`` into ``output_dir``, atomically; an existing ``output_dir``
that is not an earlier identification result (or that holds the bag) is refused and left untouched.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import rclpy
from rclpy.duration import Duration
from rclpy.node import Node
from std_msgs.msg import String

from dynid_ros.data.output_paths import RESULT, check_output
from dynid_ros.errors import DynidError
from dynid_ros.identification.options import IdentificationOptions, identification_options, parameter_overrides
from dynid_ros.reporting.result_directory import REPORT_FILE, URDF_FILE, hyperparameter_scales_argument
from dynid_ros.robot.drivers import driver_defaults
from dynid_ros.robot.frames import frames_section
from dynid_ros.ros.common import (
    ROBOT_DESCRIPTION_PARAMS,
    Param,
    declare_parameters,
    json_message,
    latched_qos,
    robot_urdf,
    run,
    trigger_service,
    xacro_args,
)
from dynid_ros.variants.frames_identification import frames_result_dict
from dynid_ros.workflow.identify_run import RunInputs, identify_into

NAME = "identification_node"
FINAL_ACK_TIMEOUT_S = 3.0
"""shutdown_when_done: longest wait [s] for the subscribers to acknowledge the final report and status."""

PARAMETERS = (
    Param("urdf_path", "", "nominal robot URDF file"),
    Param("robot_description", "", "nominal robot URDF text (instead of urdf_path)"),
    *ROBOT_DESCRIPTION_PARAMS,
    Param("bag_path", "", "rosbag2 with the joint states (read at each ~/identify)", read_only=False),
    Param("output_dir", "", "result directory ('' = dynid_result_<date>_<time>)", read_only=False),
    Param("joints", [], "identified joints ([] = the movable URDF joints present in the bag)"),
    Param("topic", "", "JointState topic in the bag ('' = config, else /joint_states)"),
    Param("start", -1.0, "window start [s from the first message] (-1 = from the beginning)"),
    Param("end", -1.0, "window end [s from the first message] (-1 = to the end)"),
    Param("friction", [], "friction terms: viscous, coulomb, offset, or none ([] = config, else all three)"),
    Param("armature", "", "identify rotor inertia: true | false ('' = config, else true)"),
    Param("method", "", "ols | wls | fbpe | bpfc ('' = config, else fbpe)"),
    Param("consistency", "", "physical | full ('' = config, else full)"),
    Param("solver", "", "clarabel | scs ('' = config, else clarabel)"),
    Param("effort_scale", [], "per-joint factors: torque = k * effort ([] = config, else 1)"),
    Param("prior", "", "nominal | none ('' = config, else nominal)"),
    Param("hyperparameters", "", "evidence | stated: the prior's scales and noise chosen by the data or as stated "
          "('' = config, else evidence)"),
    Param("effort_gains", "", "auto | off: each joint's torque per unit of effort estimated where the data demand it, "
          "or the effort as recorded ('' = config, else auto)"),
    Param("hyperparameter_scales", "", "the prior's scales given instead of chosen: a result directory (the scales "
          "its estimate used) or mass=S,com=S,inertia=S,joint=S ('' = config, else chosen)"),
    Param("total_mass", [], "[lo, hi] bounds on the identified links' total mass [kg] ([] = config)"),
    Param("update_robot_state_publisher", False, "set robot_state_publisher's robot_description when done"),
    Param("robot_state_publisher_node", "/robot_state_publisher", "node whose robot_description is set"),
    Param("parameter_timeout", 5.0, "seconds to wait for robot_state_publisher's set_parameters service", low=0.0),
    Param("identify_on_start", False, "run one identification when the node starts"),
    Param("shutdown_when_done", False, "end the process after an identification (exit 0 if done, 1 if failed)"),
)


class IdentificationNode(Node):
    """Identify on ``~/identify`` in a worker thread; publish the URDF and report (module docstring)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NAME, **kwargs)
        self.params = declare_parameters(self, PARAMETERS)
        self.frames = frames_section(self.params["_config"]) is not None  # robot.frames: no URDF
        self.urdf = None if self.frames else robot_urdf(self.params, self)
        self.state, self.message, self.output_dir = "idle", "", ""
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        qos = latched_qos()
        self.description_pub = self.create_publisher(String, "~/robot_description", qos)
        self.report_pub = self.create_publisher(String, "~/report", qos)
        self.status_pub = self.create_publisher(String, "~/status", qos)
        trigger_service(self, "~/identify", self.identify)
        self.exit_code = 0
        self._ended = self.create_guard_condition(self._end)  # triggered by the worker thread
        self._publish_status()
        if self.params["identify_on_start"]:
            ok, message = self.identify()
            if not ok:
                self.get_logger().error(message)

    def identify(self) -> tuple[bool, str]:
        """Start an identification in a worker thread; returns (started, message)."""
        with self._lock:
            if self.state == "running":
                return False, "an identification is already running"
            bag = self.get_parameter("bag_path").value or ""
            if not bag or not Path(bag).expanduser().exists():
                message = f"bag_path {bag!r}: no such bag" if bag else "bag_path is not set"
                self._set_state("failed", message)
                return False, message
            out = self.get_parameter("output_dir").value or time.strftime("dynid_result_%Y%m%d_%H%M%S")
            try:  # an existing directory that is not an earlier result, or one holding the bag: refused
                inputs = (bag, self.urdf or self.params["_config_path"])
                self.output_dir = str(check_output(out, RESULT, inputs, flag="output_dir"))
            except DynidError as err:
                self._set_state("failed", str(err))
                return False, str(err)
            self._set_state("running", f"identifying from {bag}")
            self._worker = threading.Thread(target=self._run, args=(Path(bag).expanduser(), Path(self.output_dir)),
                                            name="identification", daemon=True)
            self._worker.start()
            return True, f"identification started from {bag}; results on ~/report and in {self.output_dir}"

    def options(self) -> IdentificationOptions:
        """The node's options: its parameters over the config's ``identification:`` section over the defaults, by
        the builder ``dynid identify`` uses (:func:`identification_options`)."""
        config = self.params["_config"]
        return identification_options(config.get("identification"), self._overrides(), **driver_defaults(config))

    def _overrides(self) -> dict:
        """The parameters as the options builder's overrides (:func:`parameter_overrides`); ``hyperparameter_scales``
        a result directory's or the given numbers (:func:`hyperparameter_scales_argument`), '' = not given."""
        overrides = parameter_overrides(self.params)
        scales = hyperparameter_scales_argument(overrides["hyperparameter_scales"])
        return {**overrides, "hyperparameter_scales": scales}

    def _run(self, bag: Path, out: Path) -> None:
        """One identification by ``dynid identify``'s entry (:func:`identify_into`), off the executor."""
        inputs = RunInputs(bag=bag, urdf=self.urdf, config=self.params["_config_path"],
                           xacro_args=tuple(xacro_args(self.params) or ()))
        try:
            run = identify_into(out, inputs, self._overrides(), config=self.params["_config"])
            report_text = (out / REPORT_FILE).read_text() if (out / REPORT_FILE).exists() else ""
            urdf_text = (out / URDF_FILE).read_text() if (out / URDF_FILE).exists() else ""
        except DynidError as err:
            self.get_logger().error(f"identification failed: {err}")
            self._set_state("failed", str(err))
            return
        except Exception as err:  # noqa: BLE001 - a worker must report, not die silently
            self.get_logger().error(f"identification failed unexpectedly: {type(err).__name__}: {err}")
            self._set_state("failed", f"{type(err).__name__}: {err}")
            return
        for warning in run.warnings:
            self.get_logger().warning(warning)
        if run.frames is not None and not report_text:  # a frames robot: its result file's content
            report_text = json_message(frames_result_dict(run.frames, self.params["_config"],
                                                          run.frames.processing)).data
        if urdf_text:
            self.description_pub.publish(String(data=urdf_text))
        self.report_pub.publish(String(data=report_text))
        summary = run.summary()
        self.get_logger().info(summary)
        if self.params["update_robot_state_publisher"] and urdf_text:
            summary += "; " + self._update_robot_state_publisher(urdf_text)
        self._set_state("done", summary)

    def _update_robot_state_publisher(self, urdf_text: str) -> str:
        """Set robot_state_publisher's robot_description; returns what happened (never raises)."""
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters

        node = self.params["robot_state_publisher_node"].rstrip("/")
        timeout = self.params["parameter_timeout"]
        client = self.create_client(SetParameters, f"{node}/set_parameters")
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                message = f"{node}/set_parameters not available within {timeout} s: robot_description not updated"
                self.get_logger().warning(message)
                return message
            value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=urdf_text)
            request = SetParameters.Request(parameters=[Parameter(name="robot_description", value=value)])
            future = client.call_async(request)
            done = threading.Event()
            future.add_done_callback(lambda _: done.set())
            if not done.wait(timeout) or future.result() is None:
                message = f"{node} did not answer within {timeout} s: robot_description not updated"
            elif not future.result().results[0].successful:
                message = f"{node} refused robot_description: {future.result().results[0].reason}"
            else:
                message = f"updated {node} robot_description"
            (self.get_logger().info if message.startswith("updated") else self.get_logger().warning)(message)
            return message
        finally:
            self.destroy_client(client)

    def _set_state(self, state: str, message: str) -> None:
        self.state, self.message = state, message
        self._publish_status()
        if state in ("done", "failed") and self.params["shutdown_when_done"]:
            self.exit_code = 0 if state == "done" else 1
            self._ended.trigger()

    def _end(self) -> None:
        """shutdown_when_done: end main's spinning half a second after the final status went out, once every
        matched reliable subscriber acknowledged the final report and status (at most ``FINAL_ACK_TIMEOUT_S``: a
        process that exits at once may take unsent samples with it)."""
        self.create_timer(0.5, self._shutdown_when_acked)

    def _shutdown_when_acked(self) -> None:
        for publisher in (self.report_pub, self.status_pub, self.description_pub):
            publisher.wait_for_all_acked(Duration(seconds=FINAL_ACK_TIMEOUT_S))
        rclpy.try_shutdown(context=self.context)

    def _publish_status(self) -> None:
        if not self.context.ok():
            return
        self.status_pub.publish(json_message({"state": self.state, "message": self.message,
                                              "output_dir": self.output_dir}))


def main(args: list[str] | None = None) -> int:
    """Run the identification node until Ctrl-C or shutdown; the exit code."""
    return run(IdentificationNode, args)  # the identification runs in its own worker thread


if __name__ == "__main__":
    raise SystemExit(main())
