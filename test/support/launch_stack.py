"""The ROS 2 launch stack (launch, launch_ros, ros2cli, composition_interfaces) for the launch tests.

``launch``, ``launch_ros`` and ``ros2cli`` have no PyPI wheels: ``.ci/run`` installs the pure-Python wheels
of the copy beside the repository and sets ``DYNID_ROS2_LAUNCH`` to that directory; ``pytest_configure``
(conftest.py) then builds ``composition_interfaces`` (which launch_ros imports) from its sources there, as
control_msgs is built. A clone alone (variable unset, stack not installed) skips the launch tests with
``UNSET_REASON``; with the variable set, a missing stack fails them. A venv with the stack installed by
hand (``build_launch_env.sh``) runs them without the variable.

:func:`ament_prefix` makes what ``colcon build`` would install, from symlinks: the checkout's launch,
config and urdf under ``share/dynid_ros`` and this venv's console scripts under ``lib/dynid_ros``,
where launch_ros looks for executables (pip never puts them there). :func:`run_launch` runs one launch
description in-process with ``launch.LaunchService`` and collects every process's output and exit code.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from support.control_msgs_build import ControlMsgsBuildError, build, importable
from support.paths import REPO

ENV = "DYNID_ROS2_LAUNCH"
UNSET_REASON = (f"{ENV} is not set and the ROS 2 launch stack (launch, launch_ros, ros2cli) is not installed "
                "(no PyPI wheels: .ci/run installs them from the ros2_launch folder beside the repository)")
ROOT = REPO
EXECUTABLES = ("sim_node", "excitation_node", "recorder_node", "identification_node", "orchestrator_node")


def stack_installed() -> bool:
    return all(importable(m) for m in ("launch", "launch_ros", "ros2cli", "composition_interfaces.srv"))


def require_launch_stack() -> None:
    """Skip the calling test when the stack is neither installed nor announced; fail when announced but absent."""
    if stack_installed():
        return
    if not os.environ.get(ENV):
        import pytest

        pytest.skip(UNSET_REASON)
    raise RuntimeError(f"{ENV}={os.environ[ENV]} but the launch stack is not importable: install its wheels "
                       f"with pip install --no-deps (see .ci/run)")


def ensure_composition_interfaces() -> str:
    """Build composition_interfaces from ``$DYNID_ROS2_LAUNCH/composition_interfaces`` when it is missing."""
    directory = os.environ.get(ENV)
    if not directory or importable("composition_interfaces.srv"):
        return "composition_interfaces: importable" if directory else f"composition_interfaces: {ENV} not set"
    source = Path(directory) / "composition_interfaces"
    if not (source / "package.xml").is_file():
        raise ControlMsgsBuildError(f"{ENV}={directory}: no composition_interfaces/package.xml there")
    work = Path(sys.prefix) / "build" / "dynid_ros_composition_interfaces"
    work.mkdir(parents=True, exist_ok=True)
    seconds = build(Path(sys.prefix), work, source=source, module="composition_interfaces.srv")
    return f"composition_interfaces: built into {sys.prefix} in {seconds:.0f} s"


def ament_prefix(prefix: Path) -> Path:
    """A minimal ament prefix for dynid_ros made of symlinks to this checkout and venv (see module docstring)."""
    index = prefix / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    (index / "dynid_ros").touch()
    share = prefix / "share" / "dynid_ros"
    (share / "launch").mkdir(parents=True)
    for path in (ROOT / "launch").glob("*.launch.py"):  # files, not a directory link: ros2 launch does not follow it
        (share / "launch" / path.name).symlink_to(path)
    for name in ("config", "urdf", "package.xml"):
        (share / name).symlink_to(ROOT / name)
    lib = prefix / "lib" / "dynid_ros"
    lib.mkdir(parents=True)
    for exe in EXECUTABLES:
        found = shutil.which(exe, path=str(Path(sys.executable).parent))
        if not found:
            raise FileNotFoundError(f"console script {exe} is not installed in {Path(sys.executable).parent}")
        (lib / exe).symlink_to(found)
    return prefix


@dataclass
class LaunchRun:
    """What one launch did: LaunchService's return code, every output line, every process's exit code."""

    code: int
    lines: list[str] = field(default_factory=list)
    exits: dict[str, int] = field(default_factory=dict)

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.lines[-n:])

    def output_of(self, process: str) -> str:
        return "\n".join(line for line in self.lines if line.startswith(f"[{process}"))


def run_launch(entities: list, timeout: float) -> LaunchRun:
    """Run ``entities`` (launch actions, e.g. an IncludeLaunchDescription of a file) in a LaunchService until the
    launch ends by itself; a deadline of ``timeout`` s ends it with a ``JobFailed`` (return code 1).

    Must run on the main thread (LaunchService installs signal handlers); the processes inherit ``os.environ``.
    """
    from launch.actions import RegisterEventHandler, TimerAction
    from launch.event_handlers import OnProcessExit, OnProcessIO

    import launch
    from dynid_ros.ros.launch_support import JobFailed

    run = LaunchRun(code=-1)

    def on_output(event: object) -> None:
        run.lines.extend(f"[{event.action.name}] {line}" for line in event.text.decode(errors="replace").splitlines())

    def on_exit(event: object, context: object) -> None:
        run.exits[event.action.name] = event.returncode

    def deadline(context: object) -> None:
        raise JobFailed(f"test deadline: the launch did not end within {timeout} s")

    from launch.actions import OpaqueFunction

    description = launch.LaunchDescription([
        RegisterEventHandler(OnProcessIO(on_stdout=on_output, on_stderr=on_output)),
        RegisterEventHandler(OnProcessExit(on_exit=on_exit)),
        *entities,
        TimerAction(period=float(timeout), actions=[OpaqueFunction(function=deadline)]),
    ])
    service = launch.LaunchService()
    service.include_launch_description(description)
    run.code = service.run()
    return run


def include(file_name: str, arguments: dict[str, str]) -> object:
    """``IncludeLaunchDescription`` of ``share/dynid_ros/launch/<file_name>`` as ``ros2 launch`` finds it."""
    from ament_index_python.packages import get_package_share_directory
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    path = Path(get_package_share_directory("dynid_ros")) / "launch" / file_name
    return IncludeLaunchDescription(PythonLaunchDescriptionSource(str(path)), launch_arguments=arguments.items())
