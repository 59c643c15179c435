"""The measured delivery delay and the stop it leads: a stop planned from late joint states, and late controller
reports, reaches the controller any time up to the measured latency and is executed within the acceleration limits.

The controller is modelled by what ros2_controllers' joint_trajectory_controller does with a new stamped trajectory
(``JointTrajectoryController::update`` then ``Trajectory::sample``: after its first point the controller takes the
trajectory's state of now, before it interpolates from the arm's state), here
:class:`~dynid_ros.execution.trajectory_reference.TrajectoryReference`; the arm follows its commands exactly (mock
hardware). The real controller is run in test/ros/test_excitation_node_ros2_control.py.
"""

import numpy as np
import pytest

from dynid_ros.excitation.trajectory_file import load_trajectory
from dynid_ros.execution.command_latency import LATENCY_FACTOR, MAX_LEAD_S, CommandLatency
from dynid_ros.execution.excitation_supervisor import TICK_PERIOD_S, ExcitationSupervisor, SupervisorSettings
from dynid_ros.execution.stop_motion import LEAD_S
from dynid_ros.execution.trajectory_reference import TrajectoryReference

from support.manual_clock import ManualClock, RecordingLink
from support.ros_helpers import robot_limits_of, write_test_trajectory

PERIOD_S = 0.01
"""The controller's update period (and the joint states' period) [s]."""


def test_the_lead_is_the_floor_without_measurements_and_follows_a_high_quantile_of_recent_ages():
    latency = CommandLatency()
    assert latency.lead(now=0.0) == LEAD_S
    ages = np.full(1000, 0.01)
    ages[::50] = 0.1  # 2 % of the joint states arrive 0.1 s late
    for k, age in enumerate(ages):
        latency.record_age(age=float(age), at=k * 0.001)
    assert latency.lead(now=1.0) == pytest.approx(LATENCY_FACTOR * 0.1)
    latency.record_age(age=-0.002, at=1.0)  # clocks a little apart: counts as 0
    latency.record_age(age=float("nan"), at=1.0)
    assert latency.lead(now=1.0) == pytest.approx(LATENCY_FACTOR * 0.1)
    assert latency.lead(now=1.0 + latency.window_s + 0.01) == LEAD_S  # forgotten after the window
    latency.record_age(age=5.0, at=20.0)
    assert latency.lead(now=20.0) == MAX_LEAD_S


def test_without_stamped_joint_states_the_lead_follows_how_late_this_process_runs():
    """No usable stamp (a driver without, another clock): the lead is a high quantile of how late this process's
    periodic callbacks ran, times the factor; recent ages, when there are any, decide instead."""
    latency = CommandLatency()
    lateness = np.zeros(200)
    lateness[::25] = 0.12  # 4 % of the callbacks run 0.12 s late
    for k, late in enumerate(lateness):
        latency.record_lateness(lateness=float(late), at=k * 0.1)
    assert latency.lead(now=20.0) == pytest.approx(LATENCY_FACTOR * 0.12)
    latency.record_lateness(lateness=-0.03, at=20.0)  # early: on time
    latency.record_lateness(lateness=float("inf"), at=20.0)
    assert latency.lead(now=20.0) == pytest.approx(LATENCY_FACTOR * 0.12)
    for k in range(100):
        latency.record_age(age=0.01, at=19.0 + k * 0.01)
    assert latency.lead(now=20.0) == LEAD_S  # ages measured: they decide (0.02 s, the floor)
    assert latency.lead(now=40.0) == LEAD_S  # nothing recent: the floor


def test_the_supervisors_ticks_measure_its_scheduling_delay(robot_case):
    """The node ticks the supervisor every TICK_PERIOD_S: a tick that comes late is this process running late, and
    a stop then (no stamped joint states) is planned with that lead."""
    robot, excitation = robot_case
    clock = ManualClock()
    sup = ExcitationSupervisor(SupervisorSettings(mode="topic"), lambda: (excitation, robot), RecordingLink(),
                               clock=clock, stamp_clock=clock)
    for k in range(100):
        clock.now += TICK_PERIOD_S + (0.2 if k % 10 == 0 else 0.0)  # every tenth tick 0.2 s late
        sup.tick()
    assert sup.latency.lead(now=clock.now) == pytest.approx(min(LATENCY_FACTOR * 0.2, MAX_LEAD_S))


@pytest.fixture(scope="module", params=[3, 7])
def robot_case(request, tmp_path_factory):
    """The Panda (its URDF and config: the shipped robot whose excitations fit its configured limits) and a fast
    random excitation (90 % of its limits) per seed."""
    robot = robot_limits_of("panda")
    path = write_test_trajectory(tmp_path_factory.mktemp("traj") / "fast.yaml", period=2.5, harmonics=2,
                                 fraction=0.9, seed=request.param)
    return robot, load_trajectory(path)


def stop_under_latency(robot, excitation, *, age: float, report_delay: float, start_delay: float, stop_at: float):
    """Run the motion on a controller that starts it ``start_delay`` after the send, its joint states arriving
    ``age`` after their stamps and its reports ``report_delay`` late; ``~/stop`` at motion time ``stop_at``. Returns
    the supervisor, the profile, the stop, the wall time of the stop and the controller's start."""
    clock = ManualClock()
    link = RecordingLink()
    sup = ExcitationSupervisor(SupervisorSettings(mode="topic"), lambda: (excitation, robot), link, clock=clock,
                               stamp_clock=clock)
    joints = robot.joints
    rest = excitation.limits.position.mean(axis=1)
    q_robot = np.array(robot.limits.position).mean(axis=1)
    moved = robot.indices(excitation.trajectory.joints)
    q_robot[moved] = rest
    for _ in range(3):
        sup.on_joint_state(list(joints), list(q_robot), [0.0] * len(joints), stamp=clock.now - age)
        clock.now += PERIOD_S
    assert sup.start()[0], sup.run.message
    profile = link.sent[0]
    started = clock.now + start_delay

    def arm(stamp):
        q, dq, _ = profile.sample(np.array([min(max(stamp - started, 0.0), profile.duration)]))
        full_q, full_dq = q_robot.copy(), np.zeros(len(joints))
        full_q[moved], full_dq[moved] = q[0], dq[0]
        return full_q, full_dq

    step = 0
    while clock.now - started < stop_at:
        clock.now += PERIOD_S
        step += 1
        q, dq = arm(clock.now - age)
        sup.on_joint_state(list(joints), list(q), list(dq), stamp=clock.now - age)
        reported = min(max(clock.now - report_delay - started, 0.0), profile.duration)
        rq, rdq, _ = profile.sample(np.array([reported]))
        sup.on_controller_state(list(profile.joints), list(rq[0]), list(rdq[0]))
        if step % 10 == 0:
            sup.tick()
            assert sup.run.active, sup.run.message
    sent = clock.now
    assert sup.stop()[0]
    return sup, profile, link.stops[-1], sent, started


def executed(profile, stop, *, sent: float, started: float, arrival: float) -> tuple[np.ndarray, np.ndarray]:
    """The controller's commands every period around the stop received at ``arrival``: the motion until then, the
    stop's trajectory after (``TrajectoryReference.replace`` with the arm's state, as the JTC's update does)."""
    times, q, dq, ddq = stop.waypoints(50.0)
    begin = stop.lead_in_span
    update = np.arange(sent - 0.1, sent + begin + stop.duration + 0.3, PERIOD_S)
    motion = np.clip(update - started, 0.0, profile.duration)
    command, _, _ = profile.sample(motion)
    here = tuple(a[0] for a in profile.sample(np.array([min(arrival - started, profile.duration)])))
    reference = TrajectoryReference.hold(profile.joints, 0.0, here[0]).replace(
        arrival, stop.stamp - begin, profile.joints, times + begin, q, dq, ddq, start=here)
    after = update >= arrival
    command[after] = reference.sample_many(update[after])[0]
    return update, command


@pytest.mark.parametrize("age, report_delay", [(0.01, 0.0), (0.06, 0.07), (0.15, 0.2)])
def test_a_stop_arriving_up_to_the_measured_latency_late_keeps_the_acceleration_limits(robot_case, age,
                                                                                      report_delay):
    """For joint states ``age`` late (latency L = LATENCY_FACTOR * age) and controller reports ``report_delay`` late,
    a stop at the fastest moment of the motion and at two others: whenever it reaches the controller within L of its
    plan, the commanded acceleration (second differences at the controller's period) stays within the robot's
    acceleration limits; the arm comes to rest where the stop says. A stop arriving well after L would not."""
    robot, excitation = robot_case
    for stop_at in (None, 1.3, 2.1):
        probe_sup, profile, _, _, _ = stop_under_latency(robot, excitation, age=age, report_delay=report_delay,
                                                         start_delay=0.05, stop_at=0.2)
        t = np.arange(profile.t_excitation_start, profile.duration - 1.0, 0.01)
        fastest = float(t[np.argmax(np.abs(profile.sample(t)[1]).max(axis=1))])
        when = fastest if stop_at is None else profile.t_excitation_start + stop_at
        sup, profile, stop, sent, started = stop_under_latency(robot, excitation, age=age, report_delay=report_delay,
                                                               start_delay=0.05, stop_at=when)
        latency = stop.lead_in_span
        assert latency == pytest.approx(max(LATENCY_FACTOR * age, LEAD_S), abs=0.021)
        limits = robot.limits.acceleration[robot.indices(profile.joints)]
        for delay in np.linspace(0.0, latency, 7):
            update, command = executed(profile, stop, sent=sent, started=started, arrival=sent + delay)
            acceleration = np.diff(command, 2, axis=0) / PERIOD_S**2
            ratio = np.abs(acceleration).max(axis=0) / limits
            assert ratio.max() <= 1.0, (stop_at, delay, ratio.round(3))
            np.testing.assert_allclose(command[-1], stop.q_end, atol=1e-9)
        if np.abs(stop.v0).max() > 0.5:  # fast: arriving after its lead-in, the arm would jump onto the stop
            _, command = executed(profile, stop, sent=sent, started=started, arrival=sent + latency + 0.1)
            assert (np.abs(np.diff(command, 2, axis=0) / PERIOD_S**2).max(axis=0) / limits).max() > 1.0
