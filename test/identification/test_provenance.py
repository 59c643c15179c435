"""Where a result came from: SHA-256 of files and of bag directories against hashlib, the command line as typed,
and the provenance record of options given as a dataclass or a mapping, plain enough for JSON."""

from __future__ import annotations

import hashlib
import json
import shlex

from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.identification.provenance import command_line, provenance, sha256_path, sha256_text


def test_sha256_of_a_file_is_hashlibs(tmp_path):
    path = tmp_path / "robot.urdf"
    content = b"<robot name='r'/>" * 100_000  # larger than one read chunk
    path.write_bytes(content)
    assert sha256_path(path) == hashlib.sha256(content).hexdigest()
    assert sha256_path(str(path)) == sha256_path(path)


def test_sha256_of_a_directory_covers_names_and_contents(tmp_path):
    bag = tmp_path / "bag"
    (bag / "sub").mkdir(parents=True)
    (bag / "metadata.yaml").write_text("version: 8\n")
    (bag / "bag_0.mcap").write_bytes(b"\x00\x01" * 10)
    (bag / "sub" / "x").write_bytes(b"x")
    expected = hashlib.sha256()
    for name in ("bag_0.mcap", "metadata.yaml", "sub/x"):  # relative names in order
        expected.update(name.encode() + b"\0" + (bag / name).read_bytes())
    assert sha256_path(bag) == expected.hexdigest()
    before = sha256_path(bag)
    (bag / "bag_0.mcap").rename(bag / "bag_1.mcap")  # a renamed file is another input
    assert sha256_path(bag) != before
    assert sha256_path(tmp_path / "absent") is None


def test_sha256_of_a_text():
    assert sha256_text("<robot/>") == hashlib.sha256(b"<robot/>").hexdigest()
    assert sha256_text(None) is None


def test_command_line_as_typed():
    argv = ["/usr/lib/dynid_ros/dynid", "identify", "--bag", "my run", "--start", "1.5"]
    line = command_line(argv)
    assert line == "dynid identify --bag 'my run' --start 1.5"
    assert shlex.split(line)[1:] == argv[1:]  # pasting it back gives the same arguments


def test_provenance_of_dataclass_options(tmp_path):
    urdf = tmp_path / "arm.urdf"
    urdf.write_text("<robot/>")
    options = IdentificationOptions(friction=("viscous",), start=1.0, end=5.0, topic="/arm/joint_states")
    record = provenance(options, {"urdf": urdf, "bag": None, "config": ""}, "<robot/>", ["dynid", "identify"])
    assert record["command"] == "dynid identify"
    assert record["inputs"] == {"urdf": {"path": str(urdf.resolve()),
                                         "sha256": hashlib.sha256(b"<robot/>").hexdigest()}}  # absent ones left out
    assert record["urdf_sha256"] == hashlib.sha256(b"<robot/>").hexdigest()
    assert record["topic"] == "/arm/joint_states" and record["window"] == {"start": 1.0, "end": 5.0}
    assert record["options"]["friction"] == ["viscous"]  # a tuple made a list
    assert json.loads(json.dumps(record)) == record  # plain JSON


def test_provenance_of_a_mapping_and_of_nothing():
    record = provenance({"topic": "/js", "bounds": {"total_mass": (1, 2)}}, {}, argv=["x"])
    assert record["options"] == {"topic": "/js", "bounds": {"total_mass": [1, 2]}}
    assert record["window"] == {"start": None, "end": None} and record["urdf_sha256"] is None
    assert provenance(None, {}, argv=["x"])["options"] == {}
