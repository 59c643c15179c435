"""``dynid drift``: one robot's parameters across runs, and what moved beyond its uncertainty
(:mod:`dynid_ros.fleet.drift`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dynid_ros.data.output_paths import DRIFT
from dynid_ros.fleet.drift import DEFAULT_K, drift, drift_dict
from dynid_ros.fleet.drift_plots import plot_drift
from dynid_ros.reporting.result_directory import atomic_directory

NAME = "drift"
HELP = "compare identification results of one robot over time and flag parameters that moved"
DRIFT_JSON = "drift.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid drift`` arguments."""
    parser.add_argument("--results", nargs="+", required=True, metavar="DIR",
                        help="result directories of dynid identify, or batch directories of dynid batch, of the "
                             "same robot (put in time order)")
    parser.add_argument("--out", required=True, help="output directory: new or an earlier drift report; drift.json "
                        "and one PNG per joint and per link")
    parser.add_argument("--k", type=float, default=DEFAULT_K,
                        help=f"flag a quantity that moved more than k standard deviations (default {DEFAULT_K:g})")


def run(args: argparse.Namespace) -> int:
    """Compare the results, write ``drift.json`` and the plots to ``--out``, print the flags; the exit code."""
    runs, found = drift(args.results, args.k)
    content = drift_dict(runs, found, args.k)

    def fill(tmp: Path) -> None:
        (tmp / DRIFT_JSON).write_text(json.dumps(content, indent=2) + "\n")
        plot_drift(runs, found, args.k, tmp)

    atomic_directory(Path(args.out), fill, DRIFT, [r.result for r in runs])
    print(f"{len(runs)} runs from {content['runs'][0]['time_iso']} to {content['runs'][-1]['time_iso']}; "
          f"{len(content['flags'])} of {len(found)} quantities moved beyond {args.k:g} standard deviations")
    for sentence in content["flags"]:
        print(f"  {sentence}")
    print(f"wrote {args.out}/")
    return 0
