"""Fleet batches: one identification per bag, on a Dask distributed cluster (``dynid batch``).

Why Dask distributed rather than Ray: both schedule Python functions on worker processes of one machine or many,
with futures, ``as_completed`` and a client that attaches to a running cluster by address. For this job, bags of
seconds to minutes of CPU each, independent, a few to a few hundred per night, the differences that matter are
operational: ``distributed`` is pure Python, installs from PyPI as a small wheel set with no binary of its own
(Ray ships a ~70 MB wheel per platform and Python version, with its own object store and dashboard processes), and
its ``LocalCluster`` starts two worker processes in 1-2 s on this machine (Ray's local ``init`` takes several
seconds and starts a GCS, a raylet and a dashboard). Dask's nannies also pin every worker's BLAS/OpenMP to one
thread, so two workers on two cores do not oversubscribe. What Ray does better (actors, GPU scheduling, a shared
object store for large arrays) this job does not use: a task takes a bag path and returns a small summary record.

A task is :func:`run_job`: identify from the bag into its result directory as ``dynid identify`` does
(:func:`dynid_ros.workflow.identify_run.identify_into`, the bag streamed), and return a summary record; it never
raises for a bad bag (its error becomes the record's ``error``), so one failing bag never stops the others. Workers
of an existing cluster (``--address``) need dynid_ros importable and the bags and URDF at the same paths (a shared
file system).

The bags of a batch share their hyperparameters: runs of one robot are compared (``dynid drift``), and a change
between them must come from the data, not from an estimator that chose another prior for each run. Where the
evidence would choose the prior's scales per bag (:func:`shares_chosen_hyperparameters`), the first bag given is
identified first, alone (the reference; the next one if it fails), and every bag is identified with the scales its
estimate used (``hyperparameter_scales``, :func:`dynid_ros.estimation.hyperparameters.used_scales`) as runs share
them (:func:`dynid_ros.estimation.hyperparameters.shared_scales`: no group tighter than stated, so that
a friction change or a payload is not held back or pushed into links that did not change; the reference is
identified again when that widened its scales), the noise per joint still chosen per bag. Measured on the nightly
runs of test/fleet/test_drift.py: chosen per bag, the mass scale went from x0.26 to x1.92 when a payload came on
and link 2's mass moved to link 3 (1.52 -> 0.78 kg).

``DIR/summary.json``: ``{"bags": [record...], "n_ok", "n_failed", "workers", "address", "elapsed_s", "options",
"hyperparameters"}`` (``hyperparameters``: ``source`` ``reference bag`` or ``given``, ``reference`` bag,
``scales``; None without the prior's groups); a record has ``bag``, ``result`` (its result directory), ``status``
(``ok`` or ``failed``), ``error``, ``relative_error``, ``link_masses`` ({link: kg}), ``friction`` ({joint: {fv, fc,
fo}}), ``time_s``, ``stamp`` (the bag's first sample, seconds since the epoch) and ``hyperparameter_scales``.
``DIR/summary.csv``: the same, one row per bag, flattened
(``mass.<link>``, ``<term>.<joint>``).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import logging
import os
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from dynid_ros.data.output_paths import BATCH, BATCH_SUMMARY, RESULT, check_output, mark
from dynid_ros.errors import ConfigError, DynidError, MissingDependencyError
from dynid_ros.estimation.hyperparameters import shared_scales, used_scales
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.robot.parameters import FRICTION_SYMBOLS
from dynid_ros.workflow.identify_run import RunInputs, identify_into

FLEET_EXTRA = "dynid_ros[fleet]"
"""The pip extra that installs Dask distributed (``setup.py`` ``extras_require``)."""
SUMMARY_JSON = BATCH_SUMMARY
SUMMARY_CSV = "summary.csv"
SUMMARY_FRICTION = tuple(FRICTION_SYMBOLS.values())
"""The linear friction terms a summary reports per joint (``fv``, ``fc``, ``fo``)."""


@dataclass
class BagJob:
    """One bag of a batch: where it is, where its result goes, and the robot and options to identify it with."""

    bag: str
    out: str
    urdf: str
    options: IdentificationOptions
    xacro_args: list[str] | None = None


def run_job(job: BagJob) -> dict:
    """Identify one bag into its result directory as ``dynid identify`` does
    (:func:`~dynid_ros.workflow.identify_run.identify_into`); the summary record (module docstring). Never raises
    for a problem of the bag or of the identification: the record says ``failed`` and why."""
    start = time.perf_counter()
    record = {"bag": job.bag, "result": job.out, "status": "failed", "error": None, "relative_error": None,
              "link_masses": {}, "friction": {}, "time_s": None, "stamp": None, "hyperparameter_scales": None}
    try:
        inputs = RunInputs(bag=Path(job.bag), urdf=Path(job.urdf), xacro_args=tuple(job.xacro_args or ()))
        result = identify_into(job.out, inputs, options=job.options).result
        record["stamp"] = result.recording_start_s
        layout = result.layout
        record["relative_error"] = float(result.relative_error)
        record["link_masses"] = result.link_masses()
        record["friction"] = {joint: {t: float(result.delta[layout.joint_index(j, t)])
                                      for t in SUMMARY_FRICTION if t in layout.joint_terms}
                              for j, joint in enumerate(layout.joints)}
        record["hyperparameter_scales"] = None if result.hyperparameters is None else \
            used_scales(result.hyperparameters)
        record["status"] = "ok"
    except DynidError as err:
        record["error"] = str(err)
    except Exception as err:  # noqa: BLE001 - any failure of one bag is reported and the batch goes on
        last = traceback.extract_tb(err.__traceback__)[-1]
        record["error"] = f"{type(err).__name__}: {err} ({Path(last.filename).name}:{last.lineno})"
    record["time_s"] = time.perf_counter() - start
    return record


def result_directory_per_bag(bags: Sequence[str | Path], out: Path) -> list[Path]:
    """One result directory per bag under ``out``, named after the bag (``_2``, ``_3`` ... for repeated names)."""
    names: dict[str, int] = {}
    dirs = []
    for bag in bags:
        stem = Path(bag).name.removesuffix(".mcap").removesuffix(".db3") or "bag"
        names[stem] = names.get(stem, 0) + 1
        dirs.append(out / (stem if names[stem] == 1 else f"{stem}_{names[stem]}"))
    return dirs


def plan_batch(bags: Sequence[str | Path], out: str | Path, urdf: str | Path, options: IdentificationOptions,
               xacro_args: list[str] | None = None) -> list[BagJob]:
    """The jobs of a batch, after refusing an ``out`` (or a result directory in it) that would lose data.

    ``out`` must be new or an earlier batch; each result directory new or an earlier result."""
    if not bags:
        raise ConfigError("--bags: give at least one bag")
    missing = [str(b) for b in bags if not Path(b).exists()]
    if missing:
        raise ConfigError(f"--bags: no such bag: {', '.join(missing)}")
    inputs = [*map(str, bags), str(urdf)]
    root = check_output(out, BATCH, inputs)
    dirs = result_directory_per_bag(bags, root)
    for directory in dirs:
        check_output(directory, RESULT, inputs, flag="result directory")
    root.mkdir(parents=True, exist_ok=True)
    mark(root, BATCH)
    return [BagJob(str(Path(b).resolve()), str(d), str(Path(urdf).resolve()), options, xacro_args)
            for b, d in zip(bags, dirs)]


def require_dask() -> None:
    """MissingDependencyError, one line naming the extra to install, when Dask distributed is not importable: it is
    an optional dependency (``pip install 'dynid_ros[fleet]'``), not installed by a plain ``pip install .``."""
    try:
        import dask.distributed  # noqa: F401 - only checked here; run_batch imports what it uses
    except ImportError as err:
        raise MissingDependencyError(f"dynid batch runs on Dask distributed, which is not installed ({err}): "
                                     f"pip install '{FLEET_EXTRA}'") from err


def run_batch(jobs: list[BagJob], workers: int | None = None, address: str | None = None,
              on_done: Callable[[dict], None] | None = None) -> list[dict]:
    """Run ``jobs`` on a Dask cluster: a new local one with ``workers`` single-threaded worker processes, or the
    running one at ``address``; records in the order of ``jobs``. ``on_done`` is called as each bag finishes."""
    require_dask()
    from dask.distributed import Client, LocalCluster, as_completed  # heavy optional dependency (extra 'fleet')

    if address:
        try:
            client = Client(address, timeout="10s")
        except (OSError, TimeoutError, ValueError) as err:
            raise connect_error(address, err) from err
        cluster = None
    else:
        n = max(1, workers or min(len(jobs), os.cpu_count() or 1))
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR)
        client = Client(cluster)
    records: dict[int, dict] = {}

    def run(indices: list[int], report: bool = True) -> None:
        futures = {client.submit(run_job, jobs[i], pure=False, key=f"dynid-bag-{i}-{time.time_ns()}"): i
                   for i in indices}
        for future in as_completed(futures):
            i = futures[future]
            try:
                records[i] = future.result()
            except Exception as err:  # noqa: BLE001 - a lost worker fails its bag, not the batch
                records[i] = {"bag": jobs[i].bag, "result": jobs[i].out, "status": "failed",
                              "error": f"{type(err).__name__}: {err}", "relative_error": None, "link_masses": {},
                              "friction": {}, "time_s": None, "stamp": None, "hyperparameter_scales": None}
            if on_done is not None and report:
                on_done(records[i])

    try:
        rest = list(range(len(jobs)))
        while rest and shares_chosen_hyperparameters(jobs[rest[0]].options):  # the reference first, alone
            first = rest.pop(0)
            run([first], report=False)
            if records[first]["status"] != "ok":
                if on_done is not None:
                    on_done(records[first])
                continue  # a bag that failed is no reference: the next one is
            used = records[first]["hyperparameter_scales"]
            scales = None if used is None else shared_scales(used)
            if scales is not None:
                jobs = [job if i not in rest and (i != first or scales == used) else dataclasses.replace(
                    job, options=dataclasses.replace(job.options, hyperparameter_scales=scales))
                    for i, job in enumerate(jobs)]
            if scales is not None and scales != used:  # its own estimate again, with the scales the others share
                rest.insert(0, first)
            elif on_done is not None:
                on_done(records[first])
            break
        run(rest)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return [records[i] for i in range(len(jobs))]


def shares_chosen_hyperparameters(options: IdentificationOptions) -> bool:
    """Whether a batch with ``options`` identifies its reference bag first and gives the others the prior scales
    its estimate used (module docstring): when they would otherwise be chosen per bag by the evidence (FBPE with
    the nominal prior, ``hyperparameters: evidence``, no ``hyperparameter_scales`` given)."""
    return (options.method == "fbpe" and options.prior == "nominal" and options.hyperparameters == "evidence"
            and options.hyperparameter_scales is None)


def connect_error(address: str, err: Exception) -> ConfigError:
    """The one-line error of an unreachable ``--address``."""
    return ConfigError(f"--address {address}: no Dask scheduler reachable there ({type(err).__name__}: {err})")


def summary(records: list[dict], workers: int | None, address: str | None, elapsed_s: float,
            options: IdentificationOptions) -> dict:
    """The ``summary.json`` content (module docstring)."""
    n_ok = sum(r["status"] == "ok" for r in records)
    return {"bags": records, "n_ok": n_ok, "n_failed": len(records) - n_ok, "workers": workers, "address": address,
            "elapsed_s": elapsed_s, "options": {k: v for k, v in asdict(options).items() if k != "pbpr"},
            "hyperparameters": shared_hyperparameters(records, options)}


def shared_hyperparameters(records: list[dict], options: IdentificationOptions) -> dict | None:
    """``summary.json`` ``hyperparameters``: the prior scales the batch's bags share and where they came from
    (``reference``: the bag whose evidence chose them, or ``given``); None when no bag used the prior's groups."""
    if options.hyperparameter_scales is not None:
        return {"source": "given", "reference": None, "scales": dict(options.hyperparameter_scales)}
    for r in records:
        if r["status"] == "ok" and r.get("hyperparameter_scales") is not None:
            return {"source": "reference bag", "reference": r["bag"], "scales": r["hyperparameter_scales"]}
    return None


def csv_text(records: list[dict]) -> str:
    """``summary.csv``: one row per bag, the nested fields flattened (module docstring)."""
    masses = sorted({link for r in records for link in r["link_masses"]}, key=_first_seen(records, "link_masses"))
    joints = sorted({j for r in records for j in r["friction"]}, key=_first_seen(records, "friction"))
    columns = ["bag", "status", "relative_error", "time_s", *(f"mass.{link}" for link in masses),
               *(f"{t}.{j}" for j in joints for t in SUMMARY_FRICTION), "result", "error"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in records:
        row = {k: r.get(k) for k in ("bag", "status", "relative_error", "time_s", "result", "error")}
        row.update({f"mass.{link}": m for link, m in r["link_masses"].items()})
        row.update({f"{t}.{j}": v for j, terms in r["friction"].items() for t, v in terms.items()})
        writer.writerow(row)
    return buffer.getvalue()


def _first_seen(records: list[dict], field: str) -> Callable[[str], int]:
    order: dict[str, int] = {}
    for r in records:
        for name in r[field]:
            order.setdefault(name, len(order))
    return order.__getitem__


def write_summary(out: Path, content: dict) -> None:
    """Write ``summary.json`` and ``summary.csv`` into ``out`` (made by :func:`plan_batch`), each atomically."""
    for name, text in ((SUMMARY_JSON, json.dumps(content, indent=2) + "\n"), (SUMMARY_CSV,
                                                                                csv_text(content["bags"]))):
        with tempfile.NamedTemporaryFile("w", dir=out, prefix=f".{name}.", delete=False) as tmp:
            tmp.write(text)
        os.replace(tmp.name, out / name)
