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

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import read_joint_states
from dynid_ros.identification.identify import identify, identify_bag
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.reporting.result_directory import load_parameters
from dynid_ros.reporting.validate import validate, validate_bag

from support.panda_streams import TINY, URDF, relative
from support.stream_reads import force_small_reads, panda_stream_bag  # noqa: F401 (fixtures)


@pytest.mark.parametrize("method", ["ols", "wls", "fbpe"])
def test_streamed_estimate_equals_the_in_memory_one(bag: Path, small_reads, method: str) -> None:
    options = IdentificationOptions(method=method, start=0.8, end=6.1, processing=TINY)
    whole = identify(read_joint_states(bag), options, urdf=URDF)
    streamed = identify_bag(bag, options, urdf=URDF)
    assert streamed.n_samples == whole.n_samples > 400
    assert len(streamed.processing["segments"]) == 2  # the gap was crossed
    # FBPE's prior scales are found by an optimizer of the evidence (converged to ~1e-11 on these sums, which agree to
    # round-off); the SDP's solution (delta, and beta = K delta), accurate to its solver's tolerance, moves by ~1e-8
    # with them (measured 3e-9 on beta, 6e-9 on delta)
    assert relative(whole.beta, streamed.beta) < (1e-7 if method == "fbpe" else 1e-9)
    assert relative(whole.delta, streamed.delta) < (1e-7 if method == "fbpe" else 1e-9)
    assert streamed.relative_error == pytest.approx(whole.relative_error, rel=1e-7 if method == "fbpe" else 1e-9)
    std = [r.beta_rel_std * np.abs(r.beta) for r in (streamed, whole)]  # (a beta near 0 makes its relative std wild)
    np.testing.assert_allclose(std[0], std[1], rtol=1e-7)
    np.testing.assert_array_equal(streamed.fit.t, whole.fit.t)
    assert [m["name"] for m in streamed.not_identified] == [m["name"] for m in whole.not_identified]
    assert streamed.warnings == whole.warnings


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


def test_locked_joints_are_held_where_the_bag_holds_them(bag: Path, small_reads) -> None:
    """--joints a subset: the others are locked at their median over the window, read from the bag in chunks."""
    options = IdentificationOptions(method="ols", joints=[f"panda_joint{i}" for i in range(1, 7)], start=0.8,
                                    end=6.1, processing=TINY)
    whole = identify(read_joint_states(bag), options, urdf=URDF)
    streamed = identify_bag(bag, options, urdf=URDF)
    assert list(streamed.model.locked) == ["panda_joint7"]
    assert streamed.model.locked_positions == whole.model.locked_positions
    assert relative(whole.beta, streamed.beta) < 1e-9
