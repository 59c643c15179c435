"""Held-out OLS error on the real Panda run for several processing choices (defaults of ProcessingOptions).

OLS on the base regressor of the first 70 % of the run (Gaz et al. 2019 data), relative error
||tau_raw - tau_hat|| / ||tau_raw|| on the last 30 % (Sousa & Cortesão 2014 eq. 84, raw recorded torque).
Friction viscous, Coulomb, offset and armature; Panda URDF of example-robot-data, fingers locked.

Run: ``python benchmarks/tune_processing.py``; prints one line per setting and writes
``benchmarks/results/processing.json``.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))

from dynid_ros.data.signal_processing import ProcessingOptions, process  # noqa: E402
from dynid_ros.dynamics.base_parameters import compute_base_parameters  # noqa: E402
from dynid_ros.dynamics.regressor import regressor  # noqa: E402
from dynid_ros.robot.model import load_model  # noqa: E402

from support.panda_data import panda_series  # noqa: E402
from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, example_robot_urdf  # noqa: E402


def held_out_error(options: ProcessingOptions, split: float = 0.7) -> float:
    """Relative error on the last 30 % of an OLS fit on the first 70 % (each window processed alone, with the
    options the fit window used: a cutoff derived from its bandwidth, as ``dynid validate`` does)."""
    series = panda_series()
    model = load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS))
    layout = model.layout_for(("viscous", "coulomb", "offset"), True)
    base = compute_base_parameters(model, layout)
    cut = series.t[0] + split * (series.t[-1] - series.t[0])
    fit = process(series.window(None, cut - series.t[0]), options)
    test = process(series.window(cut - series.t[0], None), fit.options)
    w_fit = base.project(regressor(model, layout, fit.q, fit.dq, fit.ddq))
    beta = np.linalg.lstsq(w_fit, fit.tau.reshape(-1), rcond=None)[0]
    w_test = base.project(regressor(model, layout, test.q, test.dq, test.ddq))
    tau_hat = (w_test @ beta).reshape(test.tau_raw.shape)
    return float(np.linalg.norm(test.tau_raw - tau_hat) / np.linalg.norm(test.tau_raw))


def main() -> int:
    import logging

    logging.disable(logging.WARNING)
    rows = []
    grid = itertools.product((2.0, 3.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0), (100.0, 200.0, None), ("measured",))
    extra = [(6.0, 100.0, "differentiate"), (10.0, 100.0, "differentiate")]
    for cutoff, decimate, source in list(grid) + extra:
        options = ProcessingOptions(cutoff_hz=cutoff, decimate_hz=decimate, velocity_source=source)
        start = time.perf_counter()
        err = held_out_error(options)
        rows.append({"cutoff_hz": cutoff, "decimate_hz": decimate, "velocity_source": source,
                     "held_out_relative_error": round(err, 5), "seconds": round(time.perf_counter() - start, 2)})
        print(json.dumps(rows[-1]))
    default = held_out_error(ProcessingOptions())
    print(f"defaults {ProcessingOptions()}: {100 * default:.3f} %")
    out = ROOT / "benchmarks" / "results" / "processing.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"defaults": str(ProcessingOptions()), "default_error": default, "rows": rows},
                              indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
