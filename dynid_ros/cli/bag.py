"""``dynid bag``: inspect a rosbag2 (``info``) or make a bag whose recorder died readable (``repair``)."""

from __future__ import annotations

import argparse
import json

from dynid_ros.data.bag_io import bag_info, repair_bag

NAME = "bag"
HELP = "inspect or repair a rosbag2 (info, repair)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid bag`` subcommands and their arguments: ``info`` and ``repair``."""
    sub = parser.add_subparsers(dest="bag_command", metavar="SUBCOMMAND", required=True,
                                parser_class=type(parser))
    info = sub.add_parser("info", help="topics, message counts and duration", description="topics, message "
                          "counts and duration of a rosbag2 directory or .mcap/.db3 file")
    info.add_argument("path", help="bag directory or file")
    info.add_argument("--json", action="store_true", help="print JSON")
    repair = sub.add_parser("repair", help="write the readable messages of a bag whose recorder was killed to a new "
                            "bag (like ros2 bag reindex; the damaged bag is never changed)",
                            description="recover the readable messages of a bag whose recorder was killed into a new "
                                        "bag beside it (sqlite3: a copy of the database with metadata.yaml; mcap: "
                                        "every readable chunk, lz4/zstd/uncompressed, read by the mcap library); "
                                        "the damaged bag is only read, never changed or deleted")
    repair.add_argument("path", help="bag directory")
    repair.add_argument("--out", default=None, help="the new bag directory (must not exist; default: PATH_repaired)")
    repair.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    """Print a bag's topics, counts and duration, or repair it into a new bag; the exit code."""
    if args.bag_command == "info":
        info = bag_info(args.path)
        if args.json:
            print(json.dumps(info, indent=2))
            return 0
        print(f"bag:      {info['path']} ({info['storage']})")
        print(f"duration: {info['duration_s']:.3f} s" + (f" from {info['start_s']:.9f} s" if info["start_s"] else ""))
        print(f"messages: {info['message_count']}")
        for topic, msgtype in sorted(info["topics"].items()):
            print(f"  {topic}  {msgtype}  {info['messages'].get(topic, 0)}")
        return 0
    report = repair_bag(args.path, args.out)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['path']} ({report['storage']}): {report['action']}")
    if report["out"]:
        print(f"recovered {report['message_count']} message(s) into {report['out']}"
              + (f"; discarded {report['discarded_bytes']} unreadable byte(s)" if report["discarded_bytes"] else ""))
    for topic, count in sorted(report["messages"].items()):
        print(f"  {topic}  {count}")
    if report["damage"]:
        print(f"reading stopped at: {report['damage']}")
    for skipped in report["skipped"]:
        count = "" if skipped["messages"] is None else f" ({skipped['messages']} message(s))"
        print(f"skipped {skipped['what']}{count}: {skipped['reason']}")
    return 0
