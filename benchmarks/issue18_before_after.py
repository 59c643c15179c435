"""Issue 18 before/after: each item's scenario on the code before the fix and on this checkout.

The data (real bags written with rosbags and the ``mcap`` library, torques of known models) are made with this
checkout's test helpers; each run then evaluates every scenario in a subprocess with ``PYTHONPATH`` set to the
code under test, so the old code reads the same files. A scenario that fails prints its one-line error.

Run: ``mkdir /tmp/old_dynid && git archive d7a1be2 | tar -x -C /tmp/old_dynid`` (the commit before issue 18),
then ``DYNID_PANDA_DATA=... python benchmarks/issue18_before_after.py --old /tmp/old_dynid [--out /tmp/issue18]``;
prints both runs (old, then new) and writes ``<out>/old.txt`` and ``<out>/new.txt``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TEST = REPO / "test"


def make_data(root: Path) -> None:
    """Every input of the scenarios, written with this checkout."""
    sys.path.insert(0, str(TEST))
    import test_bag_io as tb
    import test_real_bags as tr
    from dynid_ros.data.bag_io import read_joint_states, write_joint_states
    from dynid_ros.data.joint_states import JointStateSeries
    from dynid_ros.dynamics.regressor import torques
    from dynid_ros.robot.model import load_model, nominal_parameters

    from robots import PANDA_ARM_JOINTS, PANDA_ERD, example_robot_urdf

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    tb.write_mcap(root / "lz4", "lz4")
    tb.write_raw(root / "two_pub", tb.two_publishers())
    tb.write_raw(root / "novel", [tb.standard(k, velocity=[]) for k in range(3)])
    tb.write_raw(root / "partial_stamps", [tb.standard(k, stamp_ns=0 if k < 3 else None) for k in range(8)])
    model = load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS),
                       locked_at={f: tr.FINGER_OPEN for f in tr.FINGERS})
    layout = model.layout_for()
    truth = nominal_parameters(model, layout)
    rng = np.random.default_rng(7)
    for k in range(7):
        truth[layout.link_slice(k)] *= rng.uniform(0.85, 1.15)
    for j in range(7):
        for term, lo, hi in (("fv", 0.05, 0.3), ("fc", 0.1, 0.5), ("fo", -0.1, 0.1), ("Ia", 0.01, 0.1)):
            truth[layout.joint_index(j, term)] = rng.uniform(lo, hi)
    tr.two_publisher_bag(root / "dw_train", (model, layout, truth), seed=1)
    tr.two_publisher_bag(root / "dw_test", (model, layout, truth), seed=2, hole=None)
    held_out = read_joint_states(root / "dw_test")  # one publisher, velocities (the old code needs them)
    write_joint_states(root / "one_pub_test", JointStateSeries(held_out.names, held_out.t, held_out.position,
                                                               np.nan_to_num(held_out.velocity), held_out.effort))
    (root / "diff.yaml").write_text("identification:\n  processing:\n    velocity_source: differentiate\n")
    moving = [j for j in PANDA_ARM_JOINTS if j != "panda_joint4"]
    locked = load_model(urdf=REPO / "urdf" / "panda.urdf", joints=moving, locked_at={"panda_joint4": -1.5})
    locked_layout = locked.layout_for()
    t = np.arange(0.0, 12.0, 2e-3)
    q, dq, ddq = tr.sines(t, 6, seed=4)
    tau = torques(locked, locked_layout, nominal_parameters(locked, locked_layout), q, dq, ddq)
    np.savez(root / "locked.npz", t=t + 100, q=np.insert(q, 3, -1.5, axis=1), dq=np.insert(dq, 3, 0.0, axis=1),
             tau=np.insert(tau, 3, 30.0, axis=1))


def scenario(name: str, run: Callable[[], str]) -> None:
    try:
        print(f"[{name}] {run()}", flush=True)
    except Exception as err:  # noqa: BLE001 - the old code's failure is the result
        print(f"[{name}] ERROR {type(err).__name__}: {' '.join(str(err).split())[:220]}", flush=True)


def cli(*args: object) -> tuple[int, list[str]]:
    done = subprocess.run([sys.executable, "-m", "dynid_ros.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=900, cwd="/")  # not the checkout: -m puts the working directory on sys.path
    return done.returncode, [line for line in (done.stdout + done.stderr).splitlines() if "error" in line]


def evaluate(data: Path, work: Path, new_result: Path) -> None:
    """Every scenario with the ``dynid_ros`` on ``PYTHONPATH``; ``new_result``: a result the old code can't make."""
    import dynid_ros
    from dynid_ros.data.bag_io import read_joint_states, repair_bag

    sys.path.insert(0, str(TEST))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    print("code:", Path(dynid_ros.__file__).parent)

    def repair() -> str:
        shutil.copytree(data / "lz4", work / "lz4")
        report = repair_bag(work / "lz4")
        return (f"message_count {report['message_count']}, out {report.get('out')}, input holds "
                f"{sorted(p.name for p in (work / 'lz4').iterdir())}")

    scenario("1 repair of a complete lz4 bag of 600 messages, no metadata.yaml", repair)
    scenario("2 two publishers", lambda: (lambda s: f"joints {s.names}, {len(s)} samples")(
        read_joint_states(data / "two_pub")))
    scenario("3 bag without velocity", lambda: f"velocity {read_joint_states(data / 'novel').velocity}")
    scenario("4a continuous joint reported at 4.0 rad", lambda: _continuous_start(work))
    scenario("4b continuous joint wrapped, q' = 2 rad/s", lambda: _continuous_unwrap(work))
    scenario("5 0.5 s gap at 4 s", _gap)
    scenario("6 --joints without panda_joint4, held at -1.5 rad", lambda: _locked(data))
    scenario("7 half the rows left out of an OLS fit", _rows_left_out)
    scenario("8 MAP data weight, signal-to-noise > 1e5", _map_weight)
    scenario("done-when: arm 500 Hz stamped + gripper 50 Hz stamps 0, no velocity, 0.5 s gap",
             lambda: _done_when(data, work))
    scenario("9 validate a result whose processing record holds torque_signs", lambda: _abs_record(
        data, work, work / "dw" if (work / "dw").exists() else new_result))
    scenario("11 a publisher stamping its first 3 messages 0", lambda: (lambda s: f"t - 7 s = {np.round(s.t - 7, 4)}")(
        read_joint_states(data / "partial_stamps")))


def _continuous_urdf(work: Path) -> Path:
    from dynid_ros.robot.resources import robot_file

    urdf = work / "continuous.urdf"
    urdf.write_text(robot_file("panda", "urdf").read_text().replace('<joint name="panda_joint7" type="revolute">',
                                                                    '<joint name="panda_joint7" type="continuous">'))
    return urdf


def _continuous_start(work: Path) -> str:
    from dynid_ros.excitation import ExcitationTrajectory, FourierTrajectory
    from dynid_ros.execution.robot_limits import checked_profile, robot_limits
    from dynid_ros.robot.config import load_config
    from dynid_ros.robot.model import load_model
    from dynid_ros.robot.resources import robot_file

    home = np.array([0.0, -0.3, 0.0, -1.5, 0.0, 1.8, 0.7])
    wf, a = 2 * np.pi / 4, np.zeros((7, 2))
    a[3] = np.array([1.0, -1.0]) * 0.5 * wf / 1.299
    trajectory = FourierTrajectory(tuple(f"panda_joint{i}" for i in range(1, 8)), wf, home, a, np.zeros((7, 2)))
    start = home.copy()
    start[6] = 4.0
    robot = robot_limits(load_model(urdf=_continuous_urdf(work)), load_config(robot_file("panda", "config")))
    profile = checked_profile(ExcitationTrajectory(trajectory, None, 1.0), robot, start)
    q = profile.sample(np.array([0.0, profile.t_excitation_start]))[0]
    return f"accepted: q7 starts at {q[0, 6]:.3f}, the excitation runs about {q[1, 6]:.3f} (= 0.7 + 2 pi)"


def _continuous_unwrap(work: Path) -> str:
    from dynid_ros.data.joint_states import JointStateSeries
    from dynid_ros.data.signal_processing import ProcessingOptions, process
    from dynid_ros.robot.model import load_model

    try:
        from dynid_ros.pipeline.linear_identification import prepare_series  # before the rooms, part 2
        from dynid_ros.pipeline.options import IdentificationOptions  # before the rooms, part 2
    except ImportError:
        from dynid_ros.pipeline.linear_identification import prepare_series
        from dynid_ros.pipeline.options import IdentificationOptions

    model = load_model(urdf=_continuous_urdf(work))
    t = np.arange(0.0, 6.0, 1e-3)
    q = np.zeros((t.size, 7))
    q[:, 6] = np.mod(3.0 + 2.0 * t + np.pi, 2 * np.pi) - np.pi
    series = prepare_series(JointStateSeries(list(model.joints), t + 10, q, None, np.zeros_like(q)), model,
                            IdentificationOptions())
    data = process(series, ProcessingOptions(velocity_source="differentiate"))
    return f"max |q7' - 2 rad/s| = {np.abs(data.dq[:, 6] - 2.0).max():.3g} rad/s"


def _gap() -> str:
    from dynid_ros.data.joint_states import JointStateSeries
    from dynid_ros.data.signal_processing import ProcessingOptions, process
    from test_signal_processing import exact, sines

    series = sines(duration=10.0, noise=1e-4)
    rel = series.t - series.t[0]
    keep = ~((rel >= 4.0) & (rel < 4.5))
    data = process(JointStateSeries(series.names, series.t[keep], series.position[keep], series.velocity[keep],
                                    series.effort[keep]), ProcessingOptions(trim_s=0.5))
    _, dq, ddq = exact(data.t)
    return (f"max relative error dq {np.abs(data.dq - dq).max() / np.abs(dq).max():.2e}, ddq "
            f"{np.abs(data.ddq - ddq).max() / np.abs(ddq).max():.2e}; segments "
            f"{[(round(s['start_s'], 2), round(s['end_s'], 2)) for s in getattr(data, 'segments', [])] or 'none'}")


def _locked(data: Path) -> str:
    from dynid_ros.data.joint_states import JointStateSeries
    from dynid_ros.pipeline.identify import identify
    from dynid_ros.pipeline.options import IdentificationOptions

    z = np.load(data / "locked.npz")
    names = [f"panda_joint{i}" for i in range(1, 8)]
    result = identify(JointStateSeries(names, z["t"], z["q"], z["dq"], z["tau"]),
                      IdentificationOptions(joints=[n for n in names if n != "panda_joint4"]),
                      urdf=REPO / "urdf" / "panda.urdf")
    return f"locked at {result.model.locked_positions}, relative error {100 * result.relative_error:.3f} %"


def _rows_left_out() -> str:
    import test_estimators
    from dynid_ros.estimation import estimators

    _, layout, base, truth, w_b, _ = test_estimators.synthetic("ur5")
    rng = np.random.default_rng(2)
    exact = w_b @ (base.K @ truth)
    rows = np.ones(exact.size, dtype=bool)
    rows[: exact.size // 2] = False
    masked = "rows" in inspect.signature(estimators.ols).parameters
    z = []
    for _ in range(40):
        tau = exact + rng.normal(0.0, 0.02, exact.size)
        fit = (estimators.ols(w_b, tau, 6, rows=rows) if masked else  # the old pipeline zeroed the rows
               estimators.ols(np.where(rows[:, None], w_b, 0.0), np.where(rows, tau, 0.0), 6))
        z.append((fit.beta - base.K @ truth) / fit.std)
    return (f"spread of (beta - truth) / std over 40 draws {np.std(z):.3f} (1 = honest); residual_std "
            f"{np.round(fit.residual_std, 4).tolist()} (noise 0.02)")


def _map_weight() -> str:
    import test_estimators
    from dynid_ros.estimation import estimators

    _, layout, base, truth, w_b, w = test_estimators.synthetic("panda")
    exact = w @ truth
    tau = exact + np.random.default_rng(5).normal(0.0, 1e-4 * np.abs(exact).max(), exact.size)
    ols = estimators.ols(w_b, tau, 7)
    fit = estimators.fbpe(w_b, tau, base.K, layout, prior=truth)
    sharp = ols.rel_std < 1.0
    return (f"median posterior std / OLS std of the well-determined base parameters "
            f"{np.median(fit.beta_std[sharp] / ols.std[sharp]):.3f}; cap reported: "
            f"{getattr(fit, 'capped_data_weight', 'no such field')}")


def _done_when(data: Path, work: Path) -> str:
    from robots import PANDA_ERD, example_robot_urdf

    code, lines = cli("identify", "--urdf", example_robot_urdf(PANDA_ERD), "--bag", data / "dw_train", "--config",
                      data / "diff.yaml", "--out", work / "dw")
    if code:
        return f"identify exit {code}: {lines[-1]}"
    report = json.loads((work / "dw" / "report.json").read_text())
    code, lines = cli("validate", "--result", work / "dw", "--bag", data / "dw_test", "--report", work / "val.json")
    return (f"identify exit 0, relative error {100 * report['relative_error']:.3f} %; validate exit {code}: "
            f"{lines[-1]}")


def _abs_record(data: Path, work: Path, result: Path) -> str:
    import yaml

    shutil.copytree(result, work / "abs")
    path = work / "abs" / "parameters.yaml"
    content = yaml.safe_load(path.read_text())
    content["processing"]["torque_signs"] = {"segments": []}  # as --abs-effort records it
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    code, lines = cli("validate", "--result", work / "abs", "--bag", data / "one_pub_test", "--report",
                      work / "abs.json")
    return f"validate exit {code}: {lines[-1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="checkout of the code before issue 18")
    parser.add_argument("--out", type=Path, default=Path("/tmp/issue18_before_after"))
    parser.add_argument("--evaluate", type=Path, help=argparse.SUPPRESS)  # internal: one run, in a subprocess
    args = parser.parse_args()
    if args.evaluate is not None:
        evaluate(args.out / "data", args.evaluate, args.out / "new" / "dw")
        return
    make_data(args.out / "data")
    for name, code in (("new", REPO), ("old", args.old)):
        if code is None:
            continue
        env = {**os.environ, "PYTHONPATH": str(code)}
        done = subprocess.run([sys.executable, __file__, "--out", str(args.out), "--evaluate", str(args.out / name)],
                              capture_output=True, text=True, env=env, timeout=3600)
        (args.out / f"{name}.txt").write_text(done.stdout)
        print(done.stdout + done.stderr[-2000:] * (done.returncode != 0))


if __name__ == "__main__":
    main()
