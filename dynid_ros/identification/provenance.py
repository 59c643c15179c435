"""Where a result came from: enough to reproduce it or to notice that an input changed.

The command line, the dynid version, each input file's path and SHA-256 (a bag directory: one hash over its
files' names and contents, in name order), the topic, the window and the options.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from dynid_ros import __version__

CHUNK = 1 << 20
"""Bytes read at a time when hashing."""


def sha256_path(path: str | Path) -> str | None:
    """SHA-256 of a file, or of a directory's regular files (relative names and contents, sorted); None if absent."""
    path = Path(path)
    digest = hashlib.sha256()
    if path.is_file():
        files = [(path.name, path)]
    elif path.is_dir():
        files = sorted((str(p.relative_to(path)), p) for p in path.rglob("*") if p.is_file())
    else:
        return None
    for name, file in files:
        if path.is_dir():
            digest.update(name.encode() + b"\0")
        with file.open("rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def sha256_text(text: str | None) -> str | None:
    """SHA-256 of a text (e.g. the URDF after xacro), None for None."""
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def command_line(argv: list[str] | None = None) -> str:
    """The command as typed (shell-quoted), the program name reduced to its file name."""
    argv = list(sys.argv if argv is None else argv)
    if argv:
        argv[0] = Path(argv[0]).name
    return shlex.join(argv)


def provenance(options: object, inputs: Mapping[str, str | Path | None], urdf_text: str | None = None,
               argv: list[str] | None = None) -> dict:
    """The provenance record: ``command``, ``dynid_version``, ``inputs`` ({role: {path, sha256}}), ``urdf_sha256``
    (of the URDF text actually used), ``topic``, ``window``, ``options`` (a dataclass or a mapping)."""
    values = dataclasses.asdict(options) if dataclasses.is_dataclass(options) else dict(options or {})
    return {
        "command": command_line(argv),
        "dynid_version": __version__,
        "inputs": {role: {"path": str(Path(path).resolve()), "sha256": sha256_path(path)}
                   for role, path in inputs.items() if path not in (None, "")},
        "urdf_sha256": sha256_text(urdf_text),
        "topic": values.get("topic"),
        "window": {"start": values.get("start"), "end": values.get("end")},
        "options": {key: _plain(value) for key, value in values.items()},
    }


def _plain(value: object) -> object:
    """A JSON-friendly copy (tuples as lists)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
