"""Session set-up of the tests: control_msgs built into the venv (once), composition_interfaces too when the
launch stack is announced (``DYNID_ROS2_LAUNCH``, see launch_stack.py), node fixtures from ros_helpers."""

import logging
import os
import shutil
import tempfile

import pytest

from support.ci_skips import (  # noqa: F401 (CI=true: no skips)
    pytest_addoption,
    pytest_make_collect_report,
    pytest_runtest_makereport,
)
from support.control_msgs_build import ControlMsgsBuildError, ensure_control_msgs
from support.launch_stack import ensure_composition_interfaces
from support.ros_helpers import ros_context, spinner  # noqa: F401

CACHE_KEY = pytest.StashKey[str]()
"""The session's base-parameter cache directory (made by the session, removed at its end)."""


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = config.stash.get(CACHE_KEY, None)
    if cache:
        shutil.rmtree(cache, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    """The FollowJointTrajectory tests need the real control_msgs: build it before collection when missing.
    The base-parameter cache of the session is a fresh directory (never the user's ~/.cache), for subprocesses too."""
    config.stash[CACHE_KEY] = os.environ["DYNID_CACHE_DIR"] = tempfile.mkdtemp(prefix="dynid_test_cache_")
    try:
        messages = [ensure_control_msgs(), ensure_composition_interfaces()]
    except ControlMsgsBuildError as err:
        raise pytest.UsageError(str(err)) from err
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for message in messages:
            reporter.write_line(message)


@pytest.fixture(autouse=True)
def package_logs_reach_caplog() -> None:
    """The package's loggers propagate to the root logger (where caplog listens) whatever was imported first:
    ``launch.logging`` installs ``LaunchLogger`` (``propagate = False``) as the class of every logger created after
    it is imported, so a ``dynid_ros`` module imported after a launch test would log past caplog."""
    logging.getLogger("dynid_ros")  # the parent exists before a test's caplog.at_level(logger="dynid_ros") makes it
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if name.startswith("dynid_ros") and isinstance(logger, logging.Logger):
            logger.propagate = True
