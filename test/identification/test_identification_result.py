"""What an identification found: the identified link masses are the parameter vector's, by link name in the
layout's order; each says what the link carries (a hand, fingers), and the report labels the body's mass and the
link's alone."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from dynid_ros.identification.identify import identify_bag
from dynid_ros.identification.linear_identification import identify_linear
from dynid_ros.identification.options import IdentificationOptions, identification_options
from dynid_ros.identification.timing import StageTimer
from dynid_ros.reporting.result_directory import write_result

from support.arm_runs import RICH, arm_run
from support.serial_arms import FLEET_LINKS, serial_arm
from support.sim_bags import LIMITS, simulate_bag


def test_link_masses_are_the_parameter_vectors(tmp_path):
    run = arm_run(tmp_path, amplitude=RICH)
    result = identify_linear(run.series, IdentificationOptions(method="ols"), run.model, StageTimer())
    masses = result.link_masses()
    assert list(masses) == ["l1", "l2", "l3"]
    assert masses == {link: result.delta[10 * k] for k, link in enumerate(result.layout.links)}
    assert all(isinstance(m, float) for m in masses.values())
    assert result.recording_start_s is None  # identify_linear does not know the recording (identify sets it)
    np.testing.assert_allclose(result.fit.residual, result.fit.tau - result.fit.tau_hat)


@pytest.mark.parametrize("parts", [
    pytest.param({}, id="nothing-attached"),
    pytest.param({"hand": 0.6}, id="hand"),
    pytest.param({"hand": 0.6, "finger": 0.05, "tool0": 0.0}, id="hand-fingers-massless-frame"),
])
def test_each_link_mass_says_what_it_carries_and_the_report_labels_both(tmp_path, parts):
    """Parts fixed to the last link (a hand, its fingers, a massless tool frame): the body's mass (the parameter
    vector, report.json link_masses, parameters.yaml) is the link's plus theirs, the link-realism table's is the
    link alone; report.json and the readable report say which is which and what each link carries."""
    urdf = tmp_path / "arm.urdf"
    fixed = "".join(_fixed_part(name, mass, parent="hand" if name == "finger" else "l3")
                    for name, mass in parts.items())
    urdf.write_text(serial_arm("arm", FLEET_LINKS, LIMITS, fixed))
    bag = simulate_bag(tmp_path / "bag", urdf, seed=4, duration=3.0)
    result = identify_bag(bag, identification_options({}), urdf=urdf)
    bodies = result.link_bodies()
    carried = sum(parts.values())
    assert bodies["l3"]["carries"] == [name for name, mass in parts.items() if mass > 0]
    assert bodies["l3"]["attached_mass"] == pytest.approx(carried, abs=1e-12)
    for k, link in enumerate(result.layout.links):
        body = bodies[link]
        assert body["mass"] == result.link_masses()[link]
        assert body["mass"] - body["attached_mass"] - body["load_mass"] == pytest.approx(body["link_alone_mass"])
        assert result.realism[k]["mass"] == pytest.approx(body["link_alone_mass"], rel=1e-9)
    out = tmp_path / "result"
    write_result(result, out)
    report = json.loads((out / "report.json").read_text())
    assert set(report["mass_definitions"]) == {"link_masses", "link_realism"}
    assert report["link_bodies"]["l3"]["carries"] == bodies["l3"]["carries"]
    assert yaml.safe_load((out / "parameters.yaml").read_text())["links"]["l3"]["mass"] == pytest.approx(
        report["link_masses"]["l3"])
    html = (out / "report.html").read_text()
    assert "Link masses" in html and "the link alone" in html
    assert ("They differ on l3" in html) == bool(carried) and all(name in html for name in bodies["l3"]["carries"])


def _fixed_part(name: str, mass: float, parent: str) -> str:
    inertial = (f'<inertial><origin xyz="0.02 0 0"/><mass value="{mass}"/><inertia ixx="1e-3" ixy="0" ixz="0" '
                'iyy="1e-3" iyz="0" izz="1e-3"/></inertial>') if mass > 0 else ""
    return (f'  <link name="{name}">{inertial}</link>\n  <joint name="{name}_mount" type="fixed"><parent '
            f'link="{parent}"/><child link="{name}"/><origin xyz="0.1 0 0"/></joint>\n')
