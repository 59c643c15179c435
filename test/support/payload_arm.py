"""A four-joint arm with and without a 1.5 kg payload on its last link, its simulation truth and a Fourier
reference: shared by the payload and drive-gain tests."""

from __future__ import annotations

import numpy as np

from dynid_ros.sim import GroundTruth

from support.serial_arms import WRIST_LINKS, serial_arm

ARM = serial_arm("four_joint_arm", WRIST_LINKS, [(-2.5, 2.5, 80, 2.5)] * 2 + [(-2.5, 2.5, 40, 3)] * 2, "PAYLOAD")
"""The arm; ``PAYLOAD`` marks where a payload goes (``ARM.replace("PAYLOAD", PAYLOAD)``, or ``""``)."""
JOINTS = ("j1", "j2", "j3", "j4")
MASS, COM = 1.5, np.array([0.03, -0.02, 0.08])
INERTIA = np.array([[0.004, 0.0005, 0.0], [0.0005, 0.005, 0.0], [0.0, 0.0, 0.002]])
PAYLOAD = f"""  <link name="payload"><inertial><origin xyz="{COM[0]} {COM[1]} {COM[2]}"/><mass value="{MASS}"/>
    <inertia ixx="{INERTIA[0, 0]}" ixy="{INERTIA[0, 1]}" ixz="0" iyy="{INERTIA[1, 1]}" iyz="0" izz="{INERTIA[2, 2]}"/>
    </inertial></link>
  <joint name="payload_mount" type="fixed"><parent link="l4"/><child link="payload"/></joint>
"""
TRUTH = GroundTruth(damping=0.1, friction=(0.4, 0.4, 0.15, 0.15), armature=(0.05, 0.05, 0.01, 0.01), noise=0.02,
                    seed=3)
SENSOR = (0.0, 0.0, 0.02)
ARM_WITH_SENSOR = ARM.replace("PAYLOAD", PAYLOAD + f"""  <link name="ft_sensor"/>
  <joint name="ft_mount" type="fixed"><parent link="l4"/><child link="ft_sensor"/>
    <origin xyz="{SENSOR[0]} {SENSOR[1]} {SENSOR[2]}"/></joint>
""")
LINK4_MASS, LINK4_COM = 0.6, np.array([0.0, 0.02, 0.06])  # l4's own inertial in payload_arm.ARM
BODY_MASS = LINK4_MASS + MASS
BODY_COM = (LINK4_MASS * LINK4_COM + MASS * COM) / BODY_MASS - np.array(SENSOR)  # in the sensor frame


def reference(duration: float = 10.0, seed: int = 0) -> tuple[np.ndarray, ...]:
    """A 0.2 Hz, 4-harmonic Fourier motion of the four joints at 1 kHz."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, duration, 1e-3)
    wl = 2 * np.pi * 0.2 * np.arange(1, 5)
    a, b = rng.normal(0.0, 0.3, (2, 4, 4))
    s, c = np.sin(np.outer(t, wl)), np.cos(np.outer(t, wl))
    return t, s @ a.T + c @ b.T, (c * wl) @ a.T - (s * wl) @ b.T, -(s * wl ** 2) @ a.T - (c * wl ** 2) @ b.T
