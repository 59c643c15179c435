"""The test support that runs a shell command in its own process group leaves nothing behind when the command hangs
(support/process_group.py): a launch whose nodes outlived a test's timeout broke 25 later tests in one CI run."""

from __future__ import annotations

import os
import time

import pytest

from support.process_group import run_in_group


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (ended, not yet reaped by its new parent) is not running
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_hanging_command_fails_with_its_output_and_its_children_are_ended(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = f"sleep 300 & echo $! > {pid_file}; echo started a child; trap '' INT; wait"  # bash ignores Ctrl-C
    with pytest.raises(pytest.fail.Exception, match=r"did not end within 2 s(.|\n)*started a child"):
        run_in_group(["bash", "-c", script], timeout=2.0, what="the hanging script")
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child)


def test_a_command_that_ends_leaves_no_child_in_its_group(tmp_path):
    pid_file = tmp_path / "child.pid"
    done = run_in_group(["bash", "-c", f"sleep 300 & echo $! > {pid_file}; echo done"], timeout=30.0)
    assert done.returncode == 0 and done.stdout.strip() == "done"
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child)
