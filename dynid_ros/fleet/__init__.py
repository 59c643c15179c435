"""Many recordings of one or many robots.

- :mod:`.batch`: one identification per bag on a Dask cluster (``dynid batch``);
- :mod:`.drift`: parameters across runs, what moved beyond its uncertainty (``dynid drift``);
  :mod:`.drift_plots`: its figures.

Imports the identification, reporting and variants rooms and the rooms below them.
"""
