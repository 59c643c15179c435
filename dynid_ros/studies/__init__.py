"""Whole jobs on a simulated robot whose truth is known.

- :mod:`.demo`: simulate, excite, record, identify and validate (``dynid demo``);
- :mod:`.robustness`: the default identification where a real robot departs from the ideal (one joint barely
  moving, Stribeck friction, sensor gain errors, a wrong URDF, a tool, a spring, scaled arms).

Imports the simulator, execution, identification and reporting rooms.
"""
