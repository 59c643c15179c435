"""Identify a payload into its own result directory: a 1 kg tool 0.15 m out on the last link of a three-joint arm,
from the unloaded arm's result and a loaded run (bags written with rosbags); ``payload.yaml`` read back by a YAML
reader, ``payload_inertial.xml`` by pinocchio inside a URDF; the output checked like every other."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml

from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.data.output_paths import MARKER, PAYLOAD
from dynid_ros.errors import ConfigError
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.workflow.identify_run import RunInputs, identify_into
from dynid_ros.workflow.payload_run import PayloadInputs, identify_payload_into

from support.arm_runs import RICH, arm_run
from support.user_files import tree_digest, user_directory

MASS, COM = 1.0, np.array([0.15, 0.0, 0.0])
TOOL = f"""  <link name="tool"><inertial><origin xyz="0 0 0"/><mass value="{MASS}"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <joint name="tool_mount" type="fixed"><parent link="l3"/><child link="tool"/><origin xyz="0.15 0 0"/></joint>
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The unloaded arm's result directory and a bag of the same arm carrying the tool (a second seed of noise)."""
    root = tmp_path_factory.mktemp("payload")
    (root / "unloaded").mkdir()
    unloaded = arm_run(root / "unloaded", amplitude=RICH)
    bag = write_joint_states(root / "unloaded_bag", unloaded.series)
    reference = root / "reference"
    identify_into(reference, RunInputs(bag=bag, urdf=unloaded.urdf),
                  options=IdentificationOptions(friction=("viscous", "coulomb", "offset"), prior="nominal"))
    (root / "loaded").mkdir()
    loaded = arm_run(root / "loaded", amplitude=RICH, extra=TOOL, seed=1)
    return root, reference, write_joint_states(root / "loaded_bag", loaded.series)


def test_the_tool_is_found_by_both_solvers_and_written(runs):
    root, reference, bag = runs
    out = root / "tool"
    result, lines = identify_payload_into(out, PayloadInputs(bag=bag, reference=reference, link="l3"))
    for fit in (result.lmi, result.manifold):
        assert fit.mass == pytest.approx(MASS, rel=0.05), fit
        np.testing.assert_allclose(fit.com, COM, atol=0.01)
    assert lines[-1] == f"wrote {out}/" and lines[0].startswith(f"{result.lmi.solver}: mass ")
    assert "l3's frame" in lines[0] and len(lines) == 3
    assert (out / MARKER).read_text().strip() == PAYLOAD
    content = yaml.safe_load((out / "payload.yaml").read_text())
    assert content["link"] == "l3" and content["n_samples"] == result.n_samples
    assert content["payload"]["mass"] == pytest.approx(result.lmi.mass)
    inertial = ET.fromstring((out / "payload_inertial.xml").read_text().split("-->", 1)[1])
    assert float(inertial.find("mass").get("value")) == pytest.approx(result.lmi.mass, rel=1e-9)
    urdf = ('<robot name="r"><link name="base"/><link name="payload">' + ET.tostring(inertial, encoding="unicode")
            + '</link><joint name="j" type="revolute"><parent link="base"/><child link="payload"/>'
            '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    import pinocchio as pin

    body = pin.buildModelFromXML(urdf).inertias[1]  # the written <inertial> as a URDF reader sees it
    assert body.mass == pytest.approx(result.lmi.mass, rel=1e-9)
    np.testing.assert_allclose(body.lever, result.lmi.com, rtol=1e-8, atol=1e-12)


def test_a_window_of_the_loaded_run(runs):
    root, reference, bag = runs
    result, _ = identify_payload_into(root / "window", PayloadInputs(bag=bag, reference=reference, link="l3",
                                                                     start=1.0, end=7.0))
    full, _ = identify_payload_into(root / "full", PayloadInputs(bag=bag, reference=reference, link="l3"))
    assert result.n_samples < full.n_samples
    assert result.lmi.mass == pytest.approx(MASS, rel=0.1)


def test_the_output_is_checked_first(runs):
    root, reference, bag = runs
    mine = user_directory(root / "mine")
    before = tree_digest(mine)
    with pytest.raises(ConfigError, match="refusing to touch it"):
        identify_payload_into(mine, PayloadInputs(bag=bag, reference=reference, link="l3"))
    assert tree_digest(mine) == before
    with pytest.raises(ConfigError, match="would replace the input"):
        identify_payload_into(reference, PayloadInputs(bag=bag, reference=reference, link="l3"))
