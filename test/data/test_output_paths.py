"""Nothing the user had is deleted: outputs that exist and are not dynid's own of the same kind, or that
hold an input, are refused (exit 2) and left byte for byte as they were; dynid's own outputs are rewritten."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.output_paths import DEMO, MARKER, RESULT, check_output, fresh_output_directory, output_kind
from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import ConfigError
from dynid_ros.reporting.result_directory import atomic_directory
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.resources import robot_file

from support.user_files import tree_digest, user_directory

PANDA = robot_file("panda", "urdf")






@pytest.fixture(scope="module")
def synthetic_bag(tmp_path_factory) -> Path:
    """A 6 s, 1 kHz bag of the Panda moving along sines, torques of its nominal model: enough to identify."""
    model = load_model(urdf=PANDA)
    layout = model.layout_for()
    delta = nominal_parameters(model, layout)
    t = np.arange(0.0, 6.0, 1e-3)
    rng = np.random.default_rng(0)
    amp, phase = rng.uniform(0.2, 0.5, (3, 7)), rng.uniform(0, 6, (3, 7))
    freq = rng.uniform(0.3, 0.9, (3, 7)) * 2 * np.pi
    arg = freq[None] * t[:, None, None] + phase[None]
    q = (amp * np.sin(arg)).sum(1) + model.position_limits.mean(axis=1)
    dq = (amp * freq * np.cos(arg)).sum(1)
    ddq = (-amp * freq**2 * np.sin(arg)).sum(1)
    series = JointStateSeries(list(model.joints), t + 1.0, q, dq, torques(model, layout, delta, q, dq, ddq))
    return write_joint_states(tmp_path_factory.mktemp("data") / "D" / "run1", series)


def test_identify_out_onto_the_bags_directory_is_refused_and_untouched(synthetic_bag, capsys):
    data = synthetic_bag.parent
    (data / "other_run.txt").write_text("keep me\n")
    before = tree_digest(data)
    assert main(["identify", "--urdf", str(PANDA), "--bag", str(synthetic_bag), "--out", str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "would replace the input" in err, err
    assert main(["identify", "--urdf", str(PANDA), "--bag", str(synthetic_bag), "--out", str(synthetic_bag)]) == 2
    assert main(["identify", "--urdf", str(PANDA), "--bag", str(synthetic_bag),
                 "--out", str(synthetic_bag / "result")]) == 2
    assert "inside the input" in capsys.readouterr().err
    assert tree_digest(data) == before


def test_identify_out_onto_a_foreign_directory_is_refused_then_its_own_result_is_rewritten(
        synthetic_bag, tmp_path, capsys):
    foreign = user_directory(tmp_path / "mine")
    before = tree_digest(foreign)
    args = ["identify", "--urdf", str(PANDA), "--bag", str(synthetic_bag), "--friction", "viscous",
            "--no-armature"]
    assert main([*args, "--out", str(foreign)]) == 2
    assert "exists already and is not a directory dynid wrote" in capsys.readouterr().err
    assert tree_digest(foreign) == before
    out = tmp_path / "result"
    assert main([*args, "--method", "ols", "--out", str(out)]) == 0
    assert output_kind(out) == RESULT and (out / "identified.urdf").is_file()
    assert json.loads((out / "report.json").read_text())["method"] == "ols"
    assert main([*args, "--method", "wls", "--out", str(out)]) == 0  # its own earlier result: rewritten
    assert output_kind(out) == RESULT and json.loads((out / "report.json").read_text())["method"] == "wls"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "result"]  # no temporaries left


def test_demo_out_onto_a_foreign_directory_is_refused_and_untouched(tmp_path, capsys):
    foreign = user_directory(tmp_path / "D")
    before = tree_digest(foreign)
    assert main(["demo", "--out", str(foreign)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "refusing to touch it" in err
    assert tree_digest(foreign) == before
    result = tmp_path / "R"
    atomic_directory(result, lambda tmp: (tmp / "report.json").write_text("{}"), RESULT)
    before = tree_digest(result)
    assert main(["demo", "--out", str(result)]) == 2  # dynid's, but an identification result, not a demo
    assert "is an identification result, not a demo" in capsys.readouterr().err
    assert tree_digest(result) == before


def test_an_earlier_demo_is_replaced_a_foreign_directory_never(tmp_path):
    out = fresh_output_directory(tmp_path / "demo", DEMO)
    (out / "report.md").write_text("old")
    again = fresh_output_directory(tmp_path / "demo", DEMO)
    assert sorted(p.name for p in again.iterdir()) == [MARKER]
    foreign = user_directory(tmp_path / "mine")
    before = tree_digest(foreign)
    with pytest.raises(ConfigError, match="refusing to touch it"):
        fresh_output_directory(foreign, DEMO)
    assert tree_digest(foreign) == before


@pytest.mark.parametrize(("out", "inputs", "match"), [
    ("D", ["D/run1"], "would replace the input"),
    ("D/run1", ["D/run1"], "would replace the input"),
    ("D/run1/x", ["D/run1"], "inside the input"),
    ("file.txt", [], "not a directory dynid wrote"),
])
def test_check_output_refusals(tmp_path, out, inputs, match):
    (tmp_path / "D" / "run1").mkdir(parents=True)
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ConfigError, match=match):
        check_output(tmp_path / out, RESULT, [tmp_path / i for i in inputs])


def test_excite_never_overwrites_its_inputs_or_a_non_trajectory_file(tmp_path, capsys):
    urdf = tmp_path / "robot.urdf"
    urdf.write_bytes(Path(PANDA).read_bytes())
    notes = tmp_path / "notes.yaml"
    notes.write_text("important: true\n")
    before = tree_digest(tmp_path)
    assert main(["excite", "--urdf", str(urdf), "--out", str(urdf), "--no-progress"]) == 2
    assert "is the input" in capsys.readouterr().err
    assert main(["excite", "--urdf", str(urdf), "--out", str(notes), "--no-progress"]) == 2
    assert "not a trajectory file" in capsys.readouterr().err
    assert tree_digest(tmp_path) == before


def test_validate_report_never_overwrites_a_file_that_is_not_a_report(synthetic_bag, tmp_path, capsys):
    out = tmp_path / "result"
    atomic_directory(out, lambda tmp: (tmp / "parameters.yaml").write_text("{}"), RESULT)
    precious = tmp_path / "notes.json"
    precious.write_text('{"mine": 1}\n')
    before = tree_digest(tmp_path)
    for report in (precious, synthetic_bag / "metadata.yaml"):
        meta = (synthetic_bag / "metadata.yaml").read_bytes()
        assert main(["validate", "--result", str(out), "--bag", str(synthetic_bag), "--report", str(report)]) == 2
        assert "refusing to overwrite it" in capsys.readouterr().err
        assert (synthetic_bag / "metadata.yaml").read_bytes() == meta
    assert tree_digest(tmp_path) == before
