"""``dynid validate``: predict torques with an identified model on (new) recorded data."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dynid_ros.data.bag_stream import scan_joint_states
from dynid_ros.data.output_paths import check_output_file, is_validation_report
from dynid_ros.identification.provenance import provenance
from dynid_ros.reporting.report_html import is_own_html
from dynid_ros.reporting.result_directory import load_parameters
from dynid_ros.reporting.validate import html_path, validate_bag, write_report
from dynid_ros.variants.frames_identification import (
    FRAMES_FILE,
    frames_data,
    frames_data_scan,
    frames_errors,
    frames_streams,
    load_frames_result,
    read_motor_states,
)

NAME = "validate"
HELP = "compare an identified model's torque prediction with recorded effort"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid validate`` arguments."""
    parser.add_argument("--result", required=True, help="output directory of dynid identify")
    parser.add_argument("--bag", required=True, help="rosbag2 with joint states (ideally not used to identify)")
    parser.add_argument("--topic", default=None, help="JointState topic (default: the one used to identify)")
    parser.add_argument("--start", type=float, default=None, help="window start, seconds from the first message")
    parser.add_argument("--end", type=float, default=None, help="window end, seconds from the first message")
    parser.add_argument("--report", required=True, help="report JSON to write (an existing file is overwritten only "
                        "when it is a validation report), with the readable HTML report beside it (same name, "
                        "suffix .html; overwritten only when dynid wrote it)")


def run(args: argparse.Namespace) -> int:
    """Compare the result's torque prediction with the bag's effort, write the JSON and HTML reports; the exit code."""
    check_output_file(args.report, (args.result, args.bag), "--report", is_validation_report, "validation report")
    if (Path(args.result) / FRAMES_FILE).is_file():
        return _validate_frames(args)
    check_output_file(html_path(Path(args.report)), (args.result, args.bag), "--report (its HTML)", is_own_html,
                      "dynid HTML report")
    parameters = load_parameters(Path(args.result))
    topic = args.topic or parameters["options"].get("topic") or "/joint_states"
    result = validate_bag(Path(args.result), args.bag, topic, args.start, args.end)  # streamed
    sources = {"bag": args.bag, "result": Path(args.result) / "parameters.yaml"}
    window = {"topic": topic, "start": args.start, "end": args.end, "result": str(args.result)}
    html = write_report(result, Path(args.report), provenance(window, sources, argv=getattr(args, "argv", None)))
    per_joint = ", ".join(f"{100 * e:.1f}" for e in result.relative_error_per_joint)
    print(f"relative error {100 * result.relative_error:.2f} % over {result.t.size} samples "
          f"(per joint %: {per_joint})")
    print(f"wrote {args.report}" + (f" and {html}" if html else ""))
    return 0


def _validate_frames(args: argparse.Namespace) -> int:
    """A frames robot's result (the bag may be a CSV): relative errors against the recorded torque and, as Wang
    et al. 2019 Table V, against the torque filtered like the fit's."""
    fit, config, processing = load_frames_result(Path(args.result))
    topic = args.topic or "/joint_states"
    in_memory = frames_streams(args.bag)
    if in_memory is None:  # a rosbag2 streamed, as dynid identify streams it
        data = frames_data_scan(fit.robot, scan_joint_states(args.bag, topic), processing, args.start, args.end)
    else:
        print(f"note: {in_memory}")
        data = frames_data(fit.robot, read_motor_states(args.bag, config, topic).window(args.start, args.end),
                           processing)
    error, per_joint = frames_errors(fit, data)
    filtered, filtered_joint = frames_errors(fit, data, filtered=True)
    report = {"relative_error": error, "relative_error_per_joint": per_joint, "joints": list(fit.robot.motors),
              "relative_error_filtered": filtered, "relative_error_filtered_per_joint": filtered_joint}
    path = Path(args.report)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(path)
    print(f"relative error {100 * error:.2f} % (per motor %: {', '.join(f'{100 * e:.1f}' for e in per_joint)})")
    print(f"against the filtered torque {100 * filtered:.2f} % (per motor %: "
          f"{', '.join(f'{100 * e:.1f}' for e in filtered_joint)})")
    print(f"wrote {args.report}")
    return 0
