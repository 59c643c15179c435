"""Excitation trajectories: Fourier series, limits, files and optimization (the design of a motion; how it is
executed is :mod:`dynid_ros.execution`).

Sousa & Cortesão 2014 section 5.2.2 (Swevers Fourier series, eq. 78-80) and Wang et al. 2019 section IV
(condition-number optimization under joint and Cartesian constraints). Modules:

- :mod:`.fourier`: :class:`FourierTrajectory`, analytic positions, velocities, accelerations;
- :mod:`.limits`: :class:`ExcitationLimits` from the model and config, the dense-grid check;
- :mod:`.trajectory_file`: :class:`ExcitationTrajectory` and its YAML file;
- :mod:`.optimizer`: the condition number's definition and the constrained optimization;
- :mod:`.torques`: nominal-model torques for optional torque limits;
- :mod:`.frames_columns`: the base regressor of a frames robot (``robot: frames:``) for the optimizer;
- :mod:`.clearance`: the optimizer's smooth clearance rows (the robot's links and its workcell).
"""

from dynid_ros.excitation.fourier import FourierTrajectory
from dynid_ros.excitation.limits import ExcitationLimits, check_trajectory_limits, limits_from_model
from dynid_ros.excitation.optimizer import ExcitationOptions, excitation_condition_number, optimize_excitation
from dynid_ros.excitation.trajectory_file import ExcitationTrajectory, load_trajectory, save_trajectory

__all__ = [
    "ExcitationLimits",
    "ExcitationOptions",
    "ExcitationTrajectory",
    "FourierTrajectory",
    "check_trajectory_limits",
    "excitation_condition_number",
    "limits_from_model",
    "load_trajectory",
    "optimize_excitation",
    "save_trajectory",
]
