"""Where the tests find the repository's own files (never anything outside it)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root."""
FILES = REPO / "test" / "files"
"""Small input files of the tests (DH tables, short trajectories)."""
