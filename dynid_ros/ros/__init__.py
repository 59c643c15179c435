"""The ROS 2 nodes of dynid_ros: thin rclpy wrappers over the ROS-free core, one node class per module.

``sim_node`` (the embedded MuJoCo robot), ``excitation_node`` (moves the robot along an excitation),
``recorder_node`` (crash-safe rosbag2 recording), ``identification_node`` (bag -> feasible parameters ->
URDF) and ``orchestrator_node`` (record -> excite -> stop -> identify without manual service calls).
Each node module has ``PARAMETERS`` (its parameter schema) and ``main(args=None)``:

- :mod:`.sim_node`, :mod:`.excitation_node`, :mod:`.recorder_node`, :mod:`.identification_node`,
  :mod:`.orchestrator_node`: the nodes;
- :mod:`.controller_links`: ``excitation_node``'s transports to a controller (action, topic, stream);
  :mod:`.controller_probe`: what the controller manager and the controller tell about it (states, parameters);
- :mod:`.common`: what every node shares (parameter schema, defaults from the robot config, ``main``);
- :mod:`.launch_support`: helpers of the launch files in ``launch/``.
"""

NODE_MODULES = ("sim_node", "excitation_node", "recorder_node", "identification_node", "orchestrator_node")

__all__ = ["NODE_MODULES"]
