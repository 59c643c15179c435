"""Benchmark: JointState CDR decoding and encoding of dynid_ros.data.bag_io against rosbags' (de)serializer.

60 s at 1 kHz of a 7-joint arm (60 000 messages), decode-only and encode-only times (no bag I/O),
best of ``--repeat`` runs, after both type stores are built (a once-per-process cost, also printed):
  * decode, one layout (the normal recording): the byte-matrix fast path vs rosbags per message;
  * decode, frame_id of varying length: 40 lengths (40 layouts, fast path), 1000 lengths (60 messages a
    layout: rosbags' deserializer inside dynid_ros), must not be slower than rosbags;
  * decode, big-endian (rosbags' deserializer inside dynid_ros): same as rosbags;
  * encode: ``encode_joint_states`` (one byte matrix) vs rosbags' ``serialize_cdr`` per message.

Run: ``python benchmarks/bench_bag_codec.py [--messages 60000] [--repeat 3]``; prints the numbers and
writes ``benchmarks/results/bag_codec.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rosbags.typesys import Stores, get_typestore

from dynid_ros.data.bag_io import JOINT_STATE_TYPE, decode_messages, encode_joint_states, joint_state_typestore
from dynid_ros.data.joint_states import JointStateSeries

RESULT = Path(__file__).resolve().parent / "results" / "bag_codec.json"


def best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def messages(typestore: object, series: JointStateSeries, frame_id: Callable[[int], str]) -> list[object]:
    js, header, stamp = (typestore.types[t] for t in (JOINT_STATE_TYPE, "std_msgs/msg/Header",
                                                        "builtin_interfaces/msg/Time"))
    ns = np.round(series.t * 1e9).astype(np.int64)
    return [js(header=header(stamp=stamp(sec=int(n // 10**9), nanosec=int(n % 10**9)), frame_id=frame_id(i)),
               name=list(series.names), position=series.position[i], velocity=series.velocity[i],
               effort=series.effort[i]) for i, n in enumerate(ns)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.messages
    rng = np.random.default_rng(0)
    series = JointStateSeries([f"panda_joint{i}" for i in range(1, 8)], 1.7e9 + 1e-3 * np.arange(n),
                              rng.standard_normal((n, 7)), rng.standard_normal((n, 7)), rng.standard_normal((n, 7)))
    start = time.perf_counter()
    plain = get_typestore(Stores.ROS2_HUMBLE)
    ours = joint_state_typestore()
    setup_s = time.perf_counter() - start
    cases = {
        "one_layout": [bytes(plain.serialize_cdr(m, JOINT_STATE_TYPE, little_endian=True))
                       for m in messages(plain, series, lambda i: "")],
        "frame_id_varying_length": [bytes(plain.serialize_cdr(m, JOINT_STATE_TYPE, little_endian=True))
                                    for m in messages(plain, series, lambda i: "f" * (i % 40))],
        "frame_id_rarely_repeated": [bytes(plain.serialize_cdr(m, JOINT_STATE_TYPE, little_endian=True))
                                     for m in messages(plain, series, lambda i: "f" * (i % 1000))],
        "big_endian": [bytes(plain.serialize_cdr(m, JOINT_STATE_TYPE, little_endian=False))
                       for m in messages(plain, series, lambda i: "base_link")],
    }
    for store in (plain, ours):  # generate the deserializers before timing
        store.deserialize_cdr(cases["one_layout"][0], JOINT_STATE_TYPE)
    result: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)", "messages": n,
                    "type_store_setup_s": round(setup_s, 3), "decode": {}, "encode": {}}
    for name, raws in cases.items():
        dynid_s = best(args.repeat, lambda raws=raws: decode_messages(raws, "/joint_states"))
        rosbags_s = best(args.repeat, lambda raws=raws: [plain.deserialize_cdr(r, JOINT_STATE_TYPE) for r in raws])
        fast = decode_messages(raws, "/joint_states").fast
        result["decode"][name] = {"dynid_s": round(dynid_s, 4), "rosbags_s": round(rosbags_s, 4),
                                  "speedup": round(rosbags_s / dynid_s, 2), "fast_path_messages": fast}
        print(f"decode {name:24s} dynid_ros {dynid_s:7.3f} s  rosbags {rosbags_s:7.3f} s  "
              f"x{rosbags_s / dynid_s:5.2f}  fast path {fast}/{n}")
    msgs = messages(plain, series, lambda i: "")
    dynid_s = best(args.repeat, lambda: encode_joint_states(series))
    rosbags_s = best(args.repeat, lambda: [plain.serialize_cdr(m, JOINT_STATE_TYPE) for m in msgs])
    result["encode"] = {"dynid_s": round(dynid_s, 4), "rosbags_s": round(rosbags_s, 4),
                        "speedup": round(rosbags_s / dynid_s, 2)}
    print(f"encode {'one_layout':24s} dynid_ros {dynid_s:7.3f} s  rosbags {rosbags_s:7.3f} s  "
          f"x{rosbags_s / dynid_s:5.2f}")
    print(f"type stores built in {setup_s:.3f} s (once a process)")
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, RESULT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
