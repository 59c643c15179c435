"""Streamed identification: a bag read in chunks, processed chunk by chunk, the regressor
compressed block by block, gives the in-memory result.

Short synthetic Panda bags (1 kHz, torque from the model plus noise, jittered stamps, a gap) with tiny chunks
forced (0.5 s of processing, 900 messages of reading), so that many chunk edges, the gap and the window's ends are
crossed; the estimate must equal the in-memory one to 1e-9 relative (OLS, WLS and the default FBPE).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from dynid_ros.cli.main import main
from dynid_ros.data import bag_stream
from dynid_ros.data.bag_io import JOINT_STATE_TYPE, encode_joint_states, read_joint_states, write_joint_states
from dynid_ros.data.bag_stream import scan_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import ProcessingOptions, process, settle_samples
from dynid_ros.dynamics.regressor import regressor_chunks, torques
from dynid_ros.dynamics.row_chunks import RowChunks
from dynid_ros.errors import BagError, DataError
from dynid_ros.estimation import estimators
from dynid_ros.identification.identify import identify, identify_bag
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.reporting.result_directory import load_parameters
from dynid_ros.reporting.validate import validate, validate_bag
from dynid_ros.robot.model import load_model

from support.panda_streams import TINY, URDF, panda_series, relative
from support.raw_bags import standard, write_raw


@pytest.fixture(scope="module")
def bag(tmp_path_factory) -> Path:
    return write_joint_states(tmp_path_factory.mktemp("stream") / "bag", panda_series())


@pytest.fixture
def small_reads(monkeypatch):
    """900 messages read at a time, and nothing held: the values are read in a second pass, as a long bag's."""
    monkeypatch.setattr(bag_stream, "CHUNK_MESSAGES", 900)
    monkeypatch.setattr(bag_stream, "HOLD_BYTES", 0)




@pytest.mark.parametrize("method", ["ols", "wls", "fbpe"])
def test_streamed_estimate_equals_the_in_memory_one(bag: Path, small_reads, method: str) -> None:
    options = IdentificationOptions(method=method, start=0.8, end=6.1, processing=TINY)
    whole = identify(read_joint_states(bag), options, urdf=URDF)
    streamed = identify_bag(bag, options, urdf=URDF)
    assert streamed.n_samples == whole.n_samples > 400
    assert len(streamed.processing["segments"]) == 2  # the gap was crossed
    assert relative(whole.beta, streamed.beta) < 1e-9
    assert relative(whole.delta, streamed.delta) < 1e-9
    assert streamed.relative_error == pytest.approx(whole.relative_error, rel=1e-9)
    std = [r.beta_rel_std * np.abs(r.beta) for r in (streamed, whole)]  # (a beta near 0 makes its relative std wild)
    np.testing.assert_allclose(std[0], std[1], rtol=1e-7)
    np.testing.assert_array_equal(streamed.fit.t, whole.fit.t)
    assert [m["name"] for m in streamed.not_identified] == [m["name"] for m in whole.not_identified]
    assert streamed.warnings == whole.warnings


def test_chunked_processing_equals_whole_segments(bag: Path) -> None:
    """Every processed sample of the chunked processing equals the whole-segment one to round-off: the overlap
    (``settle_samples``, from the cutoff and order) covers the zero-phase filter's edge transients."""
    series = read_joint_states(bag)
    assert settle_samples(6.0, 4, 1000.0) > 2000  # the overlap follows the filter (2.4 s at the default)...
    assert 2 * settle_samples(15.0, 4, 1000.0) + 500 < 3000  # ...so at 15 Hz chunks have edges inside the segments
    for options in (ProcessingOptions(cutoff_hz=15.0),
                    ProcessingOptions(cutoff_hz=20.0, decimate_hz=None, tau_cutoff_hz=25.0, order=2)):
        whole, chunked = process(series, options), process(series, options, chunk_s=0.5)
        assert not np.array_equal(whole.q, chunked.q)  # chunks filtered apart: equal to round-off, not bitwise
        np.testing.assert_array_equal(chunked.t, whole.t)
        np.testing.assert_array_equal(chunked.tau_raw, whole.tau_raw)
        for name in ("q", "dq", "tau"):
            assert relative(getattr(whole, name), getattr(chunked, name)) < 1e-11, name
        assert relative(whole.ddq, chunked.ddq) < 1e-9  # differentiated twice: round-off x rate^2
        assert chunked.segments == whole.segments


def test_scan_gives_the_stamps_and_drops_of_the_reader(bag: Path, small_reads) -> None:
    scan = scan_joint_states(bag)
    read = read_joint_states(bag)
    np.testing.assert_array_equal(scan.t, read.t)
    assert scan.info == read.info
    a, b = scan.window_rows(0.8, 6.1)
    np.testing.assert_array_equal(scan.t[a:b], read.window(0.8, 6.1).t)
    position, velocity, effort = scan.rows(read.names).get(a, b)
    window = read.window(0.8, 6.1)
    np.testing.assert_array_equal(position, window.position)
    np.testing.assert_array_equal(effort, window.effort)


def test_a_short_bag_is_read_once_and_gives_what_a_second_pass_gives(bag: Path, monkeypatch) -> None:
    """Decoded chunks within HOLD_BYTES are kept by the scan and served from memory; the rows are those of a scan
    that holds nothing and reads the bag again."""
    monkeypatch.setattr(bag_stream, "CHUNK_MESSAGES", 900)
    held = scan_joint_states(bag)
    assert held.held is not None and len(held.held) == -(-held.info["messages"] // 900)
    monkeypatch.setattr(bag_stream, "HOLD_BYTES", 0)
    again = scan_joint_states(bag)
    assert again.held is None
    joints = list(held.names)
    a, b = held.rows(joints), again.rows(joints)
    for start in range(0, held.t.size, 1000):
        for x, y in zip(a.get(start, start + 1000), b.get(start, start + 1000)):
            np.testing.assert_array_equal(x, y)


def test_continuous_joints_are_unwrapped_across_chunks(tmp_path: Path, small_reads) -> None:
    t = np.arange(0.0, 5.0, 1e-3)
    q = np.column_stack([np.mod(3.0 + 2.0 * t + np.pi, 2 * np.pi) - np.pi, 0.1 * t])
    bag = write_joint_states(tmp_path / "bag", JointStateSeries(["a", "b"], t + 5.0, q, q, q))
    rows = scan_joint_states(bag).rows(["a", "b"], np.array([True, False]))
    got = np.vstack([rows.get(a, min(a + 700, t.size))[0] for a in range(0, t.size, 700)])
    np.testing.assert_allclose(got[:, 0], np.unwrap(q[:, 0]), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got[:, 1], q[:, 1])


def test_several_publishers_are_merged_as_the_reader_does(tmp_path: Path) -> None:
    """An arm (1 kHz, stamped) and a gripper (50 Hz, header stamps 0: receive times minus the arm's delay) on one
    topic: the scan's stamps and the rows' values (the gripper interpolated) are the reader's."""
    t = np.arange(0.0, 2.0, 1e-3)
    arm = JointStateSeries(["j1", "j2"], t + 10.0, np.column_stack([np.sin(t), t]), np.column_stack([np.cos(t), t]),
                           np.column_stack([t, -t]))
    tg = np.arange(0.0, 2.0, 0.02)
    gripper = JointStateSeries(["f1"], np.zeros(tg.size), 0.01 * tg[:, None] + 0.001, None, np.sin(tg)[:, None])
    messages = [(int(s + 2_000_000), m) for s, m in zip(*encode_joint_states(arm))]
    messages += [(int(round((10.0 + g) * 1e9)) + 3_000_000, m) for g, m in zip(tg, encode_joint_states(gripper)[1])]
    with Writer(tmp_path / "bag", version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/joint_states", JOINT_STATE_TYPE,
                                           typestore=get_typestore(Stores.ROS2_HUMBLE))
        for stamp, data in sorted(messages, key=lambda m: m[0]):
            writer.write(connection, stamp, data)
    read, scan = read_joint_states(tmp_path / "bag"), scan_joint_states(tmp_path / "bag", chunk_messages=300)
    np.testing.assert_array_equal(scan.t, read.t)
    fast = "decoded_fast"
    assert {k: v for k, v in scan.info.items() if k != fast} == {k: v for k, v in read.info.items() if k != fast}
    assert scan.info["interpolated_joints"] == ["f1"]
    rows = scan.rows(["f1", "j2"])
    got = [np.vstack(parts) for parts in zip(*[rows.get(a, min(a + 170, len(read))) for a in range(0, len(read), 170)])]
    np.testing.assert_array_equal(got[0], read.position[:, [2, 1]])
    np.testing.assert_array_equal(got[2], read.effort[:, [2, 1]])
    assert np.isnan(got[1][:, 0]).all() and not scan.check_fields(["f1", "j2"])  # the gripper sends no velocity


def test_row_chunks_compress_as_the_whole_matrix() -> None:
    """The incremental QR of row blocks (zeroed rows, held-fixed columns) gives the whole matrix's fit."""
    rng = np.random.default_rng(3)
    w = rng.normal(size=(3 * 400, 6))
    w[1::3, 0] = 0.0  # a column that does not act on joint 1
    tau = w @ rng.normal(size=6) + rng.normal(0, 0.1, w.shape[0])
    rows = rng.random(w.shape[0]) > 0.1
    blocks = RowChunks(lambda: (w[a:a + 93] for a in range(0, w.shape[0], 93)), w.shape)
    for fit in (estimators.ols, estimators.wls):
        whole, chunked = fit(w, tau, 3, fixed={2: 0.3}, rows=rows), fit(blocks, tau, 3, fixed={2: 0.3}, rows=rows)
        assert relative(whole.beta, chunked.beta) < 1e-12
        assert chunked.inflation == pytest.approx(whole.inflation, rel=1e-12)


def test_regressor_chunks_are_the_regressor() -> None:
    model = load_model(urdf=URDF)
    layout = model.layout_for()
    rng = np.random.default_rng(0)
    q, dq, ddq = (rng.normal(size=(3000, 7)) for _ in range(3))
    chunks = regressor_chunks(model, layout, q, dq, ddq, np.array([0, 5, 70]))
    assert len(list(chunks.chunks())) > 1
    whole = torques(model, layout, np.eye(layout.n_parameters)[:, [0, 5, 70]].sum(axis=1), q, dq, ddq)
    np.testing.assert_allclose((chunks @ np.ones(3)).reshape(-1, 7), whole, rtol=1e-12, atol=1e-12)


def test_validate_streams_the_bag(bag: Path, small_reads, tmp_path: Path) -> None:
    out, config = tmp_path / "result", tmp_path / "config.yaml"
    config.write_text("identification:\n  processing: {chunk_s: 0.5, cutoff_hz: 15.0}\n")
    assert main(["identify", "--bag", str(bag), "--urdf", str(URDF), "--out", str(out), "--method", "ols",
                 "--end", "5", "--config", str(config)]) == 0
    assert load_parameters(out)["processing"]["chunk_s"] == 0.5  # validation processes as identification did
    whole = validate(out, read_joint_states(bag), 5.0, None)
    streamed = validate_bag(out, bag, "/joint_states", 5.0, None)
    np.testing.assert_array_equal(streamed.t, whole.t)
    assert streamed.relative_error == pytest.approx(whole.relative_error, rel=1e-9)
    np.testing.assert_allclose(streamed.relative_error_per_joint, whole.relative_error_per_joint, rtol=1e-9)


def _scenario(name: str) -> list[tuple[int, bytes]]:
    messages = [standard(k) for k in range(12)]
    if name == "nonfinite":
        messages[2] = standard(2, effort=[np.nan, 1.0, 2.0])
        messages[7] = standard(7, velocity=[np.inf, 1.0, 2.0])
    elif name == "duplicate":
        messages[3] = standard(3, stamp_ns=5_000_000_000 + 2_000_000)
    elif name == "unstamped":
        messages = [standard(k, stamp_ns=0) for k in range(12)]
    elif name == "partly stamped":
        messages[5] = standard(5, stamp_ns=0)
    elif name == "no velocity":
        messages = [standard(k, velocity=[]) for k in range(12)]
    return messages


@pytest.mark.parametrize("name", ["nonfinite", "duplicate", "unstamped", "partly stamped", "no velocity"])
def test_scan_keeps_the_readers_rules(tmp_path: Path, name: str) -> None:
    """Names in a different order in every message, read 5 messages at a time: the scan's stamps, counts and the
    rows' values are the reader's."""
    bag = write_raw(tmp_path / "bag", _scenario(name))
    read, scan = read_joint_states(bag), scan_joint_states(bag, chunk_messages=5)
    np.testing.assert_array_equal(scan.t, read.t)
    fast = "decoded_fast"  # which decoder took a message depends on the chunk (layouts shared by >= 64 messages)
    assert {k: v for k, v in scan.info.items() if k != fast} == {k: v for k, v in read.info.items() if k != fast}
    values = scan.rows(["j3", "j1"]).get(0, len(read))
    for got, want in zip(values, (read.position, read.velocity, read.effort)):
        if want is None:
            assert got is None
        else:
            np.testing.assert_array_equal(got, want[:, [2, 0]])


def test_scan_errors_are_the_readers(tmp_path: Path) -> None:
    messages = [standard(k) for k in range(6)]
    messages[4] = standard(4, stamp_ns=5_000_000_000)
    with pytest.raises(DataError, match=r"non-monotonic stamps at sample 4: t = 5\.000000000 s"):
        scan_joint_states(write_raw(tmp_path / "back", messages), chunk_messages=2)
    with pytest.raises(BagError, match="the messages on /joint_states have no effort"):
        scan_joint_states(write_raw(tmp_path / "none", [standard(k, effort=[]) for k in range(3)]))
    some = [standard(k) for k in range(5)]
    some[3] = standard(3, velocity=[])
    with pytest.raises(DataError, match="sample 3: no velocity"):
        scan_joint_states(write_raw(tmp_path / "some", some), chunk_messages=2)


def test_locked_joints_are_held_where_the_bag_holds_them(bag: Path, small_reads) -> None:
    """--joints a subset: the others are locked at their median over the window, read from the bag in chunks."""
    options = IdentificationOptions(method="ols", joints=[f"panda_joint{i}" for i in range(1, 7)], start=0.8,
                                    end=6.1, processing=TINY)
    whole = identify(read_joint_states(bag), options, urdf=URDF)
    streamed = identify_bag(bag, options, urdf=URDF)
    assert list(streamed.model.locked) == ["panda_joint7"]
    assert streamed.model.locked_positions == whole.model.locked_positions
    assert relative(whole.beta, streamed.beta) < 1e-9
