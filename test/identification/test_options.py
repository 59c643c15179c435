"""One options object for an identification: the CLI flags and the node parameters build the same options."""

import argparse

import pytest

from dynid_ros.cli import identify as identify_command
from dynid_ros.errors import ConfigError
from dynid_ros.identification.options import IdentificationOptions, identification_options, parameter_overrides
from dynid_ros.robot.config import config_section
from dynid_ros.robot.resources import share_path

PANDA = share_path("config/panda.yaml")


def _cli(*flags: str) -> IdentificationOptions:
    """The options of ``dynid identify`` with ``flags``: its parser, then the one builder over the config's section
    (what :func:`dynid_ros.workflow.identify_run.identify_into` does with the parsed flags)."""
    parser = argparse.ArgumentParser()
    identify_command.add_arguments(parser)
    args = parser.parse_args(["--urdf", "u", "--bag", "b", "--out", "o", *flags])
    return identification_options(config_section(args.config, "identification"), vars(args))


def _node(**parameters: object) -> IdentificationOptions:
    unset = {"joints": [], "topic": "", "start": -1.0, "end": -1.0, "friction": [], "armature": "", "method": "",
             "consistency": "", "solver": "", "effort_scale": [], "prior": "", "total_mass": []}
    return identification_options(config_section(PANDA, "identification"), parameter_overrides({**unset, **parameters}))


def test_nothing_given_means_the_config_over_the_defaults():
    options = _cli("--config", str(PANDA))
    assert options == _node()
    assert options.bounds["total_mass"] == [14.0, 22.0]  # from the config
    assert options.method == IdentificationOptions().method and options.start is None


def test_flags_and_parameters_of_the_same_values_give_the_same_options():
    cli = _cli("--config", str(PANDA), "--method", "wls", "--friction", "viscous,coulomb", "--no-armature",
               "--start", "1.5", "--end", "9", "--total-mass", "10,30", "--effort-scale", "1,2,3,4,5,6,7")
    node = _node(method="wls", friction=["viscous", "coulomb"], armature="false", start=1.5, end=9.0,
                 total_mass=[10.0, 30.0], effort_scale=[1.0, 2, 3, 4, 5, 6, 7])
    assert cli == node
    assert cli.friction == ("viscous", "coulomb") and cli.armature is False and cli.bounds["total_mass"] == [10, 30]


def test_invalid_values_are_refused_by_the_builder():
    with pytest.raises(ConfigError, match="--method must be one of"):
        _node(method="magic")
    with pytest.raises(ConfigError, match="must be after --start"):
        _cli("--start", "5", "--end", "2")


def test_hyperparameters_come_from_the_flag_the_parameter_or_the_config_key():
    assert _cli("--config", str(PANDA)).hyperparameters == "stated"  # the default
    assert _cli("--config", str(PANDA), "--hyperparameters", "evidence") == _node(hyperparameters="evidence")
    assert _node(hyperparameters="").hyperparameters == "stated"  # '' = not set
    assert identification_options({"hyperparameters": "stated"}).hyperparameters == "stated"
    assert identification_options({"hyperparameters": "stated"}, {"hyperparameters": "evidence"}).hyperparameters \
        == "evidence"  # the flag wins over the config
    with pytest.raises(ConfigError, match="--hyperparameters must be one of evidence, stated"):
        identification_options({"hyperparameters": "tuned"})
