"""A tall matrix given chunk by chunk: the estimators' compression of row blocks equals the whole matrix's."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics.row_chunks import RowChunks
from dynid_ros.estimation import estimators

from support.panda_streams import relative


def test_row_chunks_compress_as_the_whole_matrix() -> None:
    """The incremental QR of row blocks (zeroed rows, held-fixed columns) gives the whole matrix's fit."""
    rng = np.random.default_rng(3)
    w = rng.normal(size=(3 * 400, 6))
    w[1::3, 0] = 0.0  # a column that does not act on joint 1
    tau = w @ rng.normal(size=6) + rng.normal(0, 0.1, w.shape[0])
    rows = rng.random(w.shape[0]) > 0.1
    blocks = RowChunks(lambda: (w[a:a + 93] for a in range(0, w.shape[0], 93)), w.shape)
    for fit in (estimators.ols, estimators.wls):
        whole, chunked = fit(w, tau, 3, fixed={2: 0.3}, rows=rows), fit(blocks, tau, 3, fixed={2: 0.3}, rows=rows)
        assert relative(whole.beta, chunked.beta) < 1e-12
        assert chunked.inflation == pytest.approx(whole.inflation, rel=1e-12)
