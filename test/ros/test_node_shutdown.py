"""Ctrl-C as ``ros2 launch`` sends it (SIGINT to every process at once) while the arm moves and the bag records:
the motion stops, the bag is closed and readable, every node exits with status 0 and no traceback."""

import signal
from contextlib import ExitStack

from rclpy.node import Node
from std_msgs.msg import String

from support.robots import FRANKA_STATES
from support.ros_helpers import Latest, node_process, status_qos, wait_for, write_test_trajectory


def test_ctrl_c_stops_the_motion_closes_the_bag_and_every_node_exits_0(spinner, tmp_path):
    from dynid_ros.data.bag_io import read_joint_states

    trajectory = write_test_trajectory(tmp_path / "t.yaml", period=0.5, harmonics=2)
    bag = tmp_path / "bag"
    helper = spinner.add(Node("watcher", context=spinner.context))
    excitation = Latest(helper, String, "/excitation_node/status", status_qos(), as_json=True)
    recorder = Latest(helper, String, "/recorder_node/status", status_qos(), as_json=True)
    nodes = {
        "sim_node": {"robot": "panda", "truth": "nominal"},
        "recorder_node": {"robot": "panda", "bag_path": str(bag), "autostart": True},
        "excitation_node": {"robot": "panda", "trajectory_file": str(trajectory), "mode": "action", "cycles": 40,
                            "autostart": True},
    }
    with ExitStack() as stack:
        processes = {name: stack.enter_context(node_process(name, values, tmp_path / f"{name}.log"))
                     for name, values in nodes.items()}
        # moving, and recording for a while (a count, not a time: on a loaded machine 0.5 s held 342 messages)
        wait_for(lambda: (excitation.last or {}).get("state") == "running"
                 and (recorder.last or {}).get("state") == "recording"
                 and sum((recorder.last or {}).get("counts", {}).values()) > 600, timeout=60,
                 what="moving and recording")
        for process in processes.values():
            process.send_signal(signal.SIGINT)
        for process in processes.values():
            process.wait(timeout=15)
    logs = {name: (tmp_path / f"{name}.log").read_text() for name in nodes}
    for name, process in processes.items():
        assert process.returncode == 0, f"{name}: {logs[name]}"
        assert "Traceback" not in logs[name] and "context is not valid" not in logs[name], logs[name]
    assert "node shutting down" in logs["excitation_node"]  # it stopped the motion it had sent
    series = read_joint_states(bag, topic=FRANKA_STATES)  # closed: metadata written, readable without repair
    assert len(series.t) > 500


def test_ctrl_c_repeated_while_the_recorder_exits_leaves_status_0_and_a_closed_bag(spinner, tmp_path):
    """``ros2 launch`` in a terminal: the terminal's SIGINT reaches every process, then launch sends each its own;
    more come on a repeated Ctrl-C. Every one of them, up to the process's last moment (Python restores the default
    action of a signal while it exits: it used to die of that second SIGINT, status -2), leaves status 0."""
    import time

    from sensor_msgs.msg import JointState

    from dynid_ros.data.bag_io import read_joint_states

    helper = spinner.add(Node("arm", context=spinner.context))
    states = helper.create_publisher(JointState, "/joint_states", 10)
    message = JointState(name=["j1"], position=[0.1], velocity=[0.0], effort=[0.0])
    helper.create_timer(0.005, lambda: states.publish(message))
    recorder = Latest(helper, String, "/recorder_node/status", status_qos(), as_json=True)
    bag = tmp_path / "bag"
    with node_process("recorder_node", {"bag_path": str(bag), "autostart": True}, tmp_path / "log") as process:
        wait_for(lambda: sum((recorder.last or {}).get("counts", {}).values()) > 50, timeout=30, what="recording")
        while process.poll() is None:  # a Ctrl-C every 10 ms until it has exited
            process.send_signal(signal.SIGINT)
            time.sleep(0.01)
    log = (tmp_path / "log").read_text()
    assert process.returncode == 0, log
    assert "Traceback" not in log, log
    assert len(read_joint_states(bag).t) > 50  # closed: readable without repair
