"""The collision model of a robot and its workcell: geometry from published URDFs (meshes through package://,
visual fallback, links without geometry named, unreadable meshes refused), the pairs checked, the workcell from the
config, and the clearance scan held to a brute-force evaluation of every sample with coal."""

import logging
import shutil

import coal
import numpy as np
import pytest

from dynid_ros.errors import CollisionError, ConfigError, ModelError
from dynid_ros.robot.collision import collision_model, load_collision_model
from dynid_ros.robot.model import load_model
from dynid_ros.robot.workcell import CollisionSettings

from support.paths import REPO
from support.robots import PANDA_ERD, UR5_ERD, example_robot_urdf

UR10_ERD = "ur_description/urdf/ur10_robot.urdf"


def settings(**section):
    return CollisionSettings.from_config(section or None)


@pytest.fixture(scope="module")
def panda():
    return load_model(urdf=example_robot_urdf(PANDA_ERD))


@pytest.fixture(scope="module")
def panda_collision(panda):
    return load_collision_model(panda, settings())


def test_defaults_are_the_robots_links_the_table_and_two_centimetres():
    s = settings()
    assert s.self_collision and s.margin == 0.02
    assert [(o.name, o.kind) for o in s.environment] == [("table", "plane")]
    assert CollisionSettings.from_config({"environment": []}).environment == ()


@pytest.mark.parametrize("section, match", [
    ({"margins": 0.02}, "unknown key(s) margins"),
    ({"margin": -0.01}, "collision.margin must be"),
    ({"self": "yes"}, "collision.self must be true or false"),
    ({"environment": {"type": "plane"}}, "must be a list of obstacles"),
    ({"environment": [{"type": "cone"}]}, "environment[0]: expected {type: plane|box|cylinder|sphere|mesh"),
    ({"environment": [{"type": "box", "size": [1, 2]}]}, "environment[0].size: expected 3 positive numbers"),
    ({"environment": [{"type": "box", "size": [1, 1, 1], "pose": [0, 0, 0]}]}, "unknown key(s) pose for a box"),
    ({"environment": [{"type": "mesh", "file": "nowhere.stl"}]}, "environment[0].file nowhere.stl: no such file"),
    ({"srdf": "nowhere.srdf"}, "collision.srdf nowhere.srdf: no such file"),
    ({"environment": [{"type": "plane"}, {"type": "plane", "name": "table"}]}, "two obstacles named 'table'"),
])
def test_a_bad_collision_section_is_one_line_naming_the_key(section, match):
    with pytest.raises(ConfigError) as err:
        CollisionSettings.from_config(section)
    assert match in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("relative, bodies", [(PANDA_ERD, 8), (UR5_ERD, 7), (UR10_ERD, 7)])
def test_published_arms_load_their_collision_meshes(relative, bodies):
    model = load_model(urdf=example_robot_urdf(relative))
    collision = load_collision_model(model, settings())
    assert collision.not_checked == ()
    assert {p.body for p in collision.parts} == set(range(bodies))
    assert all(isinstance(p.geometry, (coal.ConvexBase, coal.Box)) for p in collision.parts)  # meshes: hulls
    moving = {p.link for p in collision.parts if p.body != 0}
    assert {r.first for r in collision.rows if r.obstacle} == moving  # the fixed base is not checked against it
    for row in collision.rows:
        if not row.obstacle:
            a, b = collision.parts[row.pairs[0][0]].body, collision.parts[row.pairs[0][1]].body
            assert a != b and collision.kinematic.parents[a] != b and collision.kinematic.parents[b] != a


def test_a_mesh_qhull_finds_nearly_degenerate_gets_its_hull_from_joggled_input():
    """example-robot-data's two-DOF arm: its base mesh (8986 vertices, 4 x 24 x 20 cm) stops qhull's default run
    with a precision error; the hull comes from joggled input ("QJ", qhull's remedy), and it contains every vertex."""
    from dynid_ros.robot.meshes import convex_hull

    urdf = example_robot_urdf("asr_twodof_description/urdf/TwoDofs.urdf")
    mesh_file = next(urdf.parents[1].glob("meshes/**/Base2Dof_4040_m.dae"))
    mesh = coal.MeshLoader().load(str(mesh_file), np.ones(3))
    vertices = np.array(mesh.vertices())
    hull = convex_hull(mesh, str(mesh_file))
    assert isinstance(hull, coal.ConvexBase) and hull.num_points >= 4
    inside = [coal.distance(hull, coal.Transform3s(), coal.Sphere(1e-9), coal.Transform3s(np.eye(3), v),
                            coal.DistanceRequest(), coal.DistanceResult())
              for v in vertices[:: max(1, len(vertices) // 200)]]
    assert max(inside) <= 1e-6  # every (sampled) vertex is in the hull, to the joggle
    model = load_model(urdf=urdf)
    assert load_collision_model(model, settings()).parts  # the arm's collision model loads


def test_the_locked_fingers_are_one_body_with_the_hand(panda_collision):
    bodies = {p.link: p.body for p in panda_collision.parts}
    assert bodies["panda_leftfinger"] == bodies["panda_rightfinger"] == bodies["panda_hand"] == bodies["panda_link7"]
    names = {frozenset((r.first, r.second)) for r in panda_collision.rows}
    assert frozenset(("panda_hand", "panda_leftfinger")) not in names
    assert frozenset(("panda_link6", "panda_link7")) not in names  # parent and child
    assert frozenset(("panda_link5", "panda_link7")) in names


def test_the_srdf_decides_the_pairs_not_checked(panda):
    srdf = example_robot_urdf(PANDA_ERD).parents[1] / "srdf" / "panda.srdf"
    collision = load_collision_model(panda, settings(srdf=str(srdf)))
    disabled = {frozenset((a, b)) for a, b, _ in collision.disabled}
    names = {frozenset((r.first, r.second)) for r in collision.rows if not r.obstacle}
    assert frozenset(("panda_link5", "panda_link7")) in disabled  # "Default" in MoveIt's setup
    assert frozenset(("panda_link0", "panda_link2")) in disabled
    assert frozenset(("panda_hand", "panda_link2")) in names
    assert not disabled & names


def test_pairs_in_contact_at_the_start_pose_are_listed_and_not_checked(panda):
    """Folded so that link 5 is inside link 0 at the start pose (a pose of a colliding excitation): that pair is
    listed, not checked."""
    folded = [0.977, 1.514, -0.101, -2.755, -0.248, 3.416, 1.809]
    collision = load_collision_model(panda, settings(start_pose=folded, environment=[]))
    assert any({a, b} == {"panda_link0", "panda_link5"} and reason == "in contact at the start pose"
               for a, b, reason in collision.disabled)
    assert all({r.first, r.second} != {"panda_link0", "panda_link5"} for r in collision.rows)


def test_a_link_touching_the_table_at_the_start_pose_is_named_and_checked(panda, caplog):
    down = {"panda_joint2": 1.7, "panda_joint4": -0.1}
    with caplog.at_level(logging.WARNING):
        collision = load_collision_model(panda, settings(start_pose=down))
    assert any(t.startswith("panda_leftfinger (table") for t in collision.touching)
    assert "within 2.0 cm of the environment" in caplog.text
    assert any(r.first == "panda_leftfinger" and r.second == "table" for r in collision.rows)


def test_no_environment_and_no_self_check_is_nothing_to_check(panda):
    assert load_collision_model(panda, settings(self=False, environment=[])) is None


def test_package_meshes_are_found_through_package_dir_ros_package_path_and_the_urdfs_folder(tmp_path, monkeypatch):
    robots = example_robot_urdf(PANDA_ERD).parents[2]
    text = (robots / "panda_description" / "urdf" / "panda.urdf").read_text()
    text = text.replace("package://example-robot-data/robots/panda_description/", "package://panda_description/")
    urdf = tmp_path / "elsewhere" / "panda.urdf"
    urdf.parent.mkdir()
    urdf.write_text(text)
    model = load_model(urdf=urdf)
    with pytest.raises(ModelError) as err:
        load_collision_model(model, settings())
    assert "mesh 'package://panda_description/meshes/collision/link0.stl' of link panda_link0" in str(err.value)
    assert "--package-dir" in str(err.value) and "\n" not in str(err.value)
    assert load_collision_model(model, CollisionSettings.from_config(None, package_dirs=[robots])).parts
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(robots))
    assert load_collision_model(model, settings()).parts
    monkeypatch.delenv("ROS_PACKAGE_PATH")
    beside = tmp_path / "ws" / "panda_description" / "urdf" / "panda.urdf"  # the URDF inside its own package
    shutil.copytree(robots / "panda_description" / "meshes", beside.parents[1] / "meshes")
    beside.parent.mkdir()
    beside.write_text(text)
    assert load_collision_model(load_model(urdf=beside), settings()).parts


def test_an_unreadable_mesh_is_an_error_naming_the_file(tmp_path):
    meshes = tmp_path / "meshes"
    shutil.copytree(example_robot_urdf(UR5_ERD).parents[1] / "meshes" / "ur5" / "collision", meshes)
    (meshes / "forearm.stl").write_bytes(b"solid broken\nfacet normal 0 0 1\nouter loop\nvertex 0 0\n")
    text = example_robot_urdf(UR5_ERD).read_text().replace(
        "package://example-robot-data/robots/ur_description/meshes/ur5/collision/", "meshes/")
    urdf = tmp_path / "ur5.urdf"
    urdf.write_text(text)
    with pytest.raises(ModelError) as err:
        load_collision_model(load_model(urdf=urdf), settings())
    assert "forearm.stl" in str(err.value) and "\n" not in str(err.value)


def test_visual_geometry_stands_in_and_links_with_neither_are_named(tmp_path, caplog):
    """One link has only a visual box (it is used), one has mass and no geometry (named), tool0 is a frame."""
    urdf = tmp_path / "arm.urdf"
    urdf.write_text("""<robot name="arm">
  <link name="base"><collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>
    </inertial><visual><origin xyz="0 0 0.2"/><geometry><box size="0.05 0.05 0.4"/></geometry></visual></link>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.4"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="10" velocity="2"/></joint>
  <link name="l2"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>
    </inertial></link>
  <joint name="f" type="fixed"><parent link="l2"/><child link="tool0"/><origin xyz="0 0 0.3"/></joint>
  <link name="tool0"/>
</robot>""")
    with caplog.at_level(logging.WARNING):
        collision = load_collision_model(load_model(urdf=urdf), settings())
    assert collision.not_checked == ("l2",)
    assert "not checked for collision: l2" in caplog.text
    assert {p.link for p in collision.parts} == {"base", "l1"}
    assert collision.summary(None)["not_checked"] == ["l2"]


def test_a_dh_robot_has_no_geometry_and_says_so(caplog):
    model = load_model(dh=REPO / "test" / "files" / "kr5_dh.yaml")
    with caplog.at_level(logging.WARNING):
        collision = load_collision_model(model, settings())
    assert collision.rows == [] and len(collision.not_checked) == model.n_dof
    assert "a robot without a URDF has no geometry" in caplog.text


def test_obstacles_of_every_kind_are_in_the_base_frame(panda):
    """Each kind at its xyz/rpy; the hand's distance to a box grows as the box moves away along x."""
    here = REPO / "urdf" / "meshes" / "panda" / "collision" / "link0.stl"
    s = settings(environment=[
        {"type": "box", "name": "near", "size": [0.2, 0.2, 0.2], "xyz": [1.0, 0.0, 0.5]},
        {"type": "box", "name": "far", "size": [0.2, 0.2, 0.2], "xyz": [1.3, 0.0, 0.5]},
        {"type": "cylinder", "name": "post", "radius": 0.05, "length": 1.0, "xyz": [-0.9, 0.0, 0.5]},
        {"type": "sphere", "name": "ball", "radius": 0.1, "xyz": [0.0, 0.9, 0.5]},
        {"type": "mesh", "name": "fixture", "file": str(here), "xyz": [0.0, -0.9, 0.3], "rpy": [0, 0, 1.0]},
        {"type": "plane", "name": "wall", "normal": [1, 0, 0], "offset": -1.2}])
    collision = load_collision_model(panda, s)
    assert collision.touching == ()
    obstacles = {o.name: o for o in collision.obstacles}
    assert obstacles["post"].placement.translation.tolist() == [-0.9, 0.0, 0.5]
    assert obstacles["fixture"].placement.rotation == pytest.approx(
        np.array([[np.cos(1), -np.sin(1), 0], [np.sin(1), np.cos(1), 0], [0, 0, 1]]))
    assert isinstance(obstacles["fixture"].geometry, coal.ConvexBase)
    assert isinstance(obstacles["ball"].geometry, coal.Sphere)
    assert obstacles["wall"].geometry.n.tolist() == [1, 0, 0] and obstacles["wall"].geometry.d == -1.2
    found = {c.row.name: c.distance for c in collision.scan(collision.reference[None, :], np.zeros((1, 7)), 1.0,
                                                                  floor=None)}
    assert 0 < found["panda_hand and near"] < found["panda_hand and far"] - 0.29
    assert found["panda_hand and far"] - found["panda_hand and near"] == pytest.approx(0.3, abs=0.02)


# --- the scan against brute force -------------------------------------------------------------------------

def _brute_force(collision, q, rows):
    """Every sample, every pair of parts, with coal: the smallest distance of each row and its sample."""
    kin = collision.kinematics(q)
    out = []
    for r in rows:
        row = collision.rows[r]
        best = (np.inf, -1)
        for i, j in row.pairs:
            for s in range(len(q)):
                ri, ti = collision.part_placement(kin, i, s)
                if row.obstacle:
                    o = collision.obstacles[j]
                    rj, tj, gj = o.placement.rotation, o.placement.translation, o.geometry
                else:
                    (rj, tj), gj = collision.part_placement(kin, j, s), collision.parts[j].geometry
                d = coal.distance(collision.parts[i].geometry, coal.Transform3s(ri, ti), gj, coal.Transform3s(rj, tj),
                                  coal.DistanceRequest(), coal.DistanceResult())
                best = min(best, (d, s))
        out.append(best)
    return out


@pytest.mark.parametrize("relative", [PANDA_ERD, UR5_ERD])
def test_the_scan_finds_every_rows_minimum_that_matters(relative):
    """A fast random motion at 200 Hz: where a row comes within the margin plus the floor its minimum is the brute
    force minimum (same sample); elsewhere the scan's value is above that line and the true minimum too."""
    model = load_model(urdf=example_robot_urdf(relative))
    collision = load_collision_model(model, settings())
    rng = np.random.default_rng(3)
    t = np.arange(600) / 200.0
    lim = np.asarray(model.position_limits)
    centre, half = lim.mean(axis=1), 0.4 * (lim[:, 1] - lim[:, 0]) / 2
    q = centre + half * np.sin(2 * np.pi * (0.2 + rng.uniform(0, 0.3, model.n_dof)) * t[:, None]
                               + rng.uniform(0, 6, model.n_dof))
    dq = np.gradient(q, t, axis=0)
    rows = list(range(0, len(collision.rows), 3))
    floor = 0.05
    found = collision.scan(q, dq, 1 / 200.0, floor=floor, rows=rows)
    brute = _brute_force(collision, q, rows)
    assert any(d < collision.rows[r].margin + floor for r, (d, _) in zip(rows, brute))
    for r, c, (d, s) in zip(rows, found, brute):
        if d < collision.rows[r].margin + floor:
            assert c.distance == pytest.approx(d, abs=1e-9) and c.index == s, collision.rows[r].name
        else:
            assert c.distance >= d - 1e-9


def test_distance_gradients_match_finite_differences(panda_collision):
    q0 = panda_collision.reference + np.array([0.3, 0.9, -0.2, -0.6, 0.4, 0.2, 0.1])
    q = q0[None, :]
    kin, rows = panda_collision.scan_windows(q, np.zeros_like(q), 1.0, floor=1.0)
    checked = 0
    for found in (w[0] for w in rows):
        if found.points is None or not 0.01 < found.distance < 0.3:
            continue
        witness = found.near[0] if found.near else None
        from dynid_ros.robot.clearance import Witness

        witness = witness or Witness(found.distance, 0, found.part, found.other, found.points[0], found.points[1],
                                     found.normal)
        grad = panda_collision.distance_gradients([witness], kin, found.row.obstacle)[0]
        step = 1e-6
        numeric = []
        for k in range(7):
            dq_ = np.zeros(7)
            dq_[k] = step
            up = panda_collision.scan((q0 + dq_)[None, :], np.zeros((1, 7)), 1.0, floor=None,
                                      rows=[panda_collision.rows.index(found.row)])[0].distance
            down = panda_collision.scan((q0 - dq_)[None, :], np.zeros((1, 7)), 1.0, floor=None,
                                        rows=[panda_collision.rows.index(found.row)])[0].distance
            numeric.append((up - down) / (2 * step))
        assert grad == pytest.approx(numeric, abs=2e-4), found.row.name
        checked += 1
    assert checked >= 10


def test_the_check_names_the_pair_the_time_and_the_depth(panda_collision):
    """The hand swung down through the table: one line, the deepest point."""
    t = np.arange(2001) / 1000.0
    q = np.tile(panda_collision.reference, (len(t), 1))
    q[:, 1] = 1.7 * np.sin(np.pi * t / 2) ** 2
    q[:, 3] = -0.1
    dq = np.gradient(q, t, axis=0)
    with pytest.raises(CollisionError) as err:
        panda_collision.check(t, q, dq)
    message = str(err.value)
    assert "and table intersect" in message and "cm deep at t = 1.000 s" in message and "\n" not in message
    assert err.value.time_s == pytest.approx(1.0)


def test_the_shipped_robots_have_collision_meshes_and_their_configs_the_table():
    from dynid_ros.robot.config import load_config

    for robot in ("panda", "ur5e"):
        model = load_model(urdf=REPO / "urdf" / f"{robot}.urdf")
        collision = collision_model(model, load_config(REPO / "config" / f"{robot}.yaml"))
        assert collision.not_checked == () and collision.touching == ()
        assert [o.name for o in collision.obstacles] == ["table"]
        assert {p.link for p in collision.parts} >= {name for name in model.links if name}
