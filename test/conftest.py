"""Session set-up of the tests: control_msgs built into the venv (once), composition_interfaces too when the
launch stack is announced (``DYNID_ROS2_LAUNCH``, see launch_stack.py), node fixtures from ros_helpers."""

import pytest

from ci_skips import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401 (CI=true: no skips)
from control_msgs_build import ControlMsgsBuildError, ensure_control_msgs
from launch_stack import ensure_composition_interfaces
from ros_helpers import ros_context, spinner  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    """The FollowJointTrajectory tests need the real control_msgs: build it before collection when missing."""
    try:
        messages = [ensure_control_msgs(), ensure_composition_interfaces()]
    except ControlMsgsBuildError as err:
        raise pytest.UsageError(str(err)) from err
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for message in messages:
            reporter.write_line(message)
