"""The whole job as separate processes: sim_node, excitation_node (topic mode), recorder_node,
identification_node and orchestrator_node (start -> record -> excite -> stop -> identify, no manual
service call). A plain rclpy subscriber (transient local) receives the identified URDF, which loads
in pinocchio and is physically consistent."""

import json

import pytest
from rclpy.node import Node
from std_msgs.msg import String

from support.ros_helpers import (
    Latest,
    assert_physically_consistent,
    node_process,
    status_qos,
    wait_for,
    write_test_trajectory,
)


def test_sim_excite_record_identify_publish(spinner, tmp_path):
    trajectory = write_test_trajectory(tmp_path / "excitation.yaml", "panda", period=4.0, harmonics=4)
    bag, out = tmp_path / "bag", tmp_path / "result"
    helper = spinner.add(Node("e2e_listener", context=spinner.context))
    urdf = Latest(helper, String, "/identification_node/robot_description", status_qos())
    orchestrator = Latest(helper, String, "/orchestrator_node/status", status_qos(), as_json=True)
    nodes = [
        ("sim_node", {"robot": "panda"}),
        ("recorder_node", {"robot": "panda", "bag_path": str(bag)}),
        ("excitation_node", {"robot": "panda", "trajectory_file": str(trajectory), "mode": "topic"}),
        ("identification_node", {"robot": "panda", "bag_path": str(bag), "output_dir": str(out)}),
        ("orchestrator_node", {"settle_time": 0.5, "shutdown_when_done": True}),
    ]
    processes = [node_process(name, values, tmp_path / f"{name}.log") for name, values in nodes]
    running = [p.__enter__() for p in processes]
    timed_out = None
    try:
        wait_for(lambda: (orchestrator.last or {}).get("state") in ("done", "aborted")
                 or any(p.poll() is not None for p in running), timeout=120, what="the end of the run")
        wait_for(lambda: urdf.messages or (orchestrator.last or {}).get("state") != "done", what="identified URDF")
        wait_for(lambda: running[-1].poll() is not None, what="the orchestrator's own exit")
    except pytest.fail.Exception as failure:  # keep what the nodes said: a timeout alone tells nothing
        timed_out = str(failure)
    finally:
        for p in reversed(processes):
            p.__exit__(None, None, None)
    logs = "\n".join(f"--- {name} (exit {p.returncode})\n{(tmp_path / f'{name}.log').read_text()}"
                     for (name, _), p in zip(nodes, running))
    assert timed_out is None, f"{timed_out}; orchestrator {orchestrator.last}\n{logs}"
    assert urdf.messages, f"no URDF; orchestrator {orchestrator.last}\n{logs}"
    model = assert_physically_consistent(urdf.last.data)
    assert model.nq == 7
    report = json.loads((out / "report.json").read_text())
    assert report["feasible"] is True and report["method"] == "fbpe"
    assert report["relative_error"] < 0.1
    assert (orchestrator.last or {}).get("state") == "done", logs
    assert running[-1].returncode == 0, logs  # shutdown_when_done: the orchestrator ended by itself, status 0
    assert "Traceback" not in logs
    assert "exciting" in logs and "wrote" in logs
