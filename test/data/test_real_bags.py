"""Real data as it comes. Bags written with rosbags (real rosbag2 files) in tmp_path, torques of a known
Panda model (example-robot-data's URDF, prismatic fingers) computed by pinocchio, identified by ``dynid identify``.

The "done when" bag: an arm driver at 500 Hz (header stamps on its own clock, no velocities) and a gripper driver
at 50 Hz (header stamps 0) both on /joint_states, with a 0.5 s hole in the arm's stream, the fingers held open.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import JOINT_STATE_TYPE, read_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import torques
from dynid_ros.identification.identify import identify
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.robot.model import load_model, nominal_parameters

from support.paths import REPO
from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, example_robot_urdf

TYPES = get_typestore(Stores.ROS2_HUMBLE)
FINGERS = ("panda_finger_joint1", "panda_finger_joint2")
FINGER_OPEN = 0.035  # [m], where the gripper holds its fingers in the data (not 0, the neutral)
ARM_HZ, GRIPPER_HZ = 500.0, 50.0
DRIVER_CLOCK_S = -1000.0  # the arm driver's header clock is 1000 s behind the recorder's (receive) clock
LATENCY_S = 0.002


def message(stamp_ns: int, names: list[str], position: np.ndarray, velocity: np.ndarray | None,
            effort: np.ndarray) -> bytes:
    """A JointState serialized by rosbags (not by the code under test)."""
    js, header, stamp = (TYPES.types[k] for k in (JOINT_STATE_TYPE, "std_msgs/msg/Header",
                                                    "builtin_interfaces/msg/Time"))
    msg = js(header=header(stamp=stamp(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9), frame_id=""),
             name=list(names), position=np.asarray(position, dtype=float),
             velocity=np.asarray([] if velocity is None else velocity, dtype=float),
             effort=np.asarray(effort, dtype=float))
    return bytes(TYPES.serialize_cdr(msg, JOINT_STATE_TYPE))


def sines(t: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A smooth multi-sine motion with analytic derivatives."""
    rng = np.random.default_rng(seed)
    amp = rng.uniform(0.15, 0.45, (3, n))
    freq = rng.uniform(0.15, 0.6, (3, n)) * 2 * np.pi
    phase = rng.uniform(0, 2 * np.pi, (3, n))
    arg = freq[None] * t[:, None, None] + phase[None]
    return ((amp * np.sin(arg)).sum(1), (amp * freq * np.cos(arg)).sum(1), (-amp * freq ** 2 * np.sin(arg)).sum(1))


@pytest.fixture(scope="module")
def panda() -> tuple[object, object, np.ndarray]:
    """The arm with the fingers locked open, its layout and a 'true' parameter vector (perturbed, with friction)."""
    model = load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS),
                       locked_at={f: FINGER_OPEN for f in FINGERS})
    layout = model.layout_for()
    truth = nominal_parameters(model, layout)
    rng = np.random.default_rng(7)
    for k in range(7):
        truth[layout.link_slice(k)] *= rng.uniform(0.85, 1.15)
    for j in range(7):
        truth[layout.joint_index(j, "fv")] = rng.uniform(0.05, 0.3)
        truth[layout.joint_index(j, "fc")] = rng.uniform(0.1, 0.5)
        truth[layout.joint_index(j, "fo")] = rng.uniform(-0.1, 0.1)
        truth[layout.joint_index(j, "Ia")] = rng.uniform(0.01, 0.1)
    return model, layout, truth


def two_publisher_bag(path: Path, panda: tuple, seed: int, seconds: float = 16.0,
                      hole: tuple[float, float] | None = (7.0, 7.5)) -> Path:
    """Arm (500 Hz, stamped, no velocity) + gripper (50 Hz, stamps 0) on /joint_states; ``hole``: seconds without
    arm messages (a dropped connection) while the arm keeps moving."""
    model, layout, truth = panda
    t = np.arange(0.0, seconds, 1.0 / ARM_HZ)
    if hole is not None:
        t = t[(t < hole[0]) | (t >= hole[1])]
    q, dq, ddq = sines(t, 7, seed)
    q = q + model.position_limits.mean(axis=1)
    tau = torques(model, layout, truth, q, dq, ddq)
    messages = []
    for k in range(t.size):
        receive = round((1.7e9 + t[k] + LATENCY_S) * 1e9)
        stamp = round((1.7e9 + t[k] + DRIVER_CLOCK_S) * 1e9)
        messages.append((receive, message(stamp, list(PANDA_ARM_JOINTS), q[k], None, tau[k])))
    for tg in np.arange(0.0, seconds, 1.0 / GRIPPER_HZ):
        receive = round((1.7e9 + tg + LATENCY_S) * 1e9)
        messages.append((receive, message(0, list(FINGERS), np.full(2, FINGER_OPEN), np.zeros(2), np.zeros(2))))
    messages.sort(key=lambda m: m[0])
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/joint_states", JOINT_STATE_TYPE, typestore=TYPES)
        for receive, data in messages:
            writer.write(connection, receive, data)
    return path


@pytest.fixture(scope="module")
def identified(panda, tmp_path_factory) -> dict:
    """`dynid identify` on the two-publisher bag (velocities differentiated), and a held-out bag."""
    tmp_path = tmp_path_factory.mktemp("two_publishers")
    train = two_publisher_bag(tmp_path / "train", panda, seed=1)
    test = two_publisher_bag(tmp_path / "test", panda, seed=2, hole=None)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"identification": {"processing": {"velocity_source": "differentiate"}}}))
    out = tmp_path / "result"
    code = main(["identify", "--urdf", str(example_robot_urdf(PANDA_ERD)), "--bag", str(train), "--config",
                 str(config), "--out", str(out)])
    return {"code": code, "train": train, "test": test, "out": out, "tmp": tmp_path}


def test_two_publishers_identify_the_arm_end_to_end(identified, capfd: pytest.CaptureFixture[str]):
    """The issue's "done when": `dynid identify` on the two-publisher bag, then `dynid validate` on another."""
    assert identified["code"] == 0
    series = read_joint_states(identified["train"])
    assert series.names == [*PANDA_ARM_JOINTS, *FINGERS] and np.isnan(series.velocity[:, :7]).all()
    out = identified["out"]
    report = json.loads((out / "report.json").read_text())
    assert "1 gap(s) in the stamps: 2 segments processed separately" in " ".join(report["warnings"])
    assert f"{', '.join(FINGERS)}, where the data hold them (at {FINGER_OPEN:.4g}, {FINGER_OPEN:.4g})" in " ".join(
        report["warnings"])  # locked where the data are, not at 0
    assert [s["used"] for s in report["segments"]] == [True, True]
    assert report["segments"][1]["start_s"] == pytest.approx(7.5, abs=1e-6)
    assert report["relative_error"] < 0.01, report["relative_error"]
    parameters = yaml.safe_load((out / "parameters.yaml").read_text())
    assert parameters["robot"]["locked_positions"] == {f: pytest.approx(FINGER_OPEN) for f in FINGERS}
    validation = identified["tmp"] / "validation.json"
    assert main(["validate", "--result", str(out), "--bag", str(identified["test"]), "--report",
                 str(validation)]) == 0
    held_out = json.loads(validation.read_text())["relative_error"]
    assert held_out < 0.01, held_out


def test_every_output_reproduces_the_validated_torques(identified, panda):
    """The held-out motion's torques from identified.urdf (pinocchio) plus the terms URDF cannot
    hold (parameters.yaml, named in urdf_omits), and from identified.xml (MuJoCo inverse dynamics plus the offset),
    against what `dynid validate` reports; the URDF alone is short of the armature and offset."""
    import mujoco
    import pinocchio as pin

    from dynid_ros.identification.options import IdentificationOptions
    from dynid_ros.reporting.validate import processed_window, validate

    out = identified["out"]
    report = json.loads((out / "report.json").read_text())
    assert set(report["urdf_omits"]) == set(PANDA_ARM_JOINTS)
    assert set(report["urdf_omits"]["panda_joint1"]) == {"armature", "offset"}
    parameters = yaml.safe_load((out / "parameters.yaml").read_text())
    joints = parameters["joints"]
    series = read_joint_states(identified["test"])
    validated = validate(out, series)
    model = load_model(urdf=out / "identified.urdf", joints=list(PANDA_ARM_JOINTS),
                       locked_at={f: FINGER_OPEN for f in FINGERS})
    data = processed_window(model, series, IdentificationOptions(), parameters["processing"])
    term = {t: np.array([joints[j][t] for j in PANDA_ARM_JOINTS]) for t in ("fv", "fc", "fo", "Ia")}
    friction = term["fv"] * data.dq + term["fc"] * np.sign(data.dq) + term["fo"]

    def error(tau_hat: np.ndarray) -> float:
        return float(np.linalg.norm(data.tau_raw - tau_hat) / np.linalg.norm(data.tau_raw))

    full = pin.buildModelFromUrdf(str(out / "identified.urdf"))
    q_full = pin.neutral(full)
    for f in FINGERS:
        q_full[full.joints[full.getJointId(f)].idx_q] = FINGER_OPEN
    arm = pin.buildReducedModel(full, [full.getJointId(f) for f in FINGERS], q_full)
    pin_data = arm.createData()
    rigid = np.array([pin.rnea(arm, pin_data, q, v, a) for q, v, a in zip(data.q, data.dq, data.ddq)])
    urdf_alone = error(rigid + term["fv"] * data.dq + term["fc"] * np.sign(data.dq))
    urdf_and_yaml = error(rigid + term["Ia"] * data.ddq + friction)

    mj = mujoco.MjModel.from_xml_string((out / "identified.xml").read_text())
    mj_data = mujoco.MjData(mj)
    qadr = [mj.jnt_qposadr[mj.joint(j).id] for j in PANDA_ARM_JOINTS]
    vadr = [mj.jnt_dofadr[mj.joint(j).id] for j in PANDA_ARM_JOINTS]
    # the MJCF holds the Coulomb friction as frictionloss, which mj_inverse treats as a soft constraint (not
    # fc sign(q')): its dry friction is compared by value, the rest by inverse dynamics
    np.testing.assert_allclose(mj.dof_frictionloss[vadr], term["fc"], rtol=1e-5)  # written to 6 digits
    mj.dof_frictionloss[vadr] = 0.0
    inverse = np.empty_like(data.q)
    for k in range(data.q.shape[0]):
        mj_data.qpos[qadr], mj_data.qvel[vadr], mj_data.qacc[vadr] = data.q[k], data.dq[k], data.ddq[k]
        mujoco.mj_inverse(mj, mj_data)
        inverse[k] = mj_data.qfrc_inverse[vadr]
    mjcf_and_offset = error(inverse + term["fc"] * np.sign(data.dq) + term["fo"])
    print(f"held-out relative error: validate {validated.relative_error:.5f}, URDF + YAML {urdf_and_yaml:.5f}, "
          f"MJCF + Coulomb + offset {mjcf_and_offset:.5f}, URDF alone {urdf_alone:.5f}")
    assert urdf_and_yaml == pytest.approx(validated.relative_error, rel=0.01, abs=1e-4)
    assert mjcf_and_offset == pytest.approx(validated.relative_error, rel=0.01, abs=1e-4)
    assert urdf_alone > 2 * validated.relative_error


def test_locked_joints_are_held_where_the_data_show_them(tmp_path: Path):
    """`--joints` without panda_joint4, which the data hold at -1.5 rad (not at 0)."""

    urdf = REPO / "urdf" / "panda.urdf"
    moving = [j for j in PANDA_ARM_JOINTS if j != "panda_joint4"]
    model = load_model(urdf=urdf, joints=moving, locked_at={"panda_joint4": -1.5})
    layout = model.layout_for()
    t = np.arange(0.0, 12.0, 2e-3)
    q, dq, ddq = sines(t, 6, seed=4)
    tau = torques(model, layout, nominal_parameters(model, layout), q, dq, ddq)
    every = np.insert(q, 3, -1.5, axis=1)  # the bag has every joint, panda_joint4 still at -1.5
    series = JointStateSeries(list(PANDA_ARM_JOINTS), t + 100.0, every, np.insert(dq, 3, 0.0, axis=1),
                              np.insert(tau, 3, 30.0, axis=1))
    result = identify(series, IdentificationOptions(joints=moving), urdf=urdf)
    assert result.model.locked_positions == {"panda_joint4": pytest.approx(-1.5)}
    assert result.relative_error < 0.01, result.relative_error


def test_identification_node_identifies_the_two_publisher_bag(identified, spinner, tmp_path: Path):
    """The "done when" through identification_node (real rclpy, in this process): the same result as the CLI."""
    from rclpy.node import Node
    from std_msgs.msg import String

    from dynid_ros.ros.identification_node import IdentificationNode

    from support.ros_helpers import Latest, call_trigger, params, status_qos, wait_for

    out = tmp_path / "node_result"
    spinner.add(IdentificationNode(context=spinner.context, parameter_overrides=params(
        urdf_path=str(example_robot_urdf(PANDA_ERD)), config_file=str(identified["tmp"] / "config.yaml"),
        bag_path=str(identified["train"]), output_dir=str(out))))
    helper = spinner.add(Node("helper", context=spinner.context))
    status = Latest(helper, String, "/identification_node/status", status_qos(), as_json=True)
    response = call_trigger(helper, "/identification_node/identify")
    assert response.success, response.message
    wait_for(lambda: status.last and status.last["state"] in ("done", "failed"), timeout=120, what="identification")
    assert status.last["state"] == "done", status.last["message"]
    node, cli = (json.loads((d / "report.json").read_text()) for d in (out, identified["out"]))
    assert node["relative_error"] == pytest.approx(cli["relative_error"], rel=1e-6)
    assert node["segments"] == cli["segments"] and node["urdf_omits"] == cli["urdf_omits"]
