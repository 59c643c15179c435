"""Packaging for dynid_ros: an ament_python ROS 2 package that also installs with plain ``pip install .``."""
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "dynid_ros"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    package_data={PACKAGE: ["data/*", "data/**/*"]},
    include_package_data=True,
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/urdf", glob("urdf/*")),
    ],
    python_requires=">=3.10",
    install_requires=[
        "numpy",
        "scipy",
        "pyyaml",
        "sympy",
        "matplotlib",
        "tqdm",
        "threadpoolctl",
        "cvxpy",
        "clarabel",
        "scs",
        "rosbags>=0.11.9,<0.12",  # bag_recorder uses private writer attributes (checked at start-up): verified 0.11.9
        "pin",
        "mujoco",
        "xacro",
    ],
    extras_require={
        "test": [
            "pytest",
            "ruff",
            "cmeel-urdfdom",
            "example-robot-data",
            "ros-jazzy-rclpy[fastrtps]",
            "ros-jazzy-std-msgs",
            "ros-jazzy-std-srvs",
            "ros-jazzy-sensor-msgs",
            "ros-jazzy-trajectory-msgs",
            "ros-jazzy-builtin-interfaces",
        ],
    },
    zip_safe=True,
    maintainer="dynid_ros developers",
    maintainer_email="dev@dynid.ros",
    description="On-robot dynamic identification with physically feasible parameters.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "dynid = dynid_ros.cli:main",
            "sim_node = dynid_ros.nodes.sim_node:main",
            "excitation_node = dynid_ros.nodes.excitation_node:main",
            "recorder_node = dynid_ros.nodes.recorder_node:main",
            "identification_node = dynid_ros.nodes.identification_node:main",
            "orchestrator_node = dynid_ros.nodes.orchestrator_node:main",
        ],
    },
)
