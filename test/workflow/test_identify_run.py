"""Identify into a result directory, the one entry of ``dynid identify``, the identification node, ``dynid batch``
and the demo: each mode from its inputs (a bag, ``|tau|`` with ``abs_effort``, M(q)/g(q) samples), the config's
options under the explicit ones, the provenance of the inputs, the output checked before any work, bad input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.inertia_stack import MassMatrixSamples
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.workflow.identify_run import IdentificationRun, Mode, RunInputs, identify_into

from support.arm_runs import RICH, arm_run
from support.user_files import tree_digest, user_directory


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """The arm's run as a bag, its URDF and a config whose identification section asks for OLS."""
    directory = tmp_path_factory.mktemp("arm")
    run = arm_run(directory, amplitude=RICH)
    bag = write_joint_states(directory / "bag", run.series)
    config = directory / "arm.yaml"
    config.write_text(yaml.safe_dump({"identification": {"method": "ols", "processing": {"trim_s": 0.25}}}))
    return run, bag, config


def _sha256_tree(path: Path) -> str:
    """SHA-256 over a directory's files: relative name, a zero byte, content, in name order."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode() + b"\0")
        digest.update(file.read_bytes())
    return digest.hexdigest()


def test_a_bag_with_a_config_and_an_explicit_option(arm, tmp_path):
    run, bag, config = arm
    out = tmp_path / "result"
    argv = ["dynid", "identify", "--bag", str(bag), "--method", "wls"]
    identified = identify_into(out, RunInputs(bag=bag, urdf=run.urdf, config=config), {"method": "wls", "end": None},
                               argv=argv)
    assert isinstance(identified, IdentificationRun) and identified.mode == Mode.BAG and identified.out == out
    result = identified.result
    assert result.options.method == "wls"  # the explicit option over the config's
    assert result.processing["trim_s"] == 0.25  # the config's processing
    report = json.loads((out / "report.json").read_text())
    assert report["method"] == "wls" and report["relative_error"] == pytest.approx(result.relative_error)
    inputs = report["provenance"]["inputs"]
    assert set(inputs) == {"bag", "urdf", "config"}
    assert inputs["urdf"]["sha256"] == hashlib.sha256(run.urdf.read_bytes()).hexdigest()
    assert inputs["config"]["sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()
    assert inputs["bag"]["sha256"] == _sha256_tree(bag) and inputs["bag"]["path"] == str(bag.resolve())
    assert report["provenance"]["command"] == "dynid identify --bag " + str(bag) + " --method wls"
    assert identified.lines[0] == f"wls (full, clarabel): status optimal, feasible {result.feasible}"
    assert identified.lines[-1] == f"wrote {out}/ (readable report: {out / 'report.html'})"
    assert any(line.startswith("timings [s]: ") and "write" in line for line in identified.lines)
    assert identified.summary() == (f"wls: feasible {result.feasible}, relative error "
                                    f"{100 * result.relative_error:.2f} %, wrote {out}")
    assert len(identified.warnings) == len(set(identified.warnings))


def test_options_built_already_are_used_as_given(arm, tmp_path):
    run, bag, config = arm
    options = IdentificationOptions(method="ols", prior="none")
    identified = identify_into(tmp_path / "r", RunInputs(bag=bag, urdf=run.urdf, config=config),
                               {"method": "wls"}, options=options)
    assert identified.result.options is options and identified.result.options.method == "ols"


def test_efforts_recorded_as_magnitudes(arm, tmp_path):
    run, _, _ = arm
    s = run.series
    bag = write_joint_states(tmp_path / "abs", JointStateSeries(list(s.names), s.t, s.position, s.velocity,
                                                                np.abs(s.effort)))
    identified = identify_into(tmp_path / "r", RunInputs(bag=bag, urdf=run.urdf, abs_effort=True))
    assert identified.mode == Mode.ABS_EFFORT
    assert identified.lines[0].startswith("torque signs: ")
    assert identified.result.relative_error < 0.02  # the signs found: the fit is near the noise floor


def test_mass_matrix_samples(arm, tmp_path):
    """M(q) and g(q) of the arm computed by pinocchio (CRBA, generalized gravity) at 40 configurations."""
    import pinocchio as pin

    run, _, _ = arm
    model = pin.buildModelFromUrdf(str(run.urdf))
    data = model.createData()
    q = np.random.default_rng(0).uniform(-2.0, 2.0, (40, 3))
    upper = [pin.crba(model, data, x) for x in q]
    mass = np.array([np.triu(m) + np.triu(m, 1).T for m in upper])
    gravity = np.array([pin.computeGeneralizedGravity(model, data, x) for x in q])
    csv = MassMatrixSamples.from_matrices(q, mass, gravity).write_csv(tmp_path / "mass_matrix.csv")
    identified = identify_into(tmp_path / "r", RunInputs(mass_matrix=csv, urdf=run.urdf))
    assert identified.mode == Mode.MASS_MATRIX
    assert identified.result.layout.friction == () and not identified.result.layout.armature
    assert identified.lines[0].startswith("M(q), g(q) at 40 configurations: rank ")
    assert identified.result.relative_error < 1e-6  # exact samples
    with pytest.raises(ConfigError, match="--mass-matrix: M\\(q\\) and g\\(q\\) contain no friction"):
        identify_into(tmp_path / "r2", RunInputs(mass_matrix=csv, urdf=run.urdf), {"friction": "viscous"})
    with pytest.raises(ConfigError, match="--abs-effort applies to a bag, not to --mass-matrix"):
        identify_into(tmp_path / "r3", RunInputs(mass_matrix=csv, urdf=run.urdf, abs_effort=True))


def test_the_output_is_checked_before_any_work(arm, tmp_path):
    run, bag, _ = arm
    mine = user_directory(tmp_path / "mine")
    before = tree_digest(mine)
    with pytest.raises(ConfigError, match="refusing to touch it"):
        identify_into(mine, RunInputs(bag=bag, urdf=run.urdf))
    assert tree_digest(mine) == before
    with pytest.raises(ConfigError, match="would replace the input"):
        identify_into(bag, RunInputs(bag=bag, urdf=run.urdf))


@pytest.mark.parametrize(("inputs", "match"), [
    (lambda bag, urdf: RunInputs(bag=bag), "give the robot: --urdf or --dh"),
    (lambda bag, urdf: RunInputs(bag=bag, urdf=urdf, beam=4), "--beam applies to --abs-effort only"),
])
def test_inputs_that_do_not_make_an_identification(arm, tmp_path, inputs, match):
    run, bag, _ = arm
    with pytest.raises(ConfigError, match=match):
        identify_into(tmp_path / "r", inputs(bag, run.urdf))
    assert not (tmp_path / "r").exists()


def test_run_inputs_name_their_sources():
    inputs = RunInputs(bag=Path("b"), urdf=Path("u.urdf"), effort_scale_file=Path("g.yaml"))
    assert inputs.sources() == {"bag": Path("b"), "urdf": Path("u.urdf"), "dh": None, "config": None,
                                "mass_matrix": None, "effort_scale_file": Path("g.yaml")}
