"""dynid_ros: on-robot dynamic identification with physically feasible parameters.

The core library (everything outside :mod:`dynid_ros.nodes`) imports without rclpy.
Conventions (parameter order, units, frames, time base) are stated once in
:mod:`dynid_ros.parameters`.
"""

__version__ = "0.1.0"
