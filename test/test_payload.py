"""Payload identification (Traversaro et al. 2016): a 1.5 kg body with an offset CoM on the last link of a
simulated arm (MuJoCo truth), from the unloaded robot's result and a loaded run, by both solvers."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.dynamics.feasibility import link_matrix
from dynid_ros.estimation.payload import fit_body_lmi, fit_body_manifold
from dynid_ros.robot.parameters import link_parameters
from dynid_ros.sim import GroundTruth, Simulator, simulate_profile

ARM = """<?xml version="1.0"?>
<robot name="four_joint_arm">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="0 0.01 0.1"/><mass value="3.0"/>
    <inertia ixx="0.03" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.01"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0.15 0 0.01"/><mass value="2.0"/>
    <inertia ixx="0.005" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial></link>
  <link name="l3"><inertial><origin xyz="0.05 0.01 0"/><mass value="0.8"/>
    <inertia ixx="0.002" ixy="0" ixz="0.0003" iyy="0.004" iyz="0" izz="0.004"/></inertial></link>
  <link name="l4"><inertial><origin xyz="0.0 0.02 0.06"/><mass value="0.6"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0.0002" izz="0.001"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-2.5" upper="2.5" effort="80" velocity="2.5"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.2" rpy="1.5707963267948966 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-2.5" upper="2.5" effort="80" velocity="2.5"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-2.5" upper="2.5" effort="40" velocity="3"/></joint>
  <joint name="j4" type="revolute"><parent link="l3"/><child link="l4"/>
    <origin xyz="0.1 0 0" rpy="0 1.5707963267948966 0"/>
    <axis xyz="0 0 1"/><limit lower="-2.5" upper="2.5" effort="40" velocity="3"/></joint>
PAYLOAD</robot>
"""
JOINTS = ("j1", "j2", "j3", "j4")
MASS, COM = 1.5, np.array([0.03, -0.02, 0.08])
INERTIA = np.array([[0.004, 0.0005, 0.0], [0.0005, 0.005, 0.0], [0.0, 0.0, 0.002]])
PAYLOAD = f"""  <link name="payload"><inertial><origin xyz="{COM[0]} {COM[1]} {COM[2]}"/><mass value="{MASS}"/>
    <inertia ixx="{INERTIA[0, 0]}" ixy="{INERTIA[0, 1]}" ixz="0" iyy="{INERTIA[1, 1]}" iyz="0" izz="{INERTIA[2, 2]}"/>
    </inertial></link>
  <joint name="payload_mount" type="fixed"><parent link="l4"/><child link="payload"/></joint>
"""
TRUTH = GroundTruth(damping=0.1, friction=(0.4, 0.4, 0.15, 0.15), armature=(0.05, 0.05, 0.01, 0.01), noise=0.02,
                    seed=3)


def reference(duration: float = 10.0, seed: int = 0) -> tuple[np.ndarray, ...]:
    """A 0.2 Hz, 4-harmonic Fourier motion of the four joints at 1 kHz."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, duration, 1e-3)
    wl = 2 * np.pi * 0.2 * np.arange(1, 5)
    a, b = rng.normal(0.0, 0.3, (2, 4, 4))
    s, c = np.sin(np.outer(t, wl)), np.cos(np.outer(t, wl))
    return t, s @ a.T + c @ b.T, (c * wl) @ a.T - (s * wl) @ b.T, -(s * wl ** 2) @ a.T - (c * wl ** 2) @ b.T


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    """The arm's URDF, an unloaded run and a loaded run (same trajectory) as bags."""
    root = tmp_path_factory.mktemp("payload")
    urdf, loaded = root / "arm.urdf", root / "arm_loaded.urdf"
    urdf.write_text(ARM.replace("PAYLOAD", ""))
    loaded.write_text(ARM.replace("PAYLOAD", PAYLOAD))
    profile = reference()
    for name, path in (("unloaded", urdf), ("loaded", loaded)):
        series = simulate_profile(Simulator(path, TRUTH, joints=JOINTS), *profile, progress=False)
        write_joint_states(root / name, series)
    return root, urdf


def test_payload_recovered_by_both_solvers(bags, capsys):
    """1.5 kg with the CoM 9 cm off the joint axis: mass within 2 %, CoM within 5 mm, by both solvers."""
    root, urdf = bags
    reference_dir, out = root / "reference", root / "payload_result"
    assert main(["identify", "--urdf", str(urdf), "--bag", str(root / "unloaded"), "--friction", "viscous,coulomb",
                 "--out", str(reference_dir)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["identify", "--payload-link", "l4", "--reference", str(reference_dir), "--bag", str(root / "loaded"),
                 "--out", str(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "lmi (clarabel): mass" in printed and "manifold (m, c, Q, L): mass" in printed
    found = yaml.safe_load((out / "payload.yaml").read_text())
    for fit in (found["payload"], found["manifold"]):
        assert abs(fit["mass"] - MASS) <= 0.02 * MASS, fit
        assert np.linalg.norm(np.array(fit["com"]) - COM) <= 0.005, fit
        assert fit["min_pseudo_inertia_eigenvalue"] >= -1e-9
    assert '<mass value="' in (out / "payload_inertial.xml").read_text()


def test_payload_bad_input(bags, capsys):
    root, urdf = bags
    assert main(["identify", "--payload-link", "l4", "--bag", str(root / "loaded"), "--out",
                 str(root / "x")]) == 2
    assert "--payload-link and --reference go together" in capsys.readouterr().err
    reference_dir = root / "reference_bad_link"
    assert main(["identify", "--urdf", str(urdf), "--bag", str(root / "unloaded"), "--friction", "viscous,coulomb",
                 "--out", str(reference_dir)]) == 0
    capsys.readouterr()
    assert main(["identify", "--payload-link", "tool0", "--reference", str(reference_dir), "--bag",
                 str(root / "loaded"), "--out", str(root / "y")]) == 2
    err = capsys.readouterr().err
    assert "--payload-link tool0: not an identified link" in err and "l4" in err
    assert not (root / "y").exists()
    assert main(["identify", "--bag", str(root / "loaded"), "--out", str(root / "z")]) == 2
    assert "give the robot: --urdf or --dh" in capsys.readouterr().err


def test_manifold_iterates_stay_physical_from_a_flat_start():
    """A thin rod (second moments 0, L, L): the manifold solution is a body; the LMI's pseudo-inertia is PSD."""
    rng = np.random.default_rng(1)
    rod = link_parameters(0.4, np.array([0.1, 0.0, 0.02]), np.diag([1e-7, 2e-3, 2e-3]))
    w = rng.normal(size=(2000, 10)) * np.array([10, 30, 30, 30, 5, 5, 5, 5, 5, 5])
    tau = w @ rod + rng.normal(0.0, 0.05, 2000)
    for fit in (fit_body_lmi(w, tau), fit_body_manifold(w, tau, start=np.r_[1.0, np.zeros(9)])):
        assert abs(fit.mass - 0.4) < 0.004 and np.linalg.norm(fit.com - [0.1, 0.0, 0.02]) < 1e-3
        assert np.linalg.eigvalsh(link_matrix(fit.parameters, "full"))[0] >= -1e-9
