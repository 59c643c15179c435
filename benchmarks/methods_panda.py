"""Benchmark: the estimators and friction models on the real Panda run, through the command line.

Each row is ``dynid identify --urdf urdf/panda.urdf --bag B --end S --config config/panda.yaml [options]`` on the
first 70 % of the run of Gaz et al. 2019, then ``dynid validate --start S`` on the rest (held-out relative error
against the raw torque, Sousa & Cortesão 2014 eq. 84). Rows: the convex default (FBPE), penalty-based retrieval
(``--method pbpr``, Gaz et al. 2019 Alg. 1) with and without the prior stage, and the friction models (none,
viscous + Coulomb + offset, sigmoid of Gaz et al. 2019 eq. 25 alone and with the others). Reported: held-out error
(total and per joint), link masses, identification time, and the fitted sigmoid parameters.

Run: ``DYNID_PANDA_DATA=<dir> python benchmarks/methods_panda.py``; writes ``benchmarks/results/methods_panda.json``.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))

from dynid_ros.cli.main import main as dynid  # noqa: E402

from support.panda_data import panda_series, write_panda_bag  # noqa: E402

SPLIT = 0.7
"""Fraction of the run used for identification; the rest is held out."""

ROWS = {
    "fbpe (default)": [],
    "pbpr": ["--method", "pbpr"],
    "pbpr --prior none": ["--method", "pbpr", "--prior", "none"],
    "friction none": ["--friction", "none"],
    "friction viscous,coulomb,offset": ["--friction", "viscous,coulomb,offset"],
    "friction sigmoid": ["--friction", "sigmoid"],
    "friction viscous,coulomb,offset,sigmoid": ["--friction", "viscous,coulomb,offset,sigmoid"],
}


def run_row(name: str, extra: list[str], bag: Path, split_s: float, work: Path) -> dict:
    out, report = work / name.replace(" ", "_").replace(",", "_"), work / f"{name}.json"
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = dynid(["identify", "--urdf", str(ROOT / "urdf" / "panda.urdf"), "--bag", str(bag), "--end",
                      f"{split_s}", "--config", str(ROOT / "config" / "panda.yaml"), *extra, "--out", str(out)])
    seconds = time.perf_counter() - start
    if code != 0:
        return {"row": name, "error": f"identify exit {code}"}
    with contextlib.redirect_stdout(io.StringIO()):
        dynid(["validate", "--result", str(out), "--bag", str(bag), "--start", f"{split_s}", "--report", str(report)])
    held = json.loads(report.read_text())
    identified = json.loads((out / "report.json").read_text())
    parameters = yaml.safe_load((out / "parameters.yaml").read_text())
    sigmoid = {j: v["sigmoid"] for j, v in parameters["joints"].items() if "sigmoid" in v}
    return {"row": name, "held_out_relative_error": held["relative_error"],
            "held_out_relative_error_per_joint": held["relative_error_per_joint"],
            "feasible": identified["feasible"], "link_masses": identified["link_masses"],
            "total_mass": identified["total_mass"], "identify_seconds": round(seconds, 2),
            **({"sigmoid": sigmoid} if sigmoid else {})}


def main() -> int:
    import logging

    logging.disable(logging.WARNING)
    series = panda_series()
    split_s = SPLIT * float(series.t[-1] - series.t[0])
    rows = []
    with tempfile.TemporaryDirectory(prefix="dynid_methods_") as tmp:
        bag = write_panda_bag(Path(tmp) / "panda")
        for name, extra in ROWS.items():
            row = run_row(name, extra, bag, split_s, Path(tmp))
            rows.append(row)
            if "error" in row:
                print(f"{name:42s} {row['error']}")
                continue
            print(f"{name:42s} held-out {100 * row['held_out_relative_error']:.2f} % (per joint "
                  + " ".join(f"{100 * e:.1f}" for e in row["held_out_relative_error_per_joint"])
                  + f"), links {row['total_mass']:.2f} kg, feasible {row['feasible']}, {row['identify_seconds']:.1f} s")
    out = ROOT / "benchmarks" / "results" / "methods_panda.json"
    out.write_text(json.dumps({"split": SPLIT, "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
