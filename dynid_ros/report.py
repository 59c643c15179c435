"""Human-readable reports: PNG plots (matplotlib, no display needed) and a markdown summary.

- :func:`plot_torques`: measured vs predicted torque per joint with the error, like seed 000
  Fig. 6.
- :func:`plot_parameters`: identified vs true vs nominal masses and CoMs per link.
- :func:`parameter_distances`: how far identified and nominal parameters are from the truth.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynid_ros.parameters import ParameterLayout


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
                        nominal: np.ndarray) -> list[dict]:
    """Per quantity, the error of the identified and of the nominal parameters w.r.t. the truth.

    Quantities: link masses (relative), CoMs (absolute, m), inertias about the CoM (relative
    Frobenius), and per-joint friction and armature terms (absolute).
    """
    from dynid_ros.parameters import inertia_about_com

    rows = []

    def link_stats(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        parts = [inertia_about_com(delta[layout.link_slice(k)]) for k in range(len(layout.links))]
        return np.array([p[0] for p in parts]), np.array([p[1] for p in parts]), [p[2] for p in parts]

    (mt, ct, it), (mi, ci, ii), (mn, cn, in_) = link_stats(truth), link_stats(identified), link_stats(nominal)
    rows.append({"quantity": "link masses (rel. error)",
                 "identified": float(np.linalg.norm(mi - mt) / np.linalg.norm(mt)),
                 "nominal": float(np.linalg.norm(mn - mt) / np.linalg.norm(mt))})
    rows.append({"quantity": "CoM positions (RMS error, m)",
                 "identified": float(np.sqrt(np.mean(np.sum((ci - ct) ** 2, axis=1)))),
                 "nominal": float(np.sqrt(np.mean(np.sum((cn - ct) ** 2, axis=1))))})
    norm_t = np.sqrt(sum(np.sum(i ** 2) for i in it))
    rows.append({"quantity": "inertias about CoM (rel. error)",
                 "identified": float(np.sqrt(sum(np.sum((a - b) ** 2) for a, b in zip(ii, it))) / norm_t),
                 "nominal": float(np.sqrt(sum(np.sum((a - b) ** 2) for a, b in zip(in_, it))) / norm_t)})
    for symbol, label in (("fv", "viscous friction"), ("fc", "Coulomb friction"), ("fo", "offset"),
                          ("Ia", "armature")):
        idx = layout.indices(symbol)
        if idx.size:
            rows.append({"quantity": f"{label} (RMS error)",
                         "identified": float(np.sqrt(np.mean((identified[idx] - truth[idx]) ** 2))),
                         "nominal": float(np.sqrt(np.mean((nominal[idx] - truth[idx]) ** 2)))})
    return rows


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    """A GitHub markdown table from records."""
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)
