"""orchestrator_node's steps without ROS (dynid_ros.execution.orchestration).

The other nodes' services are :class:`Desk` (plain objects answering each call as the test says: the
ROS wiring is tested in test_orchestrator_node.py), time is a settable clock.
"""

import subprocess
import sys

import pytest

from dynid_ros.execution.orchestration import Orchestration, OrchestrationSettings

from support.manual_clock import ManualClock


class Answer:
    def __init__(self, outcome=None):
        self.value = outcome

    def done(self):
        return self.value is not None

    def outcome(self):
        return self.value


class Desk:
    """Services that are ready and answer every call with success unless ``answers`` says otherwise."""

    def __init__(self, answers=None, ready=True):
        self.answers, self.is_ready, self.sent = dict(answers or {}), ready, []

    def ready(self, name):
        return self.is_ready

    def call(self, name):
        self.sent.append(name)
        return Answer(self.answers.get(name, (True, f"{name} ok")))

    def service_name(self, name):
        return f"/{name}"


def make(desk, **settings):
    clock = ManualClock(now=10.0)
    run = Orchestration(OrchestrationSettings(**settings), desk, clock=clock, wall_ns=lambda: clock.ns)
    return run, clock


def fresh(run, clock, role, **status):
    clock.ns += 1
    run.on_status(role, status, clock.ns)


def test_no_ros_is_loaded():
    code = "import sys, dynid_ros.execution.orchestration; print('rclpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_run_goes_record_excite_stop_identify_done():
    desk = Desk()
    run, clock = make(desk, settle_time=1.0)
    run.tick()
    assert run.state == "recording" and desk.sent == ["record_start"]
    fresh(run, clock, "recorder", state="recording", counts={"/joint_states": 12})
    fresh(run, clock, "excitation", state="idle", joint_states_ready=True)
    run.tick()
    assert run.state == "exciting" and desk.sent[-1] == "excite_start"
    fresh(run, clock, "excitation", state="running", duration=5.0)
    run.tick()
    fresh(run, clock, "excitation", state="done", duration=5.0)
    run.tick()
    assert run.state == "exciting" and "recording 1 s more" in run.message
    clock.now += 1.0
    run.tick()
    assert run.state == "stopping" and desk.sent[-1] == "record_stop"
    run.tick()
    assert run.state == "identifying" and desk.sent[-1] == "identify"
    fresh(run, clock, "identification", state="done", message="wrote out/robot.urdf")
    run.tick()
    assert (run.state, run.message) == ("done", "wrote out/robot.urdf")
    assert run.cleanup_sent == []


def test_the_joint_state_deadline_counts_from_the_recording_start():
    desk = Desk()
    run, clock = make(desk, joint_states_timeout=1.0)
    clock.now += 5.0  # the orchestrator came up long before the nodes: not the deadline's start
    run.tick()
    fresh(run, clock, "recorder", state="recording", counts={"/joint_states": 12})
    fresh(run, clock, "excitation", state="idle", joint_states_ready=False)
    run.tick()  # the recorder answered: the deadline counts from now
    clock.now += 0.9
    run.tick()
    assert run.state == "recording"
    clock.now += 0.2
    run.tick()
    assert (run.state, run.message) == (
        "aborted", "the excitation node has received no joint states 1 s after the recording start")


def test_the_identification_deadline_counts_from_the_identify_call_and_ignores_an_earlier_done():
    desk = Desk()
    run, clock = make(desk, settle_time=0.0, identify_timeout=1.5)
    run.on_status("identification", {"state": "done", "message": "an EARLIER run"}, 1)  # latched before this run
    run.tick()
    fresh(run, clock, "recorder", state="recording", counts={"/joint_states": 12})
    fresh(run, clock, "excitation", state="idle", joint_states_ready=True)
    run.tick()
    fresh(run, clock, "excitation", state="done", duration=5.0)
    clock.now += 30.0  # recording and excitation took their time: not the identification's
    run.tick()
    run.tick()
    run.tick()
    assert run.state == "identifying" and desk.sent[-1] == "identify"
    run.on_status("identification", {"state": "done", "message": "an EARLIER run"}, 1)  # a late re-delivery
    clock.now += 1.4
    run.tick()
    assert run.state == "identifying"
    fresh(run, clock, "identification", state="running", message="identifying")
    clock.now += 0.2
    run.tick()
    assert (run.state, run.message) == ("aborted", "the identification did not end within 1.5 s")
    assert run.status["identification"]["state"] == "running"


def test_the_motion_starts_only_once_the_recorder_writes_messages():
    """Subscribed (state ``recording``) with nothing written yet: the excitation waits; it starts at the first
    message, or the run ends at the deadline naming the recorder."""
    desk = Desk()
    run, clock = make(desk)
    run.tick()
    fresh(run, clock, "recorder", state="recording", counts={})
    fresh(run, clock, "excitation", state="idle", joint_states_ready=True)
    run.tick()
    assert run.state == "recording" and "excite_start" not in desk.sent
    fresh(run, clock, "recorder", state="recording", counts={"/joint_states": 3})
    run.tick()
    assert run.state == "exciting" and desk.sent[-1] == "excite_start"
    late = Desk()
    run, clock = make(late)
    run.tick()
    fresh(run, clock, "recorder", state="recording", counts={"/joint_states": 0})
    fresh(run, clock, "excitation", state="idle", joint_states_ready=True)
    run.tick()  # the recorder answered: the deadline counts from now
    clock.now += 10.1
    run.tick()
    assert run.state == "aborted" and "the recorder has written no message yet" in run.message
    assert "excite_start" not in late.sent


def test_a_latched_done_of_an_earlier_run_is_ignored():
    desk = Desk()
    run, clock = make(desk)
    run.on_status("excitation", {"state": "done"}, 1)  # published before this run called the node
    run.tick()
    fresh(run, clock, "recorder", state="recording", counts={"/joint_states": 12})
    fresh(run, clock, "excitation", state="idle", joint_states_ready=True)
    run.tick()
    run.on_status("excitation", {"state": "done"}, 0)  # a late delivery of the old latched status
    run.tick()
    assert run.state == "exciting" and "done" not in run.message


def test_an_aborted_excitation_stops_the_recorder_and_skips_identification():
    desk = Desk()
    run, clock = make(desk)
    run.tick()
    fresh(run, clock, "recorder", state="recording", counts={"/joint_states": 12})
    fresh(run, clock, "excitation", state="idle", joint_states_ready=True)
    run.tick()
    fresh(run, clock, "excitation", state="aborted", message="the robot does not follow the motion")
    run.tick()
    assert run.state == "aborted" and run.message == "excitation aborted: the robot does not follow the motion"
    assert [name for name, _ in run.cleanup_sent] == ["record_stop"]  # nothing moves: no excite_stop
    assert "identify" not in desk.sent


def exciting(desk, **settings):
    """A run whose excitation was started (the recorder records, the excitation node has joint states)."""
    run, clock = make(desk, **settings)
    run.tick()
    fresh(run, clock, "recorder", state="recording", counts={"/joint_states": 12})
    fresh(run, clock, "excitation", state="idle", joint_states_ready=True)
    run.tick()
    return run, clock


def test_an_excitation_without_progress_is_stopped_with_the_recorder():
    """No change of the excitation's status (state, time on the controller's clock) for service_timeout, not
    paused: aborted, the excitation stopped and the recorder too."""
    desk = Desk()
    run, clock = exciting(desk, service_timeout=2.0)
    fresh(run, clock, "excitation", state="running", duration=3.0, time=1.2, paused=False)
    run.tick()
    clock.now += 2.1
    run.tick()
    assert run.state == "aborted"
    assert run.message == "the excitation made no progress for 2 s (state running, at 1.2 s of 3.0 s; not paused)"
    assert [name for name, _ in run.cleanup_sent] == ["excite_stop", "record_stop"]


def test_a_slowed_down_or_paused_excitation_is_waited_for():
    """A speed-scaled motion takes longer than its duration plus any margin, a paused one stands still: the
    excitation's own time decides, not the wall clock."""
    run, clock = exciting(Desk(), service_timeout=2.0)
    for k in range(100):  # 100 s of wall time for a 3 s motion, slowly moving on
        fresh(run, clock, "excitation", state="running", duration=3.0, time=0.03 * k, paused=False)
        clock.now += 1.0
        run.tick()
    for _ in range(60):  # then a minute paused
        fresh(run, clock, "excitation", state="running", duration=3.0, time=2.97, paused=True)
        clock.now += 1.0
        run.tick()
    assert run.state == "exciting"
    fresh(run, clock, "excitation", state="done", duration=3.0, time=3.0, paused=False)
    run.tick()
    assert run.message.startswith("excitation done")


def test_an_excitation_timeout_is_a_wall_clock_deadline():
    desk = Desk()
    run, clock = exciting(desk, service_timeout=2.0, excitation_timeout=5.0)
    fresh(run, clock, "excitation", state="running", duration=3.0, time=0.5, paused=True)
    clock.now += 5.1
    run.tick()
    assert run.state == "aborted" and run.message == "the excitation did not end within 5 s (state running)"
    assert [name for name, _ in run.cleanup_sent] == ["excite_stop", "record_stop"]


@pytest.mark.parametrize("answers, reason", [
    ({"record_start": (False, "bag_path exists")}, "/record_start refused: bag_path exists"),
    ({"record_start": "service died"}, "call to /record_start failed: service died"),
])
def test_a_refused_or_failed_call_aborts(answers, reason):
    run, _ = make(Desk(answers))
    run.tick()
    run.tick()
    assert (run.state, run.message) == ("aborted", reason)


def test_services_that_never_appear_abort_after_service_timeout():
    run, clock = make(Desk(ready=False), service_timeout=1.0)
    run.tick()
    assert run.state == "waiting"
    clock.now += 1.5
    run.tick()
    assert run.state == "aborted" and run.message.startswith("services not available within 1 s: /record_start")
