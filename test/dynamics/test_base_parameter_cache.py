"""The on-disk cache of base-parameter maps: a second computation reads the entry, another layout or kinematics is
another entry, an unreadable entry is recomputed, an empty DYNID_CACHE_DIR disables it; the key and the
directory."""

from __future__ import annotations

import numpy as np
import pytest

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
