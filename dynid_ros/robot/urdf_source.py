"""URDF text as published: read a file or an expanded ``.urdf.xacro`` (with arguments), resolve or drop meshes.

Where a robot description comes from; :mod:`dynid_ros.robot.urdf_document` reads it (the one reader). A real
description has ``<visual>``/``<collision>`` meshes named by ``package://``, ``file://`` or relative URIs, mimic
joints and gripper joints. Dynamics need none of the meshes, so a mesh that cannot be found never stops a model from
loading. Relative mesh URIs of a file are made absolute (:func:`resolve_relative_meshes`), so a URDF written
elsewhere from its text (the identified URDF) still finds them.

A ``.urdf.xacro`` names its packages by ``$(find pkg)``, which xacro looks up in the ament index only (a ROS
install, ``AMENT_PREFIX_PATH``). Without one (a laptop with the vendor's description checked out, no ROS) the
package is looked up as a ``package://`` mesh is (:func:`find_package`): ``ROS_PACKAGE_PATH``, then the folders
around the file, so ``dynid info --urdf ur_description/urdf/ur.urdf.xacro --xacro-arg ur_type:=ur5e`` works in a
checkout of the vendor's repository as it does in a ROS workspace.
"""

from __future__ import annotations

import os
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from dynid_ros.errors import ConfigError, ModelError
from dynid_ros.robot.urdf_document import parse_xml, to_text

MESH_SCHEMES = ("package://", "file://", "model://", "http://", "https://")
"""URI schemes a mesh ``filename`` may carry; anything else is a path relative to the URDF file."""

_XACRO_LOCK = threading.Lock()
"""xacro's ``$(find)`` lookup is replaced for the time of one expansion (:func:`_packages_near`): one at a time."""


def parse_xacro_args(items: Sequence[str] | None) -> dict[str, str]:
    """``["name:=value", ...]`` (``--xacro-arg``, the ``xacro_args`` node parameter) as a mapping."""
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, value = str(item).partition(":=")
        if not sep or not name.strip():
            raise ConfigError(f"xacro argument {item!r}: expected name:=value")
        out[name.strip()] = value
    return out


def read_urdf_text(path: str | Path, xacro_args: Mapping[str, str] | Sequence[str] | None = None) -> str:
    """The URDF text of ``path``: ``.xacro`` files expanded with ``xacro_args``; relative mesh URIs made absolute."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: no such URDF file")
    args = dict(xacro_args) if isinstance(xacro_args, Mapping) else parse_xacro_args(xacro_args)
    if path.suffix == ".xacro":
        text = _expand_xacro(path, args)
    else:
        if args:
            raise ConfigError(f"{path}: xacro arguments given ({', '.join(args)}) but the file is not a .xacro")
        text = path.read_text(encoding="utf-8", errors="replace")
    if "<robot" not in text:
        raise ModelError(f"{path}: not a URDF (no <robot> element)")
    return resolve_relative_meshes(text, path.resolve().parent, path)


def _expand_xacro(path: Path, args: dict[str, str]) -> str:
    try:
        import xacro
    except ImportError as err:  # pragma: no cover - packaging problem
        raise ModelError(f"{path}: expanding a .xacro needs the xacro package (pip install xacro)") from err
    missing: list[str] = []
    try:
        with _packages_near(path, missing):
            return xacro.process_file(str(path), mappings=args).toxml()
    except Exception as err:  # xacro raises many types, including SystemExit-free XacroException
        if missing:
            raise ModelError(f"{path}: xacro failed: $(find {missing[0]}): package {missing[0]} not found (not in "
                             "the ament index, ROS_PACKAGE_PATH or the folders around the file)") from err
        lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
        message = lines[0] if lines else type(err).__name__
        raise ModelError(f"{path}: xacro failed: {message}") from err


@contextmanager
def _packages_near(path: Path, missing: list[str]) -> Iterator[None]:
    """While xacro expands ``path``: ``$(find pkg)`` falls back to :func:`find_package` where the ament index does
    not know ``pkg``; the packages found nowhere are appended to ``missing``."""
    from xacro import substitution_args

    original = getattr(substitution_args, "_eval_find", None)
    if original is None:  # another xacro: its own lookup only
        yield
        return

    def find(package: str) -> str:
        found = find_package(package, path.resolve().parent)
        if found is None:
            missing.append(package)
            raise ModelError(f"package {package} not found")
        return str(found)

    with _XACRO_LOCK:
        substitution_args._eval_find = find
        substitution_args._eval_dict["find"] = find
        try:
            yield
        finally:
            substitution_args._eval_find = original
            substitution_args._eval_dict["find"] = original


def find_package(package: str, near: Path | None = None) -> Path | None:
    """The folder of the ROS package ``package`` (its share directory in a ROS install): the ament index, then
    ``ROS_PACKAGE_PATH``, then the folders around ``near`` (a folder of that name holding a ``package.xml``, as in a
    checkout of the vendor's repository); None when it is nowhere."""
    candidates = [root for root in _package_roots(package, near) if root.name == package and root.is_dir()]
    marked = [root for root in candidates if (root / "package.xml").is_file()]
    return (marked or candidates or [None])[0]


def resolve_relative_meshes(text: str, directory: Path, source: str | Path = "robot_description") -> str:
    """``text`` with every relative mesh ``filename`` made an absolute ``file://`` URI against ``directory``.

    ``package://``, ``file://`` and other URIs are kept: they do not depend on where the URDF is written.
    The text is returned unchanged when it has no relative mesh URI.
    """
    root = parse_xml(text, source)
    changed = False
    for mesh in root.iter("mesh"):
        filename = mesh.get("filename", "")
        if filename and not filename.startswith(MESH_SCHEMES) and not Path(filename).is_absolute():
            mesh.set("filename", "file://" + str((directory / filename).resolve()))
            changed = True
    return _to_text(root, text) if changed else text


def resolve_mesh_uri(uri: str, urdf_directory: Path | None = None) -> Path | None:
    """The file a mesh URI names, or None when it cannot be found here (meshes are never required).

    ``package://pkg/rest`` is looked up in the ament index, then ``ROS_PACKAGE_PATH`` (a directory
    named ``pkg`` in or under one of its entries), then the ancestors of ``urdf_directory``.
    """
    if uri.startswith("file://"):
        path = Path(uri[len("file://"):])
    elif uri.startswith("package://"):
        package, _, rest = uri[len("package://"):].partition("/")
        path = next((root / rest for root in _package_roots(package, urdf_directory) if (root / rest).exists()), None)
    elif uri.startswith(MESH_SCHEMES):
        return None
    else:
        path = (urdf_directory or Path.cwd()) / uri
    return path if path is not None and path.is_file() else None


def _package_roots(package: str, urdf_directory: Path | None) -> list[Path]:
    roots: list[Path] = []
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            roots.append(Path(get_package_share_directory(package)))
        except (PackageNotFoundError, ValueError, LookupError, OSError):  # OSError: no AMENT_PREFIX_PATH
            pass
    except ImportError:
        pass
    for entry in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
        if entry:
            roots += [Path(entry) / package, Path(entry)] if Path(entry).name != package else [Path(entry)]
    if urdf_directory is not None:
        roots += [parent for parent in [urdf_directory, *urdf_directory.parents] if parent.name == package]
        roots += [parent / package for parent in [urdf_directory, *urdf_directory.parents]]
    return roots


def _to_text(root: ET.Element, original: str) -> str:
    declaration = '<?xml version="1.0"?>\n' if original.lstrip().startswith("<?xml") else ""
    return declaration + to_text(root)
