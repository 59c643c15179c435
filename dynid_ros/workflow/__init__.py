"""Whole identifications, from the user's inputs to a result directory: the entry the front ends share.

- :mod:`.identify_run`: :func:`~.identify_run.identify_into` (``dynid identify``, the identification node,
  ``dynid batch``, ``dynid demo``): the config read once, the options built once, the mode chosen, the result
  written with its provenance;
- :mod:`.payload_run`: a payload on a link, from a loaded run and the unloaded robot's result.

Imports the variants, reporting and identification rooms and the rooms below them.
"""
