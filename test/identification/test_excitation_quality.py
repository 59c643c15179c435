"""How well a window excites the parameters: the condition numbers of its base regressor against numpy's SVD
(None when a parameter is not excited at all), and per joint the range and speed covered against the limits."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.dynamics.regressor import regressor
from dynid_ros.dynamics.row_chunks import RowChunks
from dynid_ros.identification.excitation_quality import excitation_quality

from support.arm_runs import RICH, arm_run, motion


def test_condition_numbers_and_coverage_of_the_arm(tmp_path):
    run = arm_run(tmp_path, amplitude=RICH)
    base = compute_base_parameters(run.model, run.layout)
    q, dq = run.series.position, run.series.velocity
    w_b = base.project(regressor(run.model, run.layout, q, dq, np.gradient(dq, run.series.t, axis=0)))
    quality = excitation_quality(run.model, w_b, q, dq)
    s = np.linalg.svd(w_b, compute_uv=False)
    assert quality["condition_number"] == pytest.approx(s[0] / s[-1], rel=1e-6)
    unit = np.linalg.svd(w_b / np.linalg.norm(w_b, axis=0), compute_uv=False)
    assert quality["condition_number_scaled"] == pytest.approx(unit[0] / unit[-1], rel=1e-6)
    for j, entry in enumerate(quality["joints"]):
        assert entry["joint"] == f"j{j + 1}"
        assert entry["min"] == q[:, j].min() and entry["max"] == q[:, j].max()
        assert entry["range_share"] == pytest.approx(np.ptp(q[:, j]) / 5.0)  # limits -2.5 .. 2.5 rad
        assert entry["peak_speed"] == pytest.approx(np.abs(dq[:, j]).max())
        assert entry["speed_share"] == pytest.approx(np.abs(dq[:, j]).max() / 2.5)
    chunks = RowChunks(lambda: (w_b[a:a + 100] for a in range(0, w_b.shape[0], 100)), w_b.shape)
    assert excitation_quality(run.model, chunks, q, dq)["condition_number"] == pytest.approx(
        quality["condition_number"], rel=1e-9)  # a regressor streamed in blocks: the same numbers


def test_a_joint_that_never_moves_leaves_its_parameters_unexcited(tmp_path):
    run = arm_run(tmp_path)
    t = run.series.t - run.series.t[0]
    q, dq, ddq = motion(t, t[-1])
    q[:, 0], dq[:, 0], ddq[:, 0] = 0.0, 0.0, 0.0  # the base joint held: its friction columns are zero
    base = compute_base_parameters(run.model, run.layout)
    w_b = base.project(regressor(run.model, run.layout, q, dq, ddq))
    quality = excitation_quality(run.model, w_b, q, dq)
    assert quality["condition_number"] is None and quality["condition_number_scaled"] is None  # JSON: no inf
    assert quality["joints"][0]["range_share"] == 0.0 and quality["joints"][0]["peak_speed"] == 0.0


def test_a_joint_without_limits_has_no_share(tmp_path):
    from dynid_ros.robot.model import load_model

    from support.arm_runs import ARM

    path = tmp_path / "continuous.urdf"
    path.write_text(ARM.replace('name="j1" type="revolute"', 'name="j1" type="continuous"'))
    model = load_model(urdf=path)
    q = np.column_stack([np.linspace(0, 7, 50), np.zeros(50), np.zeros(50)])
    w = np.random.default_rng(0).normal(size=(150, 5))
    entry = excitation_quality(model, w, q, np.gradient(q, axis=0))["joints"][0]
    assert entry["range_share"] is None and entry["max"] == 7.0
