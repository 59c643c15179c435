"""Identifications beyond one URDF arm's joint torques, each built on the identification flow.

- :mod:`.abs_effort`: efforts recorded as ``|tau|`` (Pennese et al. 2021 Alg. 1);
- :mod:`.mass_matrix`: from M(q) and g(q) at static configurations (Gaz et al. 2019 sec. IV-A);
- :mod:`.payload_identification`: a payload on a link (Traversaro et al. 2016); :mod:`.body_identification`: the
  body beyond a force/torque sensor;
- :mod:`.gains`: per-joint drive gains from a known payload (Pennese et al. 2021 eq. 2);
- frames robots (Wang et al. 2019): :mod:`.frames_identification` (links, per-frame friction, springs),
  :mod:`.frames_reference` (a published parameter set), :mod:`.frames_report` (its result directory: the common
  files), :mod:`.config_robot` (a robot its config describes: a
  ``coupling:`` section or ``robot: frames:``).

Imports the identification and reporting rooms and the rooms below them.
"""
