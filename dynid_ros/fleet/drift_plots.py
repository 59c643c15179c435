"""PNG plots of parameter drift (:mod:`dynid_ros.fleet.drift`): one figure per joint and one per link, each
quantity against the run time with its ±k standard-deviation band around the reference, flagged ones in red."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from dynid_ros.fleet.drift import Quantity, Run


def plot_drift(runs: list[Run], found: list[Quantity], k: float, out: Path) -> list[Path]:
    """Write ``joint_<name>.png`` and ``link_<name>.png`` into ``out``; the paths written."""
    import matplotlib  # heavy optional dependency, only for the figures

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = [dt.datetime.fromtimestamp(r.time, dt.timezone.utc) for r in runs]
    groups: dict[tuple[str, str], list[Quantity]] = {}
    for q in found:
        groups.setdefault((q.owner_kind, q.owner), []).append(q)
    written = []
    for (kind, owner), group in groups.items():
        cols = min(len(group), 5)
        rows = -(-len(group) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False, sharex=True)
        for ax, q in zip(axes.flat, group):
            color = "tab:red" if q.flagged else "tab:blue"
            ref, band = q.values[0], k * (q.std ** 2 + q.std[0] ** 2) ** 0.5
            ax.fill_between(times, ref - band, ref + band, color="0.85", label=f"±{k:g} σ of the difference")
            ax.errorbar(times, q.values, yerr=q.std, fmt="o-", color=color, capsize=3)
            ax.set_title(f"{q.name} [{q.unit}]" + (" FLAGGED" if q.flagged else ""), fontsize=9, color=color)
            ax.tick_params(axis="x", labelrotation=30, labelsize=7)
        for ax in list(axes.flat)[len(group):]:
            ax.set_visible(False)
        fig.suptitle(f"{kind} {owner}: {len(runs)} runs, reference {times[0]:%Y-%m-%d %H:%M}")
        fig.tight_layout()
        path = out / f"{kind}_{owner.replace('/', '_')}.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    return written
