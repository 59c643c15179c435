"""The report's plots and tables: each PNG written at its size and showing what it says (colours of the
flagged joints and links), the distances of identified and nominal parameters from a truth against hand
computations, the identifiable-alone test, the markdown table, the envelope a fit plot draws."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.reporting.plots import (
    PLOT_DPI,
    envelope,
    identifiable_parameters,
    markdown_table,
    parameter_distances,
    plot_coverage,
    plot_joint_fit,
    plot_link_masses,
    plot_parameters,
    plot_residual_structure,
    plot_torques,
)
from dynid_ros.robot.parameters import ParameterLayout, link_parameters

RED, GRAY, BLUE = (214, 39, 40), (127, 127, 127), (31, 119, 180)
"""matplotlib's tab:red, tab:gray and tab:blue."""


def _image(path) -> np.ndarray:
    """The PNG as (rows, columns, RGB) integers, read by matplotlib's PNG reader."""
    from matplotlib.image import imread

    with path.open("rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    return np.round(255 * imread(path)[..., :3]).astype(int)


def _pixels(image: np.ndarray, colour: tuple[int, int, int], tolerance: int = 6) -> int:
    """How many pixels have (nearly) this colour."""
    return int(np.sum(np.all(np.abs(image - np.array(colour)) <= tolerance, axis=-1)))


def _series(n: int = 3, samples: int = 400):
    t = np.linspace(10.0, 14.0, samples)
    tau = np.column_stack([np.sin((j + 1) * t) for j in range(n)])
    return t, tau, 0.9 * tau


def test_torque_plot_has_one_row_per_joint(tmp_path):
    t, tau, tau_hat = _series(3)
    path = plot_torques(t, tau, tau_hat, ["a", "b", "c"], tmp_path / "torques.png")
    image = _image(path)
    assert image.shape[:2] == (round(110 * (1.6 * 3 + 1.0)), 110 * 10)  # figsize x dpi
    assert _pixels(image, BLUE) > 500  # the measured torque drawn


def test_joint_fit_plot_size_follows_the_joint_count(tmp_path):
    for n in (1, 4):
        t, tau, tau_hat = _series(n, 20_000)  # long: drawn as an envelope
        path = plot_joint_fit(t, tau, tau_hat, [f"j{k}" for k in range(n)], ["N m"] * n, tmp_path / f"{n}.png",
                              "fit")
        image = _image(path)
        assert image.shape[:2] == (round(PLOT_DPI * (1.9 * n + 1.2)), 13 * PLOT_DPI)
        assert _pixels(image, BLUE) > 30  # the measured torque drawn


def test_residual_structure_plot_colours_only_the_flagged_joint_red(tmp_path):
    rng = np.random.default_rng(0)
    q, dq = rng.uniform(-1, 1, (3000, 2)), rng.uniform(-1, 1, (3000, 2))
    residual = np.column_stack([0.5 * q[:, 0], 0.01 * rng.normal(size=3000)])
    units = [("rad", "rad/s", "N m")] * 2
    flagged = _image(plot_residual_structure(q, dq, residual, ["a", "b"], units, [True, False], tmp_path / "1.png"))
    neither = _image(plot_residual_structure(q, dq, residual, ["a", "b"], units, [False, False], tmp_path / "2.png"))
    assert _pixels(flagged, RED, 20) > 200 and _pixels(neither, RED, 20) == 0
    assert flagged.shape[:2] == (round(PLOT_DPI * (1.8 * 2 + 1.0)), 11 * PLOT_DPI)


def test_link_mass_plot_marks_a_ratio_outside_the_band_red(tmp_path):
    links = ["l1", "l2", "l3"]
    prior = np.array([2.0, 1.5, 0.8])
    inside = _image(plot_link_masses(links, 1.1 * prior, prior, tmp_path / "in.png", (0.5, 2.0)))
    outside = _image(plot_link_masses(links, np.array([2.2, 1.5, 3.0]), prior, tmp_path / "out.png", (0.5, 2.0)))
    assert _pixels(inside, RED) == 0 and _pixels(outside, RED) > 500
    assert _pixels(inside, GRAY) > 500  # the nominal bars
    zero_prior = plot_link_masses(links, prior, np.array([0.0, 1.5, 0.8]), tmp_path / "zero.png", (0.5, 2.0))
    assert zero_prior.is_file()  # a link without a nominal mass has no ratio: drawn, no error


def test_coverage_plot_with_and_without_limits(tmp_path):
    q = np.column_stack([np.linspace(-1, 1, 100), np.linspace(0, 0.5, 100)])
    limits = np.array([[-2.0, 2.0], [-np.inf, np.inf]])  # the second joint: no limits in the description
    path = plot_coverage(["a", "b"], q, np.gradient(q, axis=0), limits, np.array([2.0, np.inf]), tmp_path / "c.png")
    assert _pixels(_image(path), BLUE) > 100


def test_parameter_plot_with_and_without_a_truth(tmp_path):
    layout = ParameterLayout(("j1", "j2"), ("l1", "l2"), ("viscous",), False)
    nominal = np.r_[link_parameters(2.0, [0.1, 0, 0], 0.01 * np.eye(3)),
                    link_parameters(1.0, [0, 0.2, 0], 0.01 * np.eye(3)), 0.1, 0.1]
    assert plot_parameters(layout, 1.1 * nominal, nominal, tmp_path / "p.png").is_file()
    assert _pixels(_image(plot_parameters(layout, 1.1 * nominal, nominal, tmp_path / "t.png", truth=nominal)),
                   (44, 160, 44)) > 100  # tab:green: the truth's bars


def test_parameter_distances_against_hand_computations():
    """Two links; the truth, an estimate with each link 10 % heavier (same CoM and inertia shape) and the
    nominal 30 % lighter; K makes the link masses identifiable one by one."""
    layout = ParameterLayout(("j1", "j2"), ("l1", "l2"), ("viscous",), False)
    truth = np.r_[link_parameters(2.0, [0.1, 0.0, 0.0], np.diag([0.01, 0.02, 0.02])),
                  link_parameters(1.0, [0.0, 0.2, 0.0], np.diag([0.01, 0.01, 0.005])), 0.3, 0.2]
    scale = np.r_[np.ones(20), 0.0, 0.0]
    identified = truth * (1 + 0.1 * scale) + np.r_[np.zeros(20), 0.03, -0.04]
    nominal = truth * (1 - 0.3 * scale)
    base_k = np.eye(layout.n_parameters)[[0, 10, 20, 21]]  # the two masses and the two friction terms
    rows = {r["quantity"].split(" (")[0]: r for r in parameter_distances(layout, truth, identified, nominal, base_k)}
    assert rows["base parameters"]["identified"] == pytest.approx(
        np.linalg.norm([0.2, 0.1, 0.03, -0.04]) / np.linalg.norm([2.0, 1.0, 0.3, 0.2]))
    assert rows["link masses"]["identified"] == pytest.approx(0.1) and rows["link masses"]["identifiable"]
    assert rows["link masses"]["nominal"] == pytest.approx(0.3) and rows["link masses"]["closer"] == "yes"
    first = rows["first moments m c"]
    assert not first["identifiable"] and "only in combinations, from the prior" in first["quantity"]
    assert first["identified"] == pytest.approx(0.1)
    assert rows["viscous friction"]["identified"] == pytest.approx(np.sqrt((0.03 ** 2 + 0.04 ** 2) / 2))
    assert rows["viscous friction"]["nominal"] == 0.0 and rows["viscous friction"]["closer"] == "no"
    assert rows["CoM positions"]["identified"] == pytest.approx(0.0, abs=1e-15)  # same CoM: m c / m
    assert rows["inertias about the CoM"]["identified"] == pytest.approx(0.1)
    without_k = parameter_distances(layout, truth, identified, nominal)
    assert "base parameters (rel. error)" not in [r["quantity"] for r in without_k]
    assert all(r["identifiable"] for r in without_k if "derived" not in r["quantity"])


def test_identifiable_parameters_are_those_in_the_row_space_of_k():
    k = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0]])  # p0 alone; p1 and p2 only as their sum
    np.testing.assert_array_equal(identifiable_parameters(k), [True, False, False, False])
    np.testing.assert_array_equal(identifiable_parameters(np.eye(3)), [True, True, True])


def test_markdown_table():
    text = markdown_table([{"a": 1.23456789, "b": "x"}, {"a": 2}], ["a", "b"])
    assert text.splitlines() == ["| a | b |", "|---|---|", "| 1.235 | x |", "| 2 |  |"]


def test_plot_envelope_keeps_every_peak_in_time_order():
    """The fit plot draws each series reduced to its min and max per pixel column: every extreme of the full
    series is drawn, in time order, and short series are drawn whole."""
    rng = np.random.default_rng(3)
    t = np.linspace(0.0, 60.0, 60_001)
    y = np.sin(2 * np.pi * 0.3 * t) + 0.05 * rng.normal(size=t.size)
    y[12_345] = 4.0  # a single-sample spike must survive
    times, values = envelope(t, y, 500)
    assert values.size == 1000 and np.all(np.diff(times) >= 0)
    assert values.max() == 4.0 and values.min() == y.min()
    edges = np.linspace(0, t.size, 501).astype(int)
    bins = [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]
    assert np.allclose(values.reshape(-1, 2).max(axis=1), [y[b].max() for b in bins])
    assert np.allclose(values.reshape(-1, 2).min(axis=1), [y[b].min() for b in bins])
    short_t, short_y = envelope(t[:800], y[:800], 500)
    assert short_y.size == 800
