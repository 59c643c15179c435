"""Argument helpers shared by the subcommands."""

from __future__ import annotations

import argparse


def add_robot_arguments(parser: argparse.ArgumentParser, dh: bool = True, required: bool = True) -> None:
    """``--urdf`` | ``--dh``, ``--xacro-arg``, ``--joints``; ``required=False``: the command checks itself."""
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--urdf", help="robot description (.urdf or .urdf.xacro)")
    if dh:
        group.add_argument("--dh", help="DH table in YAML (convention: standard|modified, joints: [...])")
    add_xacro_argument(parser)
    parser.add_argument("--joints", type=joint_list, help="identified joints, comma separated (default: the "
                        "movable joints present in the data, but mimic and gripper joints, which are locked)")


def add_collision_arguments(parser: argparse.ArgumentParser) -> None:
    """``--package-dir DIR`` (repeatable): where ``package://`` meshes of the collision geometry are looked up first."""
    parser.add_argument("--package-dir", action="append", default=[], metavar="DIR",
                        help="a ROS package's folder (or a folder holding packages) where package:// meshes are "
                             "looked up first; then AMENT_PREFIX_PATH, ROS_PACKAGE_PATH and the URDF's folder "
                             "(repeat for several)")


def add_xacro_argument(parser: argparse.ArgumentParser) -> None:
    """``--xacro-arg name:=value`` (repeatable): arguments of a ``--urdf`` that is a ``.urdf.xacro``."""
    parser.add_argument("--xacro-arg", action="append", default=None, type=xacro_argument, metavar="NAME:=VALUE",
                        help="argument of a .urdf.xacro (repeat for several)")


def xacro_argument(text: str) -> str:
    """An argparse type: a ``name:=value`` xacro argument, returned as given."""
    name, sep, _ = text.partition(":=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected name:=value, got {text!r}")
    return text


def add_model_arguments(parser: argparse.ArgumentParser, friction_default: str | None) -> None:
    """Add ``--friction`` (default ``friction_default``) and ``--armature``."""
    parser.add_argument("--friction", default=friction_default,
                        help="per-joint friction terms: any of viscous,coulomb,offset (linear, Sousa & Cortesão 2014 "
                             "eq. 27) and sigmoid (Gaz et al. 2019 eq. 25, fitted on the residual of the linear "
                             "model, alternated with it), or none "
                             f"(default: {friction_default or 'none'})")
    parser.add_argument("--armature", action=argparse.BooleanOptionalAction, default=None,
                        help="identify rotor inertia (armature) per joint")


def add_hyperparameter_scales_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--hyperparameter-scales``: the prior's scales given (a result directory's, or numbers), not chosen."""
    parser.add_argument("--hyperparameter-scales", default=None, metavar="RESULT_DIR|mass=S,com=S,inertia=S,joint=S",
                        help="FBPE's prior scale per group given instead of chosen by the evidence: the scales a "
                             "result's estimate used (its directory) or the four numbers (times the stated "
                             "tolerances); the evidence then chooses the noise per joint only. Runs compared for "
                             "drift must share them (dynid batch gives every bag its first bag's)")


def joint_list(text: str) -> list[str]:
    """An argparse type: comma-separated joint names as a list (at least one)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated joint names")
    return names


def float_list(text: str) -> list[float]:
    """An argparse type: comma-separated numbers as floats."""
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from err
