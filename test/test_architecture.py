"""The package's rooms: dependencies point one way, no cycle, no ROS outside ``ros/``, imports at the top.

Rooms from the bottom up (README, Architecture): ``errors`` < ``robot``, ``data`` < ``dynamics`` <
``estimation`` < ``excitation`` < ``pipeline`` < ``execution`` < ``sim`` < ``cli``, ``ros``. A module may
import its own room and the rooms below; rooms of the same rank do not import each other.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dynid_ros"
RANK = {"errors": 0, "robot": 1, "data": 1, "dynamics": 2, "estimation": 3, "excitation": 4, "pipeline": 5,
        "execution": 6, "sim": 7, "cli": 8, "ros": 8}
ROS_MODULES = ("rclpy", "rcl_interfaces", "rosidl_", "rmw", "std_msgs", "std_srvs", "sensor_msgs", "trajectory_msgs",
               "control_msgs", "builtin_interfaces", "action_msgs", "launch", "launch_ros", "ament_index_python",
               "rosgraph_msgs", "geometry_msgs", "unique_identifier_msgs", "type_description_interfaces")
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
    outside = [m for m in MODULES if m.count(".") >= 1 and _room(m) not in RANK]
    assert not outside, f"modules outside the rooms: {outside}"
    assert {m for m in MODULES if m.count(".") == 1 and _room(m) not in RANK} == set()


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _room(m) in RANK))
def test_dependencies_point_down(module):
    room = _room(module)
    for imported, node, _ in _imports(MODULES[module]):
        target = _room(imported)
        if target is None or target == room:
            continue
        assert RANK[target] < RANK[room], (f"{module} (room {room}) imports {imported} (room {target}) at line "
                                           f"{node.lineno}: a room imports only the rooms below it")


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
    for path in [*PACKAGE.rglob("*.py"), *(root / "test").glob("*.py"), *(root / "benchmarks").glob("*.py")]:
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
