"""``dynid identify``: bag -> physically feasible parameters -> identified URDF."""

from __future__ import annotations

import argparse
from pathlib import Path

from dynid_ros.cli.common import add_model_arguments, add_robot_arguments, float_list
from dynid_ros.data.bag_io import read_joint_states
from dynid_ros.data.output_paths import PAYLOAD, RESULT, check_output
from dynid_ros.dynamics.feasibility import CONSISTENCIES, SOLVERS
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.inertia_stack import read_mass_matrix_csv
from dynid_ros.estimation.torque_signs import SignSearchOptions
from dynid_ros.pipeline.abs_effort import identify_abs_effort_bag
from dynid_ros.pipeline.config_robot import coupled_model as config_coupled_model
from dynid_ros.pipeline.config_robot import identify_frames_config
from dynid_ros.pipeline.frames_identification import FRAMES_FILE, load_frames_result, read_motor_states
from dynid_ros.pipeline.identification_report import HTML_FILE
from dynid_ros.pipeline.identify import identify_bag
from dynid_ros.pipeline.mass_matrix import identify_from_mass_matrix
from dynid_ros.pipeline.options import METHODS, IdentificationOptions, identification_options
from dynid_ros.pipeline.payload_identification import identify_frames_payload, identify_payload, write_payload
from dynid_ros.pipeline.provenance import provenance
from dynid_ros.pipeline.results import load_parameters, write_result
from dynid_ros.pipeline.timing import StageTimer
from dynid_ros.robot.config import config_section, load_config
from dynid_ros.robot.frames import frames_section
from dynid_ros.robot.mjcf_writer import urdf_omits
from dynid_ros.robot.model import RobotModel, load_model
from dynid_ros.robot.parameters import parse_friction

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


def options_from_args(args: argparse.Namespace) -> IdentificationOptions:
    """Identification options: CLI flags over the config file over the defaults (one builder for the CLI and
    the node: :func:`dynid_ros.pipeline.options.identification_options`)."""
    return identification_options(config_section(args.config, "identification"), vars(args))


def add_pbpr_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``--method pbpr`` (the rest, e.g. CoM regions, in the config's ``pbpr:`` mapping)."""
    parser.add_argument("--pbpr-objective", choices=("torque", "coefficients"), default=None,
                        help="pbpr objective (Pennese et al. 2021 eq. 7): torque = ||W beta(p) - tau||^2 (phi2, "
                             "default) or coefficients = ||beta(p) - beta_OLS||^2 (phi1)")
    parser.add_argument("--pbpr-starts", type=int, default=None,
                        help="pbpr random starts Q (Gaz et al. 2019 Alg. 1 line 1; default 8, plus the nominal)")


def run(args: argparse.Namespace) -> int:
    if args.payload_link or args.reference:
        return _identify_payload(args)
    config = load_config(args.config)
    if frames_section(config) is not None:
        return _identify_frames(args, config)
    if not (args.urdf or args.dh):
        raise ConfigError("give the robot: --urdf or --dh (or --payload-link with --reference, or a config with "
                          "robot.frames)")
    options = options_from_args(args)
    inputs = (args.bag, args.urdf, args.dh, args.config, args.mass_matrix, args.effort_scale_file)
    check_output(args.out, RESULT, inputs)  # before any work
    timer = StageTimer()
    if args.beam is not None and not args.abs_effort:
        raise ConfigError("--beam applies to --abs-effort only")
    if args.mass_matrix:
        result = _identify_mass_matrix(args, options, timer)
    elif args.abs_effort:  # the bag streamed (a cutoff chosen on the data: in memory)
        result = _identify_abs_effort(args, options, timer)
    else:  # the bag streamed (sigmoid friction: in memory); the node runs the same
        result = identify_bag(args.bag, options, urdf=args.urdf, dh=args.dh, timer=timer, xacro_args=args.xacro_arg,
                              model=coupled_model(args, options, timer), gains_file=args.effort_scale_file)
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
    omitted = sorted({term for terms in urdf_omits(result.layout, result.delta, result.friction_sigmoid).values()
                      for term in terms})
    if omitted and result.model.urdf_xml is not None:
        print(f"identified.urdf holds the inertials and <dynamics damping friction>; it cannot hold the "
              f"{', '.join(omitted)} (report.json urdf_omits, parameters.yaml; identified.xml holds the armature)")
    print("timings [s]: " + ", ".join(f"{k} {v:.2f}" for k, v in timer.timings.items()))
    print(f"wrote {args.out}/ (readable report: {Path(args.out) / HTML_FILE})")
    return 0


def _identify_frames(args: argparse.Namespace, config: dict) -> int:
    """A robot described by frames in ``--config`` (no URDF; Wang et al. 2019): the bag may be a CSV."""
    if args.urdf or args.dh or args.mass_matrix or args.abs_effort:
        raise ConfigError(f"{args.config}: the robot is its frames (robot.frames): no --urdf, --dh, --mass-matrix or "
                          "--abs-effort")
    fit = identify_frames_config(config, str(args.config), args.bag, args.out, args.topic, args.solver)
    robot = fit.robot
    for warning in fit.warnings:
        print(f"note: {warning}")
    print(f"frames robot ({len(robot.model.links)} bodies with inertia, {len(fit.terms)} per-frame terms): status "
          f"{fit.status}, feasible {fit.feasible}, {fit.base_count} base parameters, {fit.n_samples} samples")
    print("relative error per motor % (identification): "
          + ", ".join(f"{100 * e:.1f}" for e in fit.relative_error_per_joint))
    delays = fit.processing.get("effort_delay_s")
    if isinstance(delays, list):
        print("effort delays per motor [ms]: " + ", ".join(f"{1e3 * d:.0f}" for d in delays))
    springs = [f"{name} {value:.6g}" for name, value in fit.terms.items() if name.endswith(".K")]
    if springs:
        print("spring constants: " + ", ".join(springs))
    print(f"wrote {args.out}/")
    return 0


def _identify_payload(args: argparse.Namespace) -> int:
    """``--payload-link LINK --reference DIR --bag LOADED``: the payload alone (Traversaro et al. 2016)."""
    if not (args.payload_link and args.reference):
        raise ConfigError("--payload-link and --reference go together")
    given = [flag for flag, value in (("--urdf", args.urdf), ("--dh", args.dh), ("--mass-matrix", args.mass_matrix),
                                      ("--abs-effort", args.abs_effort)) if value]
    if given or not args.bag:
        raise ConfigError(f"--payload-link takes the robot from --reference and a --bag; not {', '.join(given)}")
    check_output(args.out, PAYLOAD, (args.bag, args.reference))
    if (Path(args.reference) / FRAMES_FILE).is_file():  # a frames robot (robot.frames; the bag may be a CSV)
        _, config, _ = load_frames_result(Path(args.reference))
        series = read_motor_states(args.bag, config, args.topic or "/joint_states").window(args.start, args.end)
        result = identify_frames_payload(series, Path(args.reference), args.payload_link, args.solver or "clarabel")
    else:
        parameters = load_parameters(Path(args.reference))
        series = read_joint_states(args.bag, topic=args.topic or parameters["options"].get("topic") or "/joint_states")
        result = identify_payload(series, Path(args.reference), args.payload_link, args.solver or "clarabel",
                                  args.start, args.end)
    write_payload(result, Path(args.out), (args.bag, args.reference))
    for warning in result.warnings:
        print(f"warning: {warning}")
    for fit in (result.lmi, result.manifold):
        print(f"{fit.solver}: mass {fit.mass:.4g} kg, CoM [{', '.join(f'{v:.4g}' for v in fit.com)}] m in "
              f"{result.link}'s frame; {fit.iterations} iterations, {fit.seconds:.3f} s, status {fit.status}")
    print(f"wrote {args.out}/")
    return 0


def coupled_model(args: argparse.Namespace, options: IdentificationOptions, timer: StageTimer
                  ) -> RobotModel | None:
    """With a ``coupling:`` section in ``--config``: the ``--urdf``/``--dh`` model of the coupled joints in motor
    coordinates (:mod:`dynid_ros.robot.coupling`); None otherwise (the model follows from the data)."""
    with timer.stage("model"):
        return config_coupled_model(load_config(args.config), str(args.config), options.joints, args.urdf, args.dh,
                                    args.xacro_arg)


def _identify_mass_matrix(args: argparse.Namespace, options: IdentificationOptions, timer: StageTimer):
    """``--mass-matrix FILE``: friction off (M and g have none), armature only when asked for."""

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


def _identify_abs_effort(args: argparse.Namespace, options: IdentificationOptions, timer: StageTimer):
    """``--abs-effort [--beam W]``: torque signs by the tree search, then the usual identification."""

    search = SignSearchOptions() if args.beam is None else SignSearchOptions(beam=args.beam)
    result, signs = identify_abs_effort_bag(args.bag, options, search, urdf=args.urdf, dh=args.dh, timer=timer,
                                            xacro_args=args.xacro_arg, gains_file=args.effort_scale_file)
    print(f"torque signs: {signs.summary()}")
    return result
