"""The code style the repository keeps (.ruff.toml: pycodestyle, pyflakes, import order, bugbear, and docstrings on
every public module, class, function and method of the package) is checked by the suite, so CI enforces it."""

import subprocess
import sys

from support.paths import REPO


def test_ruff_finds_nothing():
    paths = ["dynid_ros", "test", "benchmarks", "launch", "setup.py"]
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *paths], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
