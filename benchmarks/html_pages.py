"""HTML inputs for ``ingest.py``'s HTML rows: seeded documentation pages, and 48 MB pages built to
be hard (nested millions deep, millions of tags wide).

A page is what a documentation site serves: a ``<head>`` with inline CSS and JavaScript, a header
navigation list, an article of sections (paragraphs with links, bold and code; lists; tables in a
wrapper; code blocks; quotes) inside a few wrapper ``<div>``, a footer with links and a copyright.

Example:
    >>> import random
    >>> "<h1>" in page(random.Random(0), 1)
    True
"""

from __future__ import annotations

import random
from pathlib import Path

_WORDS = (
    "refund", "policy", "customer", "account", "billing", "invoice", "payment", "days", "within",
    "support", "request", "order", "shipping", "return", "item", "receipt", "manager", "approval",
    "form", "section", "applies", "employee", "travel", "expense", "report", "the", "a", "of", "to",
    "and", "in", "for", "is", "on", "with", "as", "by", "may", "must", "will", "be", "are", "this",
    "that", "each", "any",
)  # fmt: skip


def _sentence(rng: random.Random, n: int | None = None) -> str:
    words = " ".join(rng.choice(_WORDS) for _ in range(n or rng.randint(6, 20)))
    return words.capitalize() + "."


def _inline(rng: random.Random) -> str:
    out: list[str] = []
    for _ in range(rng.randint(2, 6)):
        text = _sentence(rng)
        k = rng.random()
        if k < 0.2:
            text = f'<a href="/docs/{rng.randint(1, 999)}" class="link">{text}</a>'
        elif k < 0.3:
            text = f"<strong>{text}</strong>"
        elif k < 0.4:
            text = f"<code>{rng.choice(_WORDS)}_{rng.randint(1, 9)}()</code> {text}"
        elif k < 0.45:
            text += "<br>"
        out.append(text)
    return " ".join(out)


def _section(rng: random.Random, number: int) -> str:
    parts = [f'<h2 id="s{number}">{_sentence(rng, 4)}</h2>']
    for _ in range(rng.randint(2, 5)):
        k = rng.random()
        if k < 0.55:
            parts.append(f'<p class="body-text">{_inline(rng)}</p>')
        elif k < 0.7:
            items = "".join(f"<li>{_inline(rng)}</li>" for _ in range(rng.randint(2, 6)))
            parts.append(f"<ul>{items}</ul>")
        elif k < 0.85:
            cells = "<tr>{}</tr>"
            rows = "".join(
                cells.format("".join(f"<td>{_sentence(rng, 3)}</td>" for _ in range(4)))
                for _ in range(rng.randint(3, 10))
            )
            head = "<thead><tr><th>Name</th><th>Days</th><th>Owner</th><th>Note</th></tr></thead>"
            parts.append(
                f'<div class="table-wrap"><table class="data">{head}<tbody>{rows}</tbody></table></div>'
            )
        elif k < 0.95:
            code = "\n".join(f"    x{j} = compute({j}) &lt; limit" for j in range(rng.randint(3, 12)))
            pre = f'<pre><code class="language-python">def f():\n{code}\n</code></pre>'
            parts.append(f'<div class="highlight">{pre}</div>')
        else:
            parts.append(f"<blockquote><p>{_inline(rng)}</p></blockquote>")
    return (
        '<section class="doc-section"><div class="container"><div class="row">'
        + "".join(parts)
        + "</div></div></section>"
    )


def page(rng: random.Random, number: int) -> str:
    """One documentation page (~45 KB)."""
    nav = "".join(
        f'<li class="nav-item"><a href="/p{j}">{rng.choice(_WORDS).title()}</a></li>' for j in range(12)
    )
    css = "\n".join(f".c{j} {{ margin: {j}px; color: #{j:03x}; }}" for j in range(60))
    js = "\n".join(f"function f{j}(a, b) {{ if (a < b) {{ return a + {j}; }} return b; }}" for j in range(40))
    sections = "\n".join(_section(rng, s) for s in range(rng.randint(12, 24)))
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Guide {number}: '
        f'{_sentence(rng, 3)}</title><meta name="viewport" content="width=device-width">'
        f'<link rel="stylesheet" href="/s.css"><style>{css}</style><script>{js}</script></head>'
        f'<body class="page"><header class="site-header"><div class="wrap"><nav><ul class="nav">{nav}</ul>'
        f'</nav></div></header><main><div class="content"><article><h1>{_sentence(rng, 5)}</h1>{sections}'
        f'</article></div></main><footer><div class="wrap"><ul>{nav}</ul><p>&copy; 2024 Example Inc. All '
        'rights reserved.</p></div></footer><script src="/app.js"></script><!-- analytics --></body></html>'
    )


def write_site(folder: Path, pages: int, seed: int = 0) -> list[Path]:
    """``pages`` documentation pages in ``folder`` (``page-000.html``...)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(pages):
        path = folder / f"page-{n:03d}.html"
        path.write_text(page(rng, n), encoding="utf-8")
        paths.append(path)
    return paths


def write_hard(folder: Path, size: int, seed: int = 0) -> dict[str, Path]:
    """Four pages of ``size`` bytes: ``deep`` (``<div>`` nested about size/11 deep around one text),
    ``wide`` (``<p>x</p>`` repeated: size/4 tags), ``attributes`` (``<span>`` of five attributes
    repeated) and ``pages`` (documentation pages one after another)."""
    folder.mkdir(parents=True, exist_ok=True)
    n = size // 11
    rng = random.Random(seed)
    docs: list[str] = []
    total = 0
    while total < size:
        docs.append(page(rng, len(docs)))
        total += len(docs[-1])
    texts = {
        "deep": "<div>" * n + "deep text" + "</div>" * n,
        "wide": "<p>x</p>" * (size // 8),
        "attributes": "".join(
            f'<span class="c{i % 97}" id="s{i}" data-x="c" title="d" style="color:red">x</span>'
            for i in range(size // 78)
        ),
        "pages": "".join(docs),
    }
    out: dict[str, Path] = {}
    for name, text in texts.items():
        out[name] = folder / f"{name}.html"
        out[name].write_text(text, encoding="utf-8")
    return out
