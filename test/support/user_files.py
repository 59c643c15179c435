"""A user's own files, and a digest to show they were left untouched (nothing deletes or overwrites what the
tool did not write)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def tree_digest(root: Path) -> dict[str, str]:
    """Every file and directory under ``root`` (hidden ones too) with the hash of its content."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


def user_directory(root: Path) -> Path:
    """A directory of the user's: files, a hidden file, a sub-directory."""
    root.mkdir(parents=True)
    (root / "notes.txt").write_text("my notes\n")
    (root / ".hidden").write_bytes(b"\x00\x01secret")
    (root / "sub").mkdir()
    (root / "sub" / "data.csv").write_text("1,2,3\n")
    return root
