"""What a result directory's readable report holds, read from its report.json."""

from __future__ import annotations

import json
from pathlib import Path

from dynid_ros.pipeline.identification_report import FIGURES


def structure_figure(result: Path) -> list[str]:
    """The residual-vs-state figure's file name when the result flags a joint's residual as structured, else none."""
    diagnostics = json.loads((Path(result) / "report.json").read_text()).get("joint_diagnostics") or []
    return [FIGURES["structure"]] if any(d["structured"] for d in diagnostics) else []
