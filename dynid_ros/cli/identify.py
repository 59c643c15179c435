"""``dynid identify``: bag -> physically feasible parameters -> identified URDF."""

from __future__ import annotations

import argparse
from pathlib import Path

from dynid_ros.cli.common import add_model_arguments, add_robot_arguments, float_list, pick
from dynid_ros.pipeline.identify import CONSISTENCIES, METHODS, SOLVERS, IdentificationOptions, StageTimer, identify
from dynid_ros.robot.config import config_section

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
    add_robot_arguments(parser)
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
    parser.add_argument("--prior", choices=("nominal", "none"), default=None,
                        help="resolve the unidentifiable part toward the nominal URDF (default) or not")
    parser.add_argument("--total-mass", type=float_list, default=None, metavar="LO,HI",
                        help="bounds on the total mass of the identified links [kg]")
    parser.add_argument("--strict", action="store_true", default=None,
                        help="fail when any base parameter is not identified by the data (default: keep it at the "
                             "prior, warn and go on)")
    add_pbpr_arguments(parser)
    parser.add_argument("--config", default=None, help="robot config YAML (section 'identification')")
    parser.add_argument("--out", required=True, help="output directory: new, or an earlier result (rewritten); "
                        "never an existing directory of anything else, nor one holding the bag or URDF")


def options_from_args(args: argparse.Namespace) -> IdentificationOptions:
    """Identification options: CLI flags over the config file over the defaults."""
    config = config_section(args.config, "identification")
    defaults = IdentificationOptions()
    bounds = dict(config.get("bounds") or {})
    if args.total_mass is not None:
        bounds["total_mass"] = args.total_mass
    return IdentificationOptions(
        joints=pick(args.joints, config, "joints", None),
        friction=pick(args.friction, config, "friction", defaults.friction),
        armature=bool(pick(args.armature, config, "armature", defaults.armature)),
        method=pick(args.method, config, "method", defaults.method),
        consistency=pick(args.consistency, config, "consistency", defaults.consistency),
        solver=pick(args.solver, config, "solver", defaults.solver),
        topic=pick(args.topic, config, "topic", defaults.topic),
        start=args.start, end=args.end,
        effort_scale=pick(args.effort_scale, config, "effort_scale", None),
        prior=pick(args.prior, config, "prior", defaults.prior),
        bounds=bounds,
        processing=dict(config.get("processing") or {}),
        prior_tolerance=dict(config.get("prior_tolerance") or {}),
        strict=bool(pick(getattr(args, "strict", None), config, "strict", False)),
        pbpr=pbpr_settings(args, config),
        unmodelled_load=bool(config.get("unmodelled_load", defaults.unmodelled_load)),
    )


def add_pbpr_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``--method pbpr`` (the rest, e.g. CoM regions, in the config's ``pbpr:`` mapping)."""
    parser.add_argument("--pbpr-objective", choices=("torque", "coefficients"), default=None,
                        help="pbpr objective (Pennese et al. 2021 eq. 7): torque = ||W beta(p) - tau||^2 (phi2, "
                             "default) or coefficients = ||beta(p) - beta_OLS||^2 (phi1)")
    parser.add_argument("--pbpr-starts", type=int, default=None,
                        help="pbpr random starts Q (Gaz et al. 2019 Alg. 1 line 1; default 8, plus the nominal)")


def pbpr_settings(args: argparse.Namespace, config: dict) -> dict:
    """The ``pbpr:`` config mapping with the CLI flags over it (absent flags, e.g. from a node: the config)."""
    settings = dict(config.get("pbpr") or {})
    for key in ("objective", "starts"):
        value = getattr(args, f"pbpr_{key}", None)
        if value is not None:
            settings[key] = value
    return settings


def run(args: argparse.Namespace) -> int:
    from dynid_ros.data.bag_io import read_joint_states
    from dynid_ros.data.output_paths import RESULT, check_output
    from dynid_ros.pipeline.identification_report import HTML_FILE
    from dynid_ros.pipeline.provenance import provenance
    from dynid_ros.pipeline.results import write_result

    options = options_from_args(args)
    options.check()
    inputs = (args.bag, args.urdf, args.dh, args.config, args.mass_matrix)
    check_output(args.out, RESULT, inputs)  # before any work
    timer = StageTimer()
    if args.beam is not None and not args.abs_effort:
        from dynid_ros.errors import ConfigError

        raise ConfigError("--beam applies to --abs-effort only")
    if args.mass_matrix:
        result = _identify_mass_matrix(args, options, timer)
    else:
        with timer.stage("read_bag"):
            series = read_joint_states(args.bag, topic=options.topic)
        if args.abs_effort:
            result = _identify_abs_effort(args, options, series, timer)
        else:
            result = identify(series, options, urdf=args.urdf, dh=args.dh, timer=timer, xacro_args=args.xacro_arg)
    with timer.stage("write"):
        sources = {"bag": args.bag, "urdf": args.urdf, "dh": args.dh, "config": args.config,
                   "mass_matrix": args.mass_matrix}
        warnings = write_result(result, Path(args.out), inputs,
                                provenance(result.options, sources, result.model.urdf_xml,
                                           getattr(args, "argv", None)))
    for warning in result.warnings + [w for w in warnings if w not in result.warnings]:
        print(f"warning: {warning}")
    masses = [result.delta[result.layout.link_slice(k)][0] for k in range(len(result.layout.links))]
    print(f"{result.options.method} ({result.options.consistency}, {result.options.solver}): "
          f"status {result.solver_status}, feasible {result.feasible}")
    print(f"{result.base.n_base} base parameters from {result.n_samples} samples; relative error "
          f"{100 * result.relative_error:.2f} % (identification window); total mass {sum(masses):.2f} kg")
    for name, m in result.model.following().items():
        print(f"{name} follows {m['leader']} (mimic, multiplier {m['multiplier']:g}, offset {m['offset']:g}): its link "
              f"is identified through {m['leader']}'s torque, no friction or armature of its own")
    print("timings [s]: " + ", ".join(f"{k} {v:.2f}" for k, v in timer.timings.items()))
    print(f"wrote {args.out}/ (readable report: {Path(args.out) / HTML_FILE})")
    return 0


def _identify_mass_matrix(args: argparse.Namespace, options: IdentificationOptions, timer: StageTimer):
    """``--mass-matrix FILE``: friction off (M and g have none), armature only when asked for."""
    from dynid_ros.errors import ConfigError
    from dynid_ros.estimation.inertia_stack import identify_from_mass_matrix, read_mass_matrix_csv
    from dynid_ros.robot.model import load_model
    from dynid_ros.robot.parameters import parse_friction

    if args.abs_effort:
        raise ConfigError("--abs-effort applies to a bag, not to --mass-matrix")
    if parse_friction(args.friction):
        raise ConfigError("--mass-matrix: M(q) and g(q) contain no friction; use --friction none")
    options.friction, options.armature = (), bool(args.armature)
    with timer.stage("model"):
        model = load_model(urdf=args.urdf, dh=args.dh, joints=options.joints, xacro_args=args.xacro_arg)
    with timer.stage("read_mass_matrix"):
        samples = read_mass_matrix_csv(args.mass_matrix, model.n_dof)
    result = identify_from_mass_matrix(samples, options, model=model, timer=timer)
    print(f"M(q), g(q) at {samples.q.shape[0]} configurations: rank {result.processing['rank']} "
          f"(dropped: {', '.join(result.processing['dropped_elements']) or 'none'})")
    return result


def _identify_abs_effort(args: argparse.Namespace, options: IdentificationOptions, series, timer: StageTimer):
    """``--abs-effort [--beam W]``: torque signs by the tree search, then the usual identification."""
    from dynid_ros.estimation.torque_signs import SignSearchOptions, identify_abs_effort

    search = SignSearchOptions() if args.beam is None else SignSearchOptions(beam=args.beam)
    result, signs = identify_abs_effort(series, options, search, urdf=args.urdf, dh=args.dh, timer=timer,
                                         xacro_args=args.xacro_arg)
    print(f"torque signs: {signs.summary()}")
    return result
