"""The CI skip policy (ci_skips.py, .ci/run) and a clone that runs without the Panda data."""

import os
import re
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


def run_inner(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(
        "from support import ci_skips\nci_skips.HARDWARE_TESTS = ('test_inner.py::test_listed_hardware',)\n"
        "from support.ci_skips import pytest_make_collect_report, pytest_runtest_makereport  # noqa\n")
    (tmp_path / "test_inner.py").write_text(INNER)
    environment = {k: v for k, v in os.environ.items() if k not in ("CI", "DYNID_PANDA_DATA")}
    environment.update(env, PYTHONPATH=os.pathsep.join([str(TEST_DIR), environment.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfs", "-q",
                           "-o", "markers=hardware: real device", "test_inner.py"],
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


def test_in_ci_a_data_directory_without_the_data_fails(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_inner(tmp_path, CI="true", DYNID_PANDA_DATA=str(tmp_path / "empty"))
    assert "FAILED test_inner.py::test_needs_panda_data" in result.stdout
    assert "not the Panda data directory" in result.stdout


def test_in_ci_a_module_skipped_at_import_fails(tmp_path):
    (tmp_path / "test_module_skip.py").write_text("import pytest\npytest.importorskip('no_such_module_x')\n")
    run_inner(tmp_path)  # writes the conftest
    environment = {**os.environ, "CI": "true", "PYTHONPATH": str(TEST_DIR)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf", "test_module_skip.py"]
    result = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "unexpected skip of test_module_skip.py" in result.stdout, result.stdout


def test_ci_script_sets_ci_and_the_data_beside_the_repository():
    script = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in script and "export CI=true" in script  # pytest exit 5 (no tests) fails the script
    assert "../shared/data/panda_gaz2019" in script and "export DYNID_PANDA_DATA" in script
    assert script.rstrip().endswith("pip install -e '.[test]' && python -m pytest")
    assert "pip install -e '.[test]' && python -m pytest" in (ROOT / "README.md").read_text()
    assert "-rs" in (ROOT / "setup.cfg").read_text()


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
