"""Identify a payload into its own result directory (``dynid identify --payload-link LINK --reference DIR --bag B``):
the body rigidly attached to a link, from a loaded run and the result of the unloaded robot, fully consistent
(Traversaro et al. 2016: the pseudo-inertia LMI and the manifold (m, c, Q, L))."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dynid_ros.data.bag_io import read_joint_states
from dynid_ros.data.output_paths import PAYLOAD, check_output
from dynid_ros.reporting.result_directory import load_parameters
from dynid_ros.variants.frames_identification import FRAMES_FILE, load_frames_result, read_motor_states
from dynid_ros.variants.payload_identification import (
    PayloadResult,
    identify_frames_payload,
    identify_payload,
    write_payload,
)


@dataclass(frozen=True)
class PayloadInputs:
    """A loaded run, the result directory of the unloaded robot and the link that carries the payload."""

    bag: Path
    reference: Path
    link: str
    topic: str | None = None
    start: float | None = None
    end: float | None = None
    solver: str = "clarabel"


def identify_payload_into(out: str | Path, inputs: PayloadInputs) -> tuple[PayloadResult, list[str]]:
    """Identify the payload and write ``payload.yaml`` and ``payload_inertial.xml`` into ``out`` (new, or an
    earlier payload result); the result and the console's lines."""
    out = check_output(out, PAYLOAD, (inputs.bag, inputs.reference))
    if (inputs.reference / FRAMES_FILE).is_file():  # a frames robot (robot.frames; the bag may be a CSV)
        _, config, _ = load_frames_result(inputs.reference)
        series = read_motor_states(inputs.bag, config, inputs.topic or "/joint_states").window(inputs.start,
                                                                                                inputs.end)
        result = identify_frames_payload(series, inputs.reference, inputs.link, inputs.solver)
    else:
        topic = inputs.topic or load_parameters(inputs.reference)["options"].get("topic") or "/joint_states"
        series = read_joint_states(inputs.bag, topic=topic)
        result = identify_payload(series, inputs.reference, inputs.link, inputs.solver, inputs.start, inputs.end)
    write_payload(result, out, (inputs.bag, inputs.reference))
    lines = [f"{fit.solver}: mass {fit.mass:.4g} kg, CoM [{', '.join(f'{v:.4g}' for v in fit.com)}] m in "
             f"{result.link}'s frame; {fit.iterations} iterations, {fit.seconds:.3f} s, status {fit.status}"
             for fit in (result.lmi, result.manifold)]
    return result, lines + [f"wrote {out}/"]
