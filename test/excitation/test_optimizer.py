"""Excitation optimization, the condition number's definition and ``dynid excite``."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.cli.main import main
from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.dynamics.regressor import regressor
from dynid_ros.errors import ConfigError, ExcitationError
from dynid_ros.excitation import (
    ExcitationLimits,
    ExcitationOptions,
    check_trajectory_limits,
    excitation_condition_number,
    limits_from_model,
    load_trajectory,
    optimize_excitation,
)
from dynid_ros.excitation.optimizer import ExcitationProblem, condition_base
from dynid_ros.robot.config import config_section
from dynid_ros.robot.model import load_model
from dynid_ros.robot.resources import robot_file

from support.gradient_check import directional_slope

SMALL = {"harmonics": 3, "frequency_hz": 0.2, "n_starts": 1, "max_iterations": 25, "time_budget_s": 60.0}
"""Settings that keep an optimization of the Panda to a few seconds."""


@pytest.fixture(scope="module")
def panda():
    return load_model(urdf=robot_file("panda", "urdf"))


@pytest.fixture(scope="module")
def panda_config():
    return config_section(robot_file("panda", "config"), "excitation")


@pytest.fixture(scope="module")
def optimized(panda, panda_config):
    return optimize_excitation(panda, ExcitationOptions(config=panda_config, seed=7, **SMALL), progress=False)


def _condition_number_by_hand(model, trajectory) -> float:
    """The optimizer's condition number, written out: base regressor over one period at 50 Hz, numpy.linalg.cond."""
    layout = model.layout_for(("viscous", "coulomb", "offset"), armature=False)
    base = compute_base_parameters(model, layout)
    t = np.arange(int(np.ceil(trajectory.period * 50 - 1e-9))) / 50.0
    q, dq, ddq = trajectory.evaluate(t)
    dq[0] = 0.0  # the start at rest (round-off aside)
    return float(np.linalg.cond(regressor(model, layout, q, dq, ddq)[:, base.independent]))


def test_optimized_trajectory_respects_limits_and_rest(panda, panda_config, optimized):
    traj, limits = optimized.trajectory, optimized.limits
    np.testing.assert_allclose(limits.acceleration, [15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
    margins = check_trajectory_limits(traj, limits, rate_hz=1000.0)
    assert min(margins[k] for k in ("position", "velocity", "acceleration")) >= 0.0
    t = np.arange(int(traj.period * 1000) + 1) / 1000.0
    q, dq, ddq = traj.evaluate(t)
    assert np.all((q >= limits.position[:, 0]) & (q <= limits.position[:, 1]))
    assert np.all(np.abs(dq) <= limits.velocity) and np.all(np.abs(ddq) <= limits.acceleration)
    _, dq_ends, ddq_ends = traj.evaluate(np.array([0.0, traj.period]))
    np.testing.assert_allclose(dq_ends, 0.0, atol=1e-9)
    np.testing.assert_allclose(ddq_ends, 0.0, atol=1e-9)
    assert optimized.info["margins"]["tightest"]


def test_condition_number_matches_definition_and_beats_the_start(panda, panda_config, optimized):
    by_hand = _condition_number_by_hand(panda, optimized.trajectory)
    assert optimized.condition_number == pytest.approx(by_hand, rel=1e-9)
    assert excitation_condition_number(panda, optimized.trajectory) == pytest.approx(by_hand, rel=1e-9)
    limits = limits_from_model(panda, panda_config)
    problem = ExcitationProblem(panda, ExcitationOptions(config=panda_config, seed=7, **SMALL), limits,
                                condition_base(panda))
    start = problem.trajectory(problem.start(np.random.default_rng([7, 0])))
    assert optimized.condition_number < 0.5 * excitation_condition_number(panda, start)


def test_same_seed_same_trajectory_other_seed_other(panda, panda_config, optimized):
    again = optimize_excitation(panda, ExcitationOptions(config=panda_config, seed=7, **SMALL), progress=False)
    np.testing.assert_array_equal(again.trajectory.a, optimized.trajectory.a)
    np.testing.assert_array_equal(again.trajectory.b, optimized.trajectory.b)
    np.testing.assert_array_equal(again.trajectory.q0, optimized.trajectory.q0)
    other = optimize_excitation(panda, ExcitationOptions(config=panda_config, seed=8, **SMALL), progress=False)
    assert not np.allclose(other.trajectory.a, optimized.trajectory.a)


def test_objective_gradient_matches_finite_differences(panda, panda_config):
    limits = limits_from_model(panda, panda_config)
    for objective in ("cond", "logdet"):
        options = ExcitationOptions(config=panda_config, objective=objective, harmonics=2, frequency_hz=0.5)
        problem = ExcitationProblem(panda, options, limits, condition_base(panda))
        x = problem.start(np.random.default_rng(1))
        _, gradient = problem.objective(x)
        direction = problem.project_rest(np.random.default_rng(2).normal(size=x.size))  # keeps q'(0) = 0
        slope = directional_slope(lambda y, p=problem: p.objective(y, False)[0], x, direction, span=1e-3)
        assert slope.agrees_with(gradient @ direction, rel=1e-4), (objective, gradient @ direction, slope)


def test_a_trajectory_on_the_coarse_grid_s_bounds_is_within_the_limits_at_every_time(panda, panda_config):
    """The optimizer keeps its joint-limit rows on 12 L samples per period, each ``cos(pi L / N)`` of its limit: a
    motion pushed onto those bounds (each joint scaled until a grid row is active) stays within the limits on a grid
    ten times finer than the 1 kHz check, and comes within a few percent of them (the rows cost little range)."""
    limits = limits_from_model(panda, panda_config)
    for harmonics in (2, 3, 5):  # (L = 1 cannot start and end at rest)
        options = ExcitationOptions(config=panda_config, harmonics=harmonics, collision=None)
        problem = ExcitationProblem(panda, options, limits, condition_base(panda))
        assert len(problem.t_con) == 12 * harmonics
        rng = np.random.default_rng(harmonics)
        for _ in range(20):
            x = problem.start(rng).reshape(problem.n, problem.width)
            x[:, 0] = limits.position.mean(axis=1)
            for k in range(problem.n):  # each joint onto its tightest grid row
                rows = slice(k * 6 * len(problem.t_con), (k + 1) * 6 * len(problem.t_con))
                one = np.zeros_like(x)
                one[k, 1:] = x[k, 1:]
                centre = problem.a_ub[rows] @ (x * (np.arange(problem.width) == 0)).reshape(-1)
                with np.errstate(divide="ignore"):
                    room = (problem.b_ub[rows] - centre) / (problem.a_ub[rows] @ one.reshape(-1))
                x[k, 1:] *= np.min(room[room > 0])
            x = x.reshape(-1)
            assert np.max(problem.a_ub @ x - problem.b_ub) < 1e-9
            trajectory = problem.trajectory(x)
            margins = check_trajectory_limits(trajectory, limits, rate_hz=10_000.0)  # raises on a violation
            used = min(margins[name] for name in ("position", "velocity", "acceleration"))
            assert 0 <= used <= 1 - np.cos(np.pi / 12) + 0.01, used


def test_a_constraint_grid_too_coarse_for_the_harmonics_is_a_config_error():
    with pytest.raises(ConfigError, match="constraint_points must be an integer above 2 x harmonics"):
        ExcitationOptions(harmonics=5, constraint_points=10).check()


def test_infeasible_request_is_a_clear_error(panda):
    too_slow = ExcitationLimits(limits_from_model(panda).position, np.full(7, 1.0), np.full(7, 1e-4))
    with pytest.raises(ExcitationError, match="too tight to excite the robot at wf = .* condition number"):
        optimize_excitation(panda, ExcitationOptions(limits=too_slow, **SMALL), progress=False)


def test_a_budget_that_ends_before_the_first_start_says_so(panda):
    """Not a question about limits: the budget ran out before any start finished (a slow start on a large arm)."""
    options = ExcitationOptions(**dict(SMALL, time_budget_s=1e-6))
    with pytest.raises(ExcitationError, match=r"time budget \(1e-06 s\) ended before the first start"):
        optimize_excitation(panda, options, progress=False)


def test_cartesian_box_that_excludes_every_start_is_an_error(panda):
    options = ExcitationOptions(cartesian_boxes={"panda_hand": [[-1, 1], [-1, 1], [3.0, 4.0]]},
                                **dict(SMALL, max_iterations=5))
    with pytest.raises(ExcitationError, match="no trajectory satisfies the limits"):
        optimize_excitation(panda, options, progress=False)


def test_cartesian_box_and_torque_limits_hold(panda, panda_config):
    from dynid_ros.excitation.torques import nominal_torques

    box = [[-0.9, 0.9], [-0.9, 0.9], [0.45, 1.3]]
    options = ExcitationOptions(config=panda_config, cartesian_boxes={"panda_hand": box}, torque_limits=True,
                                margins={"effort": 0.5}, **dict(SMALL, harmonics=2))
    result = optimize_excitation(panda, options, progress=False)
    assert result.limits.effort is not None
    q, dq, ddq = result.trajectory.evaluate(np.arange(int(result.trajectory.period * 200)) / 200.0)
    assert np.all(np.abs(nominal_torques(panda, q, dq, ddq)) <= result.limits.effort * (1 + 1e-6))
    data = panda.pin_model.createData()
    frame = panda.pin_model.getFrameId("panda_hand")
    import pinocchio as pin

    heights = []
    for qs in q[::10]:
        pin.framesForwardKinematics(panda.pin_model, data, qs)
        heights.append(data.oMf[frame].translation[2])
    assert min(heights) >= 0.45 - 1e-6


def test_cli_writes_a_loadable_trajectory(tmp_path, capsys):
    out = tmp_path / "traj.yaml"
    code = main(["excite", "--urdf", str(robot_file("panda", "urdf")), "--config", str(robot_file("panda", "config")),
                 "--harmonics", "2", "--frequency", "0.25", "--starts", "1", "--time-budget", "60", "--seed", "3",
                 "--no-progress", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    loaded = load_trajectory(out)
    assert loaded.trajectory.harmonics == 2 and loaded.trajectory.period == pytest.approx(4.0)
    assert f"condition number {loaded.condition_number:.2f}" in printed
    assert "tightest limit margin:" in printed


def test_cli_bad_input_exit_code_2(tmp_path, capsys):
    code = main(["excite", "--urdf", str(robot_file("panda", "urdf")), "--objective", "cond", "--harmonics", "0",
                 "--out", str(tmp_path / "t.yaml")])
    assert code == 2
    assert "harmonics must be a positive integer" in capsys.readouterr().err
    assert not (tmp_path / "t.yaml").exists()


def test_time_budget_returns_the_best_feasible_so_far(panda, panda_config):

    options = ExcitationOptions(config=panda_config, **dict(SMALL, n_starts=500, max_iterations=200,
                                                            time_budget_s=2.0), max_condition_number=1e6)
    result = optimize_excitation(panda, options, progress=False)
    assert result.info["starts"] < 500
    check_trajectory_limits(result.trajectory, result.limits, rate_hz=1000.0)


def test_what_the_optimizer_returns_passes_the_execution_check_with_its_effort_bound():
    """`dynid demo --urdf xarm7.urdf` ended with "nominal torque -40.0006 ... outside the limits [-40, 40]":
    the optimizer did not bound the torques the execution check bounds. Both now use one effort bound
    (excitation.limits.effort_bounds): the optimizer's result passes robot_limits.check_motion, effort included."""
    from dynid_ros.excitation.limits import effort_bounds
    from dynid_ros.execution.robot_limits import check_motion, robot_limits
    from dynid_ros.robot.model import load_model
    from dynid_ros.robot.robot_defaults import derive_config

    from support.robots import example_robot_urdf

    model = load_model(urdf=example_robot_urdf("xarm_description/urdf/xarm7.urdf"))
    config = derive_config(model)["excitation"]
    config["margins"]["effort"] = 0.68  # joint 2: gravity alone needs 0.65 of its limit, an unbounded result 0.70
    options = ExcitationOptions.from_config(config, n_starts=1, harmonics=3, time_budget_s=15.0)
    result = optimize_excitation(model, options, progress=False)
    robot = robot_limits(model, config)
    assert np.array_equal(robot.effort, effort_bounds(model, config)) and np.isfinite(robot.effort).all()
    t = np.linspace(0.0, result.trajectory.period, int(result.trajectory.period * 1000) + 1)
    margins = check_motion(robot, model.joints, t, *result.trajectory.evaluate(t))
    assert margins["effort"] >= 0.0
