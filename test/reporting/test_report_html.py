"""The report document: the same headings, paragraphs, tables and figures rendered as self-contained HTML (read
back by an HTML parser) and as markdown; highlighted rows; escaping; dynid's own HTML recognised, nothing else."""

from __future__ import annotations

import base64
from html.parser import HTMLParser
from pathlib import Path

from dynid_ros.reporting.report_html import GENERATOR, Document, cell_text, is_own_html

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))


class _Page(HTMLParser):
    """What a browser would see: text per element, table rows with their class, images' sources and alt texts."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.text: dict[str, list[str]] = {}
        self.rows: list[tuple[str | None, list[str]]] = []
        self.images: list[dict[str, str]] = []
        self.meta: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "tr":
            self.rows.append((attributes.get("class"), []))
        elif tag == "img":
            self.images.append(attributes)
        elif tag == "meta" and "name" in attributes:
            self.meta[attributes["name"]] = attributes["content"]
        if tag not in ("img", "meta"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_data(self, data):
        if self.stack:
            self.text.setdefault(self.stack[-1], []).append(data)
            if self.stack[-1] in ("td", "th") and self.rows:
                self.rows[-1][1].append(data)


def _document(tmp_path: Path) -> Document:
    (tmp_path / "figs").mkdir()
    figure = tmp_path / "figs" / "fit.png"
    figure.write_bytes(PNG)
    doc = Document("Identification of <arm> & co")
    doc.heading("Links")
    doc.paragraph("Masses in kg.")
    doc.paragraph("A tool the URDF lacks", note=True)
    doc.table(["link", "mass", "ok"], [["l1", 2.000049, True], ["l|2", None, False]], highlight={1})
    doc.code("dynid identify --bag x")
    doc.figure(figure, "fit <per joint>")
    return doc


def test_html_is_self_contained_and_shows_every_block(tmp_path):
    page = _Page()
    page.feed(_document(tmp_path).html())
    assert page.meta["generator"] == GENERATOR
    assert page.text["title"] == ["Identification of <arm> & co"] and page.text["h1"] == page.text["title"]
    assert page.text["h2"] == ["Links"] and page.text["code"] == ["dynid identify --bag x"]
    assert page.text["p"] == ["Masses in kg.", "A tool the URDF lacks"]
    assert page.rows == [(None, ["link", "mass", "ok"]), (None, ["l1", "2", "yes"]), ("warn", ["l|2", "–", "no"])]
    (image,) = page.images
    assert image["alt"] == "fit <per joint>"
    assert image["src"] == "data:image/png;base64," + base64.b64encode(PNG).decode()  # embedded: works offline
    assert page.text["figcaption"] == ["fit <per joint>"]


def test_markdown_links_the_figures_relative_to_its_folder(tmp_path):
    doc = _document(tmp_path)
    text = doc.markdown(tmp_path)
    assert text.startswith("# Identification of <arm> & co\n")
    assert "## Links" in text and "> **Note:** A tool the URDF lacks" in text
    assert "```\ndynid identify --bag x\n```" in text
    assert "| l1 | 2 | yes |" in text and "| ⚠ l\\|2 | – | no |" in text  # highlighted, the pipe escaped
    assert "![fit <per joint>](figs/fit.png)" in text
    assert "![fit <per joint>](fit.png)" in doc.markdown()  # no folder: the file name


def test_cell_text():
    assert [cell_text(v) for v in (None, True, False, 3, 0.000123456, 1234567.0, "x")] == \
        ["–", "yes", "no", "3", "0.0001235", "1.235e+06", "x"]


def test_only_dynids_own_html_is_recognised(tmp_path):
    own = tmp_path / "report.html"
    own.write_text(_document(tmp_path).html())
    assert is_own_html(own)
    foreign = tmp_path / "mine.html"
    foreign.write_text("<html><head><title>my notes</title></head><body>dynid_ros report</body></html>")
    assert not is_own_html(foreign)
    binary = tmp_path / "x.html"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    assert not is_own_html(binary) and not is_own_html(tmp_path / "absent.html") and not is_own_html(tmp_path)


def test_document_renders_the_same_content_to_html_and_markdown(tmp_path):
    doc = Document("T")
    doc.heading("Links")
    doc.table(["link", "ratio"], [["l1", 1.0], ["l2", 0.1]], highlight={1})
    (tmp_path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    doc.figure(tmp_path / "a.png", "caption <b>")
    page = doc.html()
    assert '<tr class="warn"><td>l2</td>' in page and "caption &lt;b&gt;" in page
    assert "data:image/png;base64,iVBORw0KGgo=" in page
    markdown = doc.markdown(tmp_path)
    assert "| ⚠ l2 | 0.1 |" in markdown and "![caption <b>](a.png)" in markdown
