"""Rigid-body dynamics linear in the parameters, and what makes parameters physical.

- :mod:`.regressor`: ``tau = W(q, q', q'') delta`` with friction and armature columns (pinocchio);
- :mod:`.base_parameters`: the identifiable combinations ``beta = K delta`` (Sousa & Cortesão 2014 sec. 4);
- :mod:`.feasibility`: the LMIs of physical and full consistency (Sousa & Cortesão 2014 eq. 17;
  Traversaro et al. 2016) and the feasible correction of base parameters;
- :mod:`.bounds`: the ``bounds:`` mapping (total mass, per-term ranges).

Imports :mod:`dynid_ros.robot` below it.
"""
