"""The simulated KUKA KR5 of Pennese et al. 2021 (Table I): its DH table, a truth and a motion."""

from __future__ import annotations

import numpy as np

from dynid_ros.robot.parameters import link_parameters

from support.robots import DATA

KR5 = DATA / "kr5_dh.yaml"
T0 = 1_700_000_000.0  # absolute bag stamps


def kr5_truth(layout, rng: np.random.Generator) -> np.ndarray:
    """Plausible KR5 links (about 28 kg in all): masses, CoM offsets, rotated box-like inertias."""
    truth = np.zeros(layout.n_parameters)
    for k, mass in enumerate([8.0, 10.0, 5.0, 3.0, 1.5, 0.5]):
        half = rng.uniform(0.04, 0.12, 3)
        principal = mass * (np.sum(half**2) - half**2) / 5.0
        rotation = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        truth[layout.link_slice(k)] = link_parameters(mass, rng.uniform(-0.08, 0.08, 3),
                                                      rotation @ np.diag(principal) @ rotation.T)
    return truth


def motion(t: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sums of three sines per joint (Pennese et al. 2021 section IV-B), analytic derivatives."""
    amp, freq = rng.uniform(0.3, 0.8, (3, 6)), 2 * np.pi * rng.uniform(0.1, 0.4, (3, 6))
    arg = freq[None] * t[:, None, None] + rng.uniform(0, 2 * np.pi, (3, 6))[None]
    return (amp * np.sin(arg)).sum(1), (amp * freq * np.cos(arg)).sum(1), (-amp * freq**2 * np.sin(arg)).sum(1)
