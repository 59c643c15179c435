"""The URDF zoo: vendor arm descriptions as published (xacro, meshes where small), beside the repository.

Its directory comes from the environment variable ``DYNID_URDF_ZOO`` (``.ci/run`` sets it to the ``urdf_zoo``
folder of the shared directory beside the repository when there is one). Unset, the tests that need it skip with
that reason; set to a directory without the zoo, they fail. ``manifest.yaml`` lists each robot: its URDF (expanded,
as the vendor's xacro gives it), the xacro entry and arguments it was expanded from, its package folders.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from support.shared_dirs import shared_dir

ENV = "DYNID_URDF_ZOO"
UNSET_REASON = f"{ENV} is not set (directory of the URDF zoo: vendor descriptions as published)"


@dataclass(frozen=True)
class ZooRobot:
    """One robot of the zoo: ``urdf`` (expanded), ``xacro`` (the vendor's entry, None for a plain URDF) with its
    ``xacro_args``, ``package_dir`` (where its ROS packages are)."""

    name: str
    urdf: Path
    xacro: Path | None
    xacro_args: tuple[str, ...]
    package_dir: Path


def zoo_dir() -> Path:
    """The zoo's directory; skips the calling test (or exits a script) when ``DYNID_URDF_ZOO`` is unset."""
    return shared_dir(ENV, unset_reason=UNSET_REASON, marker="manifest.yaml", what="the URDF zoo")


@lru_cache(maxsize=2)
def _robots(directory: Path) -> dict[str, ZooRobot]:
    manifest = yaml.safe_load((directory / "manifest.yaml").read_text())
    out = {}
    for entry in manifest["robots"]:
        xacro = entry.get("xacro") or {}
        package_dir = directory / entry["package_dirs"][0]
        generated = bool(entry.get("generated_by_xacro")) and xacro.get("entry")
        out[entry["name"]] = ZooRobot(entry["name"], directory / entry["urdf"],
                                      package_dir / xacro["entry"] if generated else None,
                                      tuple(xacro.get("args") or ()) if generated else (), package_dir)
    return out


def zoo_robots() -> dict[str, ZooRobot]:
    """Every robot of the zoo by name (skips when the zoo is not there)."""
    return _robots(zoo_dir())


def zoo_urdf(name: str) -> Path:
    """The expanded URDF of the zoo robot ``name``."""
    return zoo_robots()[name].urdf


ROBOT_NAMES = ("ur5e", "fr3", "iiwa14", "abb_irb2400", "fanuc_lrmate200id", "motoman_sia5d", "xarm7", "doosan_m1013",
               "wx250s", "jaco2_j2n6s300", "sawyer", "openarm")
"""The zoo's robots (its manifest), named here so that test ids exist without the zoo."""
