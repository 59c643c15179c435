"""A tall matrix given chunk by chunk: the regression matrix of a long recording without holding it whole.

A regressor of N samples of an n-joint arm is ``N n x p`` (at 100 Hz, one hour of a 7-DOF arm with 98 parameters:
2.5 GB). Everything the estimators need from it is a sum over rows: the QR compression of ``[W tau]`` (Sousa &
Cortesão 2014 eq. 64-70), products ``W beta`` (residuals, predictions). :class:`RowChunks` yields the matrix as
consecutive row blocks, computed on demand (e.g. :func:`dynid_ros.dynamics.regressor.regressor_chunks`) or kept
in memory when small; column selection, column scaling and zeroed rows (rows left out of a fit) are applied per
block. A plain array is one block (:meth:`RowChunks.of`), so one code path serves both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator

import numpy as np

BlockSource = Callable[[], Iterator[np.ndarray]]
"""A function returning an iterator over the consecutive row blocks of the whole matrix."""


class RowChunks:
    """A ``rows x columns`` matrix as consecutive row blocks (module docstring)."""

    def __init__(self, source: BlockSource, shape: tuple[int, int], columns: np.ndarray | None = None,
                 scale: np.ndarray | None = None, mask: np.ndarray | None = None, memo: dict | None = None) -> None:
        self._source = source
        self._rows, self._width = int(shape[0]), int(shape[1])
        self._columns = columns
        self._scale = scale
        self._mask = mask
        self.memo = {} if memo is None else memo
        """Results computed from this matrix's source (shared by the matrices derived from it): see :meth:`key`."""

    def key(self, *arrays: np.ndarray | None) -> str:
        """A digest of this matrix's derivation (columns, scale, zeroed rows) and of ``arrays`` (e.g. the torques a
        compression stacks with it): a key of :attr:`memo` (one pass over a long regressor costs seconds)."""
        digest = hashlib.blake2b(digest_size=16)
        for part in (self._columns, self._scale, self._mask, *arrays):
            digest.update(b"-" if part is None else np.ascontiguousarray(part).tobytes())
            digest.update(b"|")
        return digest.hexdigest()

    @classmethod
    def of(cls, array: np.ndarray) -> RowChunks:
        """One block: ``array`` itself."""
        array = np.asarray(array, dtype=float)
        return cls(lambda: iter((array,)), array.shape)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)`` of the matrix, after any column selection."""
        width = self._width if self._columns is None else int(self._columns.size)
        return self._rows, width

    def _derived(self, columns: np.ndarray | None = None, scale: np.ndarray | None = None,
                 mask: np.ndarray | None = None) -> RowChunks:
        return RowChunks(self._source, (self._rows, self._width),
                         self._columns if columns is None else columns,
                         self._scale if scale is None else scale,
                         self._mask if mask is None else mask, self.memo)

    def columns(self, index: np.ndarray | list[int]) -> RowChunks:
        """The columns ``index`` (of this matrix), in that order."""
        index = np.asarray(index, dtype=int).reshape(-1)
        if self._scale is not None:
            return RowChunks(self.blocks_source(), self.shape)._derived(columns=index)
        return self._derived(columns=index if self._columns is None else self._columns[index])

    def scaled(self, scale: np.ndarray) -> RowChunks:
        """Every column multiplied by ``scale`` (per column)."""
        scale = np.asarray(scale, dtype=float).reshape(-1)
        return self._derived(scale=scale if self._scale is None else self._scale * scale)

    def masked(self, rows: np.ndarray) -> RowChunks:
        """The rows where ``rows`` is False set to zero (rows left out of a fit)."""
        rows = np.asarray(rows, dtype=bool).reshape(-1)
        return self._derived(mask=rows if self._mask is None else self._mask & rows)

    def blocks_source(self) -> BlockSource:
        """The blocks of this matrix (with its columns, scale and mask) as a source of a new one."""
        return lambda: (block for _, block in self.chunks())

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        """``(first row, block)`` for every block, in order."""
        first = 0
        for block in self._source():
            if self._columns is not None:
                block = block[:, self._columns]
            if self._scale is not None:
                block = block * self._scale
            if self._mask is not None:
                keep = self._mask[first:first + block.shape[0]]
                if not keep.all():
                    block = np.where(keep[:, None], block, 0.0)
            yield first, block
            first += block.shape[0]

    def __matmul__(self, vector: np.ndarray) -> np.ndarray:
        vector = np.asarray(vector, dtype=float)
        parts = [block @ vector for _, block in self.chunks()]
        return np.concatenate(parts) if parts else np.zeros((0,) + vector.shape[1:])

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        """The whole matrix (only for the paths that need it in memory, e.g. pbpr)."""
        parts = [block for _, block in self.chunks()]
        whole = np.vstack(parts) if parts else np.zeros(self.shape)
        return whole if dtype is None else whole.astype(dtype)


def as_row_chunks(matrix: np.ndarray | RowChunks) -> RowChunks:
    """``matrix`` as :class:`RowChunks` (an array is one block)."""
    return matrix if isinstance(matrix, RowChunks) else RowChunks.of(matrix)


def cached(source: BlockSource) -> BlockSource:
    """``source``, its blocks kept after the first complete pass (for a matrix small enough to hold)."""
    kept: list[np.ndarray] = []

    def blocks() -> Iterator[np.ndarray]:
        if kept:
            yield from kept
            return
        fresh = []
        for block in source():
            fresh.append(block)
            yield block
        kept[:] = fresh

    return blocks
