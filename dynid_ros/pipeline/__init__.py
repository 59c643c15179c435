"""The offline pipeline: options -> identify -> validate -> results and reports (what ``dynid identify`` and
``dynid validate`` and the identification node run).

- :mod:`.options`: :class:`~.options.IdentificationOptions`, built by one function from a config file, CLI
  flags or node parameters;
- :mod:`.identify`: the entry point; :mod:`.linear_identification`: processing -> regressor -> estimate;
  :mod:`.sigmoid_identification`, :mod:`.abs_effort` (unknown torque signs), :mod:`.mass_matrix` (M, g
  samples): the variants; :mod:`.identification_result`, :mod:`.timing`;
- :mod:`.validate`: held-out torque prediction; :mod:`.results`: the result directory; :mod:`.report`: plots
  and tables; :mod:`.robot_defaults`: a config derived from a URDF for a robot without one;
- :mod:`.frames_identification`, :mod:`.payload_identification`, :mod:`.gains`, :mod:`.body_identification`:
  robots by frames, payloads, drive gains, an F/T-measured body; :mod:`.batch`, :mod:`.drift`
  (:mod:`.drift_plots`): many bags on a Dask cluster, and parameters across runs.

Imports every room below it (robot, data, dynamics, estimation, excitation); nothing above.
"""
