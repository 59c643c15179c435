"""On-disk cache of base-parameter maps, keyed by what they depend on (the model's kinematics and the layout).

The base parameters of a model and layout (Sousa & Cortesão 2014 section 4.1) take a regressor at random states,
a QR and an SVD, and sympy for their readable expressions: about a second for a 7-DOF arm, paid again by every
``identify``, ``validate``, ``excite`` and every bag of a ``batch``. They depend only on the joints' placements,
axes, kinds and tree, the mimic coupling, gravity, the position limits (the random states are drawn within them),
the layout and the reduction's settings, never on the inertias: those, with a format version, are hashed (SHA-256)
into the file name, so a changed URDF or layout can never read a stale entry.

Directory: ``$DYNID_CACHE_DIR`` if set (empty: no cache), else ``$XDG_CACHE_HOME/dynid_ros``, else
``~/.cache/dynid_ros``. Entries are small JSON files written atomically; an unreadable or unwritable directory
only costs the computation, never a failure.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

from dynid_ros.robot.model import RobotModel
from dynid_ros.robot.parameters import ParameterLayout

LOG = logging.getLogger(__name__)

CACHE_VARIABLE = "DYNID_CACHE_DIR"
FORMAT_VERSION = 1
"""Bumped whenever the computation or the stored fields change: older entries are then simply not found."""


def cache_directory() -> Path | None:
    """Where entries live (module docstring), or None when ``DYNID_CACHE_DIR`` is set empty."""
    explicit = os.environ.get(CACHE_VARIABLE)
    if explicit is not None:
        return Path(explicit).expanduser() if explicit.strip() else None
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "dynid_ros"


def cache_key(model: RobotModel, layout: ParameterLayout, settings: dict) -> str:
    """SHA-256 of everything the base-parameter map of ``model``/``layout`` depends on (module docstring)."""
    digest = hashlib.sha256()
    header = {"version": FORMAT_VERSION, "joints": list(layout.joints), "links": list(layout.links),
              "friction": list(layout.friction), "armature": layout.armature, "settings": settings,
              "kinds": [k.kind for k in model.kinematics], "parents": [k.parent for k in model.kinematics]}
    digest.update(json.dumps(header, sort_keys=True).encode())
    arrays = [model.gravity, model.position_limits]
    for kin in model.kinematics:
        arrays += [kin.rotation, kin.translation, kin.axis]
    if model.coupling is not None:
        arrays += [model.coupling, model.coupling_offset]
    for array in arrays:
        digest.update(np.ascontiguousarray(array, dtype=float).tobytes())
    return digest.hexdigest()


def load(key: str) -> dict | None:
    """The stored entry ``key`` (``independent``, ``dependent``, ``K_d``, ``expressions``), or None."""
    directory = cache_directory()
    if directory is None:
        return None
    path = directory / f"base_{key}.json"
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("version") != FORMAT_VERSION:
        return None
    return entry


def store(key: str, independent: np.ndarray, dependent: np.ndarray, k_d: np.ndarray, expressions: list[str]
          ) -> None:
    """Write entry ``key`` atomically (a temporary file renamed into place); a failure is logged, not raised."""
    directory = cache_directory()
    if directory is None:
        return
    entry = {"version": FORMAT_VERSION, "independent": independent.tolist(), "dependent": dependent.tolist(),
             "K_d": k_d.tolist(), "expressions": list(expressions)}
    temporary = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=directory, prefix=".base_", suffix=".tmp", delete=False) as tmp:
            temporary = Path(tmp.name)
            json.dump(entry, tmp)
        os.replace(temporary, directory / f"base_{key}.json")
    except OSError as err:
        LOG.debug("base-parameter cache not written in %s: %s", directory, err)
        if temporary is not None:
            temporary.unlink(missing_ok=True)  # our own temporary file
