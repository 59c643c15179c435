"""The robot: what the arm is, before any data.

- :mod:`.parameters`: the conventions stated once (inertial parameter order, friction and armature symbols,
  units, frames); everything else points here;
- :mod:`.model`: :class:`~.model.RobotModel` from a URDF, xacro or DH table, reduced to the identified joints,
  mimic joints followed;
- :mod:`.urdf_source`: URDF/xacro text as published (xacro arguments and packages, meshes, ``package://`` URIs);
- :mod:`.urdf_document`: the one URDF reader: checked and cleaned the way urdfdom reads it, for every consumer;
- :mod:`.mujoco_spec`: the one conversion of a robot to MuJoCo (the simulator's and ``identified.xml``'s);
- :mod:`.urdf_writer`: the identified URDF; :mod:`.mjcf_writer`: the identified MJCF (``identified.xml``);
- :mod:`.coupling`: motor-to-joint couplings (recordings in motor coordinates); :mod:`.frames`: robots
  described by DH frames in their config (closed chains, springs, counterweights; Wang et al. 2019);
- :mod:`.config`: per-robot YAML files (``config/<robot>.yaml``); :mod:`.robot_defaults`: the sections a config
  would hold, derived from a URDF, for a robot without one;
- :mod:`.drivers`: what the vendors' ROS 2 drivers publish (topics, rates, effort units), by config or joint names;
- :mod:`.resources`: the shipped robots' files (``urdf/``, ``config/``, ``trajectories/``);
- collisions (pinocchio + coal): :mod:`.workcell`: the ``collision:`` section and the obstacles around the robot;
  :mod:`.meshes`: collision meshes (``package://``) and their convex hulls; :mod:`.collision`: the collision model
  built from a URDF (geometry, the pairs checked); :mod:`.collision_model`: the model's kinematics, clearance scan,
  check and distance gradients; :mod:`.distance_scan`: distances over the samples of a motion (speed-bounded
  skips); :mod:`.clearance`: what a check finds (pairs, witnesses, clearances, the violation's line);
  :mod:`.geometry_inertia`: the inertia of a link's geometry, for the links a description leaves massless.

Imports only :mod:`dynid_ros.errors`.
"""
