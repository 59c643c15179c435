"""Packaging for dynid_ros: an ament_python ROS 2 package that also installs with plain ``pip install .``."""
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "dynid_ros"

# control_msgs has no PyPI wheel: the tests build its FollowJointTrajectory from the interface files
# vendored in test/control_msgs_src with these ROS 2 Jazzy build wheels (test/control_msgs_build.py).
CONTROL_MSGS_BUILD = [
    "catkin_pkg",
    *(f"ros-jazzy-{name}" for name in (
        "ament-cmake", "ament-package", "ament-cmake-include-directories", "ament-cmake-libraries",
        "ament-cmake-python", "ament-cmake-gen-version-h", "ament-cmake-ros", "ament-cmake-gmock",
        "ament-cmake-gtest", "ament-cmake-pytest", "domain-coordinator", "python-cmake-module",
        "rosidl-default-generators", "rosidl-default-runtime", "rosidl-core-generators", "rosidl-generator-py",
        "rosidl-generator-c", "rosidl-generator-cpp", "rosidl-generator-type-description", "rosidl-adapter",
        "rosidl-cmake", "rosidl-cli", "rosidl-parser", "rosidl-pycommon", "rosidl-typesupport-c",
        "rosidl-typesupport-cpp", "rosidl-typesupport-fastrtps-c", "rosidl-typesupport-fastrtps-cpp",
        "rosidl-typesupport-introspection-c", "rosidl-typesupport-introspection-cpp",
        "rosidl-typesupport-interface", "rosidl-runtime-c", "rosidl-runtime-cpp", "rmw-implementation-cmake",
        "fastrtps-cmake-module", "service-msgs", "unique-identifier-msgs", "action-msgs", "geometry-msgs")),
]

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    package_data={PACKAGE: ["robot/trajectories/*"]},
    include_package_data=True,
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/urdf", [f for f in glob("urdf/*") if Path(f).is_file()]),
        *((f"share/{PACKAGE}/{folder}", [f for f in glob(f"{folder}/*") if Path(f).is_file()])
          for folder in sorted({str(Path(f).parent) for f in glob("urdf/meshes/**/*", recursive=True)
                                if Path(f).is_file()})),
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
        "mcap",  # dynid bag repair reads damaged MCAP files record by record (lz4/zstd chunks)
        "rosbags>=0.11.9,<0.12",  # bag_recorder uses private writer attributes (checked at start-up): verified 0.11.9
        "pin",
        "numba",  # the compiled regressor (dynamics/regressor_kernel.py); the NumPy path is the fallback
        "mujoco",
        "xacro",
    ],
    extras_require={
        # dynid batch: fleet identification on a Dask distributed cluster (local by default)
        "fleet": ["dask[distributed]"],
        "test": [
            "pytest",
            "pytest-xdist",  # .ci/run: the corpus on both cores (python -m pytest -m corpus -n 2)
            "dask[distributed]",
            "ruff",
            "cmeel-urdfdom",
            "example-robot-data",
            "ros-jazzy-rclpy[fastrtps]",
            "ros-jazzy-std-msgs",
            "ros-jazzy-std-srvs",
            "ros-jazzy-sensor-msgs",
            "ros-jazzy-trajectory-msgs",
            "ros-jazzy-builtin-interfaces",
            *CONTROL_MSGS_BUILD,
            # the launch stack's ROS runtime (its launch/launch_ros/ros2cli wheels have no PyPI release: .ci/run)
            "ros-jazzy-rcl-interfaces",
            "ros-jazzy-lifecycle-msgs",
            "ros-jazzy-ament-index-python",
            "ros-jazzy-rosgraph-msgs",
            "colcon-common-extensions",  # test/test_colcon.py builds the package as a ROS user does
        ],
    },
    zip_safe=True,
    maintainer="dynid_ros developers",
    maintainer_email="dev@dynid.ros",
    description="On-robot dynamic identification with physically feasible parameters.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "dynid = dynid_ros.cli.main:main",
            "sim_node = dynid_ros.ros.sim_node:main",
            "excitation_node = dynid_ros.ros.excitation_node:main",
            "recorder_node = dynid_ros.ros.recorder_node:main",
            "identification_node = dynid_ros.ros.identification_node:main",
            "orchestrator_node = dynid_ros.ros.orchestrator_node:main",
        ],
    },
)
