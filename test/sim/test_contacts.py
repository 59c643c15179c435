"""Contacts in the simulator: MuJoCo gets the robot's collision geometry, its workcell and the checked pairs.

A shipped (collision-free) excitation runs with no contact and keeps its clearance in MuJoCo's own collision
detection; a motion through the table, or into a box of the workcell, is seen as contacts of the pair it hits.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from dynid_ros.excitation import load_trajectory
from dynid_ros.execution.robot_limits import checked_profile, robot_limits
from dynid_ros.robot.mujoco_spec import pair_row
from dynid_ros.robot.workcell import CollisionSettings
from dynid_ros.sim import Simulator, simulate_profile

from support.paths import REPO

PANDA = REPO / "urdf" / "panda.urdf"
UR5E = REPO / "urdf" / "ur5e.urdf"
TRAJECTORIES = REPO / "dynid_ros" / "robot" / "trajectories"
HAND_HIGH = np.array([0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.78])  # Panda, hand 0.65 m above the table


def _config(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())


def _ramp(q0: np.ndarray, q1: np.ndarray, duration: float = 2.0, hold: float = 0.5, dt: float = 1e-3) -> tuple:
    """A quintic rest-to-rest move from ``q0`` to ``q1``, then a hold: (t, q, dq, ddq) at 1 kHz."""
    t = np.arange(0.0, duration + hold, dt)
    s = np.clip(t / duration, 0.0, 1.0)
    p, dp, ddp = (10 * s**3 - 15 * s**4 + 6 * s**5, (30 * s**2 - 60 * s**3 + 30 * s**4) / duration,
                  (60 * s - 180 * s**2 + 120 * s**3) / duration**2)
    d = np.asarray(q1) - np.asarray(q0)
    return t, q0 + p[:, None] * d, dp[:, None] * d, ddp[:, None] * d


@pytest.mark.parametrize("robot,urdf", [("panda", PANDA), ("ur5e", UR5E)])
def test_a_shipped_excitation_runs_without_contact_and_keeps_its_clearance_in_mujoco(robot, urdf):
    config = _config(robot)
    excitation = load_trajectory(TRAJECTORIES / f"{robot}_identification.yaml")
    sim = Simulator(urdf, joints=excitation.trajectory.joints,
                    collision=CollisionSettings.from_config(config.get("collision")))
    limits = robot_limits(sim.model, config.get("excitation") or {}, collision=sim.collision)
    profile = checked_profile(excitation, limits, excitation.trajectory.evaluate(np.zeros(1))[0][0], 1)
    series = simulate_profile(sim, *profile.sample_at_rate(1.0 / sim.timestep), progress=False)
    report = series.info["contacts"]
    assert report["contacts"] == 0 and report["contact_pairs"] == [], report
    assert report["smallest_clearance_m"] is not None, "no pair came within the watch distance"
    rows = {row.name: row for row in sim.collision.rows}
    assert report["between"] in rows
    # MuJoCo's own distance of the same convex shapes: at least what the pair keeps, less 1 mm
    assert report["smallest_clearance_m"] >= rows[report["between"]].margin - 1e-3, report


def test_mujoco_collides_exactly_the_pairs_the_collision_model_checks():
    sim = Simulator(PANDA, collision=CollisionSettings())
    mj, collision = sim.mujoco_model, sim.collision
    assert mj.npair == sum(len(row.pairs) for row in collision.rows)
    assert not np.any(mj.geom_contype) and not np.any(mj.geom_conaffinity)  # nothing collides but the pairs
    checked = set()
    for p in range(mj.npair):  # geom names: "part <i> <link>" and "obstacle <k> <name>"
        row = collision.rows[pair_row(mj.pair(p).name)]
        geoms = {mj.geom(int(mj.pair_geom1[p])).name.split()[-1], mj.geom(int(mj.pair_geom2[p])).name.split()[-1]}
        assert geoms == {row.first, row.second}
        checked.add(frozenset(geoms))
    assert checked == {frozenset((row.first, row.second)) for row in collision.rows}
    assert frozenset(("panda_link3", "panda_link4")) not in checked  # parent/child: never in contact
    assert frozenset(("panda_link0", "table")) not in checked  # the base stands on the table
    for a, b, _ in collision.disabled:
        assert frozenset((a, b)) not in checked


def test_a_motion_through_the_table_is_seen_as_contacts_of_the_link_and_the_table():
    sim = Simulator(PANDA, collision=CollisionSettings())  # the default workcell: the table z = 0
    reach_down = np.array([0.0, 1.6, 0.0, -0.4, 0.0, 1.5, 0.78])  # the arm leans forward into the table
    series = simulate_profile(sim, *_ramp(HAND_HIGH, reach_down), progress=False)
    report = series.info["contacts"]
    assert report["contacts"] > 0
    assert report["smallest_clearance_m"] < 0
    # what touches first is the arm on the table (pressed on, the arm may then fold onto itself)
    first = min(report["contact_pairs"], key=lambda c: c["first_s"])
    assert first["pair"].endswith(" and table"), report["contact_pairs"]
    on_table = [c for c in report["contact_pairs"] if c["pair"].endswith(" and table")]
    assert all(c["depth_m"] > 0 and 0.5 < c["first_s"] < 2.5 for c in on_table), on_table
    # the table holds the arm up: the reference goes 20 cm deeper than the arm does
    assert float(np.max(np.abs(series.position[-1] - reach_down))) > 0.05


def test_a_box_of_the_workcell_in_the_way_is_seen_as_contacts_and_without_it_the_motion_is_free():
    shelf = {"type": "box", "name": "shelf", "size": [0.3, 0.6, 0.1], "xyz": [0.55, 0.0, 0.45]}
    lower = np.array([0.0, 0.9, 0.0, -1.2, 0.0, 1.5, 0.78])  # the hand goes down through where the shelf is
    reference = _ramp(HAND_HIGH, lower)
    blocked = Simulator(PANDA, collision=CollisionSettings.from_config({"environment": [shelf]}))
    report = simulate_profile(blocked, *reference, progress=False).info["contacts"]
    assert report["contacts"] > 0
    first = min(report["contact_pairs"], key=lambda c: c["first_s"])  # what hits first is the hand on the shelf
    assert first["pair"].endswith(" and shelf"), report["contact_pairs"]
    free = Simulator(PANDA, collision=CollisionSettings.from_config({"environment": []}))
    report = simulate_profile(free, *reference, progress=False).info["contacts"]
    assert report["contacts"] == 0, report


def test_without_collision_settings_the_simulator_has_no_geometry():
    sim = Simulator(PANDA)
    assert sim.collision is None and sim.contacts is None
    assert sim.mujoco_model.ngeom == 0
