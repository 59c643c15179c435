"""``dynid batch``: one identification per bag on a Dask cluster, with a summary (:mod:`dynid_ros.fleet.batch`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from dynid_ros.cli.common import (
    add_hyperparameter_scales_argument,
    add_model_arguments,
    add_xacro_argument,
    joint_list,
)
from dynid_ros.errors import ConfigError
from dynid_ros.fleet.batch import (
    SUMMARY_CSV,
    SUMMARY_JSON,
    plan_batch,
    require_dask,
    run_batch,
    summary,
    write_summary,
)
from dynid_ros.identification.options import HYPERPARAMETERS, METHODS, identification_options
from dynid_ros.reporting.result_directory import hyperparameter_scales_argument
from dynid_ros.robot.config import load_config
from dynid_ros.robot.drivers import driver_defaults
from dynid_ros.robot.resources import find_file

NAME = "batch"
HELP = "identify many bags (one result per bag) on a Dask cluster, local by default, with a summary"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid batch`` arguments."""
    parser.add_argument("--urdf", default=None, help="robot description (.urdf or .urdf.xacro); default: the "
                        "config's robot.urdf")
    parser.add_argument("--config", default=None, help="robot config YAML: its 'identification' section, and its "
                        "robot.urdf when --urdf is not given")
    add_xacro_argument(parser)
    parser.add_argument("--joints", type=joint_list, default=None, help="identified joints, comma separated")
    parser.add_argument("--bags", nargs="+", required=True, metavar="PATH", help="rosbag2 directories or files")
    parser.add_argument("--out", required=True, help="output directory: new or an earlier batch; one result "
                        "directory per bag (named after the bag) plus summary.json and summary.csv")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker processes of the local cluster (default: min(bags, CPUs))")
    parser.add_argument("--address", default=None, help="address of a running Dask scheduler (e.g. "
                        "tcp://host:8786) instead of a local cluster; its workers must see the same paths")
    parser.add_argument("--topic", default=None, help="sensor_msgs/JointState topic (default /joint_states)")
    parser.add_argument("--start", type=float, default=None, help="window start, seconds from the first message")
    parser.add_argument("--end", type=float, default=None, help="window end, seconds from the first message")
    add_model_arguments(parser, friction_default=None)
    parser.add_argument("--method", choices=METHODS, default=None, help="estimator (see dynid identify --help)")
    parser.add_argument("--hyperparameters", choices=HYPERPARAMETERS, default=None,
                        help="evidence (default) or stated, as dynid identify's; with evidence the first bag's "
                             "evidence chooses the prior's scales and every other bag is identified with them")
    add_hyperparameter_scales_argument(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def robot_urdf(urdf: str | None, config_path: str | None) -> Path:
    """``--urdf``, else the config's ``robot.urdf`` (absolute, relative to the config file, to the working
    directory, or to the package's share directory)."""
    if urdf:
        return Path(urdf)
    if not config_path:
        raise ConfigError("give the robot: --urdf FILE or --config FILE (with robot.urdf)")
    named = (load_config(config_path).get("robot") or {}).get("urdf")
    if not named:
        raise ConfigError(f"{config_path}: no robot.urdf; give --urdf")
    return find_file(named, f"{config_path}: robot.urdf", config_path)


def run(args: argparse.Namespace) -> int:
    """Identify every bag on a Dask cluster and write the summary; the exit code (1 when a bag failed)."""
    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {args.workers}")
    if args.workers is not None and args.address:
        raise ConfigError("--workers sizes a local cluster; an existing one (--address) has its own workers")
    require_dask()  # before any work: plan_batch creates --out
    urdf = robot_urdf(args.urdf, args.config)
    config = load_config(args.config)
    options = identification_options(config.get("identification") or {}, {
        **vars(args), "hyperparameter_scales": hyperparameter_scales_argument(args.hyperparameter_scales)},
        **driver_defaults(config))
    jobs = plan_batch(args.bags, args.out, urdf, options, args.xacro_arg)  # refuses a bad --out before any work
    from tqdm import tqdm

    start = time.perf_counter()
    with tqdm(total=len(jobs), desc="bags", unit="bag", disable=args.no_progress, file=sys.stderr) as bar:
        def done(record: dict) -> None:
            bar.update(1)
            if record["status"] != "ok":
                bar.write(f"failed: {record['error']}", file=sys.stderr)

        records = run_batch(jobs, args.workers, args.address, done)
    content = summary(records, args.workers, args.address, time.perf_counter() - start, options)
    out = Path(args.out)
    write_summary(out, content)
    for r in records:
        error = f"{100 * r['relative_error']:.2f} %" if r["relative_error"] is not None else r["error"]
        print(f"{r['status']:6s} {Path(r['bag']).name}: {error} ({r['time_s']:.1f} s)" if r["time_s"] is not None
              else f"{r['status']:6s} {Path(r['bag']).name}: {error}")
    print(f"{content['n_ok']} of {len(records)} bags identified in {content['elapsed_s']:.1f} s; wrote "
          f"{out / SUMMARY_JSON} and {out / SUMMARY_CSV}")
    return 0 if content["n_failed"] == 0 else 1
