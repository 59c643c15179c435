"""Benchmark: which significance guard makes ``cutoff_hz: auto`` safe as the default cutoff? (The ``all blocks``
guard was the default ``cutoff_hz: checked`` first; the paired t-test, ``checked`` below, is now.)

``auto`` (:mod:`dynid_ros.identification.cutoff_selection`) picks the candidate cutoff with the smallest
cross-validated error; the default derives the cutoff from the motion's bandwidth (:mod:`dynid_ros.data.bandwidth`).
Per data set of :mod:`default_vs_ols` that has a CAD prior (the real Panda, the coupled wrist both ways, the
robustness cases), this runs ``auto`` with the bandwidth rule's multiple (:func:`~dynid_ros.data.bandwidth.
passband_multiple`) added to its candidates, records every candidate's held-out squared residual and squared
recorded torque in each of the cross-validation's blocks (instrumenting ``cutoff_selection``'s ``candidate_errors``
and ``block_errors`` for that run only), and identifies at every candidate cutoff to get its held-out
error. Compared, by held-out error:

- ``rule``: the candidate at the rule's multiple (the default's cutoff, its bandwidth measured as ``auto`` does);
- ``auto``: the candidate with the best cross-validated error;
- ``all blocks``: ``auto``'s candidate only where every block prefers it to the rule's, else the rule's (a sign test);
- ``one SE``: ``auto``'s candidate only where its mean per-block gain over the rule's exceeds one standard error of
  that gain (the one-standard-error rule, Hastie, Tibshirani & Friedman 2009 section 7.10), else the rule's;
- ``checked``: the default's check (:class:`~dynid_ros.identification.cutoff_selection.RuleCheck`, run on the
  recorded sums): ``auto``'s candidate where it is better overall and the paired one-sided t-test of the blocks' log
  error ratios passes at 10 %, else the rule's.

Run: ``python benchmarks/cutoff_guard.py [--sets panda_gaz2019,coupled_wrist,robustness,slow_100hz]`` (about 16 min
on 2 cores; ``slow_100hz``: the robustness cases slowed and recorded at 100 Hz, :func:`default_vs_ols.slow_100hz`);
writes ``benchmarks/results/cutoff_guard.json`` and the table ``cutoff_guard.md``. ``--levels`` replays the t-test at
other one-sided levels on the stored results (seconds, no identification).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import scipy.stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import default_vs_ols as sets  # noqa: E402

import dynid_ros.identification.cutoff_selection as selection  # noqa: E402
from dynid_ros.data.bandwidth import passband_multiple  # noqa: E402
from dynid_ros.estimation.time_blocks import BLOCKS  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
ORDER = 4
"""The filter order of the default processing (the rule's multiple depends on it)."""


@contextmanager
def recorded_candidates():
    """``auto`` with the rule's multiple among its candidates; yields ``{cutoff: [[squared residual, squared recorded
    torque] per block]}`` (each joint weighted as ``auto`` weights it), filled as the candidates are scored."""
    blocks: dict[float, list[list[float]]] = {}
    current: list[float] = []
    saved = selection.MULTIPLES, selection.candidate_errors, selection.block_errors

    def candidate_errors(data, *args, **kwargs):
        current[:] = [float(data.options.cutoff_hz)]
        return saved[1](data, *args, **kwargs)

    def block_errors(sums, fit=selection.least_squares_fit, joint_weights=None):
        w = np.ones(len(sums.check[0])) if joint_weights is None else np.asarray(joint_weights, dtype=float)
        per_block = []
        for k in range(BLOCKS):
            beta = fit(sums.training(k))
            residual = sum(w[j] * c.residual_norm2(beta) for j, c in enumerate(sums.check[k]))
            energy = sum(w[j] * c.b_norm2 for j, c in enumerate(sums.check[k]))
            per_block.append([float(residual), float(energy)])
        blocks[current[0]] = per_block
        return saved[2](sums, fit, joint_weights)

    selection.MULTIPLES = tuple(sorted((*saved[0], passband_multiple(ORDER))))
    selection.candidate_errors, selection.block_errors = candidate_errors, block_errors
    try:
        yield blocks
    finally:
        selection.MULTIPLES, selection.candidate_errors, selection.block_errors = saved


def guarded(blocks: dict[float, list[list[float]]], rule: float) -> dict[str, float]:
    """The cutoff each choice of the module docstring makes from the per-block sums; ``auto``'s as ``auto`` makes
    it (the pooled relative error, ties to the lower cutoff)."""
    sums = {c: np.asarray(b, dtype=float) for c, b in blocks.items()}
    score = {c: float(np.sqrt(b[:, 0].sum() / b[:, 1].sum())) for c, b in sums.items()}
    best = min(c for c in score if score[c] <= min(score.values()) * (1.0 + selection.TIE))
    relative = {c: b[:, 0] / b[:, 1] for c, b in sums.items()}  # per block, the squared relative error
    gain = relative[rule] - relative[best]
    standard_error = float(np.std(gain, ddof=1) / np.sqrt(gain.size))
    check = selection.RuleCheck.of(rule, best, *(selection.BlockErrors(sums[c][:, 0], float(sums[c][:, 1].sum()))
                                                  for c in (rule, best)))
    return {"rule": rule, "auto": best, "all_blocks": best if np.all(gain > 0) else rule,
            "one_se": best if gain.mean() > standard_error else rule, "checked": best if check.moved else rule,
            "t_statistic": check.t_statistic, "blocks_preferring": int(np.sum(gain > 0))}


def measure(name: str, model, ident, val) -> dict:
    """One data set's row: per candidate its per-block CV errors and held-out error; each choice's cutoff."""
    with recorded_candidates() as blocks:
        sets.held_out(model, ident, val, {"processing": {"cutoff_hz": "auto"}})
    bandwidth = min(blocks) / min(selection.MULTIPLES)  # the lowest candidate is never above the Nyquist share
    rule = min(blocks, key=lambda c: abs(c - bandwidth * passband_multiple(ORDER)))
    held = {c: sets.held_out(model, ident, val, {"processing": {"cutoff_hz": c}})["held_out"] for c in blocks}
    row = {"set": name, "blocks": {f"{c:.4g}": e for c, e in blocks.items()},
           "held_out": {f"{c:.4g}": e for c, e in held.items()}, "choices": guarded(blocks, rule)}
    choices = row["choices"]
    print(f"{name:42s} " + "  ".join(f"{k} {choices[k]:.3g} Hz {100 * held[choices[k]]:.3f} %"
                                     for k in ("rule", "auto", "all_blocks", "one_se", "checked")), flush=True)
    return row


def table(rows: list[dict]) -> str:
    """The markdown table: each choice's cutoff and held-out error per set, and the means."""
    keys = ("rule", "auto", "all_blocks", "one_se", "checked")
    lines = ["| data set | rule | auto | all blocks | one SE | checked (t-test) | blocks preferring auto, t "
             "| best held out |", "|" + "---|" * 8]
    means = {k: [] for k in keys}
    for row in rows:
        held = {float(c): e for c, e in row["held_out"].items()}
        cells = []
        for k in keys:
            cutoff = row["choices"][k]
            error = held[min(held, key=lambda c, cutoff=cutoff: abs(c - cutoff))]
            means[k].append(error)
            cells.append(f"{cutoff:.3g} Hz, {100 * error:.3f} %")
        best = min(held, key=held.get)
        lines.append(f"| {row['set']} | " + " | ".join(cells)
                     + f" | {row['choices']['blocks_preferring']}/{BLOCKS}, {row['choices']['t_statistic']:.3g} | "
                     f"{best:.3g} Hz, {100 * held[best]:.3f} % |")
    lines.append("| mean | " + " | ".join(f"{100 * np.mean(means[k]):.3f} %" for k in keys) + " | | |")
    return "\n".join(lines) + "\n"


LEVELS = (0.16, 0.10, 0.05, 0.025)
"""One-sided levels of the t-test that ``--levels`` replays (0.10: ``checked``'s)."""


def replay_levels(rows: list[dict]) -> str:
    """The t-test of ``checked`` at each of :data:`LEVELS`, replayed on the stored per-block sums: per level the mean
    held-out error and the sets where it is worse or better than the rule."""
    lines = ["| level | t critical | mean held out | worse than the rule | better |", "|---|---|---|---|---|"]
    for level in LEVELS:
        critical = float(scipy.stats.t.ppf(1.0 - level, BLOCKS - 1))
        errors, rule_errors = [], []
        for row in rows:
            held = {float(c): e for c, e in row["held_out"].items()}
            sums = {float(c): np.asarray(b, dtype=float) for c, b in row["blocks"].items()}
            rule, pick = (min(sums, key=lambda c, x=row["choices"][k]: abs(c - x)) for k in ("rule", "auto"))
            errors_of = {c: selection.BlockErrors(sums[c][:, 0], float(sums[c][:, 1].sum())) for c in (rule, pick)}
            check = selection.RuleCheck.of(rule, pick, errors_of[rule], errors_of[pick])
            better = check.pick.relative < check.rule.relative * (1.0 - selection.TIE)
            chosen = pick if better and check.t_statistic > critical else rule
            errors.append(held[min(held, key=lambda c, x=chosen: abs(c - x))])
            rule_errors.append(held[min(held, key=lambda c, x=rule: abs(c - x))])
        e, r = np.array(errors), np.array(rule_errors)
        lines.append(f"| {level:g} | {critical:.3g} | {100 * e.mean():.3f} % | {int(np.sum(e > r * 1.0001))} | "
                     f"{int(np.sum(e < r / 1.0001))} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="panda_gaz2019,coupled_wrist,robustness,slow_100hz")
    parser.add_argument("--levels", action="store_true",
                        help="replay the t-test at other levels on the stored results, without identifying")
    args = parser.parse_args()
    if args.levels:
        print(replay_levels(json.loads((RESULTS / "cutoff_guard.json").read_text())["rows"]))
        return 0
    logging.disable(logging.WARNING)
    runs = {"panda_gaz2019": lambda: sets.real_panda(measure), "coupled_wrist": lambda: sets.coupled_wrist(measure),
            "robustness": lambda: sets.robustness(["panda", "ur5e"], list(sets.CASES), measure),
            "slow_100hz": lambda: sets.slow_100hz(["panda", "ur5e"], list(sets.CASES), measure)}
    rows = [row for name in args.sets.split(",") for row in runs[name]()]
    (RESULTS / "cutoff_guard.json").write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    (RESULTS / "cutoff_guard.md").write_text(f"Made by `python benchmarks/cutoff_guard.py --sets {args.sets}` "
                                             "(held-out relative error against the recorded torque).\n\n"
                                             + table(rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
