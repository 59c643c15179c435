"""Small simulated bags for the fleet tests: a 3-joint arm in the embedded MuJoCo simulator, a few seconds each."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.sim import GroundTruth, Simulator, simulate_profile

from support.serial_arms import FLEET_LINKS, serial_arm

LIMITS = [(-2.5, 2.5, 60, 2.5)] * 2 + [(-2.5, 2.5, 30, 2.5)]

PAYLOAD = """  <link name="payload"><inertial><origin xyz="0 0 0"/><mass value="{mass}"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <joint name="payload_mount" type="fixed"><parent link="l3"/><child link="payload"/><origin xyz="0.15 0 0"/></joint>
"""


def arm_urdf(directory: Path, payload: float = 0.0) -> Path:
    """The arm's URDF in ``directory`` (with a point-like payload of ``payload`` kg at 0.15 m on l3)."""
    path = directory / (f"arm_payload_{payload:g}.urdf" if payload else "arm.urdf")
    path.write_text(serial_arm("fleet_arm", FLEET_LINKS, LIMITS, PAYLOAD.format(mass=payload) if payload else ""))
    return path


def reference(duration: float, timestep: float = 1e-3) -> tuple[np.ndarray, ...]:
    """A smooth multi-sine excitation of the three joints, at rest at both ends."""
    t = np.arange(int(round(duration / timestep)) + 1) * timestep
    w = 2 * np.pi / duration
    amplitude = np.array([[1.0, 0.5], [0.8, 0.4], [1.0, 0.6]])
    q, dq, ddq = (np.zeros((t.size, 3)) for _ in range(3))
    for j in range(3):
        for h, a in enumerate(amplitude[j], start=1):
            q[:, j] += a / h * (1 - np.cos(h * w * t))
            dq[:, j] += a * w * np.sin(h * w * t)
            ddq[:, j] += a * h * w * w * np.cos(h * w * t)
    q[:, 1] -= 0.6
    return t, q, dq, ddq


def simulate_bag(bag: Path, urdf: Path, seed: int, duration: float = 4.0, friction: tuple = (0.3, 0.2, 0.15),
                 damping: tuple = (0.1, 0.08, 0.05), noise: float = 0.02, start_stamp: float = 1.7e9) -> Path:
    """Simulate the arm of ``urdf`` along :func:`reference` and record it as a rosbag2 (stamps from
    ``start_stamp``)."""
    truth = GroundTruth(damping=list(damping), friction=list(friction), noise=noise, seed=seed)
    sim = Simulator(urdf, truth=truth, seed=seed)
    t, q, dq, ddq = reference(duration, sim.timestep)
    run = simulate_profile(sim, t, q, dq, ddq, progress=False)
    run.t = run.t + start_stamp
    return write_joint_states(bag, run)
