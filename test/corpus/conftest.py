"""What the corpus's user has on their machine, and the runs several corpus modules share.

A user who copies a published description into a folder of their own (to edit it, as every quirk here does) still
has the vendor's ROS package installed: its ``package://`` meshes resolve through the ROS environment their setup
script exported. :func:`ros_environment` is that environment for example-robot-data's packages (installed here by
the example-robot-data wheel): its prefix on ``AMENT_PREFIX_PATH`` (ROS 2, the ament index) and its share folder on
``ROS_PACKAGE_PATH`` (for a machine without ``ament_index_python``).
"""

from __future__ import annotations

import pytest

from support.robots import example_robot_prefix


@pytest.fixture(scope="session")
def ros_environment():
    """``AMENT_PREFIX_PATH`` and ``ROS_PACKAGE_PATH`` naming example-robot-data's install, for the whole test."""
    prefix = example_robot_prefix()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AMENT_PREFIX_PATH", str(prefix))
        patch.setenv("ROS_PACKAGE_PATH", str(prefix / "share"))
        yield prefix
