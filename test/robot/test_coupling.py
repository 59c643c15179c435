"""A URDF arm with a coupled wrist recorded in motor coordinates (``coupling:`` config): regressor, MuJoCo truth,
identification with and without the coupling, the coupled-joints diagnostic, the CLI round trip."""

from __future__ import annotations

import json
import re

import numpy as np
import pinocchio as pin
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import ProcessingOptions, process
from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.dynamics.regressor import regressor_3d
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.fit_quality import relative_error
from dynid_ros.identification.identify import identify
from dynid_ros.identification.options import identification_options
from dynid_ros.robot.coupling import apply_coupling, coupling_from_config
from dynid_ros.robot.model import load_model, nominal_parameters

from support.coupled_arm import (
    ARM,
    COUPLING,
    FRICTION,
    JOINTS,
    NOMINAL_ARM,
    PROCESSING,
    SECTION,
    TRUTH,
    coupled_runs,
    in_joint_coordinates,
)


@pytest.fixture(scope="module")
def runs() -> tuple[JointStateSeries, JointStateSeries]:
    """Identification (10 s) and held-out (6 s) runs of the MuJoCo truth, in motor coordinates."""
    return coupled_runs()


def held_out(model, layout, delta: np.ndarray, series: JointStateSeries, gains: list[float] | None = None
             ) -> tuple[float, list[float]]:
    """The error of the effort predicted (the torque divided by the effort gains the result used, if any) against
    the recorded effort."""
    data = process(series.select(list(model.joints)), ProcessingOptions(**PROCESSING))
    torque = regressor_3d(model, layout, data.q, data.dq, data.ddq) @ delta
    return relative_error(data.tau_raw, torque / (1.0 if gains is None else np.asarray(gains)))


def test_motor_regressor_is_the_projected_joint_dynamics():
    """tau_m = C^T RNEA(C q_m, C q_m', C q_m'') + Ia q_m'' + fv q_m' + fc sign(q_m'): motor-side terms."""
    model = apply_coupling(load_model(urdf_text=ARM, joints=JOINTS), COUPLING)
    assert model.joints == ("m1", "m2", "m3", "m4") and model.description_joints == tuple(JOINTS)
    layout = model.layout_for(FRICTION, armature=True)
    delta = nominal_parameters(model, layout)
    terms = {"fv": [0.3, 0.2, 0.05, 0.04], "fc": [0.5, 0.4, 0.15, 0.1], "Ia": [0.05, 0.04, 0.01, 0.02]}
    for symbol, values in terms.items():
        delta[layout.indices(symbol)] = values
    rng = np.random.default_rng(3)
    q, dq, ddq = rng.normal(0.0, 1.0, (3, 5, 4))
    pm = pin.buildModelFromXML(ARM)
    data = pm.createData()
    c = COUPLING.matrix
    for k in range(5):
        tau_j = pin.rnea(pm, data, c @ q[k], c @ dq[k], c @ ddq[k])
        expected = c.T @ tau_j + np.multiply(terms["Ia"], ddq[k]) + np.multiply(terms["fv"], dq[k]) \
            + np.multiply(terms["fc"], np.sign(dq[k]))
        np.testing.assert_allclose(regressor_3d(model, layout, q[k], dq[k], ddq[k])[0] @ delta, expected, atol=1e-10)
    # the coupling adds no base parameter (it is invertible) but keeps every motor's own friction and rotor inertia
    assert compute_base_parameters(model, layout).n_base == \
        compute_base_parameters(load_model(urdf_text=ARM, joints=JOINTS), layout).n_base


def test_coupled_wrist_identified_in_motor_coordinates(runs):
    """URDF + coupling: held-out error within 1.1x the truth model's; the same data without the coupling (joint
    coordinates, friction and rotor inertia on the joint side) is worse, and the warning names j3 and j4."""
    train, test = runs
    options = identification_options({"friction": FRICTION, "processing": PROCESSING})
    model = apply_coupling(load_model(urdf_text=NOMINAL_ARM, joints=JOINTS), COUPLING)
    result = identify(train, options, model=model)
    assert result.feasible and not [w for w in result.warnings if "look coupled" in w]
    truth_model = apply_coupling(load_model(urdf_text=ARM, joints=JOINTS), COUPLING)
    truth = nominal_parameters(truth_model, result.layout)
    for symbol, values in (("fv", TRUTH.damping), ("fc", TRUTH.coulomb), ("Ia", TRUTH.rotor_inertia)):
        truth[result.layout.indices(symbol)] = values
    truth_error, _ = held_out(truth_model, result.layout, truth, test)
    error, _ = held_out(model, result.layout, result.delta, test, result.options.effort_scale)
    assert error <= 1.1 * truth_error, (error, truth_error)
    np.testing.assert_allclose(result.delta[result.layout.indices("Ia")], TRUTH.rotor_inertia, rtol=0.15)

    plain = load_model(urdf_text=NOMINAL_ARM, joints=JOINTS)
    uncoupled = identify(in_joint_coordinates(train), options, model=plain)
    joint_error, per_joint = held_out(plain, uncoupled.layout, uncoupled.delta, in_joint_coordinates(test),
                                     uncoupled.options.effort_scale)
    assert joint_error > 2 * error and min(per_joint[2:]) > 3 * max(per_joint[:2])  # the wrist, not the arm
    coupled = [w for w in uncoupled.warnings if "look coupled" in w]
    assert len(coupled) == 1 and "joints j3 and j4 look coupled" in coupled[0]
    # Model error, not information: the coupled joints' data count less
    assert [w.split(":")[0] for w in uncoupled.warnings if "its data count" in w] == ["joint j3", "joint j4"]


@pytest.mark.parametrize(("change", "message"), [
    ({"matrix": [[1, 0], [0, 1]]}, "coupling.matrix must be finite numbers of shape (4, 4)"),
    ({"matrix": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]}, "singular"),
    ({"gear_ratios": [1, 1, 0, 2]}, "gear_ratios must be non-zero"),
    ({"joints": ["j1", "j2", "j3"]}, "4 motors but 3 joints"),
    ({"motors": ["m1", "m1", "m3", "m4"]}, "repeated names"),
    ({"ratio": 2}, "unknown key(s) ['ratio']"),
])
def test_bad_coupling_config(change, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        coupling_from_config({"coupling": {**SECTION, **change}}, "robot.yaml")


def test_identify_and_validate_with_coupling_config(runs, tmp_path, capsys):
    """``dynid identify --urdf --config (coupling:) --bag`` in motor coordinates, then ``dynid validate``."""
    train, test = runs
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(NOMINAL_ARM)
    config = tmp_path / "arm.yaml"
    config.write_text(yaml.safe_dump({"coupling": SECTION, "identification": {
        "friction": FRICTION, "processing": PROCESSING}}))
    for name, series in (("train", train), ("test", test)):
        write_joint_states(tmp_path / name, series)
    out = tmp_path / "result"
    assert main(["identify", "--urdf", str(urdf), "--config", str(config), "--bag", str(tmp_path / "train"),
                 "--out", str(out)]) == 0, capsys.readouterr().err
    assert "feasible True" in capsys.readouterr().out
    recorded = yaml.safe_load((out / "parameters.yaml").read_text())["robot"]
    assert recorded["joints"] == ["m1", "m2", "m3", "m4"] and recorded["coupling"]["joints"] == JOINTS
    np.testing.assert_allclose(recorded["coupling"]["matrix"], COUPLING.matrix)
    report = tmp_path / "validation.json"
    assert main(["validate", "--result", str(out), "--bag", str(tmp_path / "test"), "--report", str(report)]) == 0
    assert json.loads(report.read_text())["relative_error"] < 0.03
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump({"identification": {"friction": FRICTION}}))
    assert main(["identify", "--urdf", str(urdf), "--config", str(plain), "--bag", str(tmp_path / "train"),
                 "--out", str(tmp_path / "plain")]) == 2
    assert "none of the robot's joints" in capsys.readouterr().err  # motor names are not URDF joints
