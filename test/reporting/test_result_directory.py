"""The result directory of an identification, written by :func:`write_result` from a real identification of a
three-joint arm: ``parameters.yaml`` and ``report.json`` read back by a YAML and a JSON reader and checked against
the result and independent computations, ``identified.urdf`` by pinocchio; all or nothing (a failure leaves no
half-written result), never over what dynid did not write."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynid_ros.data.output_paths import MARKER, RESULT
from dynid_ros.errors import ConfigError, DataError, EstimationError, ModelError
from dynid_ros.identification.identify import identify
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.reporting.result_directory import (
    MJCF_FILE,
    PARAMETERS_FILE,
    REPORT_FILE,
    URDF_FILE,
    atomic_directory,
    check_written_urdf,
    load_parameters,
    parameters_dict,
    report_dict,
    write_result,
)
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.parameters import LINK_PARAMETER_NAMES

from support.arm_runs import arm_run
from support.user_files import tree_digest, user_directory


@pytest.fixture(scope="module")
def identified(tmp_path_factory):
    """An identification of the arm (default options) and its result directory."""
    directory = tmp_path_factory.mktemp("arm")
    run = arm_run(directory)
    result = identify(run.series, IdentificationOptions(), urdf=run.urdf)
    out = directory / "result"
    warnings = write_result(result, out, inputs=[run.urdf])
    return run, result, out, warnings


def test_the_files_of_a_result(identified):
    _, _, out, warnings = identified
    assert warnings == []
    names = {p.name for p in out.iterdir()}
    assert {URDF_FILE, MJCF_FILE, PARAMETERS_FILE, REPORT_FILE, "report.html", "report.md", MARKER} <= names
    assert (out / MARKER).read_text().strip() == RESULT
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".result.")]  # no temporary left beside it


def test_parameters_yaml_holds_every_parameter(identified):
    _, result, out, _ = identified
    content = yaml.safe_load((out / PARAMETERS_FILE).read_text())
    layout, delta = result.layout, result.delta
    assert content["parameter_vector"]["names"] == layout.names
    np.testing.assert_array_equal(content["parameter_vector"]["values"], delta)
    np.testing.assert_array_equal(content["parameter_vector"]["nominal"], result.nominal)
    for k, link in enumerate(layout.links):
        p = delta[layout.link_slice(k)]
        entry = content["links"][link]
        assert entry["parameters"] == dict(zip(LINK_PARAMETER_NAMES, p.tolist(), strict=True))
        mass, first = p[0], p[1:4]
        assert entry["mass"] == pytest.approx(mass, rel=1e-15)
        np.testing.assert_allclose(entry["com"], first / mass, rtol=1e-13)
        # the inertia about the CoM by the parallel-axis theorem, computed here: I_c = I_o - m (|c|^2 1 - c c^T)
        c = first / mass
        i_origin = np.array([[p[4], p[5], p[7]], [p[5], p[6], p[8]], [p[7], p[8], p[9]]])
        i_com = i_origin - mass * (c @ c * np.eye(3) - np.outer(c, c))
        written = entry["inertia_com"]
        for key, (r, s) in {"ixx": (0, 0), "ixy": (0, 1), "ixz": (0, 2), "iyy": (1, 1), "iyz": (1, 2),
                            "izz": (2, 2)}.items():
            assert written[key] == pytest.approx(i_com[r, s], rel=1e-9, abs=1e-14), (link, key)
        assert entry["mass_rel_std_percent"] > 0  # FBPE's posterior
    for j, joint in enumerate(layout.joints):
        assert content["joints"][joint] == {t: delta[layout.joint_index(j, t)] for t in layout.joint_terms}
    assert [b["name"] for b in content["base_parameters"]] == [f"beta{i + 1}" for i in range(result.base.n_base)]
    np.testing.assert_array_equal([b["value"] for b in content["base_parameters"]], result.beta)
    kept = {m["name"] for m in result.not_identified}
    assert [b["name"] for b in content["base_parameters"] if not b["identified"]] == sorted(kept, key=lambda n:
                                                                                             int(n[4:]))
    assert content["options"]["method"] == "fbpe" and content["options"]["friction"] == list(layout.friction)
    assert content["robot"]["joints"] == list(layout.joints) and content["robot"]["locked"] == []
    assert content == load_parameters(out)


def test_report_json_against_the_fit_it_reports(identified):
    run, result, out, _ = identified
    report = json.loads((out / REPORT_FILE).read_text())
    fit = result.fit
    error = np.linalg.norm(fit.tau - fit.tau_hat) / np.linalg.norm(fit.tau)  # Sousa & Cortesão 2014 eq. 84
    assert report["relative_error"] == pytest.approx(error, rel=1e-12)
    per_joint = np.linalg.norm(fit.tau - fit.tau_hat, axis=0) / np.linalg.norm(fit.tau, axis=0)
    np.testing.assert_allclose(report["relative_error_per_joint"], per_joint, rtol=1e-12)
    masses = [result.delta[result.layout.link_slice(k)][0] for k in range(3)]
    assert report["link_masses"] == dict(zip(result.layout.links, masses, strict=True))
    assert report["total_mass"] == pytest.approx(sum(masses))
    assert report["n_base"] == result.base.n_base and report["n_samples"] == result.n_samples
    assert report["feasible"] is True and report["solver_status"] == "optimal"
    assert report["joints"] == ["j1", "j2", "j3"]
    assert set(report["urdf_omits"]) == {"j1", "j2", "j3"}  # the offset and armature: no URDF element
    for j, joint in enumerate(result.layout.joints):
        assert report["urdf_omits"][joint] == {"offset": result.delta[result.layout.joint_index(j, "fo")],
                                               "armature": result.delta[result.layout.joint_index(j, "Ia")]}
    assert Path(report["report_html"]) == out.resolve() / "report.html" and Path(report["report_html"]).is_file()
    assert report["provenance"]["inputs"] == {"urdf": {"path": str(run.urdf.resolve()),
                                                       "sha256": report["provenance"]["inputs"]["urdf"]["sha256"]}}
    assert report["warnings"] == result.warnings
    assert report == json.loads(json.dumps(report_dict(result, {k: report[k] for k in report if k not in
                                                                report_dict(result)})))


def test_identified_urdf_read_back_by_pinocchio(identified):
    run, result, out, _ = identified
    reread = load_model(urdf=out / URDF_FILE)
    back = nominal_parameters(reread, result.layout)
    for k in range(3):
        p = result.delta[result.layout.link_slice(k)]
        np.testing.assert_allclose(back[result.layout.link_slice(k)], p, rtol=1e-8, atol=1e-9 * np.abs(p).max())
    for symbol in ("fv", "fc"):
        np.testing.assert_allclose(back[result.layout.indices(symbol)],
                                   np.maximum(result.delta[result.layout.indices(symbol)], 0.0), rtol=1e-9)


def test_parameters_dict_is_plain_yaml(identified):
    """Every value is a plain type a YAML reader of any language reads (no numpy scalars, no tuples)."""
    _, result, _, _ = identified
    text = yaml.safe_dump(parameters_dict(result), sort_keys=False)  # safe_dump refuses numpy objects
    assert "!!python" not in text


def test_a_second_result_replaces_the_first(identified, tmp_path):
    _, result, _, _ = identified
    out = tmp_path / "again"
    write_result(result, out)
    (out / "extra.txt").write_text("written by hand into dynid's own result")
    write_result(result, out)
    assert not (out / "extra.txt").exists() and (out / PARAMETERS_FILE).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again"]


def test_a_users_directory_is_never_replaced(identified, tmp_path):
    _, result, _, _ = identified
    mine = user_directory(tmp_path / "mine")
    before = tree_digest(mine)
    with pytest.raises(ConfigError, match="refusing to touch it"):
        write_result(result, mine)
    assert tree_digest(mine) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_a_failure_while_writing_leaves_no_half_written_result(identified, tmp_path):
    _, result, _, _ = identified
    bad = result.delta.copy()
    bad[result.layout.link_slice(2).start] = -1.0  # a negative mass: the URDF writer refuses it
    broken = type(result)(**{**result.__dict__, "delta": bad})
    with pytest.raises(ModelError, match="not physical"):
        write_result(broken, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []
    earlier = tmp_path / "earlier"
    write_result(result, earlier)
    before = tree_digest(earlier)
    with pytest.raises(ModelError):
        write_result(broken, earlier)
    assert tree_digest(earlier) == before  # the earlier result stays whole


def test_atomic_rewrite_keeps_a_users_dot_old_sibling(tmp_path):
    """The old result is moved aside into a fresh temporary directory, never onto a name the user may own."""
    sibling = user_directory(tmp_path / ".out.old")
    before = tree_digest(sibling)
    for text in ("first", "second"):
        atomic_directory(tmp_path / "out", lambda tmp, text=text: (tmp / "a.txt").write_text(text), RESULT)
    assert (tmp_path / "out" / "a.txt").read_text() == "second"
    assert tree_digest(sibling) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.old", "out"]


def test_atomic_directory_removes_its_temporary_on_any_failure(tmp_path):
    def fill(tmp: Path) -> None:
        (tmp / "half.txt").write_text("half")
        raise KeyboardInterrupt  # even an interrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_directory(tmp_path / "out", fill, RESULT)
    assert list(tmp_path.iterdir()) == []


def test_check_written_urdf_refuses_a_urdf_that_is_not_physical(identified, tmp_path):
    run, result, _, _ = identified
    text = run.urdf.read_text().replace('ixx="0.005" ixy="0.001" ixz="0" iyy="0.02" iyz="0" izz="0.02"',
                                        'ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.02"')
    assert text != run.urdf.read_text()
    path = tmp_path / "bad.urdf"
    path.write_text(text)  # l2: A + B < C, no rigid body has it
    with pytest.raises(EstimationError, match=r"fails the full consistency check \(smallest eigenvalue of link l2"):
        check_written_urdf(result, path)
    check_written_urdf(result, run.urdf)  # the URDF's own links are physical


def test_load_parameters_of_what_is_not_a_result(tmp_path):
    with pytest.raises(DataError, match="not an identification result"):
        load_parameters(tmp_path)
    (tmp_path / PARAMETERS_FILE).write_text("links: [1, 2\n")
    with pytest.raises(DataError, match="unreadable parameters file"):
        load_parameters(tmp_path)
    (tmp_path / PARAMETERS_FILE).write_text("links: {}\n")
    with pytest.raises(DataError, match="unreadable parameters file"):
        load_parameters(tmp_path)


def _mujoco_refuses(*args, **kwargs):
    """What the MJCF conversion meets on a description MuJoCo cannot compile: MuJoCo's own error."""
    import mujoco

    return mujoco.MjModel.from_xml_string("<mujoco><worldbody><body><geom type='nonesuch'/></body></worldbody>"
                                          "</mujoco>")


def _figures_fail_after_the_first(monkeypatch):
    """The report's second figure fails (after the first PNG was written): a plotting backend that breaks."""
    from dynid_ros.reporting import plots

    def broken(*args, **kwargs):
        raise RuntimeError("cannot allocate the figure's bitmap\nmore detail")

    monkeypatch.setattr(plots, "plot_link_masses", broken)


@pytest.mark.parametrize("failing", ["mjcf", "figures"])
def test_an_optional_output_that_fails_never_costs_the_result(identified, tmp_path, monkeypatch, failing):
    """identified.xml (MuJoCo refuses) or the readable report (a figure fails halfway): the main result
    (identified.urdf, parameters.yaml, report.json) is written, the failed extra not at all (no half report, no stray
    PNG), one warning line names it and why, report.json lists it under omitted_outputs."""
    from dynid_ros.reporting import result_directory

    _, result, _, _ = identified
    if failing == "mjcf":
        monkeypatch.setattr(result_directory, "identified_mjcf", _mujoco_refuses)
        output, absent = MJCF_FILE, {MJCF_FILE}
    else:
        _figures_fail_after_the_first(monkeypatch)
        output, absent = "report.html", {"report.html", "report.md"}
    out = tmp_path / "result"
    warnings = write_result(result, out)
    mine = [w for w in warnings if w.startswith(f"{output} not written: ")]
    assert len(mine) == 1 and "\n" not in mine[0], warnings
    report = json.loads((out / REPORT_FILE).read_text())
    assert [o["output"] for o in report["omitted_outputs"]] == [output]
    assert report["omitted_outputs"][0]["reason"] == mine[0].split(": ", 1)[1]
    names = {p.name for p in out.iterdir()}
    assert {URDF_FILE, PARAMETERS_FILE, REPORT_FILE} <= names and not names & absent
    if failing == "figures":
        assert not any(n.endswith(".png") for n in names) and report["report_html"] is None
        assert "RuntimeError: cannot allocate the figure's bitmap" == report["omitted_outputs"][0]["reason"]
    else:
        assert "nonesuch" in report["omitted_outputs"][0]["reason"] and (out / "report.html").is_file()
    np.testing.assert_allclose(load_parameters(out)["parameter_vector"]["values"], result.delta)


def test_dynid_identify_says_in_one_line_what_it_could_not_write(identified, tmp_path, monkeypatch, capsys):
    """Through the command a user types: exit 0, the one line, and no claim of a readable report."""
    from dynid_ros.cli.main import main
    from dynid_ros.data.bag_io import write_joint_states

    run = identified[0]
    bag = write_joint_states(tmp_path / "bag", run.series)
    _figures_fail_after_the_first(monkeypatch)
    out = tmp_path / "result"
    assert main(["identify", "--urdf", str(run.urdf), "--bag", str(bag), "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line for line in printed if "not written" in line] == [
        "warning: report.html not written: RuntimeError: cannot allocate the figure's bitmap"]
    assert printed[-1] == f"wrote {out}/"
    assert json.loads((out / REPORT_FILE).read_text())["omitted_outputs"][0]["output"] == "report.html"
