"""``dynid bag info`` and ``dynid bag repair`` through the CLI entry point, on real bags."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import JOINT_STATE_TYPE, write_joint_states
from dynid_ros.data.joint_states import JointStateSeries


def small_series(n: int = 120) -> JointStateSeries:
    t = 10.0 + 0.01 * np.arange(n)
    values = np.tile(np.arange(n, dtype=float)[:, None], (1, 2))
    return JointStateSeries(["a", "b"], t, values, values, values)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_info_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], storage: str) -> None:
    bag = write_joint_states(tmp_path / "bag", small_series(), storage=storage)
    assert main(["bag", "info", str(bag), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["messages"] == {"/joint_states": 120}
    assert info["topics"] == {"/joint_states": JOINT_STATE_TYPE}
    assert info["storage"] == storage
    assert info["duration_s"] == pytest.approx(1.19, abs=1e-6)


def test_info_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bag = write_joint_states(tmp_path / "bag", small_series())
    assert main(["bag", "info", str(bag)]) == 0
    out = capsys.readouterr().out
    assert "/joint_states  sensor_msgs/msg/JointState  120" in out and "duration: 1.190 s" in out


def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bag", "info", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err == f"dynid bag: error: {tmp_path / 'missing'}: no such bag\n"
    assert main(["bag", "repair", str(tmp_path)]) == 2
    assert "expected one .mcap or .db3 file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["bag"])
    assert exit_info.value.code == 2


ABANDON = """
import os, sys
import numpy as np
from dynid_ros.data.bag_io import BagRecorder, encode_joint_states
from dynid_ros.data.joint_states import JointStateSeries
values = np.tile(np.arange(120, dtype=float)[:, None], (1, 2))
stamps, messages = encode_joint_states(JointStateSeries(["a", "b"], 10.0 + 0.01 * np.arange(120), values, values,
                                                        values))
recorder = BagRecorder(sys.argv[1], sys.argv[2], {"/joint_states": "sensor_msgs/msg/JointState"})
for k in range(120):
    recorder.write("/joint_states", messages[k], int(stamps[k]))
    if k == 99:
        recorder.flush()
os._exit(0)  # dies without closing the bag; the last 20 messages were never flushed
"""


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_repair_an_unfinished_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str], storage: str) -> None:
    subprocess.run([sys.executable, "-c", ABANDON, str(tmp_path / "rec"), storage], check=True, timeout=60)
    assert main(["bag", "info", str(tmp_path / "rec")]) == 2
    assert "dynid bag repair" in capsys.readouterr().err
    assert main(["bag", "repair", str(tmp_path / "rec"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["messages"] == {"/joint_states": 100}
    assert report["out"] == str(tmp_path / "rec_repaired") and not (tmp_path / "rec" / "metadata.yaml").exists()
    assert main(["bag", "info", report["out"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == report["messages"]
    assert main(["bag", "repair", str(tmp_path / "rec")]) == 2  # never overwrites the earlier repair
    assert "rec_repaired exists already" in capsys.readouterr().err
    assert main(["bag", "repair", str(tmp_path / "rec"), "--out", str(tmp_path / "second")]) == 0
    assert f"recovered 100 message(s) into {tmp_path / 'second'}" in capsys.readouterr().out
