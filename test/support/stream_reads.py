"""Fixtures of the streamed-reading tests: the short synthetic Panda bag, and reads forced small.

Import them into a test module (``from support.stream_reads import force_small_reads, panda_stream_bag``): their
fixtures are named ``small_reads`` and ``bag``."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynid_ros.data import bag_stream
from dynid_ros.data.bag_io import write_joint_states

from support.panda_streams import panda_series


@pytest.fixture(scope="module", name="bag")
def panda_stream_bag(tmp_path_factory) -> Path:
    """:func:`support.panda_streams.panda_series` as a bag (7 s at 1 kHz, a gap, a NaN sample)."""
    return write_joint_states(tmp_path_factory.mktemp("stream") / "bag", panda_series())


@pytest.fixture(name="small_reads")
def force_small_reads(monkeypatch):
    """900 messages read at a time, and nothing held: the values are read in a second pass, as a long bag's."""
    monkeypatch.setattr(bag_stream, "CHUNK_MESSAGES", 900)
    monkeypatch.setattr(bag_stream, "HOLD_BYTES", 0)
