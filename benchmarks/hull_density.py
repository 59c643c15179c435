"""Benchmark: mass per convex-hull volume of the moving links of published arm descriptions — the density
:data:`dynid_ros.robot.geometry_inertia.HULL_DENSITY` gives a link its description leaves massless.

Per robot (example-robot-data's fixed-base arms and the URDF zoo's, ``DYNID_URDF_ZOO``), per body of a moving joint
with a mass above 1 g and geometry: the body's mass over the summed volumes of its geometry's convex hulls (the
package's own collision model: :func:`dynid_ros.robot.collision.geometry_parts`). Reported: each link's ratio, each
robot's median, and over all links the median and the log-standard deviation (``HULL_DENSITY_SPREAD`` is its
exponential).

Run: ``python benchmarks/hull_density.py``; writes ``benchmarks/results/hull_density.json``.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))

from dynid_ros.robot.collision import geometry_parts  # noqa: E402
from dynid_ros.robot.model import load_model  # noqa: E402

from support.robots import example_robot_prefix, example_robot_urdf  # noqa: E402
from support.urdf_zoo import zoo_robots  # noqa: E402

ERD_ARMS = {
    "panda": "panda_description/urdf/panda.urdf", "ur3": "ur_description/urdf/ur3_robot.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf", "ur10": "ur_description/urdf/ur10_robot.urdf",
    "kinova": "kinova_description/robots/kinova.urdf", "z1": "z1_description/urdf/z1.urdf",
    "xarm7": "xarm_description/urdf/xarm7.urdf", "so100": "so_arm_description/urdf/so100.urdf",
    "talos_left_arm": "talos_data/robots/talos_left_arm.urdf", "baxter": "baxter_description/urdf/baxter.urdf",
    "finger_edu": "finger_edu_description/robots/finger_edu.urdf",
}


def link_densities(urdf: Path, xacro_args: list[str] | None, package_dirs: list[Path]) -> dict[str, float]:
    """``{body's link: mass / hull volume}`` of the moving bodies with a mass and geometry."""
    model = load_model(urdf=urdf, xacro_args=xacro_args, quiet=True)
    kinematic = model.expanded if model.expanded is not None else model.pin_model
    volume: dict[int, float] = {}
    for part in geometry_parts(model, package_dirs):
        volume[part.body] = volume.get(part.body, 0.0) + float(part.geometry.computeVolume())
    out = {}
    for j in range(1, model.pin_model.njoints):
        mass = float(model.pin_model.inertias[j].mass)
        v = volume.get(kinematic.getJointId(model.pin_model.names[j]), 0.0)
        if v > 0 and mass > 1e-3:
            out[model.links[j - 1]] = mass / v
    return out


def main() -> None:
    logging.disable(logging.WARNING)
    share = example_robot_prefix() / "share"
    robots: dict[str, dict[str, float]] = {}
    sources = [(name, example_robot_urdf(path), None, [share / "example-robot-data" / "robots", share])
               for name, path in ERD_ARMS.items()]
    try:
        zoo = zoo_robots()
    except Exception as err:  # no zoo beside the repository
        print(f"URDF zoo skipped: {err}")
        zoo = {}
    for name, entry in zoo.items():
        sources.append((f"zoo_{name}", entry.xacro if entry.xacro is not None else entry.urdf,
                        list(entry.xacro_args) if entry.xacro is not None else None, [entry.package_dir]))
    for name, urdf, xacro_args, package_dirs in sources:
        try:
            densities = link_densities(urdf, xacro_args, package_dirs)
        except Exception as err:  # meshes not shipped (Doosan, Kinova Gen2): named, not counted
            print(f"{name:24s} skipped: {str(err)[:100]}")
            continue
        if densities:
            robots[name] = densities
            print(f"{name:24s} {len(densities):2d} links, median {np.median(list(densities.values())):6.0f} kg/m^3")
    values = np.array([v for d in robots.values() for v in d.values()])
    summary = {"robots": len(robots), "links": int(values.size), "median_kg_m3": float(np.median(values)),
               "log_std": float(np.std(np.log(values))),
               "robot_medians": {k: float(np.median(list(d.values()))) for k, d in robots.items()},
               "links_kg_m3": robots}
    print(f"{summary['links']} links of {summary['robots']} robots: median {summary['median_kg_m3']:.0f} kg/m^3, "
          f"log-std {summary['log_std']:.2f} (x/{np.exp(summary['log_std']):.2f})")
    out = ROOT / "benchmarks" / "results" / "hull_density.json"
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
