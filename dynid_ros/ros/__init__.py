"""The ROS 2 nodes of dynid_ros: thin rclpy wrappers over the ROS-free core, one node class per module.

``sim_node`` (the embedded MuJoCo robot), ``excitation_node`` (moves the robot along an excitation),
``recorder_node`` (crash-safe rosbag2 recording), ``identification_node`` (bag -> feasible parameters ->
URDF) and ``orchestrator_node`` (record -> excite -> stop -> identify without manual service calls).
Each module has ``PARAMETERS`` (its parameter schema) and ``main(args=None)``.
"""

NODE_MODULES = ("sim_node", "excitation_node", "recorder_node", "identification_node", "orchestrator_node")

__all__ = ["NODE_MODULES"]
