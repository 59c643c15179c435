"""pytest hooks of ``.ci/run``: with ``CI=true`` no test may pass by skipping.

A skipped test (or a module skipped at import) is reported as a failure, except
  * tests marked ``hardware`` AND listed by node id in ``HARDWARE_TESTS`` (they need a device that
    cannot exist in CI; listed by name so that a new skip is a decision, not an accident), and
  * the Panda-data tests while ``DYNID_PANDA_DATA`` is unset (a clone without the data set), and
  * the launch tests while ``DYNID_ROS2_LAUNCH`` is unset and the launch stack is not installed (a clone
    without the ros2_launch folder beside it: launch has no PyPI wheel), and
  * the rosdep key checks while ``DYNID_ROSDISTRO`` is unset (no rosdistro snapshot beside the clone), and
  * the dVRK-data tests while ``DYNID_DVRK_DATA`` is unset (a clone without the data set), and
  * the tests against the real ros2_control stack while ``DYNID_ROS2_CONTROL`` is unset and the venv has no
    ``ros2_control_env.sh`` (a clone without the ros2_control folder beside it), and
  * the URDF-zoo tests while ``DYNID_URDF_ZOO`` is unset (a clone without the zoo beside it).

A clone without the shared folder beside it (``.ci/run``'s last pass, as a user's: ``CI`` and the ``DYNID_*`` data
variables unset) must skip exactly what needs the shared folder, saying why. The full run records which tests read
a shared data set (:mod:`support.shared_dirs`, into the file ``DYNID_SHARED_USERS`` names); the clone's pass runs
those tests with ``--skips-need-reasons``: each must then pass or skip with the reason naming its unset variable
(any other skip, or a reason-less one, is a failure).
"""

from __future__ import annotations

import os

import pytest

SKIPS_NEED_REASONS = "--skips-need-reasons"
"""pytest option: a skip not explained by an unset data variable fails, with or without ``CI``."""

HARDWARE_TESTS: tuple[str, ...] = ()
"""Node ids (``test/test_x.py::test_name``) allowed to skip in CI because they need real hardware."""


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(SKIPS_NEED_REASONS, action="store_true",
                     help="fail a skip unless its reason names an unset data variable (a clone without the shared "
                          "folder)")


def _strict(config: pytest.Config) -> bool:
    return in_ci() or bool(config.getoption(SKIPS_NEED_REASONS, default=False))


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    return report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)


def allowed_skip(item: pytest.Item, reason: str) -> bool:
    from support import dvrk_data, launch_stack, panda_data, ros2_control_stack, rosdistro_index, urdf_zoo

    for data in (panda_data, launch_stack, rosdistro_index, dvrk_data, ros2_control_stack, urdf_zoo):
        if data.UNSET_REASON in reason and not os.environ.get(data.ENV):
            return True
    return item.get_closest_marker("hardware") is not None and item.nodeid in HARDWARE_TESTS


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    report = yield
    if _strict(item.config) and report.skipped and not hasattr(report, "wasxfail") and not allowed_skip(
            item, _reason(report)):
        report.outcome = "failed"
        where = "in CI" if in_ci() else f"with {SKIPS_NEED_REASONS}"
        report.longrepr = (f"unexpected skip {where} (only listed hardware tests and tests of an unset data variable "
                           f"may skip): {_reason(report)}")
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport:
    report = yield
    if _strict(collector.config) and report.skipped:  # a whole module skipped at import
        report.outcome = "failed"
        report.longrepr = f"unexpected skip of {collector.nodeid} in CI: {_reason(report)}"
    return report
