"""Does a ``package.xml`` key resolve for a ROS distribution? Checked against a rosdistro snapshot.

``rosdep install --from-paths . --ignore-src`` resolves each ``<depend>``/``<exec_depend>``/``<test_depend>``
key either as a ROS package released in the distribution (``<distro>/distribution.yaml``: a repository's
``release.packages``, or the repository's name when that list is absent) or as a key of the rosdep
files (``rosdep/base.yaml``, ``rosdep/python.yaml``) with an entry for the distribution's Ubuntu. The
snapshot (github.com/ros/rosdistro) is not part of the repository: its directory comes from
``DYNID_ROSDISTRO`` (``.ci/run`` sets it to the copy beside the repository); unset, the tests skip.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from support.shared_dirs import shared_dir

ENV = "DYNID_ROSDISTRO"
UNSET_REASON = f"{ENV} is not set (directory of a github.com/ros/rosdistro snapshot: rosdep/, jazzy/, humble/)"
UBUNTU = {"jazzy": "noble", "humble": "jammy"}
"""The Ubuntu release of each distribution (REP 2000)."""
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the index files are 10 000+ lines


def rosdistro_dir() -> Path:
    return shared_dir(ENV, unset_reason=UNSET_REASON, marker="rosdep/base.yaml", what="a rosdistro snapshot")


@lru_cache(maxsize=4)
def released_packages(root: Path, distro: str) -> frozenset[str]:
    repositories = yaml.load((root / distro / "distribution.yaml").read_text(), Loader=LOADER)["repositories"]
    names: set[str] = set()
    for name, repository in repositories.items():
        release = (repository or {}).get("release")
        if release:
            names.update(release.get("packages") or [name])
    return frozenset(names)


@lru_cache(maxsize=2)
def rosdep_rules(root: Path) -> dict:
    rules: dict = {}
    for name in ("base.yaml", "python.yaml"):
        rules.update(yaml.load((root / "rosdep" / name).read_text(), Loader=LOADER))
    return rules


def resolves_on_ubuntu(rule: object, codename: str) -> bool:
    """Whether a rosdep rule has a non-empty entry for Ubuntu ``codename`` (or for every OS: ``'*'``)."""
    if not isinstance(rule, dict):
        return False
    ubuntu = rule.get("ubuntu", rule.get("*"))
    if isinstance(ubuntu, (list, str)):
        return bool(ubuntu)
    if not isinstance(ubuntu, dict):
        return False
    if any(installer in ubuntu for installer in ("apt", "pip", "source")):
        return True
    entry = ubuntu.get(codename, ubuntu.get("*"))
    return bool(entry)


def unresolved(keys: list[str], root: Path, distro: str) -> list[str]:
    """The keys that ``rosdep install`` could not resolve for ``distro``."""
    released, rules = released_packages(root, distro), rosdep_rules(root)
    return [key for key in keys if key not in released and not resolves_on_ubuntu(rules.get(key), UBUNTU[distro])]
