"""The identification flow: options -> joint states -> processed data -> base regressor -> estimate, on one
window of one recording (what ``dynid identify``, the identification node and ``dynid batch`` run).

- :mod:`.options`: :class:`~.options.IdentificationOptions`, built by one function from a config section, CLI
  flags or node parameters;
- :mod:`.effort_unit`: joint torque or motor current in the recorded effort, and efforts that do not fit the
  URDF's gravity torques;
- :mod:`.sample_rate`: joint states recorded too slowly, and the driver's full-rate topic;
- :mod:`.identify`: from a bag (streamed) or a series to an :class:`~.identification_result.IdentificationResult`;
- :mod:`.linear_identification`: processing -> regressor -> estimate, the path of every method;
  :mod:`.sigmoid_identification`: the same with sigmoid friction (Gaz et al. 2019 eq. 25);
- :mod:`.cutoff_selection`, :mod:`.position_torque_selection`: choices made on the data by time-blocked
  cross-validation (the filter cutoff, a position-dependent torque per joint);
- :mod:`.least_squares_comparison`: the estimate beside plain least squares, cross-validated on the same data;
- :mod:`.identification_result`, :mod:`.fit_series`: what an identification found and its per-sample fit;
  :mod:`.excitation_quality`: how well the window excites the parameters;
- :mod:`.provenance`: where a result came from; :mod:`.timing`: wall-clock time per stage.

Imports robot, data, dynamics and estimation; nothing about reports, variants, execution or ROS.
"""
