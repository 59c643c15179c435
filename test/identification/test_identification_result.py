"""What an identification found: the identified link masses are the parameter vector's, by link name in the
layout's order."""

from __future__ import annotations

import numpy as np

from dynid_ros.identification.linear_identification import identify_linear
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.identification.timing import StageTimer

from support.arm_runs import RICH, arm_run


def test_link_masses_are_the_parameter_vectors(tmp_path):
    run = arm_run(tmp_path, amplitude=RICH)
    result = identify_linear(run.series, IdentificationOptions(method="ols"), run.model, StageTimer())
    masses = result.link_masses()
    assert list(masses) == ["l1", "l2", "l3"]
    assert masses == {link: result.delta[10 * k] for k, link in enumerate(result.layout.links)}
    assert all(isinstance(m, float) for m in masses.values())
    assert result.recording_start_s is None  # identify_linear does not know the recording (identify sets it)
    np.testing.assert_allclose(result.fit.residual, result.fit.tau - result.fit.tau_hat)
