"""What a result directory holds: its readable report's files, its parameters' numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dynid_ros.reporting.identification_report import FIGURES


def structure_figure(result: Path) -> list[str]:
    """The residual-vs-state figure's file name when the result flags a joint's residual as structured, else none."""
    diagnostics = json.loads((Path(result) / "report.json").read_text()).get("joint_diagnostics") or []
    return [FIGURES["structure"]] if any(d["structured"] for d in diagnostics) else []


def parameter_numbers(parameters: dict) -> np.ndarray:
    """Every number of parameters.yaml's parameter sections (links, joints, base parameters), in a fixed order."""
    out: list[float] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key in sorted(value):
                walk(value[key])
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append(float(value))

    walk({k: v for k, v in parameters.items() if k in ("links", "joints", "base_parameters", "parameters")})
    return np.array(out)
