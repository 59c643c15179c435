"""Directories of the shared data beside the repository, named by environment variables.

The data sets (real runs, the URDF zoo, a rosdistro snapshot) are not part of the repository: ``.ci/run`` sets
each variable to the copy beside the repository when there is one. Unset, the tests that need it skip with the
variable's reason (a script exits with it); set to a directory without the data, they fail.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def shared_dir(env: str, *, unset_reason: str, marker: str, what: str) -> Path:
    """The directory named by ``env``; skips the calling test (or exits a script) with ``unset_reason`` when unset,
    raises when ``marker`` (a file below it) is missing: a directory that is not ``what``."""
    value = os.environ.get(env, "")
    if not value:
        if "pytest" in sys.modules:
            import pytest

            pytest.skip(unset_reason)
        raise SystemExit(f"{unset_reason}: set it to run this")
    path = Path(value).expanduser()
    if not (path / marker).is_file():
        raise FileNotFoundError(f"{env}={value}: no {marker} there (not {what})")
    return path
