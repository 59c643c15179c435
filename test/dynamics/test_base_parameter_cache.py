"""The on-disk cache of base-parameter maps: a second computation reads the entry, another layout or kinematics is
another entry, an unreadable entry is recomputed, an empty DYNID_CACHE_DIR disables it; the key and the
directory."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dynid_ros.dynamics import base_parameter_cache
from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.robot.model import load_model

from support.robots import DATA


def test_base_parameters_are_computed_once_per_kinematics_and_layout(tmp_path, monkeypatch):
    """The second call reads the on-disk cache (the same map, not computed again); another layout or a moved joint
    is another entry; an unreadable entry is recomputed; an empty DYNID_CACHE_DIR disables the cache."""
    from dynid_ros.dynamics import base_parameter_cache
    from dynid_ros.dynamics import base_parameters as base_parameters_module

    monkeypatch.setenv(base_parameter_cache.CACHE_VARIABLE, str(tmp_path))
    model = load_model(dh=DATA / "kr5_dh.yaml")
    layout = model.layout_for(("viscous", "coulomb"), armature=True)
    first = compute_base_parameters(model, layout)
    entries = list(tmp_path.glob("base_*.json"))
    assert len(entries) == 1
    with monkeypatch.context() as patch:  # a hit reads the entry: the map is not computed again
        patch.setattr(base_parameters_module, "base_parameters_from_regressor",
                      lambda *_: pytest.fail("computed again despite the cache entry"))
        second = compute_base_parameters(model, layout)
    np.testing.assert_array_equal(second.K, first.K)
    assert second.expressions == first.expressions and list(second.independent) == list(first.independent)
    compute_base_parameters(model, model.layout_for(("viscous",), armature=False))
    model.kinematics[2].translation = model.kinematics[2].translation + 0.01
    compute_base_parameters(model, layout)
    assert len(list(tmp_path.glob("base_*.json"))) == 3
    entries[0].write_text("{not json")
    np.testing.assert_array_equal(compute_base_parameters(load_model(dh=DATA / "kr5_dh.yaml"), layout).K, first.K)
    monkeypatch.setenv(base_parameter_cache.CACHE_VARIABLE, "")
    assert base_parameter_cache.cache_directory() is None
    compute_base_parameters(load_model(dh=DATA / "kr5_dh.yaml"), model.layout_for(("offset",), armature=False))
    assert len(list(tmp_path.glob("base_*.json"))) == 3


def test_the_key_follows_the_kinematics_and_the_layout_never_the_inertias():
    model = load_model(dh=DATA / "kr5_dh.yaml")
    layout = model.layout_for(("viscous",), armature=True)
    key = base_parameter_cache.cache_key(model, layout, {"samples": 10})
    assert len(key) == 64 and key == base_parameter_cache.cache_key(model, layout, {"samples": 10})
    assert base_parameter_cache.cache_key(model, layout, {"samples": 11}) != key
    assert base_parameter_cache.cache_key(model, model.layout_for(("viscous",), armature=False), {"samples": 10}) \
        != key
    heavier = load_model(dh=DATA / "kr5_dh.yaml")
    for k in range(1, heavier.pin_model.njoints):
        heavier.pin_model.inertias[k].mass *= 2  # the inertias do not enter the base-parameter map
    assert base_parameter_cache.cache_key(heavier, layout, {"samples": 10}) == key
    limited = load_model(dh=DATA / "kr5_dh.yaml")
    limited.position_limits = np.tile([-1.0, 1.0], (6, 1))  # the random states are drawn within them
    assert base_parameter_cache.cache_key(limited, layout, {"samples": 10}) != key
    tilted = load_model(dh=DATA / "kr5_dh.yaml")
    tilted.kinematics[1].axis = -tilted.kinematics[1].axis
    assert base_parameter_cache.cache_key(tilted, layout, {"samples": 10}) != key


def test_the_directory_is_the_variable_then_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv(base_parameter_cache.CACHE_VARIABLE, str(tmp_path / "explicit"))
    assert base_parameter_cache.cache_directory() == tmp_path / "explicit"
    monkeypatch.setenv(base_parameter_cache.CACHE_VARIABLE, "  ")
    assert base_parameter_cache.cache_directory() is None
    monkeypatch.delenv(base_parameter_cache.CACHE_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert base_parameter_cache.cache_directory() == tmp_path / "xdg" / "dynid_ros"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert base_parameter_cache.cache_directory() == tmp_path / "home" / ".cache" / "dynid_ros"


def test_entries_round_trip_and_other_versions_are_not_found(tmp_path, monkeypatch):
    monkeypatch.setenv(base_parameter_cache.CACHE_VARIABLE, str(tmp_path / "cache"))
    assert base_parameter_cache.load("k1") is None
    base_parameter_cache.store("k1", np.array([0, 2]), np.array([1]), np.array([[0.5], [1.5]]), ["m1 + m2", "mx2"])
    entry = base_parameter_cache.load("k1")
    assert entry == {"version": base_parameter_cache.FORMAT_VERSION, "independent": [0, 2], "dependent": [1],
                     "K_d": [[0.5], [1.5]], "expressions": ["m1 + m2", "mx2"]}
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["base_k1.json"]  # no temporary left
    (tmp_path / "cache" / "base_k2.json").write_text(json.dumps({**entry, "version": 0}))
    assert base_parameter_cache.load("k2") is None
    (tmp_path / "cache" / "base_k3.json").write_text("[1, 2]")
    assert base_parameter_cache.load("k3") is None


def test_an_unwritable_directory_only_costs_the_computation(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(base_parameter_cache.CACHE_VARIABLE, str(blocker / "cache"))
    base_parameter_cache.store("k", np.array([0]), np.array([], dtype=int), np.zeros((1, 0)), ["m1"])  # no raise
    assert base_parameter_cache.load("k") is None and blocker.read_text() == "not a directory"
    model = load_model(dh=DATA / "kr5_dh.yaml")
    assert compute_base_parameters(model, model.layout_for(("viscous",), armature=False)).n_base > 0
