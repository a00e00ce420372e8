"""Text without page breaks still has pages: a line that recurs through one document at regular
intervals (a lone page number, an EDGAR "Source:" footer) is a running line, stripped as on paged
documents, so it makes neither a chunk of its own nor a version difference."""

from __future__ import annotations

from pathlib import Path

from chunkdedup import Index, ingest
from chunkdedup.config import BoilerplateConfig
from chunkdedup.text.boilerplate import strip
from chunkdedup.types import Page

CLAUSES = [
    f"{n}. The supplier delivers the goods named in schedule {chr(64 + n)} to the customer's site, "
    "packed as the order says, and the customer inspects them within the inspection period."
    for n in range(1, 13)
]


def _contract(footer: str, *, offset: int = 0, shout: str = "") -> str:
    """Twelve clauses of several lines each; every 20 lines a page ends: a lone page number, then
    ``footer`` (``{page}`` in it is the page's number)."""
    lines: list[str] = []
    page = 1
    for clause in CLAUSES:
        words = clause.split()
        lines += [" ".join(words[i : i + 7]) for i in range(0, len(words), 7)]
        lines.append("")
        if shout:
            lines.append(shout)
    out: list[str] = []
    for i, line in enumerate(lines, start=1):
        out.append(line)
        if (i + offset) % 20 == 0:
            out += [str(page + offset), footer.format(page=page + offset)]
            page += 1
    return "\n".join(out)


def test_page_numbers_and_a_dated_footer_are_stripped_from_text_without_page_breaks() -> None:
    text = _contract("Source: ACME CORP, 10-12G, 8/26/1999")
    result = strip([Page(1, text, True)], (), BoilerplateConfig())
    lines = {s.line.strip() for s in result.stripped}
    assert "Source: ACME CORP, 10-12G, 8/26/1999" in lines and {"1", "2", "3"} <= lines
    assert {s.scope for s in result.stripped} == {"running"}
    clean = result.pages[0].text
    assert "Source:" not in clean and "\n2\n" not in clean
    assert all(c.split()[1] in clean for c in CLAUSES)  # every clause stays


def test_a_sentence_each_section_repeats_is_the_texts_own() -> None:
    """A sentence of more than a few words without a number stays, however regularly it recurs."""
    shout = "We do not allow content or activity that:"
    text = _contract("Source: ACME CORP, 10-12G, 8/26/1999", shout=shout)
    result = strip([Page(1, text, True)], (), BoilerplateConfig())
    assert result.pages[0].text.count(shout) == len(CLAUSES)
    # and irregular copies of a short line stay too
    lines = [f"line {i} of the body text" for i in range(60)]
    for at in (3, 5, 40):
        lines[at] = "Confidential"
    assert strip([Page(1, "\n".join(lines), True)], (), BoilerplateConfig()).stripped == ()


def test_two_copies_paged_differently_are_one_text(tmp_path: Path) -> None:
    """The same contract with its page breaks elsewhere: its clauses merge, no version is made of a
    page number."""
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "a.txt").write_text(_contract("Source: ACME CORP, 10-12G, 8/26/1999"), encoding="utf-8")
    (folder / "b.txt").write_text(
        _contract("Source: ACME CORP, 10-12G, 9/30/1999", offset=7), encoding="utf-8"
    )
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    with Index.open(index) as ix:
        records = list(ix.records())
        texts = " ".join(r.text or "" for r in records)
        assert "Source:" not in texts
        assert all({s.doc for s in r.sources} == {"a.txt", "b.txt"} for r in records), [
            [s.doc for s in r.sources] for r in records
        ]
        assert sum(len(ix.variants(r.id)) for r in records) == 0


def _api_page() -> str:
    """An API reference page: twelve functions, each with its parameters and a code example, so the
    same short lines recur through the page about every 20 lines, as a printed page's footer would."""
    parts = ["<html><body><h1>child_process</h1>"]
    for n in range(12):
        parts.append(
            f"<h2>run{n}(command[, options])</h2><ul><li>options &lt;Object&gt;</li>"
            f"<li>cwd &lt;string&gt; Current working directory of child {n}.</li></ul>"
            f"<p>Runs the command in a shell; the {n}th form waits for it to exit.</p>"
            "<pre>const { spawn } = require('node:child_process');\n"
            f"const child = spawn('ls', ['-l{n}']);\n"
            "child.on('close', (code) =&gt; {\n"
            "  if (code !== 0) {\n"
            f"    console.log(`child {n} exited with ${{code}}`);\n"
            "  }\n"
            "});</pre>"
        )
    return "".join(parts) + "</body></html>"


def test_a_screen_page_keeps_the_lines_that_recur_through_it(tmp_path: Path) -> None:
    """HTML and Markdown had no printed pages: a code line or a parameter list's first item that recurs
    through an API page is the page's own text, not a running line (as it would be read in a text
    file that lost its page breaks)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "child_process.html").write_text(_api_page(), encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    with Index.open(index) as ix:
        texts = "\n".join(r.text or "" for r in ix.records())
        stripped = [k for k in ix.boilerplate() if k.scope == "running"]
    assert texts.count("if (code !== 0) {") == 12 and texts.count("- options <Object>") == 12
    assert stripped == []
    # the same page's text read from print loses them as running lines
    from chunkdedup.parse.html import html_page

    _, text, _ = html_page(_api_page())
    result = strip([Page(1, text, True)], (), BoilerplateConfig())
    assert "if (code !== 0) {" in {s.line.strip() for s in result.stripped}
    assert strip([Page(1, text, True)], (), BoilerplateConfig(), unpaged=False).stripped == ()
