"""What the corpus's user has on their machine, and the runs several corpus modules share.

A user who copies a published description into a folder of their own (to edit it, as every quirk here does) still
has the vendor's ROS package installed: its ``package://`` meshes resolve through the ROS environment their setup
script exported. :func:`ros_environment` is that environment for example-robot-data's packages (installed here by
the example-robot-data wheel): its prefix on ``AMENT_PREFIX_PATH`` (ROS 2, the ament index) and its share folder on
``ROS_PACKAGE_PATH`` (for a machine without ``ament_index_python``).

:func:`ur5_run` is example-robot-data's UR5 through the whole path once per session: the bag, config and result
the bag variants, the option values and the URDF quirks start from.
"""

from __future__ import annotations

import pytest

from dynid_ros.robot.model import load_model

from support.robots import UR5_ERD, example_robot_prefix, example_robot_urdf
from support.user_runs import user_path


@pytest.fixture(scope="session")
def ros_environment():
    """``AMENT_PREFIX_PATH`` and ``ROS_PACKAGE_PATH`` naming example-robot-data's install, for the whole test."""
    prefix = example_robot_prefix()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AMENT_PREFIX_PATH", str(prefix))
        patch.setenv("ROS_PACKAGE_PATH", str(prefix / "share"))
        yield prefix


@pytest.fixture(scope="session")
def ur5_run(tmp_path_factory) -> dict:
    """example-robot-data's UR5 as shipped through info, excite, simulate, identify and validate (every command
    exits 0): ``work`` (``config.yaml``, ``trajectory.yaml``, ``bag``, ``truth``, ``result``, ``validation.json``),
    ``urdf``, ``joints``."""
    work = tmp_path_factory.mktemp("ur5")
    urdf = example_robot_urdf(UR5_ERD)
    runs = user_path(urdf, work)
    assert all(run.code == 0 for run in runs.values()), [str(r) for r in runs.values() if r.code]
    return {"work": work, "urdf": urdf, "joints": load_model(urdf=urdf, quiet=True).joints}
