"""Errors of dynid_ros, one class per area.

Every error a user can cause (bad file, bad bag, bad option, bad data) derives from
:class:`DynidError`; the CLI prints its message on one line and exits with code 2.
Lower-level errors (pinocchio, rosbags, cvxpy, yaml) are re-raised as one of these with
``raise ... from err``.
"""

from __future__ import annotations


class DynidError(Exception):
    """Base class of every user-facing dynid_ros error."""


class ModelError(DynidError):
    """The robot description (URDF, xacro, DH table) is missing or invalid."""


class ConfigError(DynidError):
    """An option or configuration value is invalid."""


class BagError(DynidError):
    """A bag is missing, corrupt, or lacks the requested topic or fields."""


class DataError(DynidError):
    """The recorded data cannot be used (non-monotonic stamps, too few samples, ...)."""


class IdentifiabilityError(DataError):
    """The data does not excite some base parameters enough to identify them."""


class EstimationError(DynidError):
    """An estimator or its solver failed."""


class ExcitationError(DynidError):
    """No excitation trajectory satisfies the requested limits."""


class TrajectoryError(DynidError):
    """A trajectory file is invalid or violates limits."""


class MissingDependencyError(DynidError):
    """An optional dependency a command needs is not installed (the message names the extra to install)."""


class CollisionError(TrajectoryError):
    """A motion comes closer to the robot's own links or its workcell than the clearance it keeps; ``time_s``:
    when, from the start of the motion (None: unknown)."""

    def __init__(self, message: str, time_s: float | None = None) -> None:
        super().__init__(message)
        self.time_s = time_s


class SimulationError(DynidError):
    """The simulator could not be set up or diverged."""
