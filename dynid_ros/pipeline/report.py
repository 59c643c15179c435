"""Human-readable reports: PNG plots (matplotlib, no display needed) and a markdown summary.

- :func:`plot_torques`: measured vs predicted torque per joint with the error, like Sousa & Cortesão 2014
  Fig. 6.
- :func:`plot_parameters`: identified vs true vs nominal masses and CoMs per link.
- :func:`parameter_distances`: how far identified and nominal parameters are from the truth.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynid_ros.robot.parameters import ParameterLayout, inertia_about_com, inertia_matrix


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_torques(t: np.ndarray, tau: np.ndarray, tau_hat: np.ndarray, joints: list[str], path: Path,
                 title: str = "Measured vs predicted joint torque") -> Path:
    """One row per joint: measured and predicted torque, and their difference."""
    plt = _pyplot()
    n = len(joints)
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.6 * n + 1.0), sharex=True, squeeze=False)
    rel = t - t[0]
    for j, ax in enumerate(axes[:, 0]):
        ax.plot(rel, tau[:, j], color="tab:blue", lw=1.0, label="measured")
        ax.plot(rel, tau_hat[:, j], color="tab:orange", lw=1.0, ls="--", label="predicted")
        ax.plot(rel, tau[:, j] - tau_hat[:, j], color="tab:red", lw=0.8, alpha=0.8, label="error")
        err = np.linalg.norm(tau[:, j] - tau_hat[:, j]) / max(np.linalg.norm(tau[:, j]), 1e-12)
        ax.set_ylabel(f"{joints[j]}\n[N m]", fontsize=8)
        ax.text(0.995, 0.9, f"rel. error {100 * err:.1f} %", transform=ax.transAxes, ha="right", va="top",
                fontsize=8, bbox={"facecolor": "white", "alpha": 0.7, "lw": 0})
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="upper left", ncol=3, fontsize=8)
    axes[-1, 0].set_xlabel("time [s]")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_parameters(layout: ParameterLayout, identified: np.ndarray, nominal: np.ndarray, path: Path,
                    truth: np.ndarray | None = None) -> Path:
    """Masses and CoM positions per link: identified vs nominal (vs true when known)."""
    plt = _pyplot()
    links = list(layout.links)
    x = np.arange(len(links))
    series = [("nominal", nominal, "tab:gray"), ("identified", identified, "tab:orange")]
    if truth is not None:
        series.insert(1, ("true", truth, "tab:green"))
    width = 0.8 / len(series)
    fig, (ax_m, ax_c) = plt.subplots(2, 1, figsize=(10, 6.5))
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
    plt.close(fig)
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
        return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))

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
