"""The report a person reads: ``dynid identify`` writes ``report.html`` (self-contained) and
``report.md`` with its PNGs; ``dynid validate --report F`` writes F's HTML beside F; a joint whose residual is a
torque the model lacks (a spring) is flagged; a headless Chromium renders the page as a person would see it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import torques
from dynid_ros.identification.provenance import sha256_path
from dynid_ros.reporting.report_html import is_own_html
from dynid_ros.robot.model import load_model, nominal_parameters

from support.paths import REPO

PANDA_URDF = REPO / "urdf" / "panda.urdf"
SPRING_JOINT = 3  # panda_joint4
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def _motion(t: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A smooth multi-sine motion, analytic derivatives."""
    rng = np.random.default_rng(seed)
    amp, freq = rng.uniform(0.2, 0.5, (3, n)), rng.uniform(0.15, 0.6, (3, n)) * 2 * np.pi
    arg = freq[None] * t[:, None, None] + rng.uniform(0, 2 * np.pi, (3, n))[None]
    return (amp * np.sin(arg)).sum(1), (amp * freq * np.cos(arg)).sum(1), (-amp * freq**2 * np.sin(arg)).sum(1)


@pytest.fixture(scope="module")
def spring_case(tmp_path_factory) -> dict:
    """Panda torques (nominal inertials, friction) plus a spring on joint 4 of 10 % of its gravity torque span
    and 1 % white noise; 20 s at 200 Hz to identify, another motion to validate. Identified
    with the position-dependent torque term off (``model: position_torque: off``), so that the report's flag and
    the data weight of the unmodelled spring are what is shown; with the default, the term models it
    (:func:`test_the_default_models_the_spring_and_the_report_names_it`)."""
    tmp = tmp_path_factory.mktemp("spring")
    model = load_model(urdf=PANDA_URDF)
    layout = model.layout_for()
    truth = nominal_parameters(model, layout)
    for j in range(7):
        truth[layout.joint_index(j, "fv")], truth[layout.joint_index(j, "fc")] = 0.2, 0.3
    t = np.arange(0.0, 20.0, 5e-3)
    mid = model.position_limits.mean(axis=1)
    rng = np.random.default_rng(0)
    bags = {}
    for name, seed in (("train", 1), ("test", 2)):
        q, dq, ddq = _motion(t, 7, seed)
        q = q + mid
        tau = torques(model, layout, truth, q, dq, ddq)
        gravity = torques(model, layout, truth, q, 0 * dq, 0 * ddq)[:, SPRING_JOINT]
        stiffness = 0.1 * np.ptp(gravity) / np.ptp(q[:, SPRING_JOINT])
        tau[:, SPRING_JOINT] += stiffness * (q[:, SPRING_JOINT] - mid[SPRING_JOINT])
        tau += 0.01 * tau.std(axis=0) * rng.standard_normal(tau.shape)
        bags[name] = write_joint_states(tmp / name, JointStateSeries(list(model.joints), t, q, dq, tau))
    out, off = tmp / "result", tmp / "term_off.yaml"
    off.write_text("identification:\n  model: {position_torque: 'off'}\n")  # the spring left unmodelled: flagged
    assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(bags["train"]), "--out", str(out),
                 "--config", str(off)]) == 0
    return {"out": out, "bags": bags, "tmp": tmp}


def test_identify_writes_a_self_contained_html_and_markdown_with_its_pngs(spring_case):
    out = spring_case["out"]
    page = (out / "report.html").read_text()
    assert is_own_html(out / "report.html")
    sources = re.findall(r'src="([^"]*)"', page)
    assert len(sources) == 4 and all(s.startswith("data:image/png;base64,") for s in sources)  # opens offline
    assert "http://" not in page and "https://" not in page
    for section in ("Fit per joint", "Link realism", "Parameters", "Excitation quality", "Provenance"):
        assert f"<h2>{section}" in page
    markdown = (out / "report.md").read_text()
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert sorted(linked) == sorted(["report_fit.png", "report_residual_structure.png", "report_link_masses.png",
                                     "report_coverage.png"])
    for name in linked:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "identified by the data" in markdown and "kept at the prior" in markdown


def test_report_json_names_the_report_the_provenance_and_the_excitation(spring_case):
    out, bag = spring_case["out"], spring_case["bags"]["train"]
    report = json.loads((out / "report.json").read_text())
    assert report["report_html"] == str((out / "report.html").resolve())  # what the node publishes on ~/report
    provenance = report["provenance"]
    assert provenance["inputs"]["bag"] == {"path": str(bag.resolve()), "sha256": sha256_path(bag)}
    assert provenance["inputs"]["urdf"]["sha256"] == sha256_path(PANDA_URDF)
    assert provenance["topic"] == "/joint_states" and provenance["options"]["method"] == "fbpe"
    assert "identify" in provenance["command"] and provenance["dynid_version"] == report["dynid_ros_version"]
    excitation = report["excitation"]
    assert excitation["condition_number"] >= excitation["condition_number_scaled"] >= 1.0
    assert [j["joint"] for j in excitation["joints"]] == report["joints"]
    assert all(0.0 < j["range_share"] < 1.0 and 0.0 < j["speed_share"] for j in excitation["joints"])


def test_the_spring_joint_and_only_it_is_flagged_as_structured(spring_case):
    report = json.loads((spring_case["out"] / "report.json").read_text())
    found = report["joint_diagnostics"]
    flagged = [d["joint"] for d in found if d["structured"]]
    assert flagged == ["panda_joint4"], found
    spring = found[SPRING_JOINT]
    assert spring["explained_by"] == "position" and spring["position_share"] > 0.5
    weight = report["data_weight"]  # model error, not information: the spring joint's data count less (item 4)
    spring_weight = weight["panda_joint4"]
    assert spring_weight["explained_by"] == "position" and spring_weight["structured_share"] > 0.9, weight
    assert max(weight, key=lambda j: weight[j]["structured_share"]) == "panda_joint4", weight
    assert spring_weight["inflation"] > 2 * spring_weight["autocorrelation_time"], weight
    assert all(d["r2"] > 0.9 and d["autocorrelation_time"] >= 1.0 for d in found)
    page = (spring_case["out"] / "report.html").read_text()
    assert "Structured residual on panda_joint4" in page


def test_the_default_models_the_spring_and_the_report_names_it(spring_case):
    """Item 4: with the default (``position_torque: auto``) the flagged joint's spring is modelled by the term the
    cross-validation keeps, and the console's line is in the report a person reads."""
    out = spring_case["tmp"] / "result_auto"
    assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(spring_case["bags"]["train"]), "--out",
                 str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    term = report["position_torque"]["panda_joint4"]
    assert list(report["position_torque"]) == ["panda_joint4"] and term["cross_validation"]["flagged"]
    assert term["cross_validation"]["joint_error_with"] < 0.5 * term["cross_validation"]["joint_error_without"]
    assert not any(d["structured"] for d in report["joint_diagnostics"])  # the spring is modelled, not left over
    line = "panda_joint4: a position-dependent torque (spring/cable) was modelled: cross-validated error"
    assert line in (out / "report.md").read_text() and line in (out / "report.html").read_text()
    off = json.loads((spring_case["out"] / "report.json").read_text())
    assert report["relative_error_per_joint"][SPRING_JOINT] < 0.5 * off["relative_error_per_joint"][SPRING_JOINT]


def test_validate_writes_the_html_beside_the_json_and_never_overwrites_a_foreign_file(spring_case):
    tmp, out = spring_case["tmp"], spring_case["out"]
    report = tmp / "validation.json"
    assert main(["validate", "--result", str(out), "--bag", str(spring_case["bags"]["test"]),
                 "--report", str(report)]) == 0
    assert json.loads(report.read_text())["joint_diagnostics"][SPRING_JOINT]["structured"] is True
    html = tmp / "validation.html"
    assert is_own_html(html) and "Fit per joint (validation data)" in html.read_text()
    assert main(["validate", "--result", str(out), "--bag", str(spring_case["bags"]["test"]),
                 "--report", str(report)]) == 0  # its own files: rewritten
    foreign = tmp / "mine.html"
    foreign.write_text("<html>my notes</html>")
    before = report.read_text()
    code = main(["validate", "--result", str(out), "--bag", str(spring_case["bags"]["test"]),
                 "--report", str(tmp / "mine.json")])
    assert code == 2 and foreign.read_text() == "<html>my notes</html>" and not (tmp / "mine.json").exists()
    assert report.read_text() == before


@pytest.mark.skipif(CHROMIUM is None, reason="needs a headless Chromium (apt-get install chromium)")
def test_a_headless_browser_shows_the_report_as_a_person_would(spring_case, tmp_path):
    """Render report.html in headless Chromium: the screenshot has the window's size, is not blank, and the
    figures are drawn (they are the page's widest colourful areas)."""
    from matplotlib.image import imread

    shot = tmp_path / "report.png"
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          "--window-size=1280,2400", f"--screenshot={shot}",
                          (spring_case["out"] / "report.html").resolve().as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    pixels = imread(shot)[:, :, :3]
    assert pixels.shape[:2] == (2400, 1280)
    ink = np.any(pixels < 0.9, axis=2)
    assert 0.03 < ink.mean() < 0.6, ink.mean()  # text, tables and plots; not blank, not one colour
    colourful = np.ptp(pixels, axis=2) > 0.3  # measured (blue), predicted (orange), residual (red) lines
    assert colourful[600:].mean() > 0.005
    rows_with_ink = np.flatnonzero(ink.any(axis=1))
    assert rows_with_ink[-1] - rows_with_ink[0] > 1800  # the page fills the window: figures are shown


def test_a_tool_the_urdf_lacks_is_reported_as_a_tool_not_absorbed_into_the_links(tmp_path):
    """A 1 kg tool 5 cm beyond the last link's frame, absent from the nominal URDF. The default
    command models it as a body of its own: report.json's unmodelled_load has its mass within 20 %, every link
    stays within [0.5x, 2x] of the truth, and the readable report names it."""
    from dynid_ros.robot.parameters import link_parameters

    model = load_model(urdf=PANDA_URDF)
    layout = model.layout_for()
    truth = nominal_parameters(model, layout)
    for j in range(7):
        truth[layout.joint_index(j, "fv")], truth[layout.joint_index(j, "fc")] = 0.2, 0.3
    truth[layout.link_slice(6)] += link_parameters(1.0, np.array([0.0, 0.0, 0.05]), 1e-4 * np.eye(3))
    t = np.arange(0.0, 20.0, 5e-3)
    q, dq, ddq = _motion(t, 7, 1)
    q = q + model.position_limits.mean(axis=1)
    tau = torques(model, layout, truth, q, dq, ddq)
    tau += 0.01 * tau.std(axis=0) * np.random.default_rng(0).standard_normal(tau.shape)
    bag = write_joint_states(tmp_path / "bag", JointStateSeries(list(model.joints), t, q, dq, tau))
    out = tmp_path / "result"
    assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(bag), "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    load = report["unmodelled_load"]
    assert load is not None and load["link"] == "panda_link7", report["link_realism"]
    assert 0.8 <= load["mass"] <= 1.2 and load["mass_std"] < 0.5, load
    assert all(r["realistic_mass"] for r in report["link_realism"]), report["link_realism"]
    assert "that the URDF lacks" in (out / "report.html").read_text()
