"""Identify into a result directory: the one entry that ``dynid identify``, the identification node, ``dynid batch``
and ``dynid demo`` call.

:func:`identify_into` reads the robot config once, builds the options once
(:func:`~dynid_ros.identification.options.identification_options`), checks the output directory once before any
work, picks the mode from the inputs and the config (:class:`Mode`), identifies, and writes the result directory
with its provenance (the command, the inputs' SHA-256, the options): the same files whoever calls it. What the
console says is in the returned :class:`IdentificationRun` (its ``warnings`` and ``lines``), so a front end only
prints or logs them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dynid_ros.data.output_paths import RESULT, check_output
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.inertia_stack import read_mass_matrix_csv
from dynid_ros.estimation.torque_signs import SignSearchOptions
from dynid_ros.identification.identification_result import IdentificationResult
from dynid_ros.identification.identify import identify_bag
from dynid_ros.identification.options import IdentificationOptions, identification_options
from dynid_ros.identification.provenance import provenance
from dynid_ros.identification.timing import StageTimer
from dynid_ros.reporting.identification_report import HTML_FILE
from dynid_ros.reporting.result_check import check_result
from dynid_ros.reporting.result_directory import write_result
from dynid_ros.robot.config import load_config
from dynid_ros.robot.coupling import coupling_from_config
from dynid_ros.robot.drivers import driver_defaults
from dynid_ros.robot.frames import frames_section
from dynid_ros.robot.mjcf_writer import urdf_omits
from dynid_ros.robot.model import load_model
from dynid_ros.robot.parameters import parse_friction
from dynid_ros.variants.abs_effort import identify_abs_effort_bag
from dynid_ros.variants.config_robot import coupled_model, identify_frames_config
from dynid_ros.variants.frames_identification import FramesFit
from dynid_ros.variants.mass_matrix import identify_from_mass_matrix


class Mode(enum.Enum):
    """What kind of identification the inputs ask for."""

    BAG = "bag"
    """Joint torques of a URDF or DH robot from a rosbag2 (streamed)."""
    COUPLED = "coupled"
    """The same, recorded in motor coordinates through the config's ``coupling:`` section."""
    ABS_EFFORT = "abs_effort"
    """Efforts recorded as ``|tau|``: the signs searched first (Pennese et al. 2021 Alg. 1)."""
    MASS_MATRIX = "mass_matrix"
    """M(q) and g(q) at static configurations instead of torques (Gaz et al. 2019 sec. IV-A)."""
    FRAMES = "frames"
    """A robot its config describes by frames (``robot: frames:``, no URDF; Wang et al. 2019)."""


@dataclass(frozen=True)
class RunInputs:
    """What one identification reads: the recording, the robot and its config (paths, as the user gave them)."""

    bag: Path | None = None
    mass_matrix: Path | None = None
    urdf: Path | None = None
    dh: Path | None = None
    config: Path | None = None
    xacro_args: tuple[str, ...] = ()
    effort_scale_file: Path | None = None
    abs_effort: bool = False
    beam: int | None = None
    """Nodes kept per level of the sign tree with ``abs_effort`` (None: the default of Pennese et al. 2021)."""

    def sources(self) -> dict[str, Path | None]:
        """The input files by role, for the provenance record and the output-directory check."""
        return {"bag": self.bag, "urdf": self.urdf, "dh": self.dh, "config": self.config,
                "mass_matrix": self.mass_matrix, "effort_scale_file": self.effort_scale_file}


@dataclass
class IdentificationRun:
    """What :func:`identify_into` wrote and found."""

    out: Path
    mode: Mode
    result: IdentificationResult | None
    """The identification (None for a frames robot: see ``frames``)."""
    frames: FramesFit | None = None
    warnings: list[str] = field(default_factory=list)
    """What the user must know (printed as ``warning:`` lines), each once."""
    notes: list[str] = field(default_factory=list)
    """What the user may like to know (printed as ``note:`` lines), e.g. why a recording was read whole."""
    lines: list[str] = field(default_factory=list)
    """The console's account of the run, a line each."""

    def summary(self) -> str:
        """One line: the method, feasibility and the fit, and where it was written."""
        if self.result is None:
            fit = self.frames
            errors = ", ".join(f"{100 * e:.1f}" for e in fit.relative_error_per_joint)
            return f"frames robot: feasible {fit.feasible}, relative error per motor {errors} %, wrote {self.out}"
        return (f"{self.result.options.method}: feasible {self.result.feasible}, relative error "
                f"{100 * self.result.relative_error:.2f} %, wrote {self.out}")


def identify_into(out: str | Path, inputs: RunInputs, overrides: Mapping[str, object] | None = None, *,
                  config: Mapping | None = None, options: IdentificationOptions | None = None,
                  argv: list[str] | None = None) -> IdentificationRun:
    """Identify the robot of ``inputs`` and write the result directory ``out`` (new, or an earlier result: anything
    else is refused before any work and left untouched).

    ``overrides``: the options given explicitly (CLI flags or node parameters; None or absent = not given), over the
    config's ``identification:`` section. ``config``: the config mapping when the caller has read it already (else
    ``inputs.config`` is read here, once). ``options``: options built already (``dynid batch`` builds them once for
    all its bags), instead of ``overrides``. ``argv``: the command line of the provenance record.
    """
    config = load_config(inputs.config) if config is None else config
    if frames_section(config) is not None:
        return _frames(Path(out), inputs, overrides or {}, config)
    if not (inputs.urdf or inputs.dh):
        raise ConfigError("give the robot: --urdf or --dh (or --payload-link with --reference, or a config with "
                          "robot.frames)")
    if inputs.beam is not None and not inputs.abs_effort:
        raise ConfigError("--beam applies to --abs-effort only")
    if options is None:
        given = {**(overrides or {}), **(_mass_matrix_overrides(overrides or {}) if inputs.mass_matrix else {})}
        options = identification_options(config.get("identification"), given, **driver_defaults(config))
    out = check_output(out, RESULT, inputs.sources().values())  # before any work
    timer = StageTimer()
    mode, result, lines = _identified(inputs, options, config, timer)
    with timer.stage("write"):
        record = provenance(result.options, inputs.sources(), result.model.urdf_xml, argv)
        written = write_result(result, out, inputs.sources().values(), record, check=check_result)
    run = IdentificationRun(out, mode, result, warnings=_unique(result.warnings + written), notes=list(result.notes))
    run.lines = lines + _result_lines(result) + [
        "timings [s]: " + ", ".join(f"{k} {v:.2f}" for k, v in timer.timings.items()),
        f"wrote {out}/" + (f" (readable report: {out / HTML_FILE})" if (Path(out) / HTML_FILE).is_file() else "")]
    return run


def _identified(inputs: RunInputs, options: IdentificationOptions, config: Mapping, timer: StageTimer
                ) -> tuple[Mode, IdentificationResult, list[str]]:
    """The mode the inputs ask for, its result and its console lines."""
    source = str(inputs.config)
    if inputs.mass_matrix:
        if inputs.abs_effort:
            raise ConfigError("--abs-effort applies to a bag, not to --mass-matrix")
        return Mode.MASS_MATRIX, *_mass_matrix(inputs, options, timer)
    if inputs.abs_effort:  # the bag streamed (a cutoff chosen on the data: in memory)
        search = SignSearchOptions() if inputs.beam is None else SignSearchOptions(beam=inputs.beam)
        result, signs = identify_abs_effort_bag(inputs.bag, options, search, urdf=inputs.urdf, dh=inputs.dh,
                                                timer=timer, xacro_args=list(inputs.xacro_args),
                                                gains_file=inputs.effort_scale_file)
        return Mode.ABS_EFFORT, result, [f"torque signs: {signs.summary()}"]
    coupled = coupling_from_config(config, source) is not None
    with timer.stage("model"):  # a coupling: section: the URDF's joints driven by the bag's motors
        model = coupled_model(config, source, options.joints, inputs.urdf, inputs.dh, list(inputs.xacro_args))
    result = identify_bag(inputs.bag, options, urdf=inputs.urdf, dh=inputs.dh, model=model, timer=timer,
                          xacro_args=list(inputs.xacro_args), gains_file=inputs.effort_scale_file)
    return (Mode.COUPLED if coupled else Mode.BAG), result, []


def _mass_matrix_overrides(overrides: Mapping[str, object]) -> dict[str, object]:
    """What ``--mass-matrix`` sets over the config: no friction (M and g hold none), armature only when asked for."""
    if parse_friction(overrides.get("friction")):
        raise ConfigError("--mass-matrix: M(q) and g(q) contain no friction; use --friction none")
    return {"friction": "none", "armature": bool(overrides.get("armature"))}


def _mass_matrix(inputs: RunInputs, options: IdentificationOptions, timer: StageTimer
                 ) -> tuple[IdentificationResult, list[str]]:
    """``--mass-matrix FILE``: the model's link parameters from M(q) and g(q) samples."""
    with timer.stage("model"):
        model = load_model(urdf=inputs.urdf, dh=inputs.dh, joints=options.joints, xacro_args=list(inputs.xacro_args))
    with timer.stage("read_mass_matrix"):
        samples = read_mass_matrix_csv(inputs.mass_matrix, model.n_dof)
    result = identify_from_mass_matrix(samples, options, model=model, timer=timer)
    return result, [f"M(q), g(q) at {samples.q.shape[0]} configurations: rank {result.processing['rank']} "
                    f"(dropped: {', '.join(result.processing['dropped_elements']) or 'none'})"]


def _result_lines(result: IdentificationResult) -> list[str]:
    """The console's account of an identification: status, size, fit, mass, mimic joints, what the URDF omits."""
    options = result.options
    lines = [f"{options.method} ({options.consistency}, {options.solver}): status {result.solver_status}, feasible "
             f"{result.feasible}",
             f"{result.base.n_base} base parameters from {result.n_samples} samples; relative error "
             f"{100 * result.relative_error:.2f} % (identification window); total mass "
             f"{sum(result.link_masses().values()):.2f} kg"]
    for name, m in result.model.following().items():
        lines.append(f"{name} follows {m['leader']} (mimic, multiplier {m['multiplier']:g}, offset {m['offset']:g}): "
                     f"its link is identified through {m['leader']}'s torque, no friction or armature of its own")
    omitted = sorted({term for terms in urdf_omits(result.layout, result.delta, result.friction_sigmoid).values()
                      for term in terms})
    if omitted and result.model.urdf_xml is not None:
        lines.append(f"identified.urdf holds the inertials and <dynamics damping friction>; it cannot hold the "
                     f"{', '.join(omitted)} (report.json urdf_omits, parameters.yaml; identified.xml holds the "
                     "armature)")
    return lines


def _frames(out: Path, inputs: RunInputs, overrides: Mapping[str, object], config: Mapping) -> IdentificationRun:
    """A robot described by frames in its config (no URDF; Wang et al. 2019): the bag may be a CSV."""
    if inputs.urdf or inputs.dh or inputs.mass_matrix or inputs.abs_effort:
        raise ConfigError(f"{inputs.config}: the robot is its frames (robot.frames): no --urdf, --dh, --mass-matrix "
                          "or --abs-effort")
    fit = identify_frames_config(config, str(inputs.config), inputs.bag, out, overrides.get("topic"),
                                 overrides.get("solver"))
    lines = [f"frames robot ({len(fit.robot.model.links)} bodies with inertia, {len(fit.terms)} per-frame terms): "
             f"status {fit.status}, feasible {fit.feasible}, {fit.base_count} base parameters, {fit.n_samples} "
             "samples",
             "relative error per motor % (identification): "
             + ", ".join(f"{100 * e:.1f}" for e in fit.relative_error_per_joint)]
    delays = fit.processing.get("effort_delay_s")
    if isinstance(delays, list):
        lines.append("effort delays per motor [ms]: " + ", ".join(f"{1e3 * d:.0f}" for d in delays))
    springs = [f"{name} {value:.6g}" for name, value in fit.terms.items() if name.endswith(".K")]
    if springs:
        lines.append("spring constants: " + ", ".join(springs))
    lines.append(f"wrote {out}/")
    return IdentificationRun(out, Mode.FRAMES, None, fit, warnings=list(fit.written), notes=list(fit.warnings),
                             lines=lines)


def _unique(messages: list[str]) -> list[str]:
    """``messages`` without repeats, in order."""
    return list(dict.fromkeys(messages))
