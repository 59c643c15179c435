"""What an identification found: :class:`IdentificationResult` (written by
:mod:`dynid_ros.reporting.result_directory`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dynid_ros.dynamics.base_parameters import BaseParameters
from dynid_ros.estimation.method import Method
from dynid_ros.identification.fit_series import FitSeries
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.robot.model import RobotModel
from dynid_ros.robot.parameters import ParameterLayout
from dynid_ros.robot.urdf_writer import attached_links, attached_parameters


@dataclass
class IdentificationResult:
    """What an identification found. ``delta`` follows :mod:`dynid_ros.robot.parameters`."""

    model: RobotModel
    layout: ParameterLayout
    base: BaseParameters
    delta: np.ndarray
    beta: np.ndarray
    beta_rel_std: np.ndarray
    nominal: np.ndarray
    feasible: bool
    solver_status: str
    relative_error: float
    relative_error_per_joint: list[float]
    n_samples: int
    timings_s: dict[str, float]
    options: IdentificationOptions
    warnings: list[str] = field(default_factory=list)
    processing: dict = field(default_factory=dict)
    not_identified: list[dict] = field(default_factory=list)
    realism: list[dict] = field(default_factory=list)
    delta_std: np.ndarray | None = None
    residual_inflation: float = 1.0
    friction_sigmoid: np.ndarray | None = None
    """(n_dof, 3) ``[phi1, phi2, phi3]`` per joint with ``--friction sigmoid`` (Gaz et al. 2019 eq. 25)."""
    fit: FitSeries | None = None
    """The window's processed motion, recorded and predicted torque (for the report); None without a torque fit."""
    prior_std: np.ndarray | None = None
    """Standard deviation of the prior on each standard parameter (None without a prior)."""
    unmodelled_load: dict | None = None
    """``{"link", "mass", "com", "mass_std"}`` of a load on the last link the URDF lacks (None: the data show none)."""
    position_torque: dict | None = None
    """Per joint with a position-dependent torque (identification.position_torque_selection ``TermFit.to_dict``), or
    None: none modelled."""
    excitation: dict | None = None
    """How well the window excites the parameters (:mod:`dynid_ros.identification.excitation_quality`); None
    without a trajectory (M(q) and g(q))."""
    recording_start_s: float | None = None
    """The recording's first stamp [s since the epoch] (the time origin of ``--start`` and ``--end``), when known."""
    notes: list[str] = field(default_factory=list)
    """What the user may like to know (``note:`` lines; ``report.json`` ``notes``), e.g. how the velocities were
    obtained when the recording has none."""
    solver_polish: dict | None = None
    """What was moved onto the feasible set when the solver's answer missed a constraint within its tolerance
    (:mod:`dynid_ros.dynamics.polish`; ``solver``, ``violation``, ``allowance``, ``moved``, ``message``), or None."""
    data_weight: dict | None = None
    """Per joint (name -> ``inflation``, ``autocorrelation_time``, ``structured_share``, ``explained_by``,
    ``sweeps``): how much FBPE's data term counts each joint (:mod:`dynid_ros.estimation.model_error`); None for
    other methods."""
    hyperparameters: dict | None = None
    """The prior's scales and the noise chosen by the evidence
    (:meth:`dynid_ros.estimation.hyperparameters.HyperparameterChoice.to_dict`); None when not chosen."""
    untrusted_nominal: tuple[int, ...] = ()
    """Parameter indices of the description's joint terms no robot could have (:data:`dynid_ros.estimation.prior.
    IMPLAUSIBLE_JOINT_TERM`: placeholders): the prior is centred on 0 there, and the result's check compares the fit
    with the description without them."""
    least_squares: dict | None = None
    """The estimate and plain least squares cross-validated on the same window and processing, and the link masses
    OLS gives (:meth:`dynid_ros.identification.least_squares_comparison.LeastSquaresComparison.to_dict`); None where
    not compared."""
    effort_gains: dict | None = None
    """Each joint's torque per unit of recorded effort estimated with the parameters, whether it was used and the
    test that decided (:meth:`dynid_ros.estimation.effort_gains.GainChoice.to_dict`); None where not estimated."""

    @property
    def link_masses_determined(self) -> bool:
        """Whether each link's parameters (its mass among them) are determined: by the data where they determine
        them, by the prior (the description's values) where they do not (FBPE, PBPR with ``prior: nominal``).
        Without a prior (OLS, WLS, BPFC, ``--prior none``) the data determine the base parameters only, combinations
        of the link parameters: the link parameters written are one set among many that give the same joint
        torques (``report.json`` ``link_masses_determined``; a note says so)."""
        return self.options.prior == "nominal" and self.options.method in (Method.FBPE, Method.PBPR)

    def link_masses(self) -> dict[str, float]:
        """Identified mass of each body [kg]: what the parameter vector holds, the link with the parts rigidly
        attached to it (:meth:`link_bodies`)."""
        return {link: float(self.delta[self.layout.link_slice(k)][0]) for k, link in enumerate(self.layout.links)}

    def link_bodies(self) -> dict[str, dict]:
        """Per identified link, what its mass is made of: ``mass`` (the body the parameter vector holds, as
        :meth:`link_masses`), ``link_alone_mass`` (without the attached parts and a detected load: what the
        link-realism table compares; ``identified.urdf`` writes it, plus the load, to the link's ``<inertial>``),
        ``attached_mass`` (their nominal mass), ``carries`` (the attached URDF links) and ``load_mass`` (a load
        the URDF lacks, detected on it; 0 without)."""
        attached = attached_parameters(self.model, self.layout)
        load = self.unmodelled_load or {}
        out = {}
        for k, link in enumerate(self.layout.links):
            body = float(self.delta[self.layout.link_slice(k)][0])
            parts = float(attached[self.layout.link_slice(k)][0])
            load_mass = float(load["mass"]) if load.get("link") == link else 0.0
            out[link] = {"mass": body, "link_alone_mass": body - parts - load_mass, "attached_mass": parts,
                         "carries": attached_links(self.model, link), "load_mass": load_mass}
        return out
