"""Estimators: from a base regressor and torques to parameters with uncertainties. No pipeline, no I/O.

- :mod:`.estimators`: OLS, WLS and FBPE/MAP (Sousa & Cortesão 2014 eq. 60, 64-75); :mod:`.method`: the estimator
  chosen by name (``--method``), one dispatch for every caller;
- :mod:`.prior`: the CAD (nominal URDF) prior and link realism; :mod:`.hyperparameters`: the prior's scale per
  group and the noise per joint chosen by the evidence (type-II maximum likelihood);
- :mod:`.identifiability`: which base parameters the data determine; :mod:`.residual_model`: how much
  information correlated residuals carry (and the noise floor);
- :mod:`.fit_quality`: relative error (Sousa & Cortesão 2014 eq. 84); :mod:`.residual_structure`: per-joint fit
  diagnostics (noise, or a torque the model lacks?); :mod:`.model_error`: what a joint's data are worth when its
  misfit is model error;
- :mod:`.unmodelled_load`: a tool or payload the URDF lacks, as an extra body; :mod:`.position_torque`: a per-joint
  position-dependent torque (a spring, a cable);
- :mod:`.penalty_retrieval`: Gaz et al. 2019 Alg. 1; :mod:`.torque_signs`: the sign search of Pennese et
  al. 2021 Alg. 1; :mod:`.sigmoid_friction`: Gaz et al. 2019 eq. 25; :mod:`.inertia_stack`: the M(q), g(q)
  stack (Gaz et al. 2019 eq. 17-21);
- :mod:`.normal_equations`: ``A^T A``, ``A^T b`` of a tall problem, summed by blocks, and their root;
- :mod:`.payload`: one rigid body on a link, fully consistent (Traversaro et al. 2016; LMI and manifold);
  :mod:`.drive_gains`: per-joint effort scales from a known payload (Pennese et al. 2021 eq. 2); :mod:`.effort_gains`:
  the same scales relative to each other from one run, with the parameters; :mod:`.time_blocks`: the contiguous
  time blocks every data-driven choice cross-validates on; :mod:`.coupling_diagnostic`: which joints
  look coupled.

Imports :mod:`dynid_ros.robot`, :mod:`dynid_ros.data` and :mod:`dynid_ros.dynamics` below it.
"""
