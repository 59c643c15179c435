"""Results a person and a program read: the result directory, the reports and plots, and the validation of a
result on held-out data.

- :mod:`.result_directory`: ``identified.urdf``, ``identified.xml``, ``parameters.yaml``, ``report.json``, written
  all or nothing, and read back;
- :mod:`.identification_report`: ``report.html`` / ``report.md`` of an identification or a validation;
  :mod:`.report_html`: the document model rendered to HTML and markdown; :mod:`.plots`: the figures (matplotlib);
- :mod:`.validate`: held-out torque prediction of a result (``dynid validate``);
- :mod:`.result_check`: a result's check of itself before it is written (better than the nominal model on its
  window, masses finite and positive, its files reproduce its fit).

Imports the identification room and the rooms below it.
"""
