"""``dynid identify``: bag -> physically feasible parameters -> identified URDF."""

from __future__ import annotations

import argparse
from pathlib import Path

from dynid_ros.cli.common import (
    add_hyperparameter_scales_argument,
    add_model_arguments,
    add_robot_arguments,
    float_list,
)
from dynid_ros.dynamics.feasibility import CONSISTENCIES, SOLVERS
from dynid_ros.errors import ConfigError
from dynid_ros.identification.options import EFFORT_GAINS, HYPERPARAMETERS, METHODS
from dynid_ros.reporting.result_directory import hyperparameter_scales_argument
from dynid_ros.workflow.identify_run import RunInputs, identify_into
from dynid_ros.workflow.payload_run import PayloadInputs, identify_payload_into

NAME = "identify"
METHOD_HELP = ("estimator (default fbpe): ols = ordinary least squares (Sousa & Cortesão 2014 eq. 60); wls = weighted "
               "least squares, per-joint noise weights; fbpe = feasible base parameter estimation, an SDP with the LMI "
               "of every link (Sousa & Cortesão 2014 eq. 74-75; full: Traversaro et al. 2016); bpfc = OLS then the "
               "closest feasible coefficients (Sousa & Cortesão 2014 eq. 55); pbpr = penalty-based parameter "
               "retrieval: m, c, I about the CoM by multi-start nonlinear optimization with penalties for the "
               "triangle inequality, the total-mass range and CoM regions (Gaz et al. 2019 Alg. 1, eq. 16, 30, 32; "
               "objective Pennese et al. 2021 eq. 7)")
HELP = "identify dynamic parameters from a rosbag2 of joint states"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid identify`` arguments."""
    add_robot_arguments(parser, required=False)  # not with --payload-link: the reference result is the robot
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--bag", help="rosbag2 directory or file (MCAP or sqlite3)")
    source.add_argument("--mass-matrix", metavar="FILE",
                        help="identify from M(q) and g(q) at static configurations instead of torques (Gaz et al. "
                             "2019 section IV-A, eq. 17-21): CSV with header q1..qn, M1_1,M2_1,M2_2,...,Mn_n (lower "
                             "triangle row by row), g1..gn; no friction (see dynid_ros.estimation.inertia_stack)")
    parser.add_argument("--abs-effort", action="store_true",
                        help="the bag's effort is |tau| (sign unknown): estimate the sign of each segment between "
                             "zero crossings by a beam search pruned by the feasible residual, then identify "
                             "(Pennese et al. 2021 Alg. 1; see dynid_ros.estimation.torque_signs)")
    parser.add_argument("--beam", type=int, default=None, metavar="W",
                        help="with --abs-effort: nodes kept per level of the sign tree (default 5 as in "
                             "Pennese et al. 2021)")
    parser.add_argument("--topic", default=None, help="sensor_msgs/JointState topic (default /joint_states)")
    parser.add_argument("--start", type=float, default=None, help="window start, seconds from the first message")
    parser.add_argument("--end", type=float, default=None, help="window end, seconds from the first message")
    add_model_arguments(parser, friction_default=None)
    parser.add_argument("--method", choices=METHODS, default=None, help=METHOD_HELP)
    parser.add_argument("--consistency", choices=CONSISTENCIES, default=None,
                        help="physical (6x6 LMI, Sousa & Cortesão 2014 eq. 17) or full (pseudo-inertia, "
                             "Traversaro et al. 2016; default)")
    parser.add_argument("--solver", choices=SOLVERS, default=None, help="SDP solver (default clarabel)")
    parser.add_argument("--effort-scale", type=float_list, default=None,
                        help="per-joint factors k1,k2,... so that torque = k * effort (e.g. motor currents)")
    parser.add_argument("--effort-scale-file", default=None, metavar="GAINS_YAML",
                        help="per-joint factors by joint name from dynid gains (torque = k * effort; Pennese et al. "
                             "2021 eq. 2); not with --effort-scale")
    parser.add_argument("--prior", choices=("nominal", "none"), default=None,
                        help="resolve the unidentifiable part toward the nominal URDF (default) or not")
    parser.add_argument("--hyperparameters", choices=HYPERPARAMETERS, default=None,
                        help="FBPE's prior scale per group (link masses, CoMs, inertias, joint terms) and noise per "
                             "joint: evidence (default) = chosen by the data, type-II maximum likelihood on the "
                             "linear-Gaussian part (MacKay 1992), checked against its wide-prior limit by "
                             "time-blocked cross-validation; stated = the prior_tolerance values and the residual "
                             "variance as given")
    parser.add_argument("--effort-gains", choices=EFFORT_GAINS, default=None,
                        help="each joint's torque per unit of recorded effort: auto (default) = estimated with the "
                             "parameters (their common scale held by the URDF prior) and used where the data demand "
                             "it and it predicts better in time-blocked cross-validation (a torque constant or sensor "
                             "gain off); off = the effort as recorded (times --effort-scale)")
    add_hyperparameter_scales_argument(parser)
    parser.add_argument("--total-mass", type=float_list, default=None, metavar="LO,HI",
                        help="bounds on the total mass of the identified links [kg]")
    parser.add_argument("--strict", action="store_true", default=None,
                        help="fail when any base parameter is not identified by the data (default: keep it at the "
                             "prior, warn and go on)")
    add_pbpr_arguments(parser)
    parser.add_argument("--config", default=None, help="robot config YAML (section 'identification'; a 'coupling' "
                        "section: the bag is in motor coordinates, see dynid_ros.robot.coupling)")
    parser.add_argument("--payload-link", default=None, metavar="LINK",
                        help="identify only a payload rigidly attached to LINK from a loaded run, with --reference "
                             "the result of the unloaded robot: mass, CoM, inertia, fully consistent, by the "
                             "pseudo-inertia LMI and by the manifold (m, c, Q, L) (Traversaro et al. 2016)")
    parser.add_argument("--reference", default=None, metavar="RESULT_DIR",
                        help="with --payload-link: output directory of dynid identify for the unloaded robot")
    parser.add_argument("--out", required=True, help="output directory: new, or an earlier result (rewritten); "
                        "never an existing directory of anything else, nor one holding the bag or URDF")


def add_pbpr_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``--method pbpr`` (the rest, e.g. CoM regions, in the config's ``pbpr:`` mapping)."""
    parser.add_argument("--pbpr-objective", choices=("torque", "coefficients"), default=None,
                        help="pbpr objective (Pennese et al. 2021 eq. 7): torque = ||W beta(p) - tau||^2 (phi2, "
                             "default) or coefficients = ||beta(p) - beta_OLS||^2 (phi1)")
    parser.add_argument("--pbpr-starts", type=int, default=None,
                        help="pbpr random starts Q (Gaz et al. 2019 Alg. 1 line 1; default 8, plus the nominal)")


def run(args: argparse.Namespace) -> int:
    """Identify the robot (or, with ``--payload-link``, the payload) into ``--out``; the exit code."""
    if args.payload_link or args.reference:
        return _identify_payload(args)
    inputs = RunInputs(bag=_path(args.bag), mass_matrix=_path(args.mass_matrix), urdf=_path(args.urdf),
                       dh=_path(args.dh), config=_path(args.config), xacro_args=tuple(args.xacro_arg or ()),
                       effort_scale_file=_path(args.effort_scale_file), abs_effort=args.abs_effort, beam=args.beam)
    overrides = {**vars(args), "hyperparameter_scales": hyperparameter_scales_argument(args.hyperparameter_scales)}
    run_ = identify_into(args.out, inputs, overrides, argv=getattr(args, "argv", None))
    for note in run_.notes:
        print(f"note: {note}")
    for warning in run_.warnings:
        print(f"warning: {warning}")
    for line in run_.lines:
        print(line)
    return 0


def _identify_payload(args: argparse.Namespace) -> int:
    """``--payload-link LINK --reference DIR --bag LOADED``: the payload alone (Traversaro et al. 2016)."""
    if not (args.payload_link and args.reference):
        raise ConfigError("--payload-link and --reference go together")
    given = [flag for flag, value in (("--urdf", args.urdf), ("--dh", args.dh), ("--mass-matrix", args.mass_matrix),
                                      ("--abs-effort", args.abs_effort)) if value]
    if given or not args.bag:
        raise ConfigError(f"--payload-link takes the robot from --reference and a --bag; not {', '.join(given)}")
    result, lines = identify_payload_into(args.out, PayloadInputs(
        Path(args.bag), Path(args.reference), args.payload_link, topic=args.topic, start=args.start, end=args.end,
        solver=args.solver or "clarabel"))
    for warning in result.warnings:
        print(f"warning: {warning}")
    for line in lines:
        print(line)
    return 0


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)
