"""dynid_ros: on-robot dynamic identification with physically feasible parameters.

The core library (everything outside :mod:`dynid_ros.ros`) imports without rclpy.
Conventions (parameter order, units, frames, time base) are stated once in
:mod:`dynid_ros.robot.parameters`.
"""

__version__ = "0.1.0"
