"""The embedded robot: a MuJoCo arm with known true dynamics, for tests, the demo and the sim node.

ROS-free. :class:`GroundTruth` perturbs a nominal URDF (inertials, friction, armature, torque
sensor noise and bias) and gives the true parameter vector; :class:`Simulator` steps MuJoCo at
1 kHz under a nominal-model tracking controller and returns what a ros2_control robot publishes;
:func:`simulate_profile` runs a whole reference offline into a
:class:`~dynid_ros.data.joint_states.JointStateSeries`.

- :mod:`.ground_truth`, :mod:`.simulator`, :mod:`.controller`: the truth, the physics, the joint controller;
- :mod:`.mujoco_model`: the URDF as a MuJoCo model; :mod:`.scaled_robot`: an arm scaled in size and mass;
- :mod:`.trajectory_controller`: the simulated joint trajectory controller ``sim_node`` serves;
- :mod:`.coupled_drive`: an arm driven through a motor coupling;
- :mod:`.contacts`: what the simulated robot touched (contacts, smallest clearance of a run).

Imports robot, data, dynamics and execution (the trajectory controller follows the execution's protocol); no
identification.
"""

from dynid_ros.sim.controller import Gains, TrackingController
from dynid_ros.sim.ground_truth import GroundTruth
from dynid_ros.sim.simulator import JointSample, Simulator, simulate_profile

__all__ = ["Gains", "GroundTruth", "JointSample", "Simulator", "TrackingController", "simulate_profile"]
