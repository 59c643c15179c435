"""Fixtures of the node tests (defined in ros_helpers), available to every test module."""

from ci_skips import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401 (CI=true: no skips)
from ros_helpers import ros_context, spinner  # noqa: F401
