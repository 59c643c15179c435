"""The result directory of an identification: ``identified.urdf``, ``identified.xml``, ``parameters.yaml``,
``report.json``, and the report a person reads, ``report.html`` (self-contained) and ``report.md`` with its PNGs
(:mod:`dynid_ros.reporting.identification_report`).

Written atomically: everything goes into a temporary sibling directory that replaces
``--out`` only when complete, so a failure never leaves a half-written result. An existing ``--out``
is replaced only when it is dynid's own earlier result (:mod:`dynid_ros.data.output_paths`).

``report.json`` keys: ``relative_error`` (||tau - tau_hat|| / ||tau|| over all joints and samples
of the window, Sousa & Cortesão 2014 eq. 84, against the recorded effort), ``relative_error_per_joint``,
``feasible``, ``n_base``, ``method``, ``solver_status``, ``timings_s`` (per stage), ``urdf_omits`` (per joint,
the identified terms ``identified.urdf`` cannot hold: armature, offset, sigmoid; :mod:`dynid_ros.robot.mjcf_writer`),
``segments`` (the runs of samples between gaps in the stamps), ``joint_diagnostics`` (per joint: relative error,
R^2, residual autocorrelation time, structured residual), ``excitation`` (condition numbers, range and speed
covered), ``unmodelled_load``, ``position_torque`` (per joint with a position-dependent torque, a spring or a
cable the URDF cannot hold: ``basis``, ``order``, ``center``, ``half_range``, ``coefficients`` [N m], ``std``,
``amplitude``, ``cross_validation``; null when none is modelled;
:mod:`dynid_ros.identification.position_torque_selection`; ``parameters.yaml`` holds it too, and ``dynid validate``
applies it), ``provenance``, ``report_html`` / ``report_markdown`` (absolute paths of the
readable report; null when it was not written), ``omitted_outputs`` (the optional outputs that could not be written:
``output``, ``reason``), ``sanity_check`` (:mod:`dynid_ros.reporting.result_check`), ``solver_polish``
(:mod:`dynid_ros.dynamics.polish`), ``notes``, and more.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import yaml

from dynid_ros import __version__
from dynid_ros.data.output_paths import BATCH, BATCH_SUMMARY, RESULT, check_output, mark, output_kind
from dynid_ros.dynamics.feasibility import min_eigenvalues
from dynid_ros.errors import ConfigError, DataError, DynidError, EstimationError
from dynid_ros.estimation.hyperparameters import shared_scales, used_scales
from dynid_ros.estimation.sigmoid_friction import sigmoid_dict
from dynid_ros.identification.identification_result import IdentificationResult
from dynid_ros.identification.provenance import provenance as make_provenance
from dynid_ros.reporting.identification_report import (
    HTML_FILE,
    MARKDOWN_FILE,
    report_keys,
    write_identification_report,
)
from dynid_ros.robot.coupling import coupling_dict
from dynid_ros.robot.mjcf_writer import identified_mjcf, urdf_omits
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.parameters import LINK_PARAMETER_NAMES, inertia_about_com
from dynid_ros.robot.urdf_writer import attached_parameters, write_identified_urdf

PARAMETERS_FILE = "parameters.yaml"
URDF_FILE = "identified.urdf"
MJCF_FILE = "identified.xml"
REPORT_FILE = "report.json"


def atomic_directory(out: Path, fill: Callable[[Path], None], kind: str = RESULT,
                     inputs: Iterable[str | Path | None] = ()) -> None:
    """Create ``out`` with the files ``fill(tmp_dir)`` writes and the marker of ``kind``, all or nothing.

    An existing ``out`` is replaced only when it is dynid's own output of ``kind``
    (:func:`dynid_ros.data.output_paths.check_output`, which also keeps ``out`` clear of ``inputs``).
    """
    out = Path(out)
    check_output(out, kind, inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        fill(tmp)
        mark(tmp, kind)
        if out.exists():
            check_output(out, kind)  # still ours
            holder = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.rename(holder / out.name)
            tmp.rename(out)
            shutil.rmtree(holder, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


MASS_DEFINITIONS = {
    "link_masses": "each identified body: the link with the parts rigidly attached to it (link_bodies carries, "
                   "e.g. a hand and its fingers on the last link) and a detected load; as parameters.yaml "
                   "links.<link>.mass and the report's parameter table",
    "link_realism": "the link alone, without attached parts or a detected load (link_bodies link_alone_mass), "
                    "compared with the URDF's own link; identified.urdf writes it to the link's <inertial>, plus a "
                    "detected load",
}
"""What each mass of ``report.json`` is (the report says the same)."""


def report_dict(result: IdentificationResult, extra: dict | None = None) -> dict:
    """The ``report.json`` content of an identification (``extra``: more keys, e.g. the readable report's)."""
    masses = [float(result.delta[result.layout.link_slice(k)][0]) for k in range(len(result.layout.links))]
    return {
        "relative_error": result.relative_error,
        "relative_error_per_joint": result.relative_error_per_joint,
        "feasible": result.feasible,
        "n_base": result.base.n_base,
        "n_parameters": result.layout.n_parameters,
        "method": result.options.method,
        "consistency": result.options.consistency,
        "solver": result.options.solver,
        "solver_status": result.solver_status,
        "solver_polish": result.solver_polish,
        "timings_s": result.timings_s,
        "n_samples": result.n_samples,
        "joints": list(result.layout.joints),
        "link_masses": dict(zip(result.layout.links, masses)),
        "link_masses_determined": result.link_masses_determined,
        "total_mass": float(sum(masses)),
        "mass_definitions": MASS_DEFINITIONS,
        "link_bodies": result.link_bodies(),
        "window": {"start": result.options.start, "end": result.options.end},
        "not_identified": result.not_identified,
        "link_realism": result.realism,
        "residual_inflation": result.residual_inflation,
        "unmodelled_load": result.unmodelled_load,
        "position_torque": result.position_torque,
        "data_weight": result.data_weight,
        "hyperparameters": result.hyperparameters,
        "least_squares": result.least_squares,
        "effort_gains": result.effort_gains,
        "warnings": result.warnings,
        "notes": result.notes,
        "urdf_omits": _with_position_torque(urdf_omits(result.layout, result.delta, result.friction_sigmoid),
                                            result.position_torque),
        "segments": result.processing.get("segments", []),
        **({"friction_sigmoid": {"columns": ["phi1", "phi2", "phi3"], "values": result.friction_sigmoid.tolist()}}
           if result.friction_sigmoid is not None else {}),
        "dynid_ros_version": __version__,
        **(extra or {}),
    }


def parameters_dict(result: IdentificationResult) -> dict:
    """The ``parameters.yaml`` content: every parameter, the base parameters and metadata."""
    layout, delta = result.layout, result.delta
    links = {}
    for k, link in enumerate(layout.links):
        params = delta[layout.link_slice(k)]
        mass, com, i_com = inertia_about_com(params)
        links[link] = {
            "mass": float(mass),
            "com": [float(c) for c in com],
            "inertia_com": {"ixx": float(i_com[0, 0]), "ixy": float(i_com[0, 1]), "ixz": float(i_com[0, 2]),
                            "iyy": float(i_com[1, 1]), "iyz": float(i_com[1, 2]), "izz": float(i_com[2, 2])},
            "parameters": dict(zip(LINK_PARAMETER_NAMES, (float(v) for v in params))),
        }
        if result.delta_std is not None:  # posterior of the MAP estimate (dynid_ros.estimation.estimators)
            links[link]["mass_rel_std_percent"] = _finite(100.0 * result.delta_std[layout.link_slice(k)][0] / mass)
    joints = {joint: {t: float(delta[layout.joint_index(j, t)]) for t in layout.joint_terms}
              for j, joint in enumerate(layout.joints)}
    kept = {m["name"] for m in result.not_identified}
    if result.friction_sigmoid is not None:  # Gaz et al. 2019 eq. 25

        for joint, phi in sigmoid_dict(result.friction_sigmoid, layout.joints).items():
            joints[joint]["sigmoid"] = phi
    base = [{"name": f"beta{i + 1}", "expression": expr, "value": float(result.beta[i]),
             "rel_std_percent": _finite(result.beta_rel_std[i]), "identified": f"beta{i + 1}" not in kept}
            for i, expr in enumerate(result.base.expressions)]
    model = result.model
    source = model.urdf_path or getattr(model, "source", None)
    return {
        "dynid_ros_version": __version__,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "convention": "link parameters [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] about the joint frame "
                      "(dynid_ros.robot.parameters); inertia_com is about the CoM",
        "robot": {"source": str(source) if source else None, "joints": list(layout.joints),
                  "links": list(layout.links), "locked": list(model.locked),
                  "locked_positions": {j: float(model.locked_positions[j]) for j in model.locked},
                  "following": model.following(),
                  **({"coupling": coupling_dict(model)} if model.description_joints else {})},
        "options": {"method": result.options.method, "consistency": result.options.consistency,
                    "solver": result.options.solver, "friction": list(layout.friction),
                    "armature": layout.armature, "prior": result.options.prior, "topic": result.options.topic,
                    "start": result.options.start, "end": result.options.end,
                    "effort_scale": result.options.effort_scale, "bounds": result.options.bounds,
                    "prior_tolerance": result.options.prior_tolerance, "strict": result.options.strict,
                    "pbpr": result.options.pbpr},
        "processing": result.processing,
        "links": links,
        "joints": joints,
        "base_parameters": base,
        "parameter_vector": {"names": layout.names, "values": [float(v) for v in delta],
                             "nominal": [float(v) for v in result.nominal],
                             "std": None if result.delta_std is None else [float(v) for v in result.delta_std]},
        "not_identified": result.not_identified,
        **({"position_torque": {joint: {k: v for k, v in term.items() if k != "cross_validation"}
                                for joint, term in result.position_torque.items()}}
           if result.position_torque else {}),
    }


def _with_position_torque(omits: dict[str, dict], terms: dict | None) -> dict[str, dict]:
    """``urdf_omits`` with each joint's position-dependent torque (its amplitude [N m]): no URDF element holds it."""
    for joint, term in (terms or {}).items():
        omits.setdefault(joint, {})["position_torque_amplitude"] = term["amplitude"]
    return omits


def _finite(value: float) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


Check = Callable[[IdentificationResult, Path], "ResultCheckLike"]
"""A result's check of itself on its files as written (:func:`dynid_ros.reporting.result_check.check_result`)."""


class ResultCheckLike(Protocol):
    """What a :data:`Check` returns: ``to_dict()`` for ``report.json`` ``sanity_check``, ``raise_if_failed()``."""

    def to_dict(self) -> dict:
        """The checks for ``report.json`` ``sanity_check``."""

    def raise_if_failed(self) -> None:
        """Raise when a check failed."""


@dataclass
class OmittedOutput:
    """An optional output that could not be written, and why (one line)."""

    output: str
    reason: str

    def message(self) -> str:
        """The console's line: which output was not written, and why."""
        return f"{self.output} not written: {self.reason}"


class OptionalOutputs:
    """The optional outputs of a result directory (``identified.xml``, the readable report): each written whole or
    not at all, a failure recorded instead of raised, so that it never costs the main result."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.omitted: list[OmittedOutput] = []

    def write(self, output: str, write: Callable[[], object]) -> None:
        """Run ``write`` for ``output``; on failure remove what it left and record why."""
        before = set(self.directory.iterdir())
        try:
            write()
        except Exception as err:  # noqa: BLE001 - any failure of an extra (MuJoCo, matplotlib, a disk) is reported
            for leftover in set(self.directory.iterdir()) - before:
                if leftover.is_dir():
                    shutil.rmtree(leftover, ignore_errors=True)
                else:
                    leftover.unlink(missing_ok=True)
            self.omitted.append(OmittedOutput(output, one_line(err)))


def one_line(err: BaseException) -> str:
    """An error as one line: its message's first line, the type when the message says little."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return text if isinstance(err, DynidError) and text else f"{type(err).__name__}: {text or 'no message'}"


def write_result(result: IdentificationResult, out: Path, inputs: Iterable[str | Path | None] = (),
                 provenance: dict | None = None, *, check: Check | None = None) -> list[str]:
    """Write the result directory ``out``, atomically; ``out`` must be new or an earlier result, clear of ``inputs``
    (the bag, the URDF). ``provenance``: from :func:`dynid_ros.identification.provenance.provenance` (default: the
    options, the URDF and the command line, without input hashes). Returns warnings.

    The main result -- ``identified.urdf`` (when the robot came from a URDF; read back and checked),
    ``parameters.yaml``, ``report.json`` -- is written or the call fails; the extras -- ``identified.xml``, the
    readable report (``report.html``, ``report.md`` and its PNGs) -- are written when they can be: one that fails
    is left out whole, named with its reason in ``report.json`` ``omitted_outputs`` and in a warning. ``check``
    (:func:`dynid_ros.reporting.result_check.check_result`) runs on the files as written, its record goes into
    ``report.json`` ``sanity_check``, and a failed check is an error: nothing is written."""
    warnings: list[str] = []
    if provenance is None:
        provenance = make_provenance(result.options, {"urdf": result.model.urdf_path}, result.model.urdf_xml)
    final = Path(out).expanduser().resolve()

    def fill(tmp: Path) -> None:
        extras = OptionalOutputs(tmp)
        if result.model.urdf_xml is not None:
            warnings.extend(write_identified_urdf(result.model, result.layout, result.delta, tmp / URDF_FILE))
            if result.feasible:
                check_written_urdf(result, tmp / URDF_FILE)
            if result.model.description_joints:  # motor coordinates: the MJCF would need the coupling too
                warnings.append(f"no {MJCF_FILE}: the robot is identified in motor coordinates (coupling:), which "
                                "the MJCF writer does not express; parameters.yaml holds the coupling")
            else:
                extras.write(MJCF_FILE, lambda: (tmp / MJCF_FILE).write_text(identified_mjcf(
                    result.model, (tmp / URDF_FILE).read_text(), result.layout, result.delta)))
        (tmp / PARAMETERS_FILE).write_text(yaml.safe_dump(parameters_dict(result), sort_keys=False))
        extra = report_keys(result)
        extras.write(HTML_FILE, lambda: write_identification_report(result, provenance, tmp, extra["excitation"]))
        sanity = None if check is None else check(result, tmp)
        warnings.extend(o.message() for o in extras.omitted)
        result.warnings.extend(w for w in warnings if w not in result.warnings)
        readable = not any(o.output == HTML_FILE for o in extras.omitted)
        extra.update(provenance=provenance, report_html=str(final / HTML_FILE) if readable else None,
                     report_markdown=str(final / MARKDOWN_FILE) if readable else None,
                     omitted_outputs=[asdict(o) for o in extras.omitted],
                     sanity_check=None if sanity is None else sanity.to_dict())
        if sanity is not None:
            sanity.raise_if_failed()
        (tmp / REPORT_FILE).write_text(json.dumps(report_dict(result, extra), indent=2) + "\n")

    atomic_directory(out, fill, RESULT, inputs)
    return warnings


def check_written_urdf(result: IdentificationResult, path: Path) -> None:
    """Raise EstimationError unless the URDF at ``path``, read back, is physically consistent (the result's
    consistency level, every identified link without its attached parts): ``feasible`` is a claim about
    the file a user loads, not only about the estimate."""

    model = load_model(urdf=path, joints=list(result.model.description_joints or result.layout.joints))  # motors
    layout = model.layout_for(result.layout.friction, result.layout.armature)
    lowest = min_eigenvalues(nominal_parameters(model, layout), layout, result.options.consistency,
                             attached_parameters(model, layout))
    bad = [f"{link} ({value:.3g})" for link, value in zip(layout.links, lowest) if value <= 0]
    if bad:
        raise EstimationError(f"the identified URDF fails the {result.options.consistency} consistency check "
                              f"(smallest eigenvalue of link {', '.join(bad)}); nothing written")


def load_parameters(result_dir: Path) -> dict:
    """Read ``parameters.yaml`` of a result directory."""
    path = Path(result_dir) / PARAMETERS_FILE
    if not path.is_file():
        raise DataError(f"{result_dir}: not an identification result (no {PARAMETERS_FILE})")
    try:
        content = yaml.safe_load(path.read_text())
        content["parameter_vector"]["values"]
    except (yaml.YAMLError, KeyError, TypeError) as err:
        raise DataError(f"{path}: unreadable parameters file: {err}") from err
    return content


def load_hyperparameter_scales(result_dir: Path) -> dict[str, float]:
    """The prior's scales per group a result's estimate used (:func:`dynid_ros.estimation.hyperparameters.
    used_scales` of its ``report.json`` ``hyperparameters``; every scale 1 for a result made with the stated prior),
    or those a batch directory's bags share (its ``summary.json`` ``hyperparameters``, :mod:`dynid_ros.fleet.batch`;
    every scale 1 when none of its bags used the prior's groups)."""
    if output_kind(result_dir) == BATCH:
        path = Path(result_dir) / BATCH_SUMMARY
        try:
            shared = json.loads(path.read_text()).get("hyperparameters")
            return used_scales(None if shared is None else {"scales": shared["scales"]})
        except (OSError, ValueError, AttributeError, KeyError, TypeError, ConfigError) as err:
            raise DataError(f"{path}: unreadable shared hyperparameters: {err}") from err
    path = Path(result_dir) / REPORT_FILE
    if not path.is_file():
        raise DataError(f"{result_dir}: not an identification result (no {REPORT_FILE})")
    try:
        return used_scales(json.loads(path.read_text()).get("hyperparameters"))
    except (ValueError, AttributeError, KeyError, TypeError, ConfigError) as err:
        raise DataError(f"{path}: unreadable hyperparameters: {err}") from err


def hyperparameter_scales_argument(value: object) -> object:
    """``--hyperparameter-scales`` / the node parameter: a result directory (or its ``report.json``) gives the scales
    its estimate used (:func:`load_hyperparameter_scales`) as runs compared with it share them
    (:func:`dynid_ros.estimation.hyperparameters.shared_scales`: no group tighter than stated); anything
    else is passed on as given (a mapping, or ``mass=S,com=S,inertia=S,joint=S``:
    :func:`dynid_ros.identification.options.identification_options` checks it)."""
    if isinstance(value, (str, Path)) and value and Path(value).exists():
        path = Path(value)
        return shared_scales(load_hyperparameter_scales(path.parent if path.is_file() else path))
    return value
