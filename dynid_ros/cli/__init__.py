"""The ``dynid`` command: :mod:`.main` dispatches to one module per subcommand, each thin argument parsing over
typed core functions, returning an exit code; :mod:`.common` holds the argument helpers they share.
``python -m dynid_ros.cli`` runs it too.

- :mod:`.info`, :mod:`.identify`, :mod:`.validate`: the offline identification;
- :mod:`.excite`, :mod:`.simulate`, :mod:`.demo`: excitation design, simulation, the whole job on a simulated robot;
- :mod:`.bag`: inspect or repair a rosbag2;
- :mod:`.batch`, :mod:`.drift`: many bags, many runs;
- :mod:`.gains`, :mod:`.identify_body`: drive gains from a known payload; the body beyond a force/torque sensor.
"""
