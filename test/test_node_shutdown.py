"""Ctrl-C as ``ros2 launch`` sends it (SIGINT to every process at once) while the arm moves and the bag records:
the motion stops, the bag is closed and readable, every node exits with status 0 and no traceback."""

import signal
from contextlib import ExitStack

from rclpy.node import Node
from std_msgs.msg import String

from ros_helpers import Latest, node_process, status_qos, wait_for, write_test_trajectory


def test_ctrl_c_stops_the_motion_closes_the_bag_and_every_node_exits_0(spinner, tmp_path):
    from dynid_ros.data.bag_io import read_joint_states

    trajectory = write_test_trajectory(tmp_path / "t.yaml", period=0.5, harmonics=2)
    bag = tmp_path / "bag"
    helper = spinner.add(Node("watcher", context=spinner.context))
    excitation = Latest(helper, String, "/excitation_node/status", status_qos(), as_json=True)
    recorder = Latest(helper, String, "/recorder_node/status", status_qos(), as_json=True)
    nodes = {
        "sim_node": {"robot": "panda", "truth": "nominal"},
        "recorder_node": {"bag_path": str(bag), "autostart": True},
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
    series = read_joint_states(bag)  # closed: metadata written, readable without repair
    assert len(series.t) > 500
