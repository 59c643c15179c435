"""The package's rooms: dependencies point one way, no cycle, no ROS outside ``ros/``, imports at the top, and
every room's ``__init__`` names its modules.

The rooms form a graph, not a chain (README, Architecture): :data:`DEPENDS_ON` gives the rooms each room builds on
directly; a module may import its own room and every room reachable from it, nothing else. Two branches meet only
at the top: the identification branch (identification -> reporting -> variants -> workflow -> fleet) and the motion
branch (excitation -> execution -> sim), joined by ``studies`` (the demo) and the front ends ``cli`` and ``ros``.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dynid_ros"
DEPENDS_ON = {
    "errors": (),
    "robot": ("errors",),
    "data": ("errors",),
    "dynamics": ("robot",),
    "estimation": ("dynamics", "data"),
    "excitation": ("dynamics",),
    "execution": ("excitation",),
    "sim": ("execution", "data"),
    "identification": ("estimation",),
    "reporting": ("identification",),
    "variants": ("reporting",),
    "workflow": ("variants",),
    "fleet": ("workflow",),
    "studies": ("workflow", "sim"),
    "cli": ("fleet", "studies"),
    "ros": ("fleet", "studies"),
}
"""The rooms each room builds on directly (README, Architecture)."""


def _reachable(room: str) -> set[str]:
    seen: set[str] = set()
    todo = list(DEPENDS_ON[room])
    while todo:
        below = todo.pop()
        if below not in seen:
            seen.add(below)
            todo += DEPENDS_ON[below]
    return seen


BELOW = {room: _reachable(room) for room in DEPENDS_ON}
"""Every room a room may import (what :data:`DEPENDS_ON` reaches)."""
ROS_MODULES = ("rclpy", "rcl_interfaces", "rosidl_", "rmw", "std_msgs", "std_srvs", "sensor_msgs", "trajectory_msgs",
               "control_msgs", "builtin_interfaces", "action_msgs", "launch", "launch_ros", "ament_index_python",
               "rosgraph_msgs", "geometry_msgs", "unique_identifier_msgs", "type_description_interfaces",
               "controller_manager_msgs")
"""Top-level names of ROS 2 packages (the ``ros-jazzy-*`` wheels and the launch stack)."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _imports(path: Path) -> list[tuple[str, ast.AST, bool]]:
    """(imported dynid_ros module or name, node, inside a function) of every import of the package."""
    tree = ast.parse(path.read_text())
    inside = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dynid_ros"):
            for alias in node.names:  # `from dynid_ros.x import y`: y may be a module
                candidate = f"{node.module}.{alias.name}"
                found.append((candidate if candidate in MODULES else node.module, node, id(node) in inside))
        elif isinstance(node, ast.Import):
            found += [(a.name, node, id(node) in inside) for a in node.names if a.name.startswith("dynid_ros")]
    return found


def _type_checking_only(path: Path) -> set[int]:
    tree = ast.parse(path.read_text())
    return {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for child in node.body for n in ast.walk(child)}


def test_every_module_is_in_a_room():
    outside = [m for m in MODULES if m.count(".") >= 1 and _room(m) not in DEPENDS_ON]
    assert not outside, f"modules outside the rooms: {outside}"


def test_the_rooms_form_no_cycle():
    assert all(room not in BELOW[room] for room in DEPENDS_ON), "a room reaches itself through DEPENDS_ON"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _room(m) in DEPENDS_ON))
def test_dependencies_point_down(module):
    room = _room(module)
    for imported, node, _ in _imports(MODULES[module]):
        target = _room(imported)
        if target is None or target == room:
            continue
        assert target in BELOW[room], (f"{module} (room {room}) imports {imported} (room {target}) at line "
                                       f"{node.lineno}: {room} builds on {', '.join(sorted(BELOW[room]))} only")


@pytest.mark.parametrize("room", sorted(r for r in DEPENDS_ON if (PACKAGE / r).is_dir()))
def test_each_room_names_its_modules(room):
    """A room's ``__init__`` docstring is its table of contents: every module of the room is named there as
    ``:mod:`.module```, and nothing that is not there."""
    docstring = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text())) or ""
    named = set(re.findall(r":mod:`\.([a-z_0-9]+)`", docstring))
    modules = {p.stem for p in (PACKAGE / room).glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert modules - named == set(), f"{room}/__init__.py does not name {sorted(modules - named)}"
    assert named - modules == set(), f"{room}/__init__.py names modules it does not hold: {sorted(named - modules)}"


def test_no_import_cycle():
    graph = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        type_only = _type_checking_only(path)
        for imported, node, _ in _imports(path):
            if id(node) in type_only or imported == module:
                continue
            target = imported
            while target not in MODULES and "." in target:
                target = target.rsplit(".", 1)[0]
            if module.startswith(target + "."):  # a submodule using its own package's __init__: not an edge
                continue
            graph[module].add(target)
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_no_function_level_import_of_the_package_without_a_reason():
    """Imports of the package's own modules are at the top; a deferred one says which heavy dependency it
    defers in a ``# deferred: ...`` comment on its line or the line above."""
    offenders = []
    for path in MODULES.values():
        lines = path.read_text().splitlines()
        for _, node, inside in _imports(path):
            if inside and not any("deferred:" in lines[i] for i in (node.lineno - 2, node.lineno - 1) if i >= 0):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, "function-level imports of the package: " + ", ".join(sorted(set(offenders)))


def test_no_private_name_is_imported_across_modules():
    root = PACKAGE.parent
    offenders = []
    for path in [*PACKAGE.rglob("*.py"), *(root / "test").rglob("*.py"), *(root / "benchmarks").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dynid_ros"):
                offenders += [f"{path.relative_to(root)}:{node.lineno} {a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert not offenders, "private names imported from another module: " + ", ".join(offenders)


def test_no_module_outside_ros_loads_a_ros_package():
    """Every module outside ``dynid_ros.ros`` imports without rclpy or any other ROS package (a fresh
    interpreter imports them one by one and looks at ``sys.modules`` after each)."""
    core = [m for m in MODULES if _room(m) != "ros" and not m.endswith("__main__")]
    script = f"""
import importlib, json, sys
prefixes = {ROS_MODULES!r}
for name in {core!r}:
    importlib.import_module(name)
    loaded = sorted(m for m in sys.modules if m.split('.')[0].startswith(prefixes))
    if loaded:
        print(json.dumps([name, loaded[:5]]))
        break
else:
    print(json.dumps(None))
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    first = json.loads(run.stdout.strip().splitlines()[-1])
    assert first is None, f"importing {first[0]} loads ROS packages: {first[1]}"
