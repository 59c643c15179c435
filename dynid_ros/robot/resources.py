"""Files the package ships outside the Python package: ``urdf/``, ``config/``, ``launch/``.

They live at the top of the source tree, and a ``pip install .`` or ``colcon build`` installs them
into ``<prefix>/share/dynid_ros/`` (``setup.py`` data_files). :func:`share_path` finds them in
either place, so the CLI and the nodes work from a checkout, a pip install or a ROS workspace.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dynid_ros.errors import ConfigError

PACKAGE = "dynid_ros"
ROBOTS = ("panda", "ur5e")
"""Robots shipped with a URDF (``urdf/``), a config and controllers files (``config/``) and trajectories."""


def share_directories() -> list[Path]:
    """Candidate roots, most specific first: the source tree, the install prefix, the ament index."""
    roots = [Path(__file__).resolve().parent.parent.parent, Path(sys.prefix) / "share" / PACKAGE]
    try:  # a ROS workspace: the ament index knows the share directory
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            roots.append(Path(get_package_share_directory(PACKAGE)))
        except (PackageNotFoundError, OSError):  # not in the index, or no AMENT_PREFIX_PATH
            pass
    except ImportError:
        pass
    return roots


def share_path(relative: str | Path) -> Path:
    """Absolute path of a shipped file such as ``urdf/panda.urdf`` or ``config/panda.yaml``."""
    for root in share_directories():
        candidate = root / relative
        if candidate.exists():
            return candidate
    raise ConfigError(f"{relative}: not found in the dynid_ros share directories "
                      f"({', '.join(str(r) for r in share_directories())})")


def robot_file(robot: str, kind: str) -> Path:
    """``robot_file("panda", "urdf")`` -> ``urdf/panda.urdf``; kind ``config`` -> ``config/panda.yaml``."""
    suffix = {"urdf": ".urdf", "config": ".yaml"}[kind]
    return share_path(f"{kind}/{robot}{suffix}")


def find_file(path: str | Path, what: str, config: str | Path | None = None) -> Path:
    """An existing file a user named, absolute or relative to (in this order) the working directory, the folder of
    the ``config`` file that names it, the Python package (``robot/trajectories/...``) and the share directories
    (``urdf/panda.urdf``); ConfigError naming ``what`` (the flag, parameter or key) otherwise."""
    if not str(path):
        raise ConfigError(f"no {what} given")
    candidate = Path(path).expanduser()
    if candidate.is_absolute():
        if not candidate.is_file():
            raise ConfigError(f"{what} {candidate}: no such file")
        return candidate.resolve()
    roots = [Path.cwd(), *([Path(config).expanduser().resolve().parent] if config else []),
             Path(__file__).resolve().parent.parent, *share_directories()]
    for root in roots:
        if (root / candidate).is_file():
            return (root / candidate).resolve()
    raise ConfigError(f"{what} {path}: no such file (looked in {', '.join(str(r) for r in roots)})")
