"""Joint states from a CSV without header or time column (the dVRK recordings of Wang et al. 2019): the columns
as q, q', tau of the named joints, sample k at k / rate, stale repeated rows dropped, bad files named."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.data.csv_joint_states import read_csv_joint_states
from dynid_ros.errors import DataError


def test_columns_are_positions_velocities_and_efforts(tmp_path):
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(20, 6))
    path = tmp_path / "run.csv"
    np.savetxt(path, rows, delimiter=",", fmt="%.17g")
    series = read_csv_joint_states(path, ("m1", "m2"), 100.0)
    assert series.names == ["m1", "m2"] and series.info == {"source": str(path), "stale_rows_dropped": 0}
    np.testing.assert_array_equal(series.t, np.arange(20) / 100.0)
    np.testing.assert_array_equal(series.position, rows[:, :2])
    np.testing.assert_array_equal(series.velocity, rows[:, 2:4])
    np.testing.assert_array_equal(series.effort, rows[:, 4:])


def test_one_row_is_one_sample(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("1,2,3\n")
    series = read_csv_joint_states(path, ["q"], 50.0)
    assert len(series) == 1 and series.effort[0, 0] == 3.0


@pytest.mark.parametrize(("text", "rate", "match"), [
    ("1,2,x\n", 10.0, "not a numeric CSV"),
    ("1,2,3\n4,nan,6\n", 10.0, "row 2 is not finite"),
    ("1,2,3\n", 0.0, "the sample rate must be > 0, got 0.0"),
])
def test_bad_files_are_named(tmp_path, text, rate, match):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=f"bad.csv: {match}"):
        read_csv_joint_states(path, ["q"], rate)
    with pytest.raises(DataError, match="no such CSV file"):
        read_csv_joint_states(tmp_path / "absent.csv", ["q"], rate)


def test_csv_reader_drops_stale_rows(tmp_path):
    """Rows that repeat the previous row are stale readings: dropped, the others keep t = k / rate."""
    rows = np.array([[0.0, 1.0, 2.0], [0.1, 1.1, 2.1], [0.1, 1.1, 2.1], [0.3, 1.3, 2.3]])
    path = tmp_path / "run.csv"
    np.savetxt(path, rows, delimiter=",")
    series = read_csv_joint_states(path, ["q1"], 200.0)
    np.testing.assert_allclose(series.t, [0.0, 0.005, 0.015])
    np.testing.assert_allclose(series.effort[:, 0], [2.0, 2.1, 2.3])
    assert series.info["stale_rows_dropped"] == 1
    with pytest.raises(DataError, match="3 columns, expected 6"):
        read_csv_joint_states(path, ["q1", "q2"], 200.0)
