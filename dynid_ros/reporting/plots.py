"""Human-readable reports: PNG plots (matplotlib, no display needed) and a markdown summary.

- :func:`plot_torques`: measured vs predicted torque per joint with the error, like Sousa & Cortesão 2014
  Fig. 6.
- :func:`plot_parameters`: identified vs true vs nominal masses and CoMs per link.
- :func:`parameter_distances`: how far identified and nominal parameters are from the truth.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynid_ros.estimation.fit_quality import relative_norm
from dynid_ros.robot.parameters import ParameterLayout, inertia_about_com, inertia_matrix


def new_figure(figsize: tuple[float, float]) -> object:
    """A figure drawn by Agg, outside pyplot: no global figure registry, no GUI backend, nothing to close, safe in
    any thread (matplotlib's object-oriented API; pyplot is for interactive use)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # deferred: matplotlib is heavy, only for reports
    from matplotlib.figure import Figure  # deferred: as above

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def plot_torques(t: np.ndarray, tau: np.ndarray, tau_hat: np.ndarray, joints: list[str], path: Path,
                 title: str = "Measured vs predicted joint torque") -> Path:
    """One row per joint: measured and predicted torque, and their difference."""
    n = len(joints)
    fig = new_figure((10, 1.6 * n + 1.0))
    axes = fig.subplots(n, 1, sharex=True, squeeze=False)
    rel = t - t[0]
    for j, ax in enumerate(axes[:, 0]):
        ax.plot(rel, tau[:, j], color="tab:blue", lw=1.0, label="measured")
        ax.plot(rel, tau_hat[:, j], color="tab:orange", lw=1.0, ls="--", label="predicted")
        ax.plot(rel, tau[:, j] - tau_hat[:, j], color="tab:red", lw=0.8, alpha=0.8, label="error")
        err = relative_norm(tau[:, j] - tau_hat[:, j], tau[:, j])
        ax.set_ylabel(f"{joints[j]}\n[N m]", fontsize=8)
        ax.text(0.995, 0.9, f"rel. error {100 * err:.1f} %", transform=ax.transAxes, ha="right", va="top",
                fontsize=8, bbox={"facecolor": "white", "alpha": 0.7, "lw": 0})
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="upper left", ncol=3, fontsize=8)
    axes[-1, 0].set_xlabel("time [s]")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def plot_parameters(layout: ParameterLayout, identified: np.ndarray, nominal: np.ndarray, path: Path,
                    truth: np.ndarray | None = None) -> Path:
    """Masses and CoM positions per link: identified vs nominal (vs true when known)."""
    links = list(layout.links)
    x = np.arange(len(links))
    series = [("nominal", nominal, "tab:gray"), ("identified", identified, "tab:orange")]
    if truth is not None:
        series.insert(1, ("true", truth, "tab:green"))
    width = 0.8 / len(series)
    fig = new_figure((10, 6.5))
    ax_m, ax_c = fig.subplots(2, 1)
    for i, (label, delta, color) in enumerate(series):
        masses = np.array([delta[layout.link_slice(k)][0] for k in range(len(links))])
        ax_m.bar(x + (i - (len(series) - 1) / 2) * width, masses, width, label=label, color=color)
        coms = np.array([np.linalg.norm(delta[layout.link_slice(k)][1:4]) / max(delta[layout.link_slice(k)][0],
                                                                               1e-9) for k in range(len(links))])
        ax_c.bar(x + (i - (len(series) - 1) / 2) * width, 100 * coms, width, label=label, color=color)
    for ax, ylabel in ((ax_m, "mass [kg]"), (ax_c, "|CoM| from joint frame [cm]")):
        ax.set_xticks(x, links, rotation=20, fontsize=8)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    ax_m.set_title("Link parameters")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def parameter_distances(layout: ParameterLayout, truth: np.ndarray, identified: np.ndarray,
                        nominal: np.ndarray, base_k: np.ndarray | None = None) -> list[dict]:
    """Per quantity, the error of the identified and of the nominal parameters w.r.t. the truth.

    Rows with ``identifiable: True`` are what data can determine: the base parameters ``K delta``
    (Sousa & Cortesão 2014 eq. 38), and those standard parameters in the convention of :mod:`dynid_ros.robot.parameters`
    (masses, first moments ``m c`` and inertias about the joint frame), friction and armature that are
    identifiable one by one (:func:`identifiable_parameters`; with ``base_k``), for every link. A quantity some
    of whose parameters enter the base parameters only in combinations (every link mass of a revolute arm, most
    first moments) is shown with ``identifiable: False``: its values come from the prior, and what the data
    determine of it is in the base-parameter row. The CoM
    ``c = (m c) / m`` and the inertia about the CoM of each link are derived rows: a ratio of two
    estimates, not identifiable link by link (only combinations are), so they are shown but flagged.
    Relative errors are Frobenius norms over all links; friction and armature errors are RMS.
    """

    links = range(len(layout.links))

    def rel(a: np.ndarray, b: np.ndarray) -> float:
        return relative_norm(a - b, b)

    def stats(delta: np.ndarray) -> dict[str, np.ndarray]:
        parts = [delta[layout.link_slice(k)] for k in links]
        about_com = [inertia_about_com(p) for p in parts]
        return {"mass": np.array([p[0] for p in parts]), "first": np.array([p[1:4] for p in parts]),
                "inertia": np.array([inertia_matrix(p) for p in parts]),
                "com": np.array([c[1] for c in about_com]), "inertia_com": np.array([c[2] for c in about_com])}

    t, i, n = stats(truth), stats(identified), stats(nominal)
    known = identifiable_parameters(base_k) if base_k is not None else np.ones(layout.n_parameters, dtype=bool)
    rows = []
    if base_k is not None:
        rows.append({"quantity": "base parameters (rel. error)", "identifiable": True,
                     "identified": rel(base_k @ identified, base_k @ truth),
                     "nominal": rel(base_k @ nominal, base_k @ truth)})
    kinds = (("mass", "link masses (rel. error)", slice(0, 1)),
             ("first", "first moments m c (rel. error)", slice(1, 4)),
             ("inertia", "inertias about the joint frame (rel. error)", slice(4, 10)))
    for key, label, components in kinds:
        alone = bool(np.all([known[layout.link_slice(k)][components] for k in links]))
        rows.append({"quantity": label if alone else label.replace(")", "; only in combinations, from the prior)"),
                     "identifiable": alone, "identified": rel(i[key], t[key]), "nominal": rel(n[key], t[key])})
    for symbol, label in (("fv", "viscous friction"), ("fc", "Coulomb friction"), ("fo", "offset"),
                          ("Ia", "armature")):
        idx = layout.indices(symbol)
        idx = idx[known[idx]] if idx.size else idx
        if idx.size:
            rows.append({"quantity": f"{label} (RMS error)", "identifiable": True,
                         "identified": float(np.sqrt(np.mean((identified[idx] - truth[idx]) ** 2))),
                         "nominal": float(np.sqrt(np.mean((nominal[idx] - truth[idx]) ** 2)))})
    rows.append({"quantity": "CoM positions (RMS error, m; derived)", "identifiable": False,
                 "identified": float(np.sqrt(np.mean(np.sum((i["com"] - t["com"]) ** 2, axis=1)))),
                 "nominal": float(np.sqrt(np.mean(np.sum((n["com"] - t["com"]) ** 2, axis=1))))})
    rows.append({"quantity": "inertias about the CoM (rel. error; derived)", "identifiable": False,
                 "identified": rel(i["inertia_com"], t["inertia_com"]),
                 "nominal": rel(n["inertia_com"], t["inertia_com"])})
    for row in rows:
        row["closer"] = "yes" if row["identified"] < row["nominal"] else "no"
    return rows


def identifiable_parameters(base_k: np.ndarray, tolerance: float = 1e-6) -> np.ndarray:
    """Per standard parameter: True when it is identifiable on its own, i.e. its unit vector lies in the row
    space of ``K`` (base parameters ``K delta``, Sousa & Cortesão 2014 eq. 38): the diagonal of the projector
    ``K^+ K`` is 1 there (and < 1 for a parameter that only enters combinations)."""
    projector = np.linalg.pinv(base_k) @ base_k
    return np.abs(np.diag(projector) - 1.0) < tolerance


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    """A GitHub markdown table from records."""
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


MAX_SCATTER_POINTS = 2000
"""Scatter plots show at most this many samples (evenly spaced) to stay light and legible."""
PLOT_DPI = 90
"""Resolution of the report's PNGs."""


def envelope(t: np.ndarray, y: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """The series ``y(t)`` reduced to its minimum and maximum in each of ``columns`` equal runs of samples, in time
    order: drawn as a line at one pixel per column it looks as the full series does (every peak is kept), at a
    fraction of the drawing cost. Series with at most ``2 columns`` samples are returned whole."""
    n = y.shape[0]
    if n <= 2 * columns:
        return t, y
    edges = np.linspace(0, n, columns + 1).astype(int)
    starts = edges[:-1]
    lo = np.minimum.reduceat(y, starts)
    hi = np.maximum.reduceat(y, starts)
    i_lo = np.array([a + np.argmin(y[a:b]) for a, b in zip(starts, edges[1:])])
    i_hi = np.array([a + np.argmax(y[a:b]) for a, b in zip(starts, edges[1:])])
    first_low = i_lo <= i_hi
    values = np.column_stack([np.where(first_low, lo, hi), np.where(first_low, hi, lo)]).reshape(-1)
    times = np.column_stack([t[np.where(first_low, i_lo, i_hi)], t[np.where(first_low, i_hi, i_lo)]]).reshape(-1)
    return times, values


def _few_ticks(ax: object, x_bins: int = 5, y_bins: int = 4) -> None:
    """At most about ``x_bins``/``y_bins`` labelled ticks: enough to read a small per-joint panel, and every tick
    is several artists that cost drawing time (most of a many-panel figure's)."""
    from matplotlib.ticker import MaxNLocator  # deferred: matplotlib is heavy, only for reports

    ax.xaxis.set_major_locator(MaxNLocator(nbins=x_bins))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=y_bins))


def _margins(fig: object, left_in: float, right_in: float, bottom_in: float, top_in: float, hspace: float,
             wspace: float) -> None:
    """Fixed margins in inches (the per-joint figures' labels have known sizes: no layout pass needed)."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(left=left_in / width, right=1 - right_in / width, bottom=bottom_in / height,
                        top=1 - top_in / height, hspace=hspace, wspace=wspace)


def plot_joint_fit(t: np.ndarray, tau: np.ndarray, tau_hat: np.ndarray, joints: list[str], units: list[str],
                   path: Path, title: str) -> Path:
    """One row per joint: measured and predicted torque (left), the residual (right), each with its unit."""
    n = len(joints)
    fig = new_figure((13, 1.9 * n + 1.2))
    axes = fig.subplots(n, 2, sharex=True, squeeze=False, gridspec_kw={"width_ratios": [3, 2]})
    rel = t - t[0]
    columns = int(13 * PLOT_DPI * 0.55)  # pixel columns of the wider panel
    for j in range(n):
        ax, ax_e = axes[j]
        ax.plot(*envelope(rel, tau[:, j], columns), color="tab:blue", lw=0.9, label="measured")
        ax.plot(*envelope(rel, tau_hat[:, j], columns), color="tab:orange", lw=0.9, ls="--", label="predicted")
        ax.set_ylabel(f"{joints[j]}\n[{units[j]}]", fontsize=8)
        ax_e.plot(*envelope(rel, tau[:, j] - tau_hat[:, j], columns), color="tab:red", lw=0.7)
        ax_e.axhline(0.0, color="k", lw=0.5)
        ax_e.set_ylabel(f"residual [{units[j]}]", fontsize=8)
        for a in (ax, ax_e):
            _few_ticks(a)
            a.grid(alpha=0.3)
            a.tick_params(labelsize=7)
    axes[0, 0].legend(loc="upper right", ncol=2, fontsize=7)
    axes[0, 0].set_title("measured vs predicted torque", fontsize=9)
    axes[0, 1].set_title("residual (measured - predicted)", fontsize=9)
    for a in axes[-1]:
        a.set_xlabel("time [s]")
    fig.suptitle(title)
    _margins(fig, left_in=1.25, right_in=0.15, bottom_in=0.55, top_in=0.75, hspace=0.25, wspace=0.3)
    fig.savefig(path, dpi=PLOT_DPI)
    return path


def plot_residual_structure(q: np.ndarray, dq: np.ndarray, residual: np.ndarray, joints: list[str],
                            units: list[tuple[str, str, str]], flagged: list[bool], path: Path) -> Path:
    """One row per joint: the residual against the joint's position (left) and velocity (right); a flagged
    (structured) joint's title is red. ``units``: (position, velocity, torque) unit per joint."""
    n = len(joints)
    step = max(1, q.shape[0] // MAX_SCATTER_POINTS)
    fig = new_figure((11, 1.8 * n + 1.0))
    axes = fig.subplots(n, 2, sharey="row", squeeze=False)
    for j in range(n):
        pos_unit, vel_unit, torque_unit = units[j]
        for a, x, label in ((axes[j, 0], q[::step, j], f"position [{pos_unit}]"),
                            (axes[j, 1], dq[::step, j], f"velocity [{vel_unit}]")):
            a.plot(x, residual[::step, j], ".", ms=1.5, alpha=0.4, color="tab:red" if flagged[j] else "tab:gray")
            a.axhline(0.0, color="k", lw=0.5)
            a.set_xlabel(f"{joints[j]} {label}", fontsize=7, labelpad=1)
            _few_ticks(a)
            a.tick_params(labelsize=7)
            a.grid(alpha=0.3)
        axes[j, 0].set_ylabel(f"residual\n[{torque_unit}]", fontsize=7)
        if flagged[j]:
            axes[j, 0].set_title(f"{joints[j]}: structured residual", fontsize=8, color="tab:red")
    fig.suptitle("Residual vs position and velocity (a pattern = a torque the model lacks)")
    _margins(fig, left_in=0.95, right_in=0.15, bottom_in=0.45, top_in=0.6, hspace=0.7, wspace=0.25)
    fig.savefig(path, dpi=PLOT_DPI)
    return path


def plot_link_masses(links: list[str], mass: np.ndarray, prior_mass: np.ndarray, path: Path,
                     ratio_range: tuple[float, float]) -> Path:
    """Identified vs nominal mass per link (left) and their ratio on a log scale with the realistic band (right)."""
    x = np.arange(len(links))
    fig = new_figure((13, 4.2))
    ax_m, ax_r = fig.subplots(1, 2)
    ax_m.bar(x - 0.2, prior_mass, 0.4, label="nominal (URDF)", color="tab:gray")
    ax_m.bar(x + 0.2, mass, 0.4, label="identified", color="tab:orange")
    ax_m.set_ylabel("mass [kg]")
    ratio = np.where(prior_mass > 0, mass / np.maximum(prior_mass, 1e-300), np.nan)
    outside = (ratio < ratio_range[0]) | (ratio > ratio_range[1])
    ax_r.axhspan(*ratio_range, color="tab:green", alpha=0.12, label=f"[{ratio_range[0]:g}x, {ratio_range[1]:g}x]")
    ax_r.bar(x, np.nan_to_num(ratio, nan=1.0), 0.6, color=np.where(outside, "tab:red", "tab:blue"))
    ax_r.set_yscale("log")
    finite = ratio[np.isfinite(ratio) & (ratio > 0)]
    low = min([ratio_range[0] / 2, *finite / 1.5])
    high = max([ratio_range[1] * 2, *finite * 1.5])
    ticks = [v for v in (0.01, 0.03, 0.1, 0.25, 0.5, 1, 2, 4, 10, 30, 100) if low <= v <= high]
    ax_r.set_ylim(low, high)
    ax_r.set_yticks(ticks, [f"{v:g}x" for v in ticks])
    ax_r.minorticks_off()
    ax_r.axhline(1.0, color="k", lw=0.6)
    ax_r.set_ylabel("identified / nominal mass")
    for ax in (ax_m, ax_r):
        ax.set_xticks(x, links, rotation=30, ha="right", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Link masses")
    fig.tight_layout()
    fig.savefig(path, dpi=PLOT_DPI)
    return path


def plot_coverage(joints: list[str], q: np.ndarray, dq: np.ndarray, position_limits: np.ndarray,
                  velocity_limits: np.ndarray, path: Path) -> Path:
    """Per joint, the position range (left) and the speed (right) the data cover, as a share of the joint's
    limits where the description has them (absolute values where it has none, with the axis labelled so)."""
    n = len(joints)
    y = np.arange(n)
    fig = new_figure((13, 0.45 * n + 1.6))
    ax_q, ax_v = fig.subplots(1, 2)
    lo, hi = position_limits[:, 0], position_limits[:, 1]
    finite = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    span = np.where(finite, hi - lo, 1.0)
    start = np.where(finite, (q.min(axis=0) - lo) / span, 0.0)
    width = np.where(finite, np.ptp(q, axis=0) / span, 0.0)
    ax_q.barh(y, 100 * width, left=100 * start, color="tab:blue")
    ax_q.set_xlim(0, 100)
    ax_q.set_xlabel("position covered [% of the joint range, lower limit = 0]")
    speed = np.abs(dq).max(axis=0)
    vfinite = np.isfinite(velocity_limits) & (velocity_limits > 0)
    ax_v.barh(y, np.where(vfinite, 100 * speed / np.where(vfinite, velocity_limits, 1.0), 0.0), color="tab:orange")
    ax_v.set_xlim(0, 100)
    ax_v.set_xlabel("peak speed [% of the velocity limit]")
    for ax in (ax_q, ax_v):
        ax.set_yticks(y, joints, fontsize=8)
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    for j in np.flatnonzero(~finite):
        ax_q.text(1, j, "no limits in the description", va="center", fontsize=7)
    for j in np.flatnonzero(~vfinite):
        ax_v.text(1, j, "no velocity limit", va="center", fontsize=7)
    fig.suptitle("Excitation coverage")
    fig.tight_layout()
    fig.savefig(path, dpi=PLOT_DPI)
    return path
