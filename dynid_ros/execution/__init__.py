"""Executing an excitation on a robot: the motion as sent, the robot's limits as the authority, and the
FollowJointTrajectory protocol. ROS-free (the nodes in :mod:`dynid_ros.ros` wire it to topics and actions).

- :mod:`.execution_profile`: approach from the current pose, N periods, hold (start and end at rest);
- :mod:`.robot_limits`: the limits from URDF + config, and the dense check of every motion before it is sent;
- :mod:`.trajectory_execution`, :mod:`.excitation_supervisor`: the excitation run's states, its start / wait /
  supervise / abort logic; :mod:`.joint_state_cache`: live joint states merged by name, with their age;
- :mod:`.orchestration`: record -> excite -> stop -> identify, step by step;
- :mod:`.trajectory_reference`: the quintic reference a controller follows; :mod:`.stream_clock`: the profile time
  of each command of a position stream;
- :mod:`.follow_joint_trajectory`: goals, tolerances and results of ``control_msgs/FollowJointTrajectory``;
  :mod:`.controller_check`: why a controller refuses a motion (inactive, joints, command interface);
  :mod:`.controller_clock`: the motion's time on the controller's clock (speed scaling, pause);
  :mod:`.stop_motion`: the decelerating stop a controller executes; :mod:`.command_latency`: how late a command
  reaches the controller (the lead of a stop).

Imports :mod:`dynid_ros.excitation` and the rooms below it.
"""
