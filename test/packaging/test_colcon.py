"""The README's colcon path, run with colcon from PyPI (colcon-common-extensions) and the launch stack.

Clone into a workspace (here: a copy of this checkout's files), ``colcon build``, ``source install/setup.bash``,
``ros2 launch dynid_ros offline.launch.py``: the installed package (ament index, share/dynid_ros/launch,
executables in lib/dynid_ros) is what runs, not this checkout. ``rosdep install`` is left out (its index needs
the network; test_package_xml.py checks every key against a rosdistro snapshot instead). About 30 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.launch_stack import ROOT, require_launch_stack
from support.process_group import run_in_group
from support.ros_helpers import isolate_ros_environment

NOT_SOURCES = (".git", ".ci-venv", ".venv", "build", "install", "log", "*.egg-info", "__pycache__", "dynid_runs",
               "demo_out", ".pytest_cache", ".ruff_cache")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_launch_stack()
    if shutil.which("colcon", path=str(Path(sys.executable).parent)) is None:
        raise FileNotFoundError("colcon is not installed in this venv: pip install -e '.[test]' "
                                "(colcon-common-extensions)")
    isolate_ros_environment()
    ws = tmp_path_factory.mktemp("dynid_ws")
    shutil.copytree(ROOT, ws / "src" / "dynid_ros", ignore=shutil.ignore_patterns(*NOT_SOURCES), symlinks=True)
    return ws


def workspace_env() -> dict[str, str]:
    """This venv first on PATH, its ament index as the underlay (what ``source /opt/ros/jazzy/setup.bash`` gives);
    no PYTHONPATH into this checkout, so the workspace's install is what runs."""
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLCON_PREFIX_PATH")}
    env.update(PATH=os.pathsep.join([bindir, env.get("PATH", "")]), AMENT_PREFIX_PATH=sys.prefix)
    return env


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 10 s Panda run from ``dynid simulate`` of the shipped trajectory."""
    from dynid_ros.ros.common import resolve_file

    out = tmp_path_factory.mktemp("bag") / "run1"
    trajectory = resolve_file("robot/trajectories/panda_identification.yaml", "trajectory_file")
    subprocess.run([sys.executable, "-m", "dynid_ros.cli", "simulate", "--urdf", str(ROOT / "urdf" / "panda.urdf"),
                    "--trajectory", str(trajectory), "--bag", str(out), "--config", str(ROOT / "config" / "panda.yaml"),
                    "--no-progress"], check=True, capture_output=True, timeout=300)
    return out


def test_colcon_build_then_ros2_launch_from_the_install(workspace, bag, tmp_path):
    env = workspace_env()
    build = subprocess.run(["colcon", "build", "--packages-select", "dynid_ros"], cwd=workspace, env=env,
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    install = workspace / "install" / "dynid_ros"
    assert (install / "share" / "ament_index" / "resource_index" / "packages" / "dynid_ros").is_file()
    for exe in ("sim_node", "excitation_node", "recorder_node", "identification_node", "orchestrator_node"):
        assert os.access(install / "lib" / "dynid_ros" / exe, os.X_OK), exe
    script = (f"source install/setup.bash && ros2 pkg prefix dynid_ros && "
              f"ros2 launch dynid_ros offline.launch.py robot:=panda bag_path:={bag} output_dir:={tmp_path / 'out'}")
    run = run_in_group(["bash", "-c", script], cwd=workspace, env=env, timeout=300, what=script)
    output = run.stdout
    assert run.returncode == 0, output[-4000:]
    assert run.stdout.splitlines()[0] == str(install)  # ros2 pkg prefix: launch_ros runs lib/dynid_ros from there
    assert ", wrote " in output and (tmp_path / "out" / "identified.urdf").is_file()
    assert "Traceback" not in output
