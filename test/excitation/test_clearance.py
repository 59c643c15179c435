"""The clearance an excitation keeps from the robot's own links, its table and its workcell: the shipped trajectories
and optimized ones, measured with pinocchio + coal directly (test/support/direct_clearance), not through the
package's collision model."""

from __future__ import annotations

from pathlib import Path

import coal
import numpy as np
import pinocchio as pin
import pytest

from dynid_ros.cli.main import main
from dynid_ros.excitation import ExcitationOptions, limits_from_model, load_trajectory, optimize_excitation
from dynid_ros.excitation.clearance import GRID_SLACK
from dynid_ros.excitation.limits import effort_bounds
from dynid_ros.excitation.optimizer import ExcitationProblem, condition_base
from dynid_ros.robot.config import load_config
from dynid_ros.robot.model import load_model
from dynid_ros.robot.robot_defaults import derive_config
from dynid_ros.robot.workcell import CollisionSettings

from support.direct_clearance import direct_clearance, resolved_urdf
from support.paths import REPO
from support.robots import PANDA_ERD, UR5_ERD, example_robot_prefix, example_robot_urdf

SHIPPED = REPO / "dynid_ros" / "robot" / "trajectories"
UR10_ERD = "ur_description/urdf/ur10_robot.urdf"
MARGIN = 0.02
SAMPLE_HZ = 100.0


def _samples(trajectory, rate_hz: float = SAMPLE_HZ) -> np.ndarray:
    t = np.arange(0.0, trajectory.period, 1.0 / rate_hz)
    return trajectory.evaluate(t)[0]


def _clearance(robot: str, trajectory, start_pose: np.ndarray | None = None):
    text = resolved_urdf(REPO / "urdf" / f"{robot}.urdf", {"dynid_ros": REPO})
    return direct_clearance(text, list(trajectory.joints), _samples(trajectory), start=start_pose, margin=MARGIN)


@pytest.mark.parametrize("name", ["panda_identification", "panda_validation", "ur5e_identification",
                                  "ur5e_validation"])
def test_the_shipped_trajectories_keep_clear_of_the_robot_and_its_table(name):
    """One period at 100 Hz: no pair of links in contact, no link below the table plus the margin (less 1 mm), the
    pairs that start apart by twice the margin at least the margin apart (less 1 mm)."""
    robot = name.split("_")[0]
    excitation = load_trajectory(SHIPPED / f"{name}.yaml")
    found = _clearance(robot, excitation.trajectory)
    assert found.in_collision == 0 and found.self_distance > 0, found
    assert found.lowest >= MARGIN - 1e-3, found
    assert found.regular >= MARGIN - 1e-3, found
    summary = excitation.info["collision"]
    assert summary["margin_m"] == MARGIN and summary["smallest_clearance_m"] > 0
    assert summary["environment"] == ["table (plane)"] and summary["not_checked"] == []


@pytest.mark.corpus
@pytest.mark.parametrize("relative", [PANDA_ERD, UR5_ERD, UR10_ERD], ids=["panda", "ur5", "ur10"])
def test_dynid_excite_results_keep_clear_of_the_robot_and_its_table(relative, tmp_path):
    """`dynid excite --urdf` on example-robot-data's arms as shipped (no config: the default 2 cm kept, the table
    z = 0 under the base), one start, measured with pinocchio + coal directly over one period at 100 Hz: no pair of
    links in contact, no link below the table, the table and the pairs that start apart by twice the margin at least
    the margin away (less 1 mm). The UR10 (joints of +-2 pi) ended with no feasible trajectory before the optimizer's
    clearance penalty and feasibility restoration."""
    urdf = example_robot_urdf(relative)
    out = tmp_path / "trajectory.yaml"
    assert main(["excite", "--urdf", str(urdf), "--starts", "1", "--harmonics", "3", "--time-budget", "1800",
                 "--no-progress", "--out", str(out)]) == 0  # a budget that never cuts the start: one result
    trajectory = load_trajectory(out).trajectory
    text = resolved_urdf(urdf, {"example-robot-data": example_robot_prefix() / "share" / "example-robot-data"})
    found = direct_clearance(text, list(trajectory.joints), _samples(trajectory), margin=MARGIN)
    assert found.in_collision == 0 and found.self_distance > 0, found
    assert found.below_table == 0 and found.lowest >= MARGIN - 1e-3, found
    assert found.regular >= MARGIN - 1e-3, found


def _hand_positions(model: pin.Model, q: np.ndarray, frame: str) -> np.ndarray:
    data = model.createData()
    out = []
    for sample in q:
        config = pin.neutral(model)
        config[: len(sample)] = sample
        pin.framesForwardKinematics(model, data, config)
        out.append(np.array(data.oMf[model.getFrameId(frame)].translation))
    return np.array(out)


def test_the_optimizer_routes_around_a_box_in_the_way():
    """A box where the hand of the excitation optimized without it passes (and clear of where it starts): optimized
    with the box, the robot keeps the margin from it (measured with coal directly) and from the table."""
    urdf = REPO / "urdf" / "panda.urdf"
    model = load_model(urdf=urdf)
    config = load_config(REPO / "config" / "panda.yaml")
    common = {"harmonics": 2, "frequency_hz": 0.5, "n_starts": 1, "max_iterations": 25, "time_budget_s": 600.0,
              "seed": 4, "max_condition_number": 1e9}  # a short motion: the routing matters here, not the fit
    free = optimize_excitation(model, ExcitationOptions.from_config(
        config["excitation"], collision=CollisionSettings.from_config({"environment": [{"type": "plane"}]}),
        **common), progress=False)
    kinematic = pin.buildModelFromUrdf(str(urdf))
    q_free = _samples(free.trajectory)
    hand = _hand_positions(kinematic, q_free, "panda_hand")
    far = np.linalg.norm(hand - hand[0], axis=1)
    k = int(np.argmax(far))
    assert far[k] > 0.25  # the hand moves: the box can be on its way and away from its start
    centre = hand[k]
    box = {"type": "box", "name": "fixture", "size": [0.12, 0.12, 0.12], "xyz": centre.tolist()}
    settings = CollisionSettings.from_config({"environment": [{"type": "plane"}, box]})
    routed = optimize_excitation(model, ExcitationOptions.from_config(config["excitation"], collision=settings,
                                                                      **common), progress=False)
    distances = _box_distances(urdf, routed.trajectory, centre, 0.12)
    assert _box_distances(urdf, free.trajectory, centre, 0.12).min() < 0  # it was in the way
    assert distances.min() >= MARGIN - 1e-3
    assert _clearance("panda", routed.trajectory).lowest >= MARGIN - 1e-3
    assert "fixture (box)" in routed.info["collision"]["environment"]


def _box_distances(urdf, trajectory, centre: np.ndarray, size: float) -> np.ndarray:
    """Per sample: the smallest distance of the robot's convex collision hulls to the box (coal directly)."""
    text = resolved_urdf(urdf, {"dynid_ros": REPO})
    model = pin.buildModelFromXML(text)
    geom = pin.buildGeomFromUrdfString(model, text, pin.COLLISION)
    hulls = []
    for obj in geom.geometryObjects:
        geometry = obj.geometry
        if isinstance(geometry, coal.BVHModelBase):
            geometry.buildConvexHull(True, "Qt")
            geometry = geometry.convex
        hulls.append(geometry)
    box, box_pose = coal.Box(size, size, size), coal.Transform3s(np.eye(3), centre)
    data, gdata = model.createData(), geom.createData()
    request, result = coal.DistanceRequest(), coal.DistanceResult()
    out = []
    for sample in _samples(trajectory):
        config = pin.neutral(model)
        config[: len(sample)] = sample
        pin.updateGeometryPlacements(model, data, geom, gdata, config)
        best = np.inf
        for hull, placement in zip(hulls, gdata.oMg):
            result.clear()
            pose = coal.Transform3s(placement.rotation, placement.translation)
            best = min(best, coal.distance(hull, pose, box, box_pose, request, result))
        out.append(best)
    return np.array(out)


def _default_problem(relative: str | Path, xacro_args: list[str] | None = None) -> ExcitationProblem:
    """The excitation problem of an example-robot-data arm (or a description file) as the corpus poses it: the
    derived config at 0.2 Hz, the default collision settings (2 cm kept, the table z = 0)."""
    urdf = relative if isinstance(relative, Path) else example_robot_urdf(relative)
    model = load_model(urdf=urdf, xacro_args=xacro_args, quiet=True)
    options = ExcitationOptions.from_config(derive_config(model)["excitation"], frequency_hz=0.2,
                                            collision=CollisionSettings())
    limits = limits_from_model(model, options.config)
    return ExcitationProblem(model, options, limits, condition_base(model), effort_bounds(model, options.config))


def test_a_start_moves_when_every_random_pose_has_a_pair_too_close():
    """example-robot-data's Baxter (15 joints, two arms by a torso; the default 2 cm kept, the table z = 0): its
    reference pose has the grippers in the table, and each of the 64 random poses a start tries has some pair of
    links within the 2 cm (torso and right_upper_elbow 1.3 cm apart at the first start's pose, ...), so the start's
    motion was scaled to nothing and the optimizer began at a motionless point (condition number inf). The start
    pose is pushed apart along the pairs' distance gradients: the start moves and keeps every clearance row."""
    problem = _default_problem("baxter_description/urdf/baxter.urdf")

    def slack(q: np.ndarray) -> float:  # the smallest clearance at rest less the 2 cm
        return min(c.slack for c in problem.collision.scan(q[None, :], np.zeros((1, problem.n)), 1.0, floor=0.05))

    assert slack(problem.collision.reference) < 0  # no help from the reference pose
    x = problem.start(np.random.default_rng([0, 0]))
    blocks = x.reshape(problem.n, problem.width)
    assert slack(blocks[:, 0]) >= GRID_SLACK
    assert np.abs(blocks[:, 1:]).max() > 1e-3  # it moves
    assert problem.clearance.values(x).min() >= 0  # and keeps every row
    assert problem.linear_violation(x) <= 1e-9


def test_a_start_no_pose_can_clear_is_named_by_its_pair():
    """example-robot-data's TALOS left arm with the default table z = 0 under its base (the shoulder): its
    arm_left_2_link is in the table at every pose (1.1 cm deep at best over 400 random poses; the collision model
    keeps 0 cm for it, its structure holding it close), so no start is feasible and the optimizer ended in "no
    trajectory satisfies the limits ... (torque limits, Cartesian boxes or obstacles that exclude every start?)".
    The refusal names the pair instead of guessing at causes."""
    problem = _default_problem("talos_data/robots/talos_left_arm.urdf")
    why = problem.shortfall(problem.start(np.random.default_rng([0, 0])))
    assert why is not None and "arm_left_2_link and table are" in why and "cm into each other" in why, why
    assert "collision: environment" in why, why  # the way out


def test_a_pushed_start_keeps_room_to_move_every_joint():
    """example-robot-data's Z1: its best random start pose has a pair 6.6 mm above what it keeps (less than a start
    needs), so it is pushed apart; a push onto a joint's bound left that joint no room (joint4 did not move, its
    friction columns were zero, condition number inf). Every joint of the start moves and its condition number is
    finite."""
    problem = _default_problem("z1_description/urdf/z1.urdf")
    x = problem.start(np.random.default_rng([0, 0]))
    assert np.all(np.abs(x.reshape(problem.n, problem.width)[:, 1:]).max(axis=1) > 1e-3)
    assert problem.clearance.values(x).min() >= 0
    assert problem.objective(x, False)[0] < 100  # log of a finite condition number (1e3 stands for inf)


def test_a_start_whose_clearance_row_cannot_hold_at_rest_is_named_by_its_pair():
    """The zoo's Sawyer: right_arm_base_link and right_l1_2 are never more than 7 mm apart (the collision model keeps
    half, 3.5 mm, for them); a clearance row keeps 2 mm of grid slack more and its smooth minimum over a window's 25
    equal samples at rest lies 3.2 mm below the distance, so no start at rest holds it and the refusal said "torque
    limits, Cartesian boxes or obstacles that exclude every start?". It names the pair and the row's shortfall."""
    from support.urdf_zoo import zoo_robots

    entry = zoo_robots()["sawyer"]
    problem = _default_problem(entry.xacro, list(entry.xacro_args))
    why = problem.shortfall(problem.start(np.random.default_rng([0, 0])))
    assert why is not None and "right_arm_base_link and right_l1_2 are" in why and "clearance row is" in why, why
