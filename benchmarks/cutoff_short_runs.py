"""Benchmark: ``cutoff_hz: auto`` against the bandwidth rule (the default) on short runs, where the truth is known.

Runs every case of :mod:`dynid_ros.studies.robustness` on the embedded Panda and UR5e with one period of the shipped
excitation per run (about 11 s: what ``test/studies/test_robustness.py`` runs), identified with each cutoff, and
records per case: the cutoff used, the held-out error on the other shipped excitation against the recorded torque,
that of the true parameters on the same processed samples, and their ratio (the robustness criterion, <= 1.1). On
such a run the leading window is the whole run, and each of auto's four time blocks (Roberts et al. 2017) is a
quarter of one period: the fit of three quarters predicts a part of the motion it has not seen.
``benchmarks/default_vs_ols.py`` and ``benchmarks/cutoff_guard.py`` have the runs of two periods.

Run: ``python benchmarks/cutoff_short_runs.py [--robots panda,ur5e] [--cases ...]``; writes
``benchmarks/results/cutoff_short_runs.json`` and the table ``cutoff_short_runs.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynid_ros.identification.options import IdentificationOptions  # noqa: E402
from dynid_ros.studies.robustness import CASES, run_case  # noqa: E402

CUTOFFS = ("bandwidth", "auto")
"""The processing ``cutoff_hz`` compared (the default first)."""
RESULTS = ROOT / "benchmarks" / "results"
COMMAND = "python benchmarks/cutoff_short_runs.py"


def measure(robot: str, case: str) -> dict:
    """One case with each cutoff: the cutoff used, held-out errors of the estimate and of the truth, their ratio."""
    row = {"robot": robot, "case": case}
    for cutoff in CUTOFFS:
        found = run_case(case, robot=robot, cycles=1, options=IdentificationOptions(processing={"cutoff_hz": cutoff}))
        row[cutoff] = {"cutoff_hz": found["cutoff_hz"], "held_out": found["relative_error_validation"],
                       "truth_held_out": found["noise_floor"], "ratio": found["ratio_to_noise_floor"]}
    return row


def table(rows: list[dict]) -> str:
    """The markdown table of the results, and the mean held-out error per cutoff."""
    head = " | ".join(f"{c}: cutoff [Hz] | held out | truth | ratio" for c in CUTOFFS)
    lines = [f"| robot | case | {head} |", "|" + "---|" * (2 + 4 * len(CUTOFFS))]
    for row in rows:
        cells = [row["robot"], row["case"]]
        for c in CUTOFFS:
            d = row[c]
            cells += [f"{d['cutoff_hz']:.3g}", f"{100 * d['held_out']:.3f} %", f"{100 * d['truth_held_out']:.3f} %",
                      f"{d['ratio']:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    means = ", ".join(f"{c} {100 * sum(r[c]['held_out'] for r in rows) / len(rows):.3f} %" for c in CUTOFFS)
    wins = sum(r["auto"]["held_out"] < r["bandwidth"]["held_out"] for r in rows)
    return "\n".join(lines) + f"\n\nMean held out: {means}; auto lower on {wins} of {len(rows)}.\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", default="panda,ur5e")
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    rows = []
    for robot in args.robots.split(","):
        for case in args.cases.split(","):
            rows.append(measure(robot, case))
            print(" ".join(f"{robot} {case} {c} {row[c]['cutoff_hz']:.3g} Hz held {100 * row[c]['held_out']:.3f} % "
                           f"(truth {100 * row[c]['truth_held_out']:.3f} %)" for c in CUTOFFS for row in rows[-1:]),
                  flush=True)
    (RESULTS / "cutoff_short_runs.json").write_text(json.dumps({"cycles": 1, "rows": rows}, indent=2) + "\n")
    (RESULTS / "cutoff_short_runs.md").write_text(f"Made by `{COMMAND}` (one period per run; held-out relative "
                                                  "error against the recorded torque).\n\n" + table(rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
