"""Directories of the shared data beside the repository, named by environment variables.

The data sets (real runs, the URDF zoo, a rosdistro snapshot) are not part of the repository: ``.ci/run`` sets
each variable to the copy beside the repository when there is one. Unset, the tests that need it skip with the
variable's reason (a script exits with it); set to a directory without the data, they fail.

Each lookup during a test run records the test (:func:`note_shared_use`, when ``DYNID_SHARED_USERS`` names a file):
``.ci/run`` then runs exactly those tests on a clone without the shared folder, where each must skip naming its
unset variable (:mod:`support.ci_skips`). No pytest import at the top: scripts use these helpers too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SHARED_USERS_ENV = "DYNID_SHARED_USERS"
"""A file: when set, each test that looks up a shared directory appends its node id there."""


def note_shared_use() -> None:
    """Record the running test as a user of a shared data set (when ``DYNID_SHARED_USERS`` names a file)."""
    record, current = os.environ.get(SHARED_USERS_ENV, ""), os.environ.get("PYTEST_CURRENT_TEST", "")
    if record and current:
        with open(record, "a", encoding="utf-8") as out:
            out.write(current.rsplit(" (", 1)[0] + "\n")


def shared_dir(env: str, *, unset_reason: str, marker: str, what: str) -> Path:
    """The directory named by ``env``; skips the calling test (or exits a script) with ``unset_reason`` when unset,
    raises when ``marker`` (a file below it) is missing: a directory that is not ``what``. The test is recorded
    (:func:`note_shared_use`)."""
    note_shared_use()
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
