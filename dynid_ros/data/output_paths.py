"""Output paths that never lose what the user had.

Every directory dynid writes (an identification result, a demo, a simulated bag, a ground truth)
holds a marker file :data:`MARKER` naming its kind. An output path that exists is refused unless it
is dynid's own earlier output of the same kind (:func:`check_output`); then it is rewritten
atomically (:func:`dynid_ros.reporting.result_directory.atomic_directory`). An output never equals or contains an
input, nor lies inside an input directory (a bag). A refused path is left untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from dynid_ros.errors import ConfigError

MARKER = ".dynid_output"
"""File in every directory dynid writes; its content is the kind of output (one line)."""

RESULT = "identification result"
DEMO = "demo"
SIMULATED_BAG = "simulated bag"
TRUTH = "simulated ground truth"
BATCH = "identification batch"
BATCH_SUMMARY = "summary.json"
"""A batch directory's summary (:mod:`dynid_ros.fleet.batch`), with the prior's scales its bags share."""
DRIFT = "drift report"
PAYLOAD = "payload result"
BODY = "body result"


def _resolved(path: str | Path) -> Path:
    return Path(path).expanduser().resolve()


def output_kind(path: str | Path) -> str | None:
    """The kind of dynid output ``path`` is (its marker), None when it is not one."""
    marker = Path(path) / MARKER
    if not marker.is_file():
        return None
    try:
        return marker.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def check_output(path: str | Path, kind: str, inputs: Iterable[str | Path | None] = (), flag: str = "--out") -> Path:
    """Refuse an output path that would lose data; return it resolved.

    Raises:
        ConfigError: ``path`` equals or contains an input, lies inside an input directory, or exists and
            is not dynid's own earlier output of ``kind`` (one line; nothing is touched).
    """
    out = _resolved(path)
    for given in inputs:
        if given is None or str(given) == "":
            continue
        source = _resolved(given)
        if out == source or out in source.parents:
            raise ConfigError(f"{flag} {path} would replace the input {given}: choose an output outside it")
        if source.is_dir() and source in out.parents:
            raise ConfigError(f"{flag} {path} is inside the input {given}: choose an output outside it")
    if out.exists() or out.is_symlink():
        if not out.is_dir() or out.is_symlink():
            raise ConfigError(f"{flag} {path} exists already and is not a directory dynid wrote: refusing to "
                              f"touch it (choose a new path)")
        found = output_kind(out)
        if found != kind:
            what = _a(found) if found else "not a directory dynid wrote"
            raise ConfigError(f"{flag} {path} exists already and is {what}, not {_a(kind)}: refusing to touch it "
                              f"(choose a new path, or remove it yourself)")
    return out


def _a(kind: str) -> str:
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def require_absent(path: str | Path, flag: str) -> Path:
    """Refuse an existing path (outputs that are never rewritten, e.g. recorded bags); return it resolved."""
    out = _resolved(path)
    if out.exists() or out.is_symlink():
        raise ConfigError(f"{flag} {path} already exists: choose another path or remove it (it was not touched)")
    return out


def mark(directory: str | Path, kind: str) -> None:
    """Write the marker that makes ``directory`` dynid's own output of ``kind``."""
    (Path(directory) / MARKER).write_text(kind + "\n", encoding="utf-8")


def is_trajectory_file(path: str | Path) -> bool:
    """Whether ``path`` is an excitation trajectory file (what ``dynid excite`` may overwrite)."""
    import yaml

    try:
        content = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(content, dict) and {"joints", "wf", "q0", "a", "b"} <= set(content)


def is_validation_report(path: str | Path) -> bool:
    """Whether ``path`` is a validation report (what ``dynid validate --report`` may overwrite)."""
    import json

    try:
        content = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(content, dict) and "relative_error" in content


def check_output_file(path: str | Path, inputs: Iterable[str | Path | None] = (), flag: str = "--out",
                      is_own: Callable[[Path], bool] = is_trajectory_file, what: str = "trajectory file") -> Path:
    """Refuse a single-file output that equals an input or would overwrite anything but a ``what`` (``is_own``)."""
    out = _resolved(path)
    for given in inputs:
        if given is not None and str(given) != "" and _resolved(given) == out:
            raise ConfigError(f"{flag} {path} is the input {given}: choose another file")
    if (out.exists() or out.is_symlink()) and not (out.is_file() and is_own(out)):
        raise ConfigError(f"{flag} {path} exists already and is not {_a(what)}: refusing to overwrite it "
                          f"(choose a new path)")
    return out


def fresh_output_directory(path: str | Path, kind: str, inputs: Iterable[str | Path | None] = (),
                           flag: str = "--out") -> Path:
    """An empty, marked directory at ``path`` for an output written piece by piece (the demo).

    An earlier output of ``kind`` there is removed first; anything else is refused (:func:`check_output`).
    """
    import shutil

    out = check_output(path, kind, inputs, flag)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    mark(out, kind)
    return Path(path)
