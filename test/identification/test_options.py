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
    assert _cli("--config", str(PANDA)).hyperparameters == "evidence"  # the default
    assert _cli("--config", str(PANDA), "--hyperparameters", "stated") == _node(hyperparameters="stated")
    assert _node(hyperparameters="").hyperparameters == "evidence"  # '' = not set
    assert identification_options({"hyperparameters": "stated"}).hyperparameters == "stated"
    assert identification_options({"hyperparameters": "evidence"}, {"hyperparameters": "stated"}).hyperparameters \
        == "stated"  # the flag wins over the config
    with pytest.raises(ConfigError, match="--hyperparameters must be one of evidence, stated"):
        identification_options({"hyperparameters": "tuned"})


def _bag(path, *topics):
    import numpy as np

    from dynid_ros.data.bag_io import write_joint_states
    from dynid_ros.data.joint_states import JointStateSeries

    t = np.arange(5) * 0.01
    series = JointStateSeries(["j1"], t, np.zeros((5, 1)), np.zeros((5, 1)), np.zeros((5, 1)))
    return write_joint_states(path, series, topic=topics[0])


@pytest.mark.parametrize(("given", "expected"), [
    ({}, "/joint_states"),  # the config's default (the Franka driver's topic) is not in the bag: its one topic
    ({"topic": "/franka/joint_states"}, "/franka/joint_states"),  # named: read as named (absent: the reader says so)
])
def test_a_default_topic_missing_from_the_bag_gives_way_to_its_one_joint_state_topic(tmp_path, given, expected):
    from dynid_ros.identification.identify import bag_topic

    bag = _bag(tmp_path / "bag", "/joint_states")
    options = identification_options({}, given, topic="/franka/joint_states")
    topic, note = bag_topic(bag, options)
    assert topic == expected
    assert (note is not None) == (not given) and (note is None or "/joint_states" in note and "--topic" in note)


def test_hyperparameter_scales_come_from_the_flag_the_parameter_or_the_config_key():
    given = {"mass": 1.5, "com": 0.5, "inertia": 0.25, "joint": 0.2}
    text = "mass=1.5,com=0.5,inertia=0.25,joint=0.2"
    assert _cli("--config", str(PANDA)).hyperparameter_scales is None  # the default: chosen
    assert _cli("--config", str(PANDA), "--hyperparameter-scales", text).hyperparameter_scales == given
    assert _node(hyperparameter_scales=text).hyperparameter_scales == given
    assert identification_options({"hyperparameter_scales": given}).hyperparameter_scales == given
    for bad, message in (("mass=1,com=1,inertia=1", "missing joint"), ("mass=1,com=1,inertia=1,joint=-2",
                                                                      "joint must be a positive number"),
                         ("mass=1,com=1,inertia=1,joint=1,size=2", "unknown size"), ("wide", "must be mass=S")):
        with pytest.raises(ConfigError, match=message):
            _node(hyperparameter_scales=bad)


def test_a_result_directory_gives_the_scales_runs_share_with_it(tmp_path):
    """``--hyperparameter-scales RESULT``: the scales the result's estimate used (the wide-prior check's factor
    where it kept the wide limit), no group tighter than stated (a later run's friction change or payload must
    show); a result made with the stated prior gives every scale 1."""
    import json

    from dynid_ros.reporting.result_directory import hyperparameter_scales_argument

    chosen = {"mass": 0.31, "com": 1.9, "inertia": 0.3, "joint:j1": 0.32, "joint:j2": 0.11, "joint:j3": 2.0}
    (tmp_path / "report.json").write_text(json.dumps({"hyperparameters": {"scales": chosen}}))
    assert hyperparameter_scales_argument(str(tmp_path)) == {**chosen, "mass": 1.0, "inertia": 1.0, "joint:j1": 1.0,
                                                             "joint:j2": 1.0}
    wide = {"scales": chosen, "cross_validation": {"chosen": "wide", "wide_factor": 100.0}}
    (tmp_path / "report.json").write_text(json.dumps({"hyperparameters": wide}))
    assert hyperparameter_scales_argument(str(tmp_path / "report.json")) == pytest.approx(
        {g: 100.0 * v for g, v in chosen.items()})
    (tmp_path / "report.json").write_text(json.dumps({"hyperparameters": None}))
    assert hyperparameter_scales_argument(str(tmp_path)) == {"mass": 1.0, "com": 1.0, "inertia": 1.0, "joint": 1.0}
    options = identification_options({}, {"hyperparameter_scales": hyperparameter_scales_argument(str(tmp_path))})
    assert options.hyperparameter_scales == {"mass": 1.0, "com": 1.0, "inertia": 1.0, "joint": 1.0}
