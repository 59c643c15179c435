"""Benchmark: torque signs from |tau| on a simulated KUKA KR5 in the setup of Pennese et al. 2021 section IV-B.

13.33 s of sums of sines per joint, rigid-body torques of plausible KR5 links (``test/files/kr5_dh.yaml``,
Table I; 36 base parameters), ``|tau + noise|`` (noise std a fraction of each joint's peak), beam 5. Per seed:
segments, how many signs are right, ``s0``, feasible fits solved and seconds, and the base-parameter error and the
relative torque error on a new motion of the |tau| identification and of the identification from the signed
noisy torque.

Run: ``python benchmarks/bench_torque_signs.py [--seeds 0 1 2] [--noise 0.03] [--beam 5] [--duration 13.33]``;
writes ``benchmarks/results/bench_torque_signs.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynid_ros.data.joint_states import JointStateSeries  # noqa: E402
from dynid_ros.data.signal_processing import process  # noqa: E402
from dynid_ros.dynamics.base_parameters import compute_base_parameters  # noqa: E402
from dynid_ros.dynamics.regressor import torques  # noqa: E402
from dynid_ros.estimation.torque_signs import SignSearchOptions  # noqa: E402
from dynid_ros.identification.identify import identify  # noqa: E402
from dynid_ros.identification.options import IdentificationOptions  # noqa: E402
from dynid_ros.robot.model import load_model  # noqa: E402
from dynid_ros.robot.parameters import link_parameters  # noqa: E402
from dynid_ros.variants.abs_effort import identify_abs_effort  # noqa: E402


def run(seed: int, noise: float, beam: int, duration: float) -> dict:
    model = load_model(dh=ROOT / "test" / "data" / "kr5_dh.yaml")
    layout = model.layout_for((), False)
    rng = np.random.default_rng(seed)
    truth = np.zeros(layout.n_parameters)
    for k, mass in enumerate([8.0, 10.0, 5.0, 3.0, 1.5, 0.5]):
        half = rng.uniform(0.04, 0.12, 3)
        rotation = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        truth[layout.link_slice(k)] = link_parameters(mass, rng.uniform(-0.08, 0.08, 3),
                                                      rotation @ np.diag(mass * (np.sum(half**2) - half**2) / 5)
                                                      @ rotation.T)
    t = np.arange(0.0, duration, 1e-3)
    amp, freq = rng.uniform(0.3, 0.8, (3, 6)), 2 * np.pi * rng.uniform(0.1, 0.4, (3, 6))
    arg = freq[None] * t[:, None, None] + rng.uniform(0, 2 * np.pi, (3, 6))[None]
    q, dq, ddq = (amp * np.sin(arg)).sum(1), (amp * freq * np.cos(arg)).sum(1), (-amp * freq**2 * np.sin(arg)).sum(1)
    tau = torques(model, layout, truth, q, dq, ddq)
    measured = tau + rng.normal(size=tau.shape) * noise * np.abs(tau).max(axis=0)
    options = dict(friction=(), armature=False, prior="none")
    beta_true = compute_base_parameters(model, layout).K @ truth
    start = time.perf_counter()
    result, search = identify_abs_effort(JointStateSeries(list(model.joints), t, q, dq, np.abs(measured)),
                                         IdentificationOptions(**options), SignSearchOptions(beam=beam), model=model)
    seconds = time.perf_counter() - start
    signed = identify(JointStateSeries(list(model.joints), t, q, dq, measured), IdentificationOptions(**options),
                      model=model)
    true_tau = process(JointStateSeries(list(model.joints), t, q, dq, tau)).tau
    right = sum(bool(np.all(np.sign(true_tau[s.start:s.stop, s.joint]) == sign))
                for s, sign in zip(search.segments, search.signs))
    error = {name: float(np.linalg.norm(beta - beta_true) / np.linalg.norm(beta_true))
             for name, beta in (("abs", result.beta), ("signed", signed.beta))}
    new = np.random.default_rng(seed + 100)
    amp, freq = new.uniform(0.3, 0.8, (3, 6)), 2 * np.pi * new.uniform(0.1, 0.4, (3, 6))
    arg = freq[None] * t[:, None, None] + new.uniform(0, 2 * np.pi, (3, 6))[None]
    motion = ((amp * np.sin(arg)).sum(1), (amp * freq * np.cos(arg)).sum(1), (-amp * freq**2 * np.sin(arg)).sum(1))
    held_out = torques(model, layout, truth, *motion)
    for name, delta in (("abs", result.delta), ("signed", signed.delta)):
        error[f"held_out_{name}"] = float(np.linalg.norm(torques(model, layout, delta, *motion) - held_out)
                                          / np.linalg.norm(held_out))
    return {"seed": seed, "segments": len(search.segments), "signs_right": right, "s0": search.initial,
            "feasible_fits": search.n_problems, "search_s": round(search.seconds, 2), "total_s": round(seconds, 2),
            "beta_error_abs": error["abs"], "beta_error_signed": error["signed"],
            "held_out_torque_error_abs": error["held_out_abs"],
            "held_out_torque_error_signed": error["held_out_signed"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--noise", type=float, default=0.03)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--duration", type=float, default=13.33)
    args = parser.parse_args()
    rows = []
    for seed in args.seeds:
        rows.append(run(seed, args.noise, args.beam, args.duration))
        print(json.dumps(rows[-1]))
    out = ROOT / "benchmarks" / "results" / "bench_torque_signs.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"noise": args.noise, "beam": args.beam, "duration_s": args.duration, "runs": rows,
                               "machine": platform.platform()}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
