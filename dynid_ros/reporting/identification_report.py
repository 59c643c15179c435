"""The report a person reads after ``dynid identify`` (``report.html`` + ``report.md``) and ``dynid validate``.

Sections: the fit per joint (measured vs predicted torque, residual; relative error, R^2,
residual autocorrelation time, a flag for a structured residual, :mod:`dynid_ros.estimation.residual_structure`);
the parameters (value, standard deviation, prior, identified or kept at the prior, in words); the link masses (the
body the parameters hold and the link alone, what each link carries); link realism (mass and CoM vs nominal,
highlighted outside :data:`dynid_ros.estimation.prior.MASS_RATIO_RANGE`); excitation quality
(condition number of the base regressor, plain and column-scaled, per-joint range and speed covered);
provenance (:mod:`dynid_ros.identification.provenance`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynid_ros.estimation.prior import JOINT_GROUP, MASS_RATIO_RANGE
from dynid_ros.estimation.residual_structure import STRUCTURED_SHARE, JointDiagnostics, joint_diagnostics
from dynid_ros.identification.fit_series import FitSeries
from dynid_ros.identification.identification_result import IdentificationResult
from dynid_ros.identification.least_squares_comparison import LeastSquaresComparison
from dynid_ros.reporting import plots
from dynid_ros.reporting.report_html import Document
from dynid_ros.robot.model import PRISMATIC, RobotModel
from dynid_ros.robot.parameters import inertia_about_com

HTML_FILE = "report.html"
MARKDOWN_FILE = "report.md"
FIGURES = {"fit": "report_fit.png", "structure": "report_residual_structure.png",
           "masses": "report_link_masses.png", "coverage": "report_coverage.png"}
"""PNG files written beside ``report.md`` (and embedded in ``report.html``)."""
REPORT_FILES = (HTML_FILE, MARKDOWN_FILE, *(f for key, f in FIGURES.items() if key != "structure"))
"""The files of the readable report in every identification result with a torque fit; the residual-vs-state figure
(``FIGURES["structure"]``) is there too when a joint's residual is structured (:func:`structure_figure`)."""
KEPT_AT_PRIOR = 0.9
"""A parameter whose posterior std is at least this share of its prior std is 'kept at the prior'."""
FROM_DATA = 0.5
"""A parameter whose posterior std is at most this share of its prior std is 'identified by the data'."""


def joint_units(model: RobotModel) -> list[tuple[str, str, str]]:
    """(position, velocity, torque) unit of each identified joint."""
    kinds = [model.kinematics[i - 1].kind for i in model.joint_ids]
    return [("m", "m/s", "N") if kind == PRISMATIC else ("rad", "rad/s", "N m") for kind in kinds]


def diagnostics(fit: FitSeries) -> list[JointDiagnostics]:
    """Per-joint fit diagnostics of a fit series."""
    return joint_diagnostics(fit.joints, fit.tau, fit.tau_hat, fit.q, fit.dq)


def _finite(value: float) -> float | None:
    """``value``, or None when it is infinite (JSON has no infinity)."""
    return value if np.isfinite(value) else None


def parameter_status(result: IdentificationResult) -> list[str]:
    """Per standard parameter, in words, where its value comes from (module docstring of the report)."""
    base = result.base
    n = result.delta.size
    if base.K.shape[1] != n:
        return ["–"] * n
    kept = {int(m["name"].removeprefix("beta")) - 1 for m in result.not_identified}  # "betaN" (1-based)
    seen = np.zeros(n, dtype=bool)
    for r in range(base.K.shape[0]):
        if r not in kept:
            seen |= np.abs(base.K[r]) > 1e-9
    out = []
    for i in range(n):
        if not seen[i]:
            out.append("kept at the prior: the data do not see it")
        elif result.delta_std is not None and result.prior_std is not None and result.prior_std[i] > 0:
            share = result.delta_std[i] / result.prior_std[i]
            out.append("identified by the data" if share <= FROM_DATA else
                       "kept at the prior: the data say little" if share >= KEPT_AT_PRIOR else
                       "partly identified: data and prior")
        else:
            alone = bool(plots.identifiable_parameters(base.K)[i])
            out.append("identified by the data" if alone else "only in combinations: the prior splits them")
    return out


def filter_summary(processing: dict) -> str:
    """The processing's filter in words: cutoff, decimation and how the cutoff was found (``cutoff_choice``)."""
    decimate = processing.get("decimate_hz")
    text = (f"Filter: zero-phase Butterworth at {float(processing.get('cutoff_hz', float('nan'))):.3g} Hz, "
            f"{'every sample kept' if decimate is None else f'decimated to {float(decimate):.4g} Hz'}")
    choice = processing.get("cutoff_choice")
    return text + (f" ({choice['description']})." if choice and "description" in choice else " (given).")


def build_document(result: IdentificationResult, provenance: dict, figure_dir: Path,
                   quality: dict | None = None) -> tuple[Document, list[JointDiagnostics]]:
    """The identification report, its figures written into ``figure_dir``, and the per-joint diagnostics
    (``quality``: the result's ``excitation``)."""
    doc = Document("dynid identification report")
    worst = max(result.relative_error_per_joint) if result.relative_error_per_joint else float("nan")
    doc.paragraph(f"{result.options.method} ({result.options.consistency}): solver status {result.solver_status}, "
                  f"physically consistent: {'yes' if result.feasible else 'NO'}; relative error "
                  f"{100 * result.relative_error:.2f} % over {result.n_samples} samples (worst joint "
                  f"{100 * worst:.1f} %); {result.base.n_base} base parameters.")
    doc.paragraph(filter_summary(result.processing or {}))
    if result.least_squares is not None:
        doc.paragraph(LeastSquaresComparison.from_dict(result.least_squares).summary())
    for warning in [*result.notes, *result.warnings]:
        doc.paragraph(warning, note=True)
    load = result.unmodelled_load
    if load is not None:
        doc.paragraph(f"A load of {load['mass']:.2f} kg (± {load['mass_std']:.2f}) at "
                      f"{100 * float(np.linalg.norm(load['com'])):.0f} cm on link {load['link']} that the URDF lacks "
                      "(a tool or payload): modelled as a body of its own, not absorbed into the links; "
                      "identified.urdf carries it in that link.", note=True)
    units = joint_units(result.model)
    found: list[JointDiagnostics] = []
    if result.fit is not None:
        found = fit_section(doc, result.fit, units, figure_dir, "identification window")
    else:
        doc.paragraph("No torque fit to show (identified from M(q) and g(q)).", note=True)
    links_section(doc, result, figure_dir)
    hyperparameters_section(doc, result)
    parameters_section(doc, result)
    excitation_section(doc, result, figure_dir, quality)
    provenance_section(doc, provenance)
    return doc, found


def fit_section(doc: Document, fit: FitSeries, units: list[tuple[str, str, str]], figure_dir: Path,
                window: str) -> list[JointDiagnostics]:
    """Per-joint plots and table of a fit; returns the diagnostics."""
    found = diagnostics(fit)
    doc.heading(f"Fit per joint ({window})")
    flagged = [d for d in found if d.structured]
    if flagged:
        named = [f"{d.joint} ({100 * max(d.position_share, d.velocity_share):.0f} % explained by its "
                 f"{d.explained_by})" for d in flagged]
        doc.paragraph("Structured residual on " + ", ".join(named) + ": a torque the model lacks (a spring, a cable, "
                      "a tool, a sensor offset), not noise.", note=True)
    rows = [[d.joint, 100 * d.relative_error, d.r2, d.autocorrelation_time, 100 * d.position_share,
             100 * d.velocity_share, "STRUCTURED" if d.structured else "no"] for d in found]
    doc.table(["joint", "relative error [%]", "R²", "residual autocorrelation time [samples]",
               "residual explained by position [%]", "… by velocity [%]", "structured"], rows,
              {i for i, d in enumerate(found) if d.structured})
    doc.paragraph(f"A residual is flagged as structured when a cubic series in the joint's own position or velocity "
                  f"explains at least {100 * STRUCTURED_SHARE:.0f} % of its variance, significantly given its "
                  f"autocorrelation time.")
    torque_units = [u[2] for u in units]
    doc.figure(plots.plot_joint_fit(fit.t, fit.tau, fit.tau_hat, fit.joints, torque_units,
                                    figure_dir / FIGURES["fit"], f"Torque per joint ({window})"),
               "Measured and predicted torque per joint, and the residual.")
    structure_figure(doc, fit, units, [d.structured for d in found], figure_dir)
    return found


def structure_figure(doc: Document, fit: FitSeries, units: list[tuple[str, str, str]], flagged: list[bool],
                     figure_dir: Path) -> None:
    """The residual of each flagged joint against its position and velocity: the evidence behind the flag. The
    other joints' residuals show no pattern (the table's test), so their scatter would say nothing the table does
    not; leaving them out keeps the reader on what matters (and spares drawing 2 panels per joint)."""
    if not any(flagged):
        doc.paragraph("No joint's residual is structured, so no residual-vs-state plot is drawn.")
        return
    keep = [j for j, f in enumerate(flagged) if f]
    doc.figure(plots.plot_residual_structure(fit.q[:, keep], fit.dq[:, keep], fit.residual[:, keep],
                                             [fit.joints[j] for j in keep], [units[j] for j in keep],
                                             [True] * len(keep), figure_dir / FIGURES["structure"]),
               "Residual of each flagged joint against its position and velocity.")


def links_section(doc: Document, result: IdentificationResult, figure_dir: Path) -> None:
    """Mass and CoM vs nominal per link; rows outside the realistic mass range highlighted."""
    layout = result.layout
    masses_section(doc, result)
    doc.heading("Link realism (the link alone, identified vs nominal)")
    rows, highlight = [], set()
    for k, r in enumerate(result.realism):
        _, com, _ = inertia_about_com(result.delta[layout.link_slice(k)])
        _, com0, _ = inertia_about_com(result.nominal[layout.link_slice(k)])
        rows.append([r["link"], r["mass"], r["prior_mass"], r["mass_ratio"], _vector(com), _vector(com0),
                     100 * r["com_shift_m"], 100 * r["inertia_change"], r.get("mass_move_log_bayes_factor")])
        if not r["realistic_mass"]:
            highlight.add(k)
    lo, hi = MASS_RATIO_RANGE
    doc.paragraph(f"Highlighted: a link whose identified mass is outside [{lo:g}x, {hi:g}x] of the nominal one "
                  f"({len(highlight)} of {len(rows)}).", note=bool(highlight))
    doc.paragraph("The last column is the evidence for a mass that moved: the log Bayes factor of the identified "
                  "mass against the CAD one (Savage-Dickey density ratio; above 2.3, a factor of 10: the data demand "
                  "the move; near 0 or below: the CAD mass explains the data as well).")
    doc.table(["link", "mass [kg]", "nominal mass [kg]", "ratio", "CoM [m]", "nominal CoM [m]", "CoM shift [cm]",
               "inertia change [%]", "log Bayes factor (moved)"], rows, highlight)
    if result.realism:
        masses = np.array([r["mass"] for r in result.realism])
        prior = np.array([r["prior_mass"] for r in result.realism])
        doc.figure(plots.plot_link_masses([r["link"] for r in result.realism], masses, prior,
                                          figure_dir / FIGURES["masses"], MASS_RATIO_RANGE),
                   "Identified vs nominal link masses; red: outside the realistic range.")


def hyperparameters_section(doc: Document, result: IdentificationResult) -> None:
    """The prior's scales and the noise the evidence chose, with the evidence along each group's scale
    (:mod:`dynid_ros.estimation.hyperparameters`), and the filter cutoff's cross-validation scores."""
    chosen, choice = result.hyperparameters, (result.processing or {}).get("cutoff_choice") or {}
    scores = choice.get("scores") if choice.get("rule") in ("auto", "checked") else None
    if chosen is None and not scores:
        return
    doc.heading("Hyperparameters chosen by the data")
    if chosen is not None:
        doc.paragraph(f"The prior's tolerance per group and each joint's noise maximize the evidence (type-II maximum "
                      f"likelihood; {chosen['reference']}); log Bayes factor of the choice over the stated tolerances: "
                      f"{chosen['log_bayes_factor_vs_stated']:.1f}. The evidence along each group's scale (log "
                      f"evidence relative to the choice; 0 at x1):")
        stated, tolerances = chosen["stated_tolerances"], chosen["tolerances"]
        fields = {"mass": "mass", "com": "com" if "com" in tolerances else "com_relative", "inertia": "inertia",
                  "joint": "joint"}

        def field(group: str) -> str:  # a joint's own group (joint:<name>) scales the joint terms' tolerance
            return fields["joint"] if group.startswith(JOINT_GROUP) else fields[group]

        factors = [f for f, _ in next(iter(chosen["curve"].values()), [])]
        rows = [[group, stated[field(group)], stated[field(group)] * chosen["scales"][group], chosen["scales"][group],
                 *[v for _, v in chosen["curve"].get(group, [])]] for group in chosen["scales"]]
        doc.table(["group", "stated tolerance", "chosen", "x stated", *[f"x{f:g}" for f in factors]], rows)
        doc.table(["joint", "noise std (chosen)", "variance inflation"],
                  [[joint, value, chosen["inflation"][joint]] for joint, value in chosen["noise_std"].items()])
        _wide_prior_table(doc, chosen.get("cross_validation"))
    if scores:
        doc.paragraph(f"Filter cutoff: {choice['description']}; cross-validated relative error per candidate:")
        ordered = sorted((float(c), float(e)) for c, e in scores.items())  # the rule's cutoff among the candidates
        doc.table(["cutoff [Hz]", "error [%]"], [[c, 100 * e] for c, e in ordered],
                  {i for i, (c, _) in enumerate(ordered) if np.isclose(c, float(choice["cutoff_hz"]), rtol=1e-3)})


def _wide_prior_table(doc: Document, check: dict | None) -> None:
    """The wide-prior check's cross-validated error per prior width (``report.json``
    ``hyperparameters.cross_validation``), the kept width marked."""
    if not check or not check.get("curve"):
        return
    split = (f"{check['blocks']} blocks by the phase of the motion's repeat ({check['repeat_samples']} samples)"
             if check.get("blocks_by") == "phase" else f"{check['blocks']} contiguous time blocks")
    kept = float(check["wide_factor"]) if check["chosen"] == "wide" else 1.0
    doc.paragraph(f"The MAP at the evidence's tolerances and at tolerances 3-100x wider, cross-validated in {split}; "
                  "kept: the best-predicting one whose links stay within [0.5x, 2x] of their URDF masses "
                  f"(x{kept:g}). Relative error per width:")
    doc.table(["tolerances x the evidence's", "error [%]", "kept"],
              [[float(f), 100 * float(e), "yes" if float(f) == kept else ""] for f, e in check["curve"].items()])


def masses_section(doc: Document, result: IdentificationResult) -> None:
    """Which mass is which: the body the parameters hold (the link with its attached parts and a detected load)
    and the link alone (the realism table's), per link (``report.json`` ``link_bodies``, ``mass_definitions``)."""
    bodies = result.link_bodies()
    doc.heading("Link masses")
    carrying = [link for link, b in bodies.items() if b["carries"] or b["load_mass"]]
    doc.paragraph("Each link has two masses: the body (the link with the parts rigidly attached to it and a detected "
                  "load), which the parameter table, parameters.yaml and report.json link_masses hold; and the link "
                  "alone, which the realism table compares with the URDF's link and identified.urdf writes to its "
                  "<inertial> (with a detected load). "
                  + (f"They differ on {', '.join(carrying)}." if carrying else "They are equal on every link here."))
    doc.table(["link", "body mass [kg]", "carries", "attached mass (nominal) [kg]", "detected load [kg]",
               "link alone [kg]"],
              [[link, b["mass"], ", ".join(b["carries"]) or "–", b["attached_mass"], b["load_mass"],
                b["link_alone_mass"]] for link, b in bodies.items()])


def _vector(v: np.ndarray) -> str:
    return "[" + ", ".join(f"{x:.3f}" for x in v) + "]"


def parameters_section(doc: Document, result: IdentificationResult) -> None:
    """Every standard parameter: value, std, prior mean and std, where it comes from; then the base parameters."""
    layout = result.layout
    n = result.delta.size
    names = layout.names if len(layout.names) == n else [f"p{i + 1}" for i in range(n)]
    status = parameter_status(result)
    std = result.delta_std if result.delta_std is not None else [None] * n
    prior_std = result.prior_std if result.prior_std is not None and result.prior_std.size == n else [None] * n
    doc.heading("Parameters")
    doc.paragraph("Link parameters [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] of each body (the link with its "
                  "attached parts: Link masses) about the joint frame (kg, kg m, kg m²); joint terms fv, fc, fo, "
                  "Ia. 'std' is the posterior standard deviation (– without one).")
    rows = [[name, float(result.delta[i]), _float(std[i]), float(result.nominal[i]), _float(prior_std[i]), status[i]]
            for i, name in enumerate(names)]
    doc.table(["parameter", "value", "std", "prior", "prior std", "from"], rows,
              {i for i, s in enumerate(status) if s.startswith("kept")})
    kept = {m["name"] for m in result.not_identified}
    base_rows = [[f"beta{i + 1}", expr, float(result.beta[i]), _float(result.beta_rel_std[i]),
                  "kept at the prior" if f"beta{i + 1}" in kept else "identified"]
                 for i, expr in enumerate(result.base.expressions)]
    doc.paragraph("Base parameters (the combinations the data determine, Sousa & Cortesão 2014 eq. 38):")
    doc.table(["name", "expression", "value", "rel. std [%]", "status"], base_rows,
              {i for i, r in enumerate(base_rows) if r[-1] != "identified"})


def _float(value: object) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None


def excitation_section(doc: Document, result: IdentificationResult, figure_dir: Path,
                       quality: dict | None = None) -> None:
    """Condition numbers and the per-joint range and speed covered (``quality``: the result's ``excitation``)."""
    quality = quality or result.excitation
    doc.heading("Excitation quality")
    if quality is None:
        doc.paragraph("No trajectory (identified from M(q) and g(q)).")
        return
    plain, scaled = (_condition(quality[key]) for key in ("condition_number", "condition_number_scaled"))
    doc.paragraph(f"Condition number of the base regressor on the window: {plain} in SI units; {scaled} with "
                  "unit-norm columns (independent of units and robot size).")
    units = joint_units(result.model)
    rows = [[j["joint"], f"{j['min']:.3f} … {j['max']:.3f} {units[k][0]}", _percent(j["range_share"]),
             f"{j['peak_speed']:.3f} {units[k][1]}", _percent(j["speed_share"])]
            for k, j in enumerate(quality["joints"])]
    doc.table(["joint", "range covered", "% of the joint range", "peak speed", "% of the velocity limit"], rows)
    fit = result.fit
    doc.figure(plots.plot_coverage(fit.joints, fit.q, fit.dq, result.model.position_limits,
                                   result.model.velocity_limits, figure_dir / FIGURES["coverage"]),
               "Share of each joint's range and velocity limit the data cover.")


def _condition(value: float | None) -> str:
    """A condition number as read: None (infinite) means a base parameter the window does not excite."""
    return "unbounded (a base parameter is not excited)" if value is None else f"{value:.4g}"


def _percent(share: float | None) -> str:
    return "–" if share is None else f"{100 * share:.0f}"


def provenance_section(doc: Document, provenance: dict) -> None:
    """Command line, version, inputs and hashes, topic, window, options."""
    doc.heading("Provenance")
    doc.code(provenance.get("command", ""))
    rows = [["dynid version", provenance.get("dynid_version")], ["topic", provenance.get("topic")],
            ["window [s]", f"{provenance.get('window', {}).get('start')} … {provenance.get('window', {}).get('end')}"],
            ["URDF sha256 (text used)", provenance.get("urdf_sha256")]]
    rows += [[f"{role}", f"{item['path']} (sha256 {item['sha256']})"]
             for role, item in provenance.get("inputs", {}).items()]
    rows += [[f"option {key}", str(value)] for key, value in provenance.get("options", {}).items()]
    doc.table(["item", "value"], rows)


def report_keys(result: IdentificationResult) -> dict:
    """The ``report.json`` keys the readable report shows too: ``joint_diagnostics`` (None without a torque fit)
    and ``excitation`` (the result's own)."""
    return {"joint_diagnostics": [d.to_dict() for d in diagnostics(result.fit)] if result.fit is not None else None,
            "excitation": result.excitation}


def write_identification_report(result: IdentificationResult, provenance: dict, directory: Path,
                                quality: dict | None = None) -> list[Path]:
    """Write ``report.html``, ``report.md`` and its PNGs into ``directory`` (``quality``: default the result's
    ``excitation``); returns the files written (each written whole, or the error raised)."""
    directory = Path(directory)
    before = set(directory.iterdir())
    doc, _ = build_document(result, provenance, directory, quality)
    (directory / HTML_FILE).write_text(doc.html(), encoding="utf-8")
    (directory / MARKDOWN_FILE).write_text(doc.markdown(directory), encoding="utf-8")
    return sorted(set(directory.iterdir()) - before)
