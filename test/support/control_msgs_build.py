"""Build control_msgs (FollowJointTrajectory, its tolerance messages, JointTrajectoryControllerState) into the test
venv, once.

control_msgs has no PyPI wheel, but its interface files (vendored in ``test/control_msgs_src``,
ros-controls/control_msgs branch jazzy) compile with the PyPI ROS 2 Jazzy rosidl/ament wheels of the
``test`` extra into a real ``control_msgs.action.FollowJointTrajectory``. ``ensure_control_msgs`` does
that when ``import control_msgs.action`` fails: it points the wheels' exported CMake files at this
venv's Python and numpy headers (they name the machine the wheels were built on), then runs cmake,
make and make install into ``sys.prefix``; the Python package lands in site-packages, the libraries
in ``<venv>/lib`` (on the library path of every venv Python through ros_wheels_bootstrapper). A
failure raises with the path of the build log; nothing is skipped.
"""

from __future__ import annotations

import fcntl
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "control_msgs_src"
PYTHON_INCLUDE = re.compile(r'/[^";]*?/include/python3\.\d+')
NUMPY_INCLUDE = re.compile(r'/[^";]*?/numpy/_?core/include')


class ControlMsgsBuildError(RuntimeError):
    """control_msgs could not be built into the test venv."""


def importable(module: str = "control_msgs.action") -> bool:
    importlib.invalidate_caches()
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def control_msgs_importable() -> bool:
    """FollowJointTrajectory and JointTrajectoryControllerState (an older build lacks the latter: built again)."""
    return importable("control_msgs.action") and _generated("control_msgs", "msg/_joint_trajectory_controller_state.py")


def _generated(package: str, relative: str) -> bool:
    """Whether the installed ``package`` has the generated file ``relative`` (looked up, not imported: a module
    imported before a rebuild would stay the old one)."""
    spec = importlib.util.find_spec(package)
    return spec is not None and any((Path(p) / relative).is_file() for p in spec.submodule_search_locations or ())


def _missing(path: str) -> bool:
    return not Path(path).exists()


def rewrite_include_paths(prefix: Path, python_include: str, numpy_include: str) -> int:
    """Replace the absent Python/numpy include directories in ``prefix/share/**/*.cmake``; returns files changed."""
    changed = 0
    for path in (prefix / "share").glob("**/*.cmake"):
        text = path.read_text()
        if "include" not in text:
            continue
        new = NUMPY_INCLUDE.sub(lambda m: numpy_include if _missing(m.group(0)) else m.group(0), text)
        new = PYTHON_INCLUDE.sub(lambda m: python_include if _missing(m.group(0)) else m.group(0), new)
        if new != text:
            path.write_text(new)
            changed += 1
    return changed


def _headers() -> tuple[str, str]:
    import numpy

    python_include = sysconfig.get_paths()["include"]
    if not (Path(python_include) / "Python.h").is_file():
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        raise ControlMsgsBuildError(f"building control_msgs needs the Python headers: no Python.h in "
                                    f"{python_include} (install the python{version}-dev package)")
    return python_include, numpy.get_include()


def _run(command: list[str], log: object, env: dict[str, str]) -> None:
    log.write(f"\n$ {' '.join(command)}\n")
    log.flush()
    subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env, check=True)


def build(prefix: Path, work: Path, source: Path = SOURCE, module: str = "control_msgs.action") -> float:
    """Configure, build and install the interface package ``source`` (default: the vendored control_msgs) into
    ``prefix``; returns seconds taken. ``module`` must be importable afterwards."""
    start = time.monotonic()
    log_path = work / "build.log"
    if not (prefix / "share" / "rosidl_default_generators").is_dir():
        raise ControlMsgsBuildError(f"building {source.name} needs the rosidl/ament wheels of the test extra, not "
                                    f"installed in {prefix}: pip install -e '.[test]'")
    python_include, numpy_include = _headers()
    rewrite_include_paths(prefix, python_include, numpy_include)
    env = {**os.environ, "AMENT_PREFIX_PATH": str(prefix), "CMAKE_PREFIX_PATH": str(prefix),
           "PATH": f"{prefix / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    build_dir = work / "build"
    shutil.rmtree(build_dir, ignore_errors=True)  # a cache of another source directory (another clone) stops cmake
    with open(log_path, "w") as log:
        try:
            _run(["cmake", "-S", str(source), "-B", str(build_dir), f"-DCMAKE_INSTALL_PREFIX={prefix}",
                  f"-DPython3_EXECUTABLE={sys.executable}", "-DBUILD_TESTING=OFF", "-DCMAKE_BUILD_TYPE=Release"],
                 log, env)
            _run(["cmake", "--build", str(build_dir), "--parallel", str(os.cpu_count() or 1)], log, env)
            _run(["cmake", "--install", str(build_dir)], log, env)
        except (OSError, subprocess.CalledProcessError) as err:
            raise ControlMsgsBuildError(f"building {source.name} failed ({err}); build log: {log_path}") from err
    if not importable(module):
        raise ControlMsgsBuildError(f"{source.name} built but 'import {module}' still fails; build log: {log_path}")
    return time.monotonic() - start


def ensure_control_msgs() -> str:
    """Make ``import control_msgs.action`` work in this venv (build once); returns what was done."""
    if control_msgs_importable():
        return "control_msgs: importable"
    prefix = Path(sys.prefix)
    if prefix == Path(sys.base_prefix):
        raise ControlMsgsBuildError("control_msgs is not importable and this Python is not a venv: building it would "
                                    "install into the system Python; run the tests in a venv (see README)")
    work = prefix / "build" / "dynid_ros_control_msgs"
    work.mkdir(parents=True, exist_ok=True)
    with open(work / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run may be building it right now
        if control_msgs_importable():
            return "control_msgs: built by another run"
        seconds = build(prefix, work)
    return f"control_msgs: built into {prefix} in {seconds:.0f} s (log {work / 'build.log'})"
