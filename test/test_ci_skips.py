"""The CI skip policy (ci_skips.py, .ci/run) and a clone that runs without the Panda data."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

TEST_DIR = Path(__file__).resolve().parent
ROOT = TEST_DIR.parent

INNER = '''
import pytest

from support.panda_data import panda_series

@pytest.mark.hardware
def test_listed_hardware():
    pytest.skip("no robot here")

@pytest.mark.hardware
def test_unlisted_hardware():
    pytest.skip("no robot here")

def test_plain_skip():
    pytest.skip("something missing")

def test_needs_panda_data():
    panda_series()

def test_passes():
    assert True
'''


INNER_UNSET = ("CI", "DYNID_PANDA_DATA", "DYNID_SHARED_USERS")
"""Not inherited by the inner runs: the outer run's CI policy, its data, and its record of the tests that read a shared
data set (an inner test id recorded there made .ci/run's clone pass look for ``test_inner.py``)."""


def run_inner(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(
        "from support import ci_skips\nci_skips.HARDWARE_TESTS = ('test_inner.py::test_listed_hardware',)\n"
        "from support.ci_skips import pytest_addoption, pytest_make_collect_report, pytest_runtest_makereport"
        "  # noqa\n")
    (tmp_path / "test_inner.py").write_text(INNER)
    environment = {k: v for k, v in os.environ.items() if k not in INNER_UNSET}
    environment.update(env, PYTHONPATH=os.pathsep.join([str(TEST_DIR), environment.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfs", "-q",
                           "-o", "markers=hardware: real device", *args, "test_inner.py"],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)


def outcome_line(result: subprocess.CompletedProcess) -> str:
    return result.stdout.strip().splitlines()[-1]


def test_outside_ci_skips_are_reported_not_failed(tmp_path):
    result = run_inner(tmp_path)
    assert result.returncode == 0, result.stdout
    assert "1 passed, 4 skipped" in outcome_line(result)
    assert "DYNID_PANDA_DATA is not set" in result.stdout  # -rs names the reason


def test_in_ci_only_listed_hardware_and_unset_data_may_skip(tmp_path):
    result = run_inner(tmp_path, CI="true")
    assert result.returncode == 1, result.stdout
    assert "2 failed, 1 passed, 2 skipped" in outcome_line(result), result.stdout
    assert "FAILED test_inner.py::test_unlisted_hardware" in result.stdout
    assert "FAILED test_inner.py::test_plain_skip" in result.stdout
    assert "unexpected skip in CI" in result.stdout


def test_on_a_clone_without_the_shared_folder_every_skip_names_its_unset_variable(tmp_path):
    """``.ci/run``'s clone pass: CI unset, ``--skips-need-reasons``: the same policy as CI."""
    result = run_inner(tmp_path, "--skips-need-reasons")
    assert result.returncode == 1, result.stdout
    assert "2 failed, 1 passed, 2 skipped" in outcome_line(result), result.stdout
    assert "FAILED test_inner.py::test_plain_skip" in result.stdout
    assert "unexpected skip with --skips-need-reasons" in result.stdout


def test_a_run_records_the_tests_that_read_a_shared_data_set(tmp_path):
    (tmp_path / "empty").mkdir()
    record = tmp_path / "users.txt"
    run_inner(tmp_path, DYNID_PANDA_DATA=str(tmp_path / "empty"), DYNID_SHARED_USERS=str(record))
    assert record.read_text().splitlines() == ["test_inner.py::test_needs_panda_data"]


def test_an_inner_run_never_records_into_the_outer_runs_record(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    outer_record = tmp_path / "outer_users.txt"
    monkeypatch.setenv("DYNID_SHARED_USERS", str(outer_record))
    run_inner(tmp_path, DYNID_PANDA_DATA=str(tmp_path / "empty"))
    assert not outer_record.exists()


def test_in_ci_a_data_directory_without_the_data_fails(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_inner(tmp_path, CI="true", DYNID_PANDA_DATA=str(tmp_path / "empty"))
    assert "FAILED test_inner.py::test_needs_panda_data" in result.stdout
    assert "not the Panda data directory" in result.stdout


def test_in_ci_a_module_skipped_at_import_fails(tmp_path):
    (tmp_path / "test_module_skip.py").write_text("import pytest\npytest.importorskip('no_such_module_x')\n")
    run_inner(tmp_path)  # writes the conftest
    environment = {**{k: v for k, v in os.environ.items() if k not in INNER_UNSET}, "CI": "true",
                   "PYTHONPATH": str(TEST_DIR)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf", "test_module_skip.py"]
    result = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "unexpected skip of test_module_skip.py" in result.stdout, result.stdout


STUB = """#!/bin/bash
# {name}: logs its arguments and the variables .ci/run sets, then does what the test needs of it
printf '%s\\t%s\\t%s\\n' "{name}" "$*" "CI=${{CI:-}} PANDA=${{DYNID_PANDA_DATA:-}} DVRK=${{DYNID_DVRK_DATA:-}} \\
ROSDISTRO=${{DYNID_ROSDISTRO:-}} NOCACHE=${{PIP_NO_CACHE_DIR:-}} BLAS=${{OPENBLAS_CORETYPE:-}} \\
PWD=$(basename "$PWD")" >> "{log}"
{action}
"""
VENV_ACTION = """if [ "$1 $2" = "-m venv" ]; then
    mkdir -p "$3/bin"; echo 'PATH="{venv_bin}:$PATH"' > "$3/bin/activate"
fi"""
PYTEST_ACTION = """if [ "$1 $2" = "-m pytest" ]; then
    [ -n "{record}" ] && [ -n "${{DYNID_SHARED_USERS:-}}" ] && echo "{record}" >> "$DYNID_SHARED_USERS"
    exit {code}
fi"""


def run_ci_script(tmp_path: Path, *, shared: bool, pytest_exit: int,
                  record: str = "") -> tuple[int, list[tuple[str, str, str]]]:
    """Run a copy of .ci/run whose python3, python, pip, git and chromium are stubs logging what they are asked; each
    pytest run records ``record`` as a test that read a shared data set."""
    repo, stubs, venv_bin, log = (tmp_path / name for name in ("repo", "stubs", "venv_stubs", "log.tsv"))
    (repo / ".ci").mkdir(parents=True)
    (repo / ".ci" / "run").write_text((ROOT / ".ci" / "run").read_text())
    if shared:
        for folder in ("data/panda_gaz2019", "data/dvrk_wpi", "rosdistro/rosdep"):
            (tmp_path / "shared" / folder).mkdir(parents=True)
    actions = {stubs / "python3": VENV_ACTION.format(venv_bin=venv_bin), stubs / "chromium": "",
               stubs / "git": 'mkdir -p "${@: -1}"', venv_bin / "pip": "",
               venv_bin / "python": PYTEST_ACTION.format(record=record, code=pytest_exit)}
    for path, action in actions.items():
        path.parent.mkdir(exist_ok=True)
        path.write_text(STUB.format(name=path.name, log=log, action=action))
        path.chmod(0o755)
    environment = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(["bash", str(repo / ".ci" / "run")], env=environment, capture_output=True, text=True,
                            timeout=60)
    calls = [tuple(line.split("\t")) for line in log.read_text().splitlines()] if log.exists() else []
    return result.returncode, calls


def readme_test_command() -> list[list[str]]:
    """The README quick start's second command, as the commands it chains."""
    block = re.search(r"## Quick start\n+```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    line = [line for line in block.splitlines() if line.strip()][1].split("#")[0]
    return [shlex.split(part) for part in line.split("&&")]


def variables(call: tuple[str, str, str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in call[2].split(" "))


def test_ci_script_runs_the_readme_test_command_with_ci_set_and_the_data_beside_the_repository(tmp_path):
    code, calls = run_ci_script(tmp_path, shared=True, pytest_exit=0)
    assert code == 0
    readme = readme_test_command()
    commands = [[name, *shlex.split(args)] for name, args, _ in calls]
    start = next(i for i in range(len(commands)) if commands[i:i + len(readme)] == readme)
    pytest_calls = [call for call in calls[start + len(readme) - 1:] if call[1].startswith("-m pytest")]
    shared = (tmp_path / "shared").resolve()
    assert variables(pytest_calls[0]) == {
        "CI": "true", "PANDA": str(shared / "data/panda_gaz2019"), "NOCACHE": "1",
        "DVRK": str(shared / "data/dvrk_wpi"), "ROSDISTRO": str(shared / "rosdistro"), "BLAS": "", "PWD": "repo"}
    assert calls[0][:2] == ("python3", "-m venv .ci-venv")  # a fresh venv first
    # then the corpus, and the numerical rooms with the BLAS kernel some machines choose
    assert [call[1] for call in pytest_calls[1:]] == [
        "-m pytest -m corpus -n 2 --durations=20",
        "-m pytest test/dynamics test/estimation test/excitation test/identification"]
    assert variables(pytest_calls[2])["BLAS"] == "Haswell" and variables(pytest_calls[2])["CI"] == "true"


def test_ci_script_runs_what_read_the_shared_folder_on_a_clone_without_it(tmp_path):
    """The last pass: a clone (no shared folder beside it), CI and the data variables unset, the recorded tests."""
    code, calls = run_ci_script(tmp_path, shared=True, pytest_exit=0, record="test/x.py::test_reads_panda")
    assert code == 0
    git, last = calls[-2], calls[-1]
    assert git[0] == "git" and git[1].startswith("clone -q . ")
    name, args, _ = last
    assert name == "python" and "--skips-need-reasons" in args and "-m corpus or not corpus" in args
    assert variables(last) == {"CI": "", "PANDA": "", "DVRK": "", "ROSDISTRO": "", "NOCACHE": "1", "BLAS": "",
                               "PWD": "dynid_ros"}
    listed = Path(shlex.split(args)[-1].removeprefix("@")).read_text().splitlines()
    assert listed == ["test/x.py::test_reads_panda"]


def test_ci_script_fails_when_the_tests_fail_and_runs_without_the_shared_folder(tmp_path):
    code, calls = run_ci_script(tmp_path, shared=False, pytest_exit=1)
    assert code == 1 and calls[-1][:2] == ("python", "-m pytest")
    assert calls[-1][2] == "CI=true PANDA= DVRK= ROSDISTRO= NOCACHE=1 BLAS= PWD=repo"
    assert "-rs" in (ROOT / "setup.cfg").read_text()  # skips are listed with their reason


@pytest.mark.parametrize("folder", ["test", "benchmarks", "dynid_ros"])
def test_no_importorskip_and_no_path_outside_the_repository(folder):
    for path in sorted((ROOT / folder).rglob("*.py")):
        if path.name == "test_ci_skips.py":
            continue
        text = path.read_text()
        assert "importorskip" not in text, f"{path}: importorskip hides a broken import"
        assert "../shared" not in text, f"{path}: reads outside the repository"
        if path != ROOT / "test" / "support" / "paths.py":  # the one place that climbs from test/support to the root
            assert not re.search(r"__file__\)[^\n]*\.parents\[[2-9]\]", text), f"{path}: reads outside the repository"


def test_ci_installs_without_a_pip_cache():
    """CI installs what the package index serves today, as a fresh machine would: no pip cache."""
    script = (ROOT / ".ci" / "run").read_text()
    lines = [line.strip() for line in script.splitlines()]
    assert "export PIP_NO_CACHE_DIR=1" in lines
    assert lines.index("export PIP_NO_CACHE_DIR=1") < next(i for i, line in enumerate(lines) if "pip install" in line)
