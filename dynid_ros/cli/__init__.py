"""The ``dynid`` command: :mod:`.main` dispatches to one module per subcommand (``info``, ``identify``,
``validate``, ``excite``, ``simulate``, ``demo``, ``bag``), each thin argument parsing over typed core
functions, returning an exit code. ``python -m dynid_ros.cli`` runs it too.
"""
