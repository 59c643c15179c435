"""Every documented value of every ``dynid identify`` option, one at a time, on a simulated arm (example-robot-data's
UR5, its truth derived from the URDF) and on the real Panda run of Gaz et al. 2019: methods, consistency levels,
solvers, friction sets, armature, priors, total-mass bounds, strict mode, PBPR objectives and starts, the
hyperparameters (evidence, stated, given scales), the effort gains, the effort unit, the position-dependent torque and
the unmodelled load switched off, the filter cutoff (the excitation's bandwidth, numbers, ``auto``) and the velocity
source. Each run: exit 0 with a sane,
complete result (read back by its clients, the held-out part predicted), or, where :data:`REFUSED` says so, exit 2
with one line naming the problem.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from support.panda_data import JOINTS, write_panda_bag
from support.paths import REPO
from support.user_runs import PERIOD, assert_refused, dynid, masses, read_back, refusal, truth_masses

pytestmark = pytest.mark.corpus

PANDA_URDF = REPO / "urdf" / "panda.urdf"
PANDA_SPLIT_S = 0.7 * 20.9991
"""The real run: identify on the first 70 %, validate on the rest."""

OPTIONS: dict[str, tuple[list[str], dict]] = {
    "default": ([], {}),
    "method_ols": (["--method", "ols"], {}),
    "method_wls": (["--method", "wls"], {}),
    "method_bpfc": (["--method", "bpfc"], {}),
    "method_pbpr_torque": (["--method", "pbpr", "--pbpr-objective", "torque", "--pbpr-starts", "2"], {}),
    "method_pbpr_coefficients": (["--method", "pbpr", "--pbpr-objective", "coefficients", "--pbpr-starts", "2"], {}),
    "consistency_physical": (["--consistency", "physical"], {}),
    "consistency_full": (["--consistency", "full"], {}),
    "solver_scs": (["--solver", "scs"], {}),
    "friction_none": (["--friction", "none"], {}),
    "friction_viscous": (["--friction", "viscous"], {}),
    "friction_coulomb": (["--friction", "coulomb"], {}),
    "friction_offset": (["--friction", "offset"], {}),
    "friction_sigmoid": (["--friction", "viscous,coulomb,offset,sigmoid"], {}),
    "no_armature": (["--no-armature"], {}),
    "prior_none": (["--prior", "none"], {}),
    "total_mass": (["--total-mass", "{total_mass}"], {}),
    "strict": (["--strict"], {}),
    "hyperparameters_evidence": (["--hyperparameters", "evidence"], {}),
    "hyperparameters_stated": (["--hyperparameters", "stated"], {}),
    "hyperparameter_scales": (["--hyperparameter-scales", "mass=1,com=1,inertia=1,joint=1"], {}),
    "effort_gains_auto": (["--effort-gains", "auto"], {}),
    "effort_gains_off": (["--effort-gains", "off"], {}),
    "effort_unit_torque": ([], {"effort_unit": "N m"}),
    "position_torque_off": ([], {"model": {"position_torque": "off"}}),
    "unmodelled_load_off": ([], {"unmodelled_load": False}),
    "cutoff_5": ([], {"processing": {"cutoff_hz": 5}}),
    "cutoff_10": ([], {"processing": {"cutoff_hz": 10}}),
    "cutoff_auto": ([], {"processing": {"cutoff_hz": "auto"}}),
    "cutoff_bandwidth": ([], {"processing": {"cutoff_hz": "bandwidth"}}),
    "velocity_differentiate": ([], {"processing": {"velocity_source": "differentiate"}}),
}
"""``{case: (flags, the config's identification: keys)}``: each documented value once (a default by its name too)."""

FEASIBLE = ("fbpe", "bpfc", "pbpr")

REFUSED: dict[tuple[str, str], tuple[str, ...]] = {
}
"""``{(data, case): words of the one-line refusal}``."""

MAY_REFUSE: dict[tuple[str, str], tuple[str, ...]] = {
    (data_case, method): ("the regressor is rank deficient", "not identifiable from this data")
    for data_case in ("sim",) for method in ("method_ols", "method_wls", "method_bpfc")
}
"""Cases where the data may not determine every base parameter: the corpus' short collision-free excitation of the
UR5 (one start, 40 iterations) left one unexcited on this machine (beta42), and the methods without a prior must then
refuse in one line; with a richer excitation they must give a sane result."""

OMITS_TERMS = {("sim", "friction_none"): 0.10, ("sim", "friction_offset"): 0.10}
"""Cases whose model omits terms the simulated truth has (its Coulomb and viscous friction): the held-out error
cannot reach the noise and gets this bound instead (measured 6.1 % and 6.8 %)."""


@pytest.fixture(scope="module")
def sim(ur5_run) -> dict:
    work = ur5_run["work"]
    config = yaml.safe_load((work / "config.yaml").read_text())
    true_total = sum(truth_masses(work / "truth").values())
    return {"urdf": ur5_run["urdf"], "bag": work / "bag", "end": PERIOD, "start_validation": PERIOD,
            "config": config, "joints": ur5_run["joints"], "total_mass": (0.8 * true_total, 1.2 * true_total),
            "held_out_bound": 0.05}


@pytest.fixture(scope="module")
def panda(tmp_path_factory) -> dict:
    bag = write_panda_bag(tmp_path_factory.mktemp("panda") / "run1")
    return {"urdf": PANDA_URDF, "bag": bag, "end": PANDA_SPLIT_S, "start_validation": PANDA_SPLIT_S, "config": {},
            "joints": tuple(JOINTS), "total_mass": (14.0, 22.0), "held_out_bound": 0.05,
            "extra": ["--joints", ",".join(JOINTS)]}


def cases() -> list:
    out = []
    for data in ("sim", "panda"):
        for case in OPTIONS:
            out.append(pytest.param(data, case, id=f"{data}-{case}"))
    return out


@pytest.mark.parametrize("data, case", cases())
def test_an_identify_option_gives_a_sane_result(data, case, request, tmp_path):
    d = request.getfixturevalue(data)
    flags, keys = OPTIONS[case]
    flags = [f.format(total_mass=f"{d['total_mass'][0]:.3f},{d['total_mass'][1]:.3f}") for f in flags]
    config = json.loads(json.dumps(d["config"]))
    section = config.setdefault("identification", {})
    for key, value in keys.items():
        if isinstance(value, dict):
            section.setdefault(key, {}).update(value)
        else:
            section[key] = value
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    out = tmp_path / "result"
    run = dynid("identify", "--urdf", d["urdf"], "--bag", d["bag"], "--end", d["end"], "--config", config_file,
                *d.get("extra", []), *flags, "--out", out)
    if (data, case) in REFUSED or ((data, case) in MAY_REFUSE and refusal(run) is not None):
        assert_refused(run, *REFUSED.get((data, case), MAY_REFUSE.get((data, case))))
        return
    assert refusal(run) is None
    validation = tmp_path / "validation.json"
    validate = dynid("validate", "--result", out, "--bag", d["bag"], "--start", d["start_validation"], "--report",
                     validation)
    assert validate.code == 0, str(validate)
    _check(out, validation, d, OMITS_TERMS.get((data, case), d["held_out_bound"]))


def _check(out: Path, validation: Path, d: dict, held_out_bound: float) -> None:
    back = read_back(out, d["joints"])
    identified = masses(back.parameters["parameter_vector"])
    method = back.report["method"]
    if method in FEASIBLE:
        assert all(m > 0 for m in identified.values()), identified
    if back.report["link_masses_determined"]:  # by the data and the prior: near the robot's
        low, high = d["total_mass"]
        assert 0.8 * low <= sum(identified.values()) <= 1.2 * high, identified
    else:  # no prior (ols, wls, bpfc, --prior none): the result says its link masses are one set among many
        # (the real Panda run with bpfc gave 66 kg, with --prior none 159 kg: joint torques right, masses not)
        assert method in ("ols", "wls", "bpfc") or back.parameters["options"]["prior"] == "none"
        assert any("not determined one by one" in note for note in back.report["notes"]), back.report["notes"]
    held_out = json.loads(validation.read_text())["relative_error"]
    assert held_out < held_out_bound, held_out
