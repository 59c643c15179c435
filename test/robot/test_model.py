import numpy as np
import pinocchio as pin
import pytest

from dynid_ros.errors import ConfigError, ModelError
from dynid_ros.robot.model import load_model, nominal_parameters

from support.robots import DATA, PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf


def test_urdf_selects_joints_and_locks_the_rest(caplog):
    model = load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS))
    assert model.joints == PANDA_ARM_JOINTS
    assert model.links[0] == "panda_link1" and model.links[6] == "panda_link7"
    assert set(model.locked) == {"panda_finger_joint1", "panda_finger_joint2"}
    assert "locked" in caplog.text
    assert np.all(model.position_limits[:, 1] > model.position_limits[:, 0])
    assert np.all(np.isfinite(model.velocity_limits))


def test_default_selection_uses_joints_present_in_data():
    model = load_model(urdf=example_robot_urdf(UR5_ERD), available=["elbow_joint", "shoulder_lift_joint", "x"])
    assert model.joints == ("shoulder_lift_joint", "elbow_joint")


def test_nominal_parameters_match_pinocchio_inertias():
    model = load_model(urdf=example_robot_urdf(UR5_ERD))
    layout = model.layout_for()
    delta = nominal_parameters(model, layout)
    assert delta[0] == pytest.approx(model.pin_model.inertias[1].mass)
    assert layout.n_parameters == 6 * 10 + 6 * 4


def test_bad_descriptions_are_one_line_errors(tmp_path):
    with pytest.raises(ModelError, match="no such URDF"):
        load_model(urdf=tmp_path / "missing.urdf")
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link name='a'/><joint name='j' type='revolute'><parent link='a'/>"
                   "<child link='nope'/></joint></robot>")
    with pytest.raises(ModelError, match="bad.urdf"):
        load_model(urdf=bad)
    with pytest.raises(ModelError, match="not movable joints"):
        load_model(urdf=example_robot_urdf(UR5_ERD), joints=["elbow_joint", "no_such_joint"])
    with pytest.raises(ConfigError):
        load_model()
    dh = tmp_path / "dh.yaml"
    dh.write_text("convention: weird\njoints: [{type: revolute}]\n")
    with pytest.raises(ModelError, match="convention"):
        load_model(dh=dh)


def test_xacro_is_expanded(tmp_path):
    source = example_robot_urdf(UR5_ERD).read_text()
    text = source if "xmlns:xacro" in source else source.replace(
        "<robot ", '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" ', 1)
    text = text.replace("</robot>", '<xacro:property name="tip" value="extra_tip"/><link name="${tip}"/>'
                        '<joint name="tip_joint" type="fixed"><parent link="wrist_3_link"/><child link="${tip}"/>'
                        '</joint></robot>')
    path = tmp_path / "ur5.urdf.xacro"
    path.write_text(text)
    model = load_model(urdf=path)
    assert model.n_dof == 6
    assert "extra_tip" in model.urdf_xml


def test_dh_modified_matches_panda_urdf_kinematics():
    """Modified DH of Gaz et al. 2019 (Fig. 1) vs the Panda URDF: same flange positions."""
    urdf = load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS))
    dh = load_model(dh=DATA / "panda_mdh.yaml")
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.uniform(-1.5, 1.5, 7)
        d1, d2 = urdf.pin_model.createData(), dh.pin_model.createData()
        pin.forwardKinematics(urdf.pin_model, d1, q)
        pin.forwardKinematics(dh.pin_model, d2, q)
        for k in (3, 5, 7):  # joint frame origins along the chain
            assert np.allclose(d1.oMi[k].translation, d2.oMi[k].translation, atol=1e-9)
