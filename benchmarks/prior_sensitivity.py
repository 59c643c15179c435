"""Measurements behind the MAP second stage of FBPE (dynid_ros.estimation.estimators): real Panda, held out.

Identifies on the first 70 % of the Panda run of Gaz et al. 2019 with the default options (no bounds), predicts
the last 30 % against the raw torque, and prints held-out error, masses vs the URDF and the residual
inflation for: OLS, WLS, FBPE without prior, FBPE-MAP with the default CAD tolerances, with tolerances
halved and doubled, and with white residuals assumed (``tau_int = 1``). Then checks the honesty of the
reported standard deviations: OLS on 3 disjoint time blocks of the whole run, spread of the block
estimates vs the reported std (white and autocorrelation-corrected).


Run: ``DYNID_PANDA_DATA=/path/to/panda_gaz2019 python benchmarks/prior_sensitivity.py``; writes
``benchmarks/results/prior_sensitivity.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))

from dynid_ros.estimation import estimators  # noqa: E402
from dynid_ros.estimation.prior import link_realism  # noqa: E402
from dynid_ros.identification import identify as identification  # noqa: E402
from dynid_ros.identification.identify import identify  # noqa: E402
from dynid_ros.identification.options import IdentificationOptions  # noqa: E402
from dynid_ros.reporting.validate import evaluate_parameters, processed_window  # noqa: E402
from dynid_ros.robot.model import load_model, nominal_parameters  # noqa: E402
from dynid_ros.robot.urdf_writer import attached_parameters  # noqa: E402

from support.panda_data import JOINTS, panda_series  # noqa: E402

URDF = ROOT / "urdf" / "panda.urdf"
SPLIT_S = 0.7 * 20.9991


def run(name: str, **options) -> dict:
    series = panda_series()
    series.t = series.t - series.t[0]
    result = identify(series, IdentificationOptions(joints=list(JOINTS), end=SPLIT_S, **options), urdf=URDF)
    held = processed_window(result.model, series, IdentificationOptions(joints=list(JOINTS), start=SPLIT_S),
                            result.processing)
    error = evaluate_parameters(result.model, result.layout, result.delta, held).relative_error
    attached = attached_parameters(result.model, result.layout)
    realism = link_realism(result.delta, result.nominal, result.layout, attached)
    ratios = [round(r["mass_ratio"], 3) for r in realism]
    row = {"name": name, "held_out_percent": round(100 * error, 3), "feasible": result.feasible,
           "mass_ratio_vs_urdf": ratios, "total_mass": round(float(sum(r["mass"] for r in realism)
                                                                    + attached[result.layout.indices("m")].sum()), 2),
           "inflation": round(result.residual_inflation, 1)}
    print(f"{name:32s} held-out {row['held_out_percent']:.3f} %  total {row['total_mass']:6.2f} kg  "
          f"mass/URDF {ratios}  tau_int {row['inflation']}")
    return row


def block_honesty(n_blocks: int = 3) -> dict:
    """OLS on disjoint time blocks: spread of the block estimates in units of their reported std."""
    series = panda_series()
    series.t = series.t - series.t[0]
    model = load_model(urdf=URDF, joints=list(JOINTS))
    layout = model.layout_for()
    from dynid_ros.dynamics.base_parameters import compute_base_parameters
    from dynid_ros.dynamics.regressor import regressor

    base = compute_base_parameters(model, layout)
    edges = np.linspace(0.0, series.t[-1], n_blocks + 1)
    fits = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        data = processed_window(model, series, IdentificationOptions(start=lo, end=hi), {})
        w_b = base.project(regressor(model, layout, data.q, data.dq, data.ddq))
        fits.append(estimators.ols(w_b, data.tau.reshape(-1), 7))
    beta = np.array([f.beta for f in fits])
    std = np.array([f.std for f in fits])
    inflation = np.array([f.inflation for f in fits])
    spread = beta.std(axis=0, ddof=1)
    corrected = np.median(std, axis=0)
    white = np.median(std / np.sqrt(inflation)[:, None], axis=0)
    out = {"blocks": n_blocks, "median_tau_int": round(float(np.median(inflation)), 1),
           "median_spread_over_white_std": round(float(np.median(spread / white)), 2),
           "median_spread_over_corrected_std": round(float(np.median(spread / corrected)), 2)}
    print(f"block honesty: {out}")
    return out


def main() -> None:
    rows = [run("ols", method="ols"), run("wls", method="wls"), run("fbpe, no prior", prior="none"),
            run("fbpe-MAP (default tolerances)")]
    rows.append(run("fbpe-MAP, tolerances x0.5", prior_tolerance={"mass": 0.125, "com": 0.015, "inertia": 0.25}))
    rows.append(run("fbpe-MAP, tolerances x2", prior_tolerance={"mass": 0.5, "com": 0.06, "inertia": 1.0}))
    original = identification.estimators.residual_inflation
    try:  # ablation: white residuals assumed
        estimators.residual_inflation = lambda *args, **kwargs: 1.0
        rows.append(run("fbpe-MAP, white residuals"))
    finally:
        estimators.residual_inflation = original
    honesty = block_honesty()
    nominal = nominal_parameters(load_model(urdf=URDF, joints=list(JOINTS)), load_model(
        urdf=URDF, joints=list(JOINTS)).layout_for())
    out = {"runs": rows, "block_honesty": honesty, "nominal_total_with_hand": round(float(nominal[0:70:10].sum()), 3)}
    path = ROOT / "benchmarks" / "results" / "prior_sensitivity.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
