"""A report a person reads: a document of headings, paragraphs, tables and figures, rendered twice.

- :meth:`Document.html`: one self-contained HTML file (styles inline, figures embedded as base64 PNG), which
  opens offline in any browser;
- :meth:`Document.markdown`: markdown that links the PNG files lying beside it.

Table rows can be highlighted (e.g. an unrealistic link, a structured residual); the markdown marks them with
a leading "⚠". The HTML names its generator in a ``<meta>`` tag so that dynid recognizes its own file
(:func:`is_own_html`) and never overwrites anything else.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path

GENERATOR = "dynid_ros report"
"""Content of the ``<meta name="generator">`` of every HTML report."""

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2em auto;max-width:1200px;
color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;border-bottom:2px solid #446;padding-bottom:.2em}
h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6em 0;font-size:.86em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}
th{background:#eef}
td:first-child,th:first-child{text-align:left}
tr.warn td{background:#ffe0d0}
figure{margin:1em 0}
figure img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.9em;color:#555}
code{background:#f4f4f4;padding:0 .2em}
.note{background:#fff6d8;border-left:4px solid #e0a800;padding:.4em .8em}
"""


@dataclass
class Table:
    """A table: ``columns`` and ``rows`` (cells: str or number); rows whose index is in ``highlight`` stand out."""

    columns: list[str]
    rows: list[list[object]]
    highlight: set[int] = field(default_factory=set)


@dataclass
class Figure:
    """A PNG file and its caption."""

    path: Path
    caption: str


@dataclass
class Document:
    """An ordered list of blocks: ("h2", text), ("p", text), ("note", text), ("code", text), Table, Figure."""

    title: str
    blocks: list[object] = field(default_factory=list)

    def heading(self, text: str) -> None:
        """Append a section heading."""
        self.blocks.append(("h2", text))

    def paragraph(self, text: str, note: bool = False) -> None:
        """Append a paragraph (a highlighted note with ``note``)."""
        self.blocks.append(("note" if note else "p", text))

    def code(self, text: str) -> None:
        """Append a preformatted code block."""
        self.blocks.append(("code", text))

    def table(self, columns: list[str], rows: list[list[object]], highlight: set[int] | None = None) -> None:
        """Append a table; the rows whose index is in ``highlight`` stand out."""
        self.blocks.append(Table(columns, rows, set(highlight or ())))

    def figure(self, path: Path, caption: str) -> None:
        """Append a figure: the image at ``path`` with ``caption``."""
        self.blocks.append(Figure(Path(path), caption))

    def html(self) -> str:
        """The self-contained HTML page."""
        body = [f"<h1>{html.escape(self.title)}</h1>"]
        for block in self.blocks:
            if isinstance(block, Table):
                body.append(_html_table(block))
            elif isinstance(block, Figure):
                data = base64.b64encode(block.path.read_bytes()).decode("ascii")
                caption = html.escape(block.caption)
                body.append(f'<figure><img alt="{caption}" src="data:image/png;base64,{data}">'
                            f"<figcaption>{caption}</figcaption></figure>")
            else:
                kind, text = block
                if kind == "h2":
                    body.append(f"<h2>{html.escape(text)}</h2>")
                elif kind == "code":
                    body.append(f"<pre><code>{html.escape(text)}</code></pre>")
                elif kind == "note":
                    body.append(f'<p class="note">{html.escape(text)}</p>')
                else:
                    body.append(f"<p>{html.escape(text)}</p>")
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f'<meta name="generator" content="{GENERATOR}">'
                f"<title>{html.escape(self.title)}</title><style>{STYLE}</style></head>\n<body>\n"
                + "\n".join(body) + "\n</body></html>\n")

    def markdown(self, figure_dir: Path | None = None) -> str:
        """Markdown with figures linked by their path relative to ``figure_dir`` (the markdown's directory)."""
        lines = [f"# {self.title}", ""]
        for block in self.blocks:
            if isinstance(block, Table):
                lines += [_markdown_table(block), ""]
            elif isinstance(block, Figure):
                link = block.path.name if figure_dir is None else block.path.relative_to(figure_dir).as_posix()
                lines += [f"![{block.caption}]({link})", "", f"*{block.caption}*", ""]
            else:
                kind, text = block
                prefix = {"h2": "## ", "note": "> **Note:** ", "p": ""}.get(kind)
                lines += ([f"```\n{text}\n```"] if kind == "code" else [prefix + text]) + [""]
        return "\n".join(lines)


def cell_text(value: object) -> str:
    """A table cell as text: floats with 4 significant digits, None as a dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _html_table(table: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    rows = []
    for i, row in enumerate(table.rows):
        cls = ' class="warn"' if i in table.highlight else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(cell_text(v))}</td>" for v in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _markdown_table(table: Table) -> str:
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    for i, row in enumerate(table.rows):
        cells = [cell_text(v).replace("|", "\\|") for v in row]
        if i in table.highlight:
            cells[0] = "⚠ " + cells[0]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def is_own_html(path: str | Path) -> bool:
    """Whether ``path`` is an HTML report dynid wrote (its generator tag), i.e. one dynid may overwrite."""
    try:
        with Path(path).open(encoding="utf-8") as handle:
            head = handle.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return f'<meta name="generator" content="{GENERATOR}">' in head
