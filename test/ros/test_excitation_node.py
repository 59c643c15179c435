"""excitation_node with real rclpy: parameters, services, status, topic/stream/action motion, refusals.

In topic/stream mode the controller is a plain rclpy subscriber (it only has to exist and receive); joint
states come from a test publisher. Each refusal checks that nothing was sent to the controller. In
action mode (control_msgs/FollowJointTrajectory, built by the test set-up) the controller is sim_node
(a separate process, as launched) or, for the answers sim_node never gives, a plain rclpy ActionServer.
"""

import re
import threading
import time

import numpy as np
import pytest
import rclpy  # noqa: E402,F401
import yaml
from rclpy.node import Node  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from dynid_ros.ros.excitation_node import PARAMETERS, ExcitationNode

from support.robots import FRANKA_STATES
from support.ros_helpers import (
    Latest,
    call_trigger,
    params,
    robot_limits_of,
    status_qos,
    wait_for,
    write_test_trajectory,
)
from support.wide_limits import HOME, outside_urdf_trajectory, write_wide

PANDA = [f"panda_joint{i}" for i in range(1, 8)]
CONTROLLER_TOPIC = "/joint_trajectory_controller/joint_trajectory"


@pytest.fixture(scope="module")
def trajectory_file(tmp_path_factory):
    return write_test_trajectory(tmp_path_factory.mktemp("traj") / "short.yaml", period=0.5, harmonics=2)


@pytest.fixture(scope="module")
def mid_pose(trajectory_file):
    limits = yaml.safe_load(trajectory_file.read_text())["limits"]["position"]
    return np.mean(np.array(limits), axis=1)


class Robot:
    """Joint states at 100 Hz (names and pose settable) and a controller that records what it gets and, when
    ``follows``, moves the published pose along it as a joint_trajectory_controller does (the core's
    TrajectoryReference: the same interpolation as sim_node, without its dynamics) or to each streamed command."""

    def __init__(self, spinner, names, pose, controller=True, follows=True, topic=FRANKA_STATES):
        from dynid_ros.execution.trajectory_reference import TrajectoryReference

        self.node = spinner.add(Node("robot", context=spinner.context))
        self.names, self.pose, self.publishing, self.follows = list(names), list(pose), True, follows
        self.reference = None
        self._hold = TrajectoryReference.hold
        self.state_pub = self.node.create_publisher(JointState, topic, 10)
        self.node.create_timer(0.01, self._publish)
        self.trajectories = Latest(self.node, JointTrajectory, CONTROLLER_TOPIC) if controller else None
        if controller:
            self.node.create_subscription(JointTrajectory, CONTROLLER_TOPIC, self._follow, 10)
        self.node.create_subscription(Float64MultiArray, "/forward_position_controller/commands", self._command, 10)
        self.status = Latest(self.node, String, "/excitation_node/status", status_qos(), as_json=True)

    def _follow(self, msg):
        if not self.follows:
            return
        now = time.monotonic()
        points = msg.points
        self.reference = self._hold(self.names, now, self.pose).replace(
            now, None, msg.joint_names, [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in points],
            [p.positions for p in points], [p.velocities for p in points], [p.accelerations for p in points])

    def _command(self, msg):
        if self.follows:
            self.pose = list(msg.data)

    def _publish(self):
        if self.reference is not None:
            self.pose = self.reference.sample(time.monotonic())[0].tolist()
        if self.publishing:
            self.state_pub.publish(JointState(name=self.names, position=[float(v) for v in self.pose]))

    def states(self):
        return [s["state"] for s in self.status.messages]


def excitation(spinner, trajectory_file, **overrides):
    # state_timeout 2 s: a test process shares two loaded cores with its robot stand-in (0.74 s gaps were seen)
    # wait_timeout 3 s: with no controller manager (these stand-ins), its list_controllers is looked for 1.5 s
    values = {"robot": "panda", "trajectory_file": str(trajectory_file), "mode": "topic", "wait_timeout": 3.0,
              "state_timeout": 2.0, **overrides}
    # one thread as in its main(): joint states wait while ~/start checks the motion
    node = ExcitationNode(context=spinner.context, parameter_overrides=params(**values))
    return spinner.add(node)


def test_parameters_and_services(spinner, trajectory_file):
    node = excitation(spinner, trajectory_file)
    names = {p.name for p in PARAMETERS}
    assert {"trajectory_file", "controller_name", "mode", "stream_rate_hz", "cycles", "autostart"} <= names
    assert node.get_parameter("controller_name").value == "joint_trajectory_controller"
    assert node.get_parameter("autostart").value is False
    assert node.get_parameter("cycles").value == 1
    services = dict(node.get_service_names_and_types_by_node("excitation_node", "/"))
    assert services["/excitation_node/start"] == ["std_srvs/srv/Trigger"]
    assert services["/excitation_node/stop"] == ["std_srvs/srv/Trigger"]


def test_topic_mode_sends_the_profile_and_reports_progress(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose + 0.05)
    excitation(spinner, trajectory_file, cycles=2)
    wait_for(lambda: robot.node.count_publishers(CONTROLLER_TOPIC) == 1, what="excitation publisher")
    time.sleep(0.2)
    response = call_trigger(robot.node, "/excitation_node/start")
    assert response.success, response.message
    wait_for(lambda: robot.trajectories.messages, what="trajectory on the controller topic")
    msg = robot.trajectories.last
    assert list(msg.joint_names) == PANDA
    first, last = msg.points[0], msg.points[-1]
    # the approach starts at the current pose (first waypoint 20 ms later, still next to it)
    np.testing.assert_allclose(first.positions, mid_pose + 0.05, atol=1e-3)
    assert len(first.velocities) == len(first.accelerations) == 7
    duration = last.time_from_start.sec + 1e-9 * last.time_from_start.nanosec
    assert call_trigger(robot.node, "/excitation_node/start").success is False  # already moving
    wait_for(lambda: "done" in robot.states(), timeout=duration + 5, what="done")
    states = robot.states()
    order = [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]
    assert order[-3:] == ["approaching", "running", "done"]
    progress = [s["progress"] for s in robot.status.messages]
    assert progress == sorted(progress) and progress[-1] == 1.0
    assert len(robot.trajectories.messages) == 1


def is_stop(msg, joints=PANDA) -> bool:
    """A decelerating stop: the robot's joints, points, the last at rest (zero velocity)."""
    return (list(msg.joint_names) == list(joints) and len(msg.points) >= 2
            and np.abs(msg.points[-1].velocities).max() == 0.0)


def test_stop_while_moving_decelerates_the_robot_to_rest(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose)
    excitation(spinner, trajectory_file, cycles=5)
    wait_for(lambda: robot.node.count_publishers(CONTROLLER_TOPIC) == 1, what="excitation publisher")
    time.sleep(0.2)
    assert call_trigger(robot.node, "/excitation_node/start").success
    wait_for(lambda: robot.trajectories.messages, what="trajectory")
    response = call_trigger(robot.node, "/excitation_node/stop")
    assert response.success
    wait_for(lambda: len(robot.trajectories.messages) == 2, what="stop message")
    stop = robot.trajectories.last
    assert is_stop(stop)  # not an empty trajectory: a real joint_trajectory_controller ignores one
    wait_for(lambda: robot.states()[-1] == "aborted", what="aborted")
    assert "stopped on request" in robot.status.last["message"]
    end = np.array(stop.points[-1].positions)
    wait_for(lambda: np.allclose(robot.pose, end, atol=1e-9), what="the robot at the stop's end")


def forward_controller(spinner, joints, interface="position"):
    """A node with the parameters of ros2_control's forward_command_controller that stream mode reads."""
    node = spinner.add(Node("forward_position_controller", context=spinner.context))
    node.declare_parameter("joints", list(joints))
    node.declare_parameter("interface_name", interface)
    return node


def stream_setup(spinner, trajectory_file, pose, **overrides):
    """A robot that follows each streamed command, a forward_position_controller naming its joints (stream_joints are
    checked against them), a controller manager telling its update rate (the stream matches it), the node."""
    robot = Robot(spinner, PANDA, pose, controller=False)
    forward_controller(spinner, PANDA)
    spinner.add(Node("controller_manager", context=spinner.context)).declare_parameter("update_rate", 200)
    commands = Latest(robot.node, Float64MultiArray, "/forward_position_controller/commands", qos=1000)
    node = excitation(spinner, trajectory_file, mode="stream", controller_name="forward_position_controller",
                      stream_joints=PANDA, **overrides)
    time.sleep(0.3)
    return robot, commands, node


def profile_times(profile, commands):
    """The profile time of each command, matched in order (each at or after the one before): a command that is not
    a sample of the profile after the previous one fails the test."""
    t = np.linspace(0.0, profile.duration, int(profile.duration * 10_000) + 1)
    q = profile.sample(t)[0]
    tolerance = 1e-9 + np.abs(np.diff(q, axis=0)).max()  # one step of the 10 kHz grid at the peak speed
    times, first = [], 0
    for k, message in enumerate(commands):
        error = np.abs(q[first:] - np.asarray(message.data)).max(axis=1)
        match = np.flatnonzero(error <= tolerance)
        assert match.size, f"command {k} is no sample of the profile after t = {t[first]:.4f} s (off by " \
                           f"{error.min():.2e})"
        first += int(match[0])
        times.append(t[first])
    return np.array(times)


def stream_threads():
    return [t for t in threading.enumerate() if t.name == "dynid_stream" and t.is_alive()]


def test_stream_mode_streams_the_profile_in_order_and_is_done_after_its_end(spinner, trajectory_file, mid_pose):
    """What holds however loaded the machine is (no count, no rate): the commands are the profile's samples in order,
    from the start pose to the end pose; ``done`` comes once the stream sent the profile's end; its thread ends."""
    robot, commands, node = stream_setup(spinner, trajectory_file, mid_pose)
    assert call_trigger(robot.node, "/excitation_node/start").success
    wait_for(lambda: robot.states()[-1] in ("done", "aborted"), timeout=20, what="the end")
    assert robot.states()[-1] == "done", robot.status.last
    profile = node.supervisor.run.profile
    assert node.link.sent_until() == profile.duration  # done only after the last sample was sent
    wait_for(lambda: not stream_threads(), what="the stream's thread to end after done")
    wait_for(lambda: commands.messages and np.allclose(commands.last.data, profile.sample(np.array([
        profile.duration]))[0][0]), what="the end pose command")
    assert commands.messages[0].layout.dim[0].label == ",".join(PANDA)
    assert np.all(np.diff(profile_times(profile, commands.messages)) >= 0)  # every one, in order
    np.testing.assert_allclose(commands.messages[0].data, mid_pose, atol=0.05)  # the approach leaves it slowly


def test_stream_stop_decelerates_then_ends_the_stream_on_a_hold(spinner, trajectory_file, mid_pose):
    """~/stop while streaming: the stream decelerates to rest, then its thread ends; the last commands are at rest
    (the forward controller holds the last one) and nothing follows."""
    robot, commands, node = stream_setup(spinner, trajectory_file, mid_pose, cycles=5)
    assert call_trigger(robot.node, "/excitation_node/start").success
    wait_for(lambda: len(commands.messages) >= 3, what="a few commands")
    assert call_trigger(robot.node, "/excitation_node/stop").success
    wait_for(lambda: not stream_threads(), what="the stream's thread to end after its deceleration")
    profile, sent = node.supervisor.run.profile, node.link.sent_until()
    time.sleep(0.1)
    count = len(commands.messages)
    assert count >= 2 and np.abs(np.subtract(commands.messages[-1].data, commands.messages[-2].data)).max() < 1e-6
    time.sleep(0.3)
    assert len(commands.messages) == count  # nothing after the halt
    assert robot.states()[-1] == "aborted" and "stopped on request" in robot.status.last["message"]
    assert 0 < sent < profile.duration


def test_a_stream_slower_than_the_controller_manager_is_refused(spinner, trajectory_file, mid_pose):
    """A 1 kHz forward controller fed at 100 Hz would see steps the checked profile does not make: refused."""
    robot = Robot(spinner, PANDA, mid_pose, controller=False)
    forward_controller(spinner, PANDA)
    spinner.add(Node("controller_manager", context=spinner.context)).declare_parameter("update_rate", 1000)
    commands = Latest(robot.node, Float64MultiArray, "/forward_position_controller/commands")
    excitation(spinner, trajectory_file, mode="stream", controller_name="forward_position_controller",
               stream_rate_hz=100.0, stream_joints=PANDA)
    time.sleep(0.3)
    assert call_trigger(robot.node, "/excitation_node/start").success  # it waits for the managers' answers
    wait_for(lambda: robot.status.last["state"] == "aborted", what="aborted")
    assert "stream_rate_hz 100 is below /controller_manager's update_rate 1000 Hz" in robot.status.last["message"]
    assert commands.messages == []


def test_topic_mode_is_not_done_when_the_robot_does_not_follow(spinner, trajectory_file, mid_pose):
    """The controller receives the trajectory, the arm stays put (a refused or ignored motion): aborted, not done."""
    robot = Robot(spinner, PANDA, mid_pose + 0.2, follows=False)  # the approach moves each joint by 0.2 rad
    excitation(spinner, trajectory_file)
    wait_for(lambda: robot.node.count_publishers(CONTROLLER_TOPIC) == 1, what="excitation publisher")
    time.sleep(0.2)
    assert call_trigger(robot.node, "/excitation_node/start").success
    wait_for(lambda: robot.status.last["state"] in ("done", "aborted"), timeout=10, what="the end")
    assert robot.status.last["state"] == "aborted", robot.status.last
    message = robot.status.last["message"]
    assert "the robot did not reach the end pose within " in message and "(joint panda_joint" in message \
        or "the robot does not follow the motion: joint panda_joint" in message, message
    assert is_stop(robot.trajectories.messages[-1])  # and it was told to stop


def test_gripper_joint_states_on_the_same_topic_are_merged(spinner, trajectory_file, mid_pose):
    """An arm driver and a gripper driver publish on one topic; the gripper's message is often the last one."""
    robot = Robot(spinner, PANDA, mid_pose)
    gripper = spinner.add(Node("gripper", context=spinner.context))
    publisher = gripper.create_publisher(JointState, FRANKA_STATES, 10)
    fingers = JointState(name=["panda_finger_joint1", "panda_finger_joint2"], position=[0.02, 0.02])
    gripper.create_timer(0.002, lambda: publisher.publish(fingers))
    excitation(spinner, trajectory_file)
    wait_for(lambda: robot.node.count_publishers(CONTROLLER_TOPIC) == 1, what="excitation publisher")
    time.sleep(0.3)
    response = call_trigger(robot.node, "/excitation_node/start")
    assert response.success, response.message
    wait_for(lambda: "done" in robot.states(), timeout=10, what="done")


def test_stream_joints_that_are_not_the_controllers_are_refused(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose, controller=False)
    forward_controller(spinner, PANDA[::-1])
    commands = Latest(robot.node, Float64MultiArray, "/forward_position_controller/commands")
    excitation(spinner, trajectory_file, mode="stream", controller_name="forward_position_controller",
               stream_joints=PANDA)
    time.sleep(0.3)
    assert call_trigger(robot.node, "/excitation_node/start").success  # it waits for the controller's answer
    wait_for(lambda: robot.status.last["state"] == "aborted", what="aborted")
    assert "are not the joints of /forward_position_controller in its order (panda_joint7" in \
        robot.status.last["message"]
    assert commands.messages == []


def refused(robot, match, start=True):
    if start:
        response = call_trigger(robot.node, "/excitation_node/start")
        assert not response.success
        assert match in response.message
    wait_for(lambda: robot.status.last and robot.status.last["state"] == "aborted", what="aborted")
    assert match in robot.status.last["message"]
    if robot.trajectories is not None:
        time.sleep(0.2)
        assert robot.trajectories.messages == []  # never moved


def test_unknown_joints_are_refused(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, [f"arm_joint{i}" for i in range(1, 8)], mid_pose)
    excitation(spinner, trajectory_file)
    time.sleep(0.3)
    refused(robot, "does not name joint(s) panda_joint1")


def test_stale_and_missing_joint_states_are_refused(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose)
    robot.publishing = False
    excitation(spinner, trajectory_file, state_timeout=0.2)
    time.sleep(0.3)
    refused(robot, "no /franka/joint_states received")  # the Panda config's topic (franka_ros2's, 1 kHz)
    robot.publishing = True
    time.sleep(0.2)
    robot.publishing = False
    time.sleep(0.5)
    refused(robot, "/franka/joint_states is stale")


def test_limit_violating_trajectory_is_refused(spinner, trajectory_file, mid_pose, tmp_path):
    content = yaml.safe_load(trajectory_file.read_text())
    content["a"] = (4 * np.array(content["a"])).tolist()
    content["b"] = (4 * np.array(content["b"])).tolist()
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(content))
    robot = Robot(spinner, PANDA, mid_pose)
    excitation(spinner, bad)
    time.sleep(0.3)
    refused(robot, "outside the limits")


def test_unreachable_controller_is_refused(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose, controller=False)
    excitation(spinner, trajectory_file, wait_timeout=0.5)
    time.sleep(0.3)
    response = call_trigger(robot.node, "/excitation_node/start")
    assert response.success and "waiting for the controller" in response.message  # it waits wait_timeout
    refused(robot, f"no subscriber on {CONTROLLER_TOPIC} within 0.5 s", start=False)


def test_action_mode_without_control_msgs_reports_aborted(spinner, trajectory_file, mid_pose, monkeypatch):
    """control_msgs is built for the tests; its absence (a robot without it) is made here by hiding the
    module (``None`` in sys.modules makes its import fail), which the real package cannot show."""
    import sys

    monkeypatch.setitem(sys.modules, "control_msgs", None)
    monkeypatch.setitem(sys.modules, "control_msgs.action", None)
    robot = Robot(spinner, PANDA, mid_pose, controller=False)
    excitation(spinner, trajectory_file, mode="action")
    time.sleep(0.3)
    refused(robot, "mode 'action' needs control_msgs")


def test_autostart_waits_for_joint_states_then_moves(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose)
    robot.publishing = False
    excitation(spinner, trajectory_file, autostart=True, wait_timeout=5.0)
    time.sleep(0.5)
    assert robot.trajectories.messages == []
    robot.publishing = True
    wait_for(lambda: robot.trajectories.messages, what="autostarted trajectory")
    wait_for(lambda: "done" in robot.states(), timeout=10, what="done")


# ----------------------------------------------------------------------------------------------
# Action mode: control_msgs/FollowJointTrajectory

ACTION = "/joint_trajectory_controller/follow_joint_trajectory"


def test_wide_file_limits_and_motion_outside_the_urdf_are_refused(spinner, tmp_path):
    """The file's limits say +-10 rad, 100 rad/s; panda_joint4 swings past its URDF range: the robot's limits win."""

    path = write_wide(tmp_path / "wide.yaml", outside_urdf_trajectory())
    robot = Robot(spinner, PANDA, HOME)
    excitation(spinner, path)
    time.sleep(0.3)
    refused(robot, "joint panda_joint4: position")
    assert "of the robot" in robot.status.last["message"] and "at t = " in robot.status.last["message"]


def test_a_colliding_trajectory_file_is_refused_with_the_pair_named_and_nothing_sent(spinner):
    """A trajectory made elsewhere (the Panda validation file shipped before collisions were checked) whose hand
    goes through the table: the robot's collision geometry and its table refuse it before anything moves."""

    from dynid_ros.excitation import load_trajectory

    from support.paths import FILES

    colliding = FILES / "panda_colliding_excitation.yaml"
    q_start = load_trajectory(colliding).trajectory.evaluate(np.zeros(1))[0][0]  # at rest where the file starts
    robot = Robot(spinner, PANDA, q_start)
    excitation(spinner, colliding)
    time.sleep(0.3)
    response = call_trigger(robot.node, "/excitation_node/start", timeout=60.0)  # the 1 kHz check of 12.5 s
    assert not response.success and "collision in the motion: " in response.message
    assert re.search(r"panda_\w+ and (panda_\w+|table) intersect \d+\.\d cm deep at t = ", response.message)
    refused(robot, "collision in the motion: ", start=False)


def test_a_robot_joint_missing_from_the_joint_states_is_refused(spinner, tmp_path):
    """A trajectory of six joints; /joint_states lacks the seventh robot joint: its pose is unknown, refused."""

    from dynid_ros.excitation import ExcitationTrajectory, FourierTrajectory, save_trajectory

    full = outside_urdf_trajectory(amplitude_rad=0.2, period=1.0)
    six = FourierTrajectory(full.joints[:6], full.wf, full.q0[:6], full.a[:6], full.b[:6])
    path = tmp_path / "six.yaml"
    save_trajectory(path, ExcitationTrajectory(six, None, 1.0))
    robot = Robot(spinner, PANDA[:6], HOME[:6])
    excitation(spinner, path)
    time.sleep(0.3)
    refused(robot, "does not name joint(s) panda_joint7 of the robot")


def test_a_trajectory_joint_the_robot_lacks_is_refused(spinner, tmp_path):

    from dynid_ros.excitation import ExcitationTrajectory, FourierTrajectory, save_trajectory

    full = outside_urdf_trajectory(amplitude_rad=0.2, period=1.0)
    renamed = FourierTrajectory((*full.joints[:6], "gripper_joint"), full.wf, full.q0, full.a, full.b)
    path = tmp_path / "other_robot.yaml"
    save_trajectory(path, ExcitationTrajectory(renamed, None, 1.0))
    robot = Robot(spinner, [*PANDA, "gripper_joint"], [*HOME, 0.0])  # even if /joint_states names it
    excitation(spinner, path)
    time.sleep(0.3)
    refused(robot, "trajectory joint(s) gripper_joint are not joints of the robot")


def test_robot_from_a_latched_robot_description_topic_is_the_authority(spinner, tmp_path):
    """No robot parameter, no config: the meshed Panda URDF as a robot publishes it on /robot_description
    (latched) gives the limits; the fingers are in /joint_states too; a motion outside the URDF range is refused."""

    from dynid_ros.ros.common import latched_qos

    from support.robots import PANDA_ERD, example_robot_urdf

    publisher = spinner.add(Node("description", context=spinner.context))
    description = publisher.create_publisher(String, "/robot_description", latched_qos())
    description.publish(String(data=example_robot_urdf(PANDA_ERD).read_text()))
    path = write_wide(tmp_path / "wide.yaml", outside_urdf_trajectory())
    robot = Robot(spinner, [*PANDA, "panda_finger_joint1", "panda_finger_joint2"], [*HOME, 0.0, 0.0],
                  topic="/joint_states")  # no config: the default topic
    excitation(spinner, path, robot="", robot_description_topic="/robot_description",
               package_dirs=[str(example_robot_urdf(PANDA_ERD).parents[3])])  # its package:// collision meshes
    time.sleep(0.3)
    refused(robot, "joint panda_joint4: position")
    assert "robot_description" in robot.status.last["message"]


@pytest.fixture(scope="module")
def sim_process(tmp_path_factory):
    """sim_node (nominal Panda, FollowJointTrajectory server) in its own process for this module's action tests."""
    from support.ros_helpers import node_process

    log = tmp_path_factory.mktemp("sim") / "sim_node.log"
    with node_process("sim_node", {"robot": "panda", "truth": "nominal"}, log) as process:
        yield process, log


class Arm:
    """What the action tests watch: sim_node's joint states, the goal statuses of its server, excitation's status."""

    def __init__(self, spinner, sim_process):
        from action_msgs.msg import GoalStatusArray
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        self.process, self.log = sim_process
        self.node = spinner.add(Node("watcher", context=spinner.context))
        self.states = Latest(self.node, JointState, FRANKA_STATES, 100)
        self.goals = Latest(self.node, GoalStatusArray, f"{ACTION}/_action/status", QoSProfile(
            depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.status = Latest(self.node, String, "/excitation_node/status", status_qos(), as_json=True)
        wait_for(lambda: self.states.messages, timeout=30, what=f"sim_node joint states (log {self.log})")

    @property
    def position(self):
        return np.array(self.states.last.position)

    def goal_states(self):
        """Last status of each goal id seen on the server's status topic."""
        last = {}
        for array in self.goals.messages:
            for status in array.status_list:
                last[bytes(status.goal_info.goal_id.uuid)] = status.status
        return list(last.values())

    def states_seen(self):
        return [s["state"] for s in self.status.messages]

    def assert_stopped(self, settle=0.6):
        time.sleep(settle)
        held = self.position
        time.sleep(0.3)
        np.testing.assert_allclose(self.position, held, atol=2e-3)
        assert np.abs(self.states.last.velocity).max() < 0.05
        return held


def test_action_mode_drives_sim_node_to_done(spinner, sim_process, trajectory_file):
    from action_msgs.msg import GoalStatus

    from dynid_ros.excitation.trajectory_file import load_trajectory
    from dynid_ros.execution.trajectory_execution import prepare_profile

    arm = Arm(spinner, sim_process)
    # cycles 3: the checks of a longer motion used to outlast the joint-state timeout and abort what was just sent
    node = excitation(spinner, trajectory_file, mode="action", goal_tolerance=0.01, cycles=3)
    time.sleep(0.3)
    q_start = arm.position
    response = call_trigger(arm.node, "/excitation_node/start")
    # it may first look for a controller manager (sim_node has none): then it moves after the wait
    assert response.success and ("action mode" in response.message or "waiting for the controller" in
                                 response.message), response.message
    profile = prepare_profile(load_trajectory(trajectory_file), q_start, 3, 1000.0, robot_limits_of("panda"))
    wait_for(lambda: "done" in arm.states_seen() or "aborted" in arm.states_seen(), timeout=profile.duration + 10,
             what="the end of the excitation")
    assert arm.status.last["state"] == "done", arm.status.last
    assert arm.status.last["message"] == "trajectory executed"
    assert arm.goal_states()[-1] == GoalStatus.STATUS_SUCCEEDED
    end = profile.sample(np.array([profile.duration]))[0][0]
    np.testing.assert_allclose(arm.position, end, atol=0.01)  # the arm followed the profile to its end
    assert node.link.tracker.finished


def excitation_goal_ended_and_stop_succeeded(arm) -> bool:
    """The excitation's goal no longer runs (preempted by the stop's goal, or canceled) and the stop's goal, when one
    was sent, succeeded (the arm decelerated to rest on the controller)."""
    from action_msgs.msg import GoalStatus

    states = arm.goal_states()  # every goal the server still lists, earlier tests' first
    ended = (GoalStatus.STATUS_ABORTED, GoalStatus.STATUS_CANCELED)
    return bool(states) and (states[-1] in ended or (
        len(states) >= 2 and states[-2] in ended and states[-1] == GoalStatus.STATUS_SUCCEEDED))


def test_stop_preempts_the_goal_and_the_arm_stops(spinner, sim_process, trajectory_file):
    arm = Arm(spinner, sim_process)
    excitation(spinner, trajectory_file, mode="action", cycles=20)
    time.sleep(0.3)
    assert call_trigger(arm.node, "/excitation_node/start").success
    wait_for(lambda: "running" in arm.states_seen(), what="running")
    time.sleep(0.3)
    response = call_trigger(arm.node, "/excitation_node/stop")
    assert response.success
    end = time.monotonic() + 10.0
    while not excitation_goal_ended_and_stop_succeeded(arm) and time.monotonic() < end:
        time.sleep(0.05)
    assert excitation_goal_ended_and_stop_succeeded(arm), (arm.goal_states(), arm.status.last)
    assert arm.status.last["state"] == "aborted" and "stopped on request" in arm.status.last["message"]
    arm.assert_stopped()


def test_shutdown_stops_the_goal_and_the_arm_stops(spinner, sim_process, trajectory_file, tmp_path):
    from support.ros_helpers import node_process

    arm = Arm(spinner, sim_process)
    log = tmp_path / "excitation_node.log"
    with node_process("excitation_node", {"robot": "panda", "trajectory_file": str(trajectory_file), "mode": "action",
                                          "cycles": 20, "autostart": True}, log) as process:
        wait_for(lambda: "running" in arm.states_seen(), timeout=30, what=f"running (log {log})")
        time.sleep(0.3)
    assert process.returncode == 0, log.read_text()
    wait_for(lambda: excitation_goal_ended_and_stop_succeeded(arm), what=f"the goal stopped on the server (log {log})")
    assert "node shutting down" in log.read_text()
    arm.assert_stopped()


def test_path_tolerance_abort_reports_the_servers_error(spinner, sim_process, trajectory_file):
    from action_msgs.msg import GoalStatus

    arm = Arm(spinner, sim_process)
    excitation(spinner, trajectory_file, mode="action", path_tolerance=1e-6)
    time.sleep(0.3)
    assert call_trigger(arm.node, "/excitation_node/start").success
    wait_for(lambda: "aborted" in arm.states_seen(), what="aborted")
    message = arm.status.last["message"]
    assert "goal ABORTED: PATH_TOLERANCE_VIOLATED (joint panda_joint" in message
    assert "exceeds tolerance 1e-06" in message  # the server's error_string
    assert arm.goal_states()[-1] == GoalStatus.STATUS_ABORTED
    arm.assert_stopped()


SCRIPTED = "scripted_controller"  # not sim_node's controller name: sim_process may be running
SCRIPTED_ACTION = f"/{SCRIPTED}/follow_joint_trajectory"
SCRIPTED_STATES = "/scripted_joint_states"  # nor its joint states topic


class ScriptedServer:
    """A plain rclpy FollowJointTrajectory server that answers every goal one way: what sim_node never does
    (accept, then end with a given status, error code and error string; reject; or never answer)."""

    def __init__(self, spinner, answer, spin=True):
        from control_msgs.action import FollowJointTrajectory
        from rclpy.action import ActionServer, GoalResponse

        self.goals = []
        self.answer = answer
        self.node = Node("controller", context=spinner.context)
        if spin:
            spinner.add(self.node)
        self.result_type = FollowJointTrajectory.Result

        def on_goal(goal):
            self.goals.append(goal)
            return GoalResponse.REJECT if answer == "reject" else GoalResponse.ACCEPT

        self.server = ActionServer(self.node, FollowJointTrajectory, SCRIPTED_ACTION, execute_callback=self._execute,
                                   goal_callback=on_goal)
        spinner.cleanups.append(self.server.destroy)
        if not spin:
            spinner.cleanups.append(self.node.destroy_node)

    def _execute(self, handle):
        end, code, text = self.answer
        getattr(handle, end)()
        return self.result_type(error_code=code, error_string=text)


@pytest.mark.parametrize("answer, words", [
    (("abort", -2, "joint panda_joint8 is not a joint of this controller"),
     "goal ABORTED: INVALID_JOINTS (joint panda_joint8 is not a joint of this controller)"),
    (("succeed", -5, "panda_joint3 off by 0.2 rad"),
     "controller reported SUCCEEDED but GOAL_TOLERANCE_VIOLATED (panda_joint3 off by 0.2 rad)"),
    ("reject", f"goal rejected by {SCRIPTED_ACTION}: the controller gave no reason (its log says why)"),
])
def test_server_verdicts_end_the_excitation(spinner, trajectory_file, mid_pose, answer, words):
    robot = Robot(spinner, PANDA, mid_pose, controller=False, topic=SCRIPTED_STATES)
    server = ScriptedServer(spinner, answer)
    excitation(spinner, trajectory_file, mode="action", controller_name=SCRIPTED, joint_states_topic=SCRIPTED_STATES)
    time.sleep(0.3)
    assert call_trigger(robot.node, "/excitation_node/start").success
    wait_for(lambda: robot.status.last["state"] == "aborted", what="aborted")
    assert robot.status.last["message"] == words
    assert len(server.goals) == 1
    assert list(server.goals[0].trajectory.joint_names) == PANDA
    path = server.goals[0].path_tolerance  # by default derived from the profile: finite, one per joint
    assert [t.name for t in path] == PANDA and all(0.05 <= t.position < 1.0 for t in path)


def test_server_that_never_answers_hits_wait_timeout(spinner, trajectory_file, mid_pose):
    """The server exists (discovered, ready) but its node is never spun: the goal gets no answer."""
    robot = Robot(spinner, PANDA, mid_pose, controller=False, topic=SCRIPTED_STATES)
    ScriptedServer(spinner, ("succeed", 0, ""), spin=False)
    # 2 s: past the 1.5 s the node looks for a controller manager (none here) before it sends the goal
    excitation(spinner, trajectory_file, mode="action", controller_name=SCRIPTED, wait_timeout=2.0,
               joint_states_topic=SCRIPTED_STATES)
    time.sleep(0.3)
    response = call_trigger(robot.node, "/excitation_node/start")
    assert response.success and ("moving" in response.message or "waiting for the controller" in response.message)
    wait_for(lambda: robot.status.last["state"] == "aborted", timeout=8, what="aborted")
    # the wait_timeout ended it (its message), not the trajectory's duration plus the result grace
    assert robot.status.last["message"] == f"action server {SCRIPTED_ACTION} did not answer the goal within 2 s"


def test_absent_action_server_hits_wait_timeout(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose, controller=False, topic=SCRIPTED_STATES)
    excitation(spinner, trajectory_file, mode="action", controller_name=SCRIPTED, wait_timeout=0.5,
               joint_states_topic=SCRIPTED_STATES)
    time.sleep(0.3)
    response = call_trigger(robot.node, "/excitation_node/start")
    assert response.success and "waiting for the controller" in response.message
    refused(robot, f"action server {SCRIPTED_ACTION} not available within 0.5 s: not moving", start=False)
