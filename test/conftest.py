"""Fixtures of the node tests (defined in ros_helpers), available to every test module."""

from ros_helpers import ros_context, spinner  # noqa: F401
