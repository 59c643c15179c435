"""``python -m dynid_ros.cli``: the ``dynid`` command."""

import sys

from dynid_ros.cli.main import main

sys.exit(main())
