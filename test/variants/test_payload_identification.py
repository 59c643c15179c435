"""Payload identification (Traversaro et al. 2016): a 1.5 kg body with an offset CoM on the last link of a
simulated arm (MuJoCo truth), from the unloaded robot's result and a loaded run, by both solvers."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.sim import Simulator, simulate_profile

from support.payload_arm import ARM, COM, JOINTS, MASS, PAYLOAD, TRUTH, reference


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


AUTO_GAINS = ("open (issue 28): cutoff_hz auto picks 57.6 Hz on the unloaded run and the decimation follows it (461 "
              "Hz); the effort-gain test then keeps gains of 0.96-1.02 that absorb the simulator's model error (the "
              "likelihood ratio 20.7 against its margin 13.3; 11.8 at 200 Hz), the payload inherits them: 1.535 kg")


CHECKED_GAINS = ("open (issue 28): the default, cutoff_hz checked, moves to auto's 57.6 Hz on the unloaded run (better "
                 "in all 4 blocks, t = 3.4; so since checked became the default, b44f17c, whichever guard), and the "
                 "gains kept there give the payload 1.535 kg, as with auto")


@pytest.mark.parametrize("cutoff", [pytest.param("checked", marks=pytest.mark.xfail(strict=True, reason=CHECKED_GAINS)),
                                    "bandwidth", pytest.param("auto", marks=pytest.mark.xfail(strict=True,
                                                                                               reason=AUTO_GAINS))])
def test_payload_recovered_by_both_solvers(bags, capsys, tmp_path, cutoff):
    """1.5 kg with the CoM 9 cm off the joint axis: mass within 2 %, CoM within 5 mm, by both solvers, with the
    reference identified at the default cutoff (``checked``), at the bandwidth rule's and at ``cutoff_hz: auto``."""
    root, urdf = bags
    reference_dir, out = tmp_path / "reference", tmp_path / "payload_result"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"identification": {"processing": {"cutoff_hz": cutoff}}}))
    assert main(["identify", "--urdf", str(urdf), "--bag", str(root / "unloaded"), "--friction", "viscous,coulomb",
                 "--config", str(config), "--out", str(reference_dir)]) == 0, capsys.readouterr().err
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
