import numpy as np
import pinocchio as pin
import pytest

from dynid_ros.dynamics import regressor_kernel
from dynid_ros.dynamics.regressor import BACKEND_VARIABLE, regressor, regressor_3d, regressor_chunks, torques
from dynid_ros.robot.model import load_model

from support.panda_streams import URDF
from support.robots import DATA, PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf


def _states(model, n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2, 2, (n, model.n_dof)), rng.normal(size=(n, model.n_dof)),
            rng.normal(size=(n, model.n_dof)))


@pytest.mark.parametrize("source", [("urdf", PANDA_ERD), ("urdf", UR5_ERD), ("dh", "kr5_dh.yaml"),
                                    ("dh", "prismatic_dh.yaml")])
def test_regressor_equals_pinocchio(source):
    kind, name = source
    model = load_model(urdf=example_robot_urdf(name)) if kind == "urdf" else load_model(dh=DATA / name)
    layout = model.layout_for(friction=(), armature=False)
    q, dq, ddq = _states(model, 6)
    y = regressor_3d(model, layout, q, dq, ddq)
    data = model.pin_model.createData()
    for s in range(len(q)):
        expected = pin.computeJointTorqueRegressor(model.pin_model, data, model.configuration(q[s]), dq[s], ddq[s])
        np.testing.assert_allclose(y[s], expected, atol=1e-10)


def test_regressor_times_parameters_is_rnea_plus_friction_and_armature():
    model = load_model(urdf=example_robot_urdf(UR5_ERD))
    layout = model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    rng = np.random.default_rng(3)
    delta = np.concatenate([model.pin_model.inertias[k + 1].toDynamicParameters() for k in range(6)]
                           + [rng.uniform(0.1, 1.0, 4 * 6)])
    q, dq, ddq = _states(model, 4, seed=3)
    tau = torques(model, layout, delta, q, dq, ddq)
    data = model.pin_model.createData()
    for s in range(4):
        expected = pin.rnea(model.pin_model, data, q[s], dq[s], ddq[s]).copy()
        for j in range(6):
            fv, fc, fo, ia = (delta[layout.joint_index(j, t)] for t in ("fv", "fc", "fo", "Ia"))
            expected[j] += fv * dq[s, j] + fc * np.sign(dq[s, j]) + fo + ia * ddq[s, j]
        np.testing.assert_allclose(tau[s], expected, atol=1e-10)
    assert regressor(model, layout, q, dq, ddq).shape == (4 * 6, layout.n_parameters)


UR10_ERD = "ur_description/urdf/ur10_robot.urdf"
Z1_ERD = "z1_description/urdf/z1.urdf"
SO100_ERD = "so_arm_description/urdf/so100.urdf"
SO100_ARM = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll"]
EVERY_ROBOT = [
    pytest.param(lambda: load_model(urdf=example_robot_urdf(PANDA_ERD)), id="panda"),
    pytest.param(lambda: load_model(urdf=example_robot_urdf(PANDA_ERD), joints=[*PANDA_ARM_JOINTS,
                                                                            "panda_finger_joint1"]),
                 id="panda-mimic-finger"),
    pytest.param(lambda: load_model(urdf=example_robot_urdf(UR5_ERD)), id="ur5"),
    pytest.param(lambda: load_model(urdf=example_robot_urdf(UR10_ERD)), id="ur10"),
    pytest.param(lambda: load_model(urdf=example_robot_urdf(Z1_ERD)), id="z1"),
    pytest.param(lambda: load_model(urdf=example_robot_urdf(SO100_ERD), joints=SO100_ARM), id="so100"),
    *(pytest.param(lambda name=name: load_model(dh=DATA / name), id=name)
      for name in ("kr5_dh.yaml", "prismatic_dh.yaml", "wam7_dh.yaml", "panda_mdh.yaml")),
]


def _random_inertias(pm: pin.Model, rng: np.random.Generator) -> np.ndarray:
    """Give every body of ``pm`` a random physical inertia; their stacked dynamic parameters."""
    for j in range(1, pm.njoints):
        root = rng.normal(0.0, 0.1, (3, 3))
        pm.inertias[j] = pin.Inertia(rng.uniform(0.5, 3.0), rng.normal(0.0, 0.1, 3), root @ root.T + 0.01 * np.eye(3))
    return np.concatenate([pm.inertias[j].toDynamicParameters() for j in range(1, pm.njoints)])


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("make_model", EVERY_ROBOT)
def test_both_backends_are_pinocchio_rnea_plus_friction_and_armature(make_model, backend, monkeypatch):
    """Every robot of the tests, random inertias and states: ``Y delta`` is pinocchio's RNEA (mimic joints
    included) plus viscous/Coulomb/offset friction and armature, with the compiled kernel and the NumPy path."""
    monkeypatch.setenv(BACKEND_VARIABLE, backend)
    model = make_model()
    if backend == "numba":
        assert regressor_kernel.AVAILABLE  # numba is a dependency: the fast path must be the one tested
    layout = model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    rng = np.random.default_rng(7)
    pm = model.pin_model.copy()
    delta = np.concatenate([_random_inertias(pm, rng), rng.uniform(0.1, 1.0, len(layout.joint_terms) * model.n_dof)])
    q, dq, ddq = _states(model, 8, seed=5)
    tau = torques(model, layout, delta, q, dq, ddq)
    data = pm.createData()
    for s in range(len(q)):
        expected = pin.rnea(pm, data, model.configuration(q[s]), dq[s], ddq[s]).copy()
        for j in range(model.n_dof):
            fv, fc, fo, ia = (delta[layout.joint_index(j, t)] for t in ("fv", "fc", "fo", "Ia"))
            expected[j] += fv * dq[s, j] + fc * np.sign(dq[s, j]) + fo + ia * ddq[s, j]
        np.testing.assert_allclose(tau[s], expected, rtol=1e-10, atol=1e-9)
    if model.coupling is None:  # and column by column: pinocchio's own regressor
        y = regressor_3d(model, model.layout_for(friction=(), armature=False), q, dq, ddq)
        for s in range(len(q)):
            expected = pin.computeJointTorqueRegressor(pm, data, model.configuration(q[s]), dq[s], ddq[s])
            np.testing.assert_allclose(y[s], expected, atol=1e-10)


def test_regressor_chunks_are_the_regressor() -> None:
    model = load_model(urdf=URDF)
    layout = model.layout_for()
    rng = np.random.default_rng(0)
    q, dq, ddq = (rng.normal(size=(3000, 7)) for _ in range(3))
    chunks = regressor_chunks(model, layout, q, dq, ddq, np.array([0, 5, 70]))
    assert len(list(chunks.chunks())) > 1
    whole = torques(model, layout, np.eye(layout.n_parameters)[:, [0, 5, 70]].sum(axis=1), q, dq, ddq)
    np.testing.assert_allclose((chunks @ np.ones(3)).reshape(-1, 7), whole, rtol=1e-12, atol=1e-12)
