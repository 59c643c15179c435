"""The result directory of a frames robot (Wang et al. 2019; :mod:`dynid_ros.variants.frames_identification`): the
same files as every identification -- ``parameters.yaml`` (the common format of
:func:`dynid_ros.reporting.result_directory.parameters_dict`, plus the per-frame terms), ``report.json``,
``report.html`` / ``report.md`` -- beside ``frames_result.yaml`` (the robot with its parameters, which ``dynid
validate`` and a payload identification read).

What a frames robot cannot have is stated, not left out silently: it has no URDF (``identified.urdf`` and
``identified.xml`` are not written; ``report.json`` ``urdf`` says why), no nominal parameters (the comparison with
a nominal model does not apply; ``sanity_check`` says so) and no symbolic base parameters (``base_parameters``
gives their number only).

The result checks itself before it is written, like any identification (:mod:`dynid_ros.reporting.result_check`):
every body's mass finite and positive, a fit of its own data better than predicting no torque, and the files as
written (``frames_result.yaml`` read back by its own reader, ``parameters.yaml``) holding exactly the fitted
parameters. The readable report is an optional output: when it fails, the others are written and ``report.json``
``omitted_outputs`` names it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

import numpy as np
import yaml

from dynid_ros import __version__
from dynid_ros.data.output_paths import RESULT
from dynid_ros.reporting.identification_report import HTML_FILE, MARKDOWN_FILE, diagnostics, fit_section
from dynid_ros.reporting.report_html import Document
from dynid_ros.reporting.result_check import ResultCheck
from dynid_ros.reporting.result_directory import (
    PARAMETERS_FILE,
    REPORT_FILE,
    OptionalOutputs,
    atomic_directory,
)
from dynid_ros.robot.parameters import LINK_PARAMETER_NAMES, inertia_about_com
from dynid_ros.variants.frames_identification import (
    FRAMES_FILE,
    FramesFit,
    frames_result_dict,
    load_frames_result,
)

NO_URDF = ("a frames robot (robot.frames in its config) has no URDF: no identified.urdf or identified.xml is written; "
           f"{FRAMES_FILE} holds the robot with its identified parameters (dynid validate reads it)")
"""``report.json`` ``urdf``: why a frames robot has no URDF output."""
MASS_DEFINITIONS = {"link_masses": "each frame's body with inertia (robot.frames), about the frame's origin; a frames "
                                   "robot has no attached parts: one mass per body"}
"""What ``report.json`` ``link_masses`` is for a frames robot."""


def write_frames_directory(fit: FramesFit, config: Mapping, out: Path, *, source: str | Path | None = None,
                           bag: str | Path | None = None, inputs: tuple = ()) -> list[str]:
    """Write the result directory ``out`` of ``fit`` (module docstring), all or nothing; ``out`` must be new or an
    earlier result, clear of ``inputs``. A failed check raises :class:`~dynid_ros.reporting.result_check.
    ResultCheckError` (nothing written). Returns warnings (an optional output left out, one line each)."""
    final = Path(out).expanduser().resolve()
    warnings: list[str] = []

    def fill(tmp: Path) -> None:
        (tmp / FRAMES_FILE).write_text(yaml.safe_dump(frames_result_dict(fit, config, fit.processing),
                                                      sort_keys=False))
        (tmp / PARAMETERS_FILE).write_text(yaml.safe_dump(frames_parameters_dict(fit, source), sort_keys=False))
        extras = OptionalOutputs(tmp)
        extras.write(HTML_FILE, lambda: write_frames_report(fit, tmp, source=source, bag=bag))
        check = check_frames(fit, tmp)
        warnings.extend(o.message() for o in extras.omitted)
        readable = not extras.omitted
        report = frames_report_dict(fit, {
            "report_html": str(final / HTML_FILE) if readable else None,
            "report_markdown": str(final / MARKDOWN_FILE) if readable else None,
            "omitted_outputs": [asdict(o) for o in extras.omitted], "sanity_check": check.to_dict(),
            "warnings": list(warnings), "inputs": {"config": _path(source), "bag": _path(bag)}})
        check.raise_if_failed()
        (tmp / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")

    atomic_directory(Path(out), fill, RESULT, inputs)
    return warnings


def frames_parameters_dict(fit: FramesFit, source: str | Path | None = None) -> dict:
    """``parameters.yaml`` of a frames robot: the keys of every identification's (``links`` with mass, CoM and
    inertia about the CoM, ``parameter_vector``, ...) and ``frame_terms`` (per frame: ``Fc``, ``Fv``, ``Fo``,
    ``Ia``, ``K``, as :mod:`dynid_ros.dynamics.frame_terms` names them)."""
    layout = fit.layout
    links = {}
    for k, link in enumerate(layout.links):
        params = fit.delta[layout.link_slice(k)]
        mass, com, i_com = inertia_about_com(params)
        links[link] = {"mass": float(mass), "com": [float(c) for c in com],
                       "inertia_com": {"ixx": float(i_com[0, 0]), "ixy": float(i_com[0, 1]),
                                       "ixz": float(i_com[0, 2]), "iyy": float(i_com[1, 1]),
                                       "iyz": float(i_com[1, 2]), "izz": float(i_com[2, 2])},
                       "parameters": dict(zip(LINK_PARAMETER_NAMES, (float(v) for v in params)))}
    frame_terms: dict[str, dict[str, float]] = {}
    for name, value in fit.terms.items():
        frame, term = name.rsplit(".", 1)
        frame_terms.setdefault(frame, {})[term] = float(value)
    names = list(layout.names) + list(fit.terms)
    return {
        "dynid_ros_version": __version__,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "convention": "link parameters [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] about each frame's origin "
                      "(dynid_ros.robot.parameters); inertia_com is about the CoM; frame_terms per frame "
                      "(dynid_ros.dynamics.frame_terms)",
        "robot": {"source": _path(source), "description": "frames", "joints": list(fit.robot.motors),
                  "links": list(layout.links), "locked": [], "locked_positions": {}, "following": {}},
        "options": {"method": "frames", "consistency": "full", "solver": fit.solver, "friction": [],
                    "armature": False, "prior": None, "topic": None, "start": None, "end": None},
        "processing": dict(fit.processing),
        "links": links,
        "joints": {motor: {} for motor in fit.robot.motors},
        "frame_terms": frame_terms,
        "base_parameters": [],
        "base_parameter_count": fit.base_count,
        "parameter_vector": {"names": names, "values": [float(v) for v in fit.delta] + [float(fit.terms[n])
                                                                                       for n in fit.terms],
                             "nominal": None, "std": None},
        "not_identified": [],
    }


def frames_report_dict(fit: FramesFit, extra: Mapping | None = None) -> dict:
    """``report.json`` of a frames robot: the keys every identification's has where they apply (``urdf`` says why
    there is no URDF), the per-frame terms, and ``extra``."""
    masses = {link: float(fit.delta[fit.layout.link_slice(k)][0]) for k, link in enumerate(fit.layout.links)}
    return {
        "relative_error": fit.relative_error,
        "relative_error_per_joint": list(fit.relative_error_per_joint),
        "feasible": fit.feasible,
        "n_base": fit.base_count,
        "n_parameters": fit.layout.n_parameters + len(fit.terms),
        "method": "frames",
        "consistency": "full",
        "solver": fit.solver,
        "solver_status": fit.status,
        "n_samples": fit.n_samples,
        "joints": list(fit.robot.motors),
        "link_masses": masses,
        "total_mass": float(sum(masses.values())),
        "mass_definitions": MASS_DEFINITIONS,
        "frame_terms": dict(fit.terms),
        "urdf": None,
        "no_urdf": NO_URDF,
        "joint_diagnostics": [d.to_dict() for d in diagnostics(fit.series)] if fit.series is not None else None,
        "processing": dict(fit.processing),
        "notes": list(fit.warnings),
        "dynid_ros_version": __version__,
        **(extra or {}),
    }


def check_frames(fit: FramesFit, directory: Path) -> ResultCheck:
    """The result's check of itself on its files as written (module docstring)."""
    check = ResultCheck(float(fit.relative_error), explanations=[
        "a frames robot has no nominal parameters: the comparison with a nominal model does not apply"])
    bad = [f"{link} {fit.delta[fit.layout.link_slice(k)][0]:.4g} kg" for k, link in enumerate(fit.layout.links)
           if not (np.isfinite(fit.delta[fit.layout.link_slice(k)][0]) and fit.delta[fit.layout.link_slice(k)][0] > 0)]
    if bad:
        check.problems.append(f"mass not finite and positive: {', '.join(bad)}")
    if not fit.relative_error < 1.0:
        check.problems.append(f"it fits its own data with {100 * fit.relative_error:.4g} % error, no better than "
                              "predicting no torque at all (100 %)")
    stored, _, _ = load_frames_result(Path(directory))
    vector = yaml.safe_load((Path(directory) / PARAMETERS_FILE).read_text())["parameter_vector"]["values"]
    expected = np.concatenate([fit.delta, [fit.terms[n] for n in fit.terms]])
    same = (np.array_equal(stored.delta, fit.delta) and stored.terms == fit.terms
            and np.array_equal(np.asarray(vector, dtype=float), expected))
    check.validation_relative_error = float(fit.relative_error) if same else None
    if not same:
        check.problems.append(f"the files as written ({FRAMES_FILE}, {PARAMETERS_FILE}) do not hold the fitted "
                              "parameters")
    return check


def write_frames_report(fit: FramesFit, directory: Path, *, source: str | Path | None = None,
                        bag: str | Path | None = None) -> None:
    """``report.html`` and ``report.md`` (with the fit's figures) of a frames robot into ``directory``."""
    doc = Document("dynid identification report (frames robot)")
    worst = max(fit.relative_error_per_joint) if fit.relative_error_per_joint else float("nan")
    doc.paragraph(f"Frames robot ({len(fit.robot.model.links)} bodies with inertia, {len(fit.terms)} per-frame "
                  f"terms; Wang et al. 2019): solver status {fit.status}, physically consistent: "
                  f"{'yes' if fit.feasible else 'NO'}; relative error {100 * fit.relative_error:.2f} % over "
                  f"{fit.n_samples} samples (worst motor {100 * worst:.1f} %); {fit.base_count} base parameters.")
    doc.paragraph(NO_URDF + "; no nominal parameters to compare with.", note=True)
    for note in fit.warnings:
        doc.paragraph(note, note=True)
    if fit.series is not None:
        fit_section(doc, fit.series, motor_units(fit), Path(directory), "identification data")
    doc.heading("Link masses and inertias")
    doc.paragraph(MASS_DEFINITIONS["link_masses"] + ".")
    rows = []
    for k, link in enumerate(fit.layout.links):
        mass, com, i_com = inertia_about_com(fit.delta[fit.layout.link_slice(k)])
        rows.append([link, float(mass), ", ".join(f"{c:.4g}" for c in com),
                     ", ".join(f"{v:.4g}" for v in np.diag(i_com))])
    doc.table(["link", "mass [kg]", "CoM [m]", "principal-axis inertia diag about the CoM [kg m²]"], rows)
    doc.heading("Per-frame terms")
    doc.paragraph("Coulomb (Fc), viscous (Fv) friction and offset (Fo), rotor inertia (Ia), spring constant (K) of "
                  "each frame, within their bounds (dynid_ros.dynamics.frame_terms).")
    doc.table(["term", "value"], [[name, float(value)] for name, value in fit.terms.items()])
    doc.heading("Inputs")
    doc.table(["item", "value"], [["config", _path(source)], ["recording", _path(bag)],
                                  ["dynid version", __version__]] +
              [[f"processing {key}", str(value)] for key, value in fit.processing.items()])
    (Path(directory) / HTML_FILE).write_text(doc.html(), encoding="utf-8")
    (Path(directory) / MARKDOWN_FILE).write_text(doc.markdown(Path(directory)), encoding="utf-8")


def motor_units(fit: FramesFit) -> list[tuple[str, str, str]]:
    """(position, velocity, torque) unit of each motor: linear when every frame it moves slides."""
    units = []
    for m in range(len(fit.robot.motors)):
        kinds = {f.kind for f in fit.robot.frames if abs(f.motion[m]) > 0 and f.kind != "fixed"}
        units.append(("m", "m/s", "N") if kinds == {"prismatic"} else ("rad", "rad/s", "N m"))
    return units


def _path(value: str | Path | None) -> str | None:
    return None if value is None else str(Path(value).expanduser().resolve())
