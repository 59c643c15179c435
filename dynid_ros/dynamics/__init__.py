"""Rigid-body dynamics linear in the parameters, and what makes parameters physical.

- :mod:`.regressor`: ``tau = W(q, q', q'') delta`` with friction and armature columns (pinocchio), its compiled
  kernel :mod:`.regressor_kernel` (numba; NumPy fallback); :mod:`.frame_terms`: per-frame terms of a frames robot;
- :mod:`.base_parameters`: the identifiable combinations ``beta = K delta`` (Sousa & Cortesão 2014 sec. 4),
  cached on disk by :mod:`.base_parameter_cache`; :mod:`.row_chunks`: a tall regression matrix given chunk by chunk;
- :mod:`.feasibility`: the LMIs of physical and full consistency (Sousa & Cortesão 2014 eq. 17;
  Traversaro et al. 2016) and the feasible correction of base parameters;
- :mod:`.polish`: a solver's answer that misses a constraint within the solver's tolerance, moved onto the
  feasible set;
- :mod:`.bounds`: the ``bounds:`` mapping (total mass, per-term ranges); :mod:`.conditioning`: the condition number
  of a regressor, plain and with unit-norm columns.

Imports :mod:`dynid_ros.robot` below it.
"""
