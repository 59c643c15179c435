"""A command typed into a shell, run in its own process group, and never left behind.

``subprocess.run(["bash", "-c", "ros2 launch ..."], timeout=...)`` kills only bash when the timeout expires: ``ros2
launch`` and the five nodes it started keep running, on the test process's DDS domain, and every later test meets their
services, topics and action servers (a CI run of 613c11a: one launch that did not end in 480 s, then 25 failures
from "more than one action server" and a recorder that answered another test's start). Here the command runs in a new
session; when it does not end in time the whole group gets SIGINT (as a terminal's Ctrl-C), then SIGKILL, and the test
fails with the command's last output, which tells where it stopped.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

INTERRUPT_GRACE_S = 20.0
"""Seconds the group has to end after SIGINT before SIGKILL (``ros2 launch`` escalates to SIGTERM after 5 s and
SIGKILL after 10 s by itself: launch's ``sigterm_timeout`` and ``sigkill_timeout``)."""


def end_group(process: subprocess.Popen, grace: float = INTERRUPT_GRACE_S) -> None:
    """SIGINT to ``process``'s group, SIGKILL to what is left of it after ``grace`` s (or at once when the leader has
    ended: what remains of its group was left behind)."""
    try:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # the group has ended
        pass
    process.wait()


def run_in_group(command: Sequence[str], *, timeout: float, cwd: Path | None = None,
                 env: dict[str, str] | None = None, what: str | None = None) -> subprocess.CompletedProcess:
    """Run ``command`` (stdout and stderr together in a file, text) in a new session until it ends, then end what is
    left of its group; fail the test with its last output when it does not end within ``timeout`` s."""
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(list(command), stdout=log, stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env,
                                   start_new_session=True)
        try:
            process.wait(timeout=timeout)
            hung = False
        except subprocess.TimeoutExpired:
            hung = True
        finally:
            end_group(process)
        log.seek(0)
        output = log.read()
    if hung:
        pytest.fail(f"{what or ' '.join(command)} did not end within {timeout:g} s; its process group was ended. "
                    f"Its last output:\n{output[-6000:]}")
    return subprocess.CompletedProcess(process.args, process.returncode, output, "")
