"""The Starlette app of ``chunkdedup serve``: routing and rendering over :mod:`chunkdedup.web.pages`.

Each request opens the index read-only (SQLite WAL: an ingest may run meanwhile) and closes it
again, so nothing is shared between requests and a replaced or damaged file is seen at once.
Every page is HTML, or its record's ``to_json()`` with ``?format=json``.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote, urlencode

import jinja2
import markupsafe
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chunkdedup.errors import ChunkdedupError, IndexBusyError, IndexError_
from chunkdedup.index import DOCUMENT_SORTS, REVIEWER_CHARS, Decision, Index, keep_decisions
from chunkdedup.store.index_errors import SQLITE_FAILURES, index_error
from chunkdedup.visible import safe_block
from chunkdedup.web import pages
from chunkdedup.web.hosts import LOOPBACK_NAMES
from chunkdedup.web.pages import QueryForm

HERE = Path(__file__).resolve().parent
#: htmx as vendored under static/ (npm package htmx.org, dist/htmx.min.js; Zero-Clause BSD).
HTMX_VERSION = "4.0.1"
DEFAULT_LIMIT = 50
MAX_LIMIT = 500

#: Scripts and styles only from this server: document text that slipped through escaping still could
#: not run. The report is drawn with inline styles and is served apart, in a sandboxed frame.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'")
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"

R = TypeVar("R")


class _NotFound(Exception):
    def __init__(self, what: str, ident: str) -> None:
        super().__init__(f"no {what} {ident!r} in this index")
        self.what = what
        self.ident = ident


class _Headers:
    """Adds the security headers to every response (static files included)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        report = scope.get("path") == "/report/view"

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"content-security-policy", (REPORT_CSP if report else CSP).encode()))
                headers.append((b"x-content-type-options", b"nosniff"))
                headers.append((b"referrer-policy", b"no-referrer"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _visible(value: object) -> object:
    """Every ``{{ }}`` value as shown: control characters and bidirectional overrides as escapes
    (:func:`~chunkdedup.visible.safe_block`; autoescape then handles markup). A file named
    ``cabc\u202edcba.exe.md`` was shown with its extension reversed."""
    if isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(safe_block(str(value)))
    if isinstance(value, str):
        return safe_block(value)
    return value


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_visible,
    )
    env.globals.update(doc_url=doc_url, chunk_url=chunk_url, key_url=key_url, htmx_version=HTMX_VERSION)
    env.filters["bytes"] = _bytes
    return env


def doc_url(doc_id: str, page: int | None = None) -> str:
    """The document page of ``doc_id`` (``page``: starting at that page, scrolled to it). An id with a
    ``.`` or ``..`` segment (a JSONL record ``recs.jsonl#/../a.txt``) has its slashes encoded too: a
    browser resolves those segments, and the link opened another document."""
    dots = any(part in (".", "..") for part in doc_id.split("/"))
    url = "/documents/" + quote(doc_id, safe="" if dots else "/")
    return url if page is None else f"{url}?page={page}#p{page}"


def chunk_url(canonical_id: str) -> str:
    return "/chunks/" + quote(canonical_id, safe="")


#: an exact-key group's id (as `show` and the review queue print it)
_GROUP = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_FORM_BYTES = 4096
#: a bulk decision: the pairs checked on one page of the queue (at most MAX_LIMIT), each "A B"
_BULK_FORM_BYTES = 64 * 1024
#: the longest text the review queue searches for (a few words)
_SEARCH_CHARS = 200


def key_url(khash: int) -> str:
    return f"/boilerplate/{khash}"


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def create_app(
    index_path: str | Path,
    report_dir: str | Path | None = None,
    *,
    allowed_hosts: Sequence[str] = LOOPBACK_NAMES,
) -> Starlette:
    """The web view of the index at ``index_path`` (``report_dir``: also ``/report`` from its report.json).

    ``allowed_hosts``: the ``Host`` names it answers (Starlette's ``TrustedHostMiddleware``; ``"*"``:
    any, for a server bound to a public address on purpose); the default is this machine's names.

    Example:
        >>> import uvicorn  # doctest: +SKIP
        >>> uvicorn.run(create_app("policies.sqlite"), host="127.0.0.1", port=8765)  # doctest: +SKIP
    """
    view = _View(Path(index_path), None if report_dir is None else Path(report_dir))
    routes = [
        Route("/", view.overview),
        Route("/documents", view.documents),
        Route("/documents/{doc_id:path}", view.document),
        Route("/boilerplate", view.boilerplate),
        Route("/boilerplate/{khash}", view.key),
        Route("/chunks/{canonical_id}", view.chunk),
        Route("/query", view.query),
        Route("/review", view.review),
        Route("/review/decide", view.decide, methods=["POST"]),
        Route("/review/decide-checked", view.decide_checked, methods=["POST"]),
        Route("/report", view.report),
        Route("/report/view", view.report_view),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    handlers = {404: view.not_found_handler, 500: view.server_error_handler}
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.add_middleware(_Headers)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))  # outermost: first
    return app


class _Memo:
    """Whole-index aggregates (the overview's counts, the boilerplate keys), kept while the index is
    unchanged: every commit writes the -wal file (or the file itself), so a change of either's size or
    modification time drops them. Per app, never per module."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._signature: tuple[tuple[int, int] | None, ...] = ()
        self._values: dict[str, object] = {}

    def signature(self) -> tuple[tuple[int, int] | None, ...]:
        out: list[tuple[int, int] | None] = []
        for p in (self.path, self.path.with_name(self.path.name + "-wal")):
            try:
                st = p.stat()
            except OSError:
                out.append(None)
            else:
                out.append((st.st_mtime_ns, st.st_size))
        return tuple(out)

    def get(self, name: str, compute: Callable[[], R]) -> R:
        """``compute()`` once per state of the index file (read after the signature: never older)."""
        signature = self.signature()
        with self._lock:
            if signature != self._signature:
                self._signature, self._values = signature, {}
            if name in self._values:
                return self._values[name]  # type: ignore[return-value]
        value = compute()
        with self._lock:
            if signature == self._signature:
                self._values[name] = value
        return value


class _View:
    """The request handlers: parse the parameters, build the page record, render or serialise it."""

    def __init__(self, index_path: Path, report_dir: Path | None) -> None:
        self.index_path = index_path
        self.report_dir = report_dir
        self.env = _environment()
        self.memo = _Memo(index_path)
        #: the review queue's forms carry it: a page of another site cannot read it, so it cannot post
        #: a decision through the user's browser (its Host is refused besides)
        self.token = secrets.token_urlsafe(24)

    # -- plumbing -----------------------------------------------------------------------------
    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("has_report", self.report_dir is not None)
        context.setdefault("index_name", self.index_path.name)
        context.setdefault("json_href", "?format=json")
        return HTMLResponse(self.env.get_template(template).render(**context), status_code=status)

    def error(self, request: Request, status: int, title: str, message: str) -> Response:
        if _wants_json(request):
            return JSONResponse({"error": title, "message": message}, status_code=status)
        return self.render("error.html", status, title=title, message=message)

    def with_index(self, request: Request, build: Callable[[Index], R]) -> R | Response:
        """``build(index)`` on the index opened read-only; a missing, damaged or foreign file
        answers with an error page that says what is wrong and how to fix it."""
        try:
            ix = Index.open(self.index_path, migrate=False)
        except ChunkdedupError as e:
            return self.error(request, 503, "The index cannot be opened", str(e))
        try:
            return build(ix)
        except _NotFound as e:
            return self.error(request, 404, f"No {e.what} {e.ident!r}", f"{e}: {_NOT_FOUND_HINT[e.what]}")
        except IndexError_ as e:
            return self.error(request, 503, "The index cannot be read", str(e))
        except SQLITE_FAILURES as e:
            return self.error(request, 503, "The index cannot be read", str(index_error(self.index_path, e)))
        finally:
            ix.close()

    def page(self, request: Request, template: str, build: Callable[[Index], Any], **extra: Any) -> Response:
        record = self.with_index(request, build)
        if isinstance(record, Response):
            return record
        if _wants_json(request):
            return JSONResponse(record.to_json())
        params = _Params(request.query_params)
        return self.render(template, page=record, query_string=params, json_href=params.with_(format="json"),
                           **extra)

    async def not_found_handler(self, request: Request, exc: Exception) -> Response:
        return self.error(request, 404, "Not found", f"no page at {request.url.path!r}: see the links above")

    async def server_error_handler(self, request: Request, exc: Exception) -> Response:
        return self.error(request, 500, "Unexpected error",
                          f"{type(exc).__name__} while answering {request.url.path!r}: this is a bug in "
                          "chunkdedup serve (please report it with the page's address)")

    # -- pages --------------------------------------------------------------------------------
    def overview(self, request: Request) -> Response:
        limit, offset = _paging(request)

        def build(ix: Index) -> pages.OverviewPage:
            stats = self.memo.get("stats", ix.stats)
            return pages.overview_page(ix, limit=limit, offset=offset, stats=stats)

        return self.page(request, "overview.html", build)

    def documents(self, request: Request) -> Response:
        limit, offset = _paging(request)
        params = request.query_params
        state = params.get("state") or None
        sort = params.get("sort") or "doc"
        if sort not in DOCUMENT_SORTS:
            return self.error(request, 400, "Unknown sort", f"sort is one of {', '.join(DOCUMENT_SORTS)}")
        options = {
            "family": params.get("family") or None, "department": params.get("department") or None,
            "text": _search(request),
        }
        return self.page(request, "documents.html", lambda ix: pages.documents_page(
            ix, limit=limit, offset=offset, state=state, sort=sort, descending=params.get("desc") == "1",
            **options,
        ))

    def document(self, request: Request) -> Response:
        doc_id = request.path_params["doc_id"]
        limit = _int(request, "limit", pages.DOCUMENT_PAGES, 1, 100)
        first = _int(request, "page", 1, 1, 1 << 31)

        def build(ix: Index) -> pages.DocumentPage:
            found = pages.document_page(ix, doc_id, first=first, limit=limit)
            if found is None:
                raise _NotFound("document", doc_id)
            return found

        return self.page(request, "document.html", build, limit=limit)

    def boilerplate(self, request: Request) -> Response:
        limit, offset = _paging(request)

        def build(ix: Index) -> pages.BoilerplatePage:
            keys = self.memo.get("boilerplate", ix.views.boilerplate)
            return pages.boilerplate_page(ix, limit=limit, offset=offset, keys=keys)

        return self.page(request, "boilerplate.html", build)

    def key(self, request: Request) -> Response:
        raw = request.path_params["khash"]
        limit, offset = _paging(request)

        def build(ix: Index) -> pages.KeyPage:
            try:
                khash = int(raw)
            except ValueError:
                raise _NotFound("boilerplate key", raw) from None
            if not -(1 << 63) <= khash < (1 << 63):  # no key (SQLite's INTEGER), not an OverflowError
                raise _NotFound("boilerplate key", raw)
            found = pages.key_page(ix, khash, limit=limit, offset=offset)
            if found is None:
                raise _NotFound("boilerplate key", raw)
            return found

        fragment = request.headers.get("hx-request") == "true" and not _wants_json(request)
        return self.page(request, "key_context.html" if fragment else "key.html", build)

    def chunk(self, request: Request) -> Response:
        canonical_id = request.path_params["canonical_id"]
        limit, offset = _paging(request)

        def build(ix: Index) -> pages.ChunkPage:
            found = pages.chunk_page(ix, canonical_id, limit=limit, offset=offset)
            if found is None:
                raise _NotFound("chunk", canonical_id)
            return found

        return self.page(request, "chunk.html", build)

    def review(self, request: Request) -> Response:
        limit, offset = _paging(request)
        kind = request.query_params.get("kind", "merges")
        order = request.query_params.get("order", "threshold")
        reason = request.query_params.get("reason") or None
        doc = request.query_params.get("doc") or None
        family = request.query_params.get("family") or None
        text = _search(request)
        if kind not in ("merges", "variants") or order not in ("threshold", "size"):
            return self.error(request, 400, "Unknown review list",
                              "kind is merges or variants, order is threshold or size")
        try:
            similarity = (_similarity(request, "min"), _similarity(request, "max"))
        except ValueError:
            return self.error(request, 400, "Unknown review list", "min and max are similarities from 0 to 1")
        return self.page(
            request, "review.html",
            lambda ix: pages.review_page(ix, kind=kind, order=order, reason=reason,  # type: ignore[arg-type]
                                         limit=limit, offset=offset, doc=doc, family=family,
                                         similarity=similarity, text=text),
            token=self.token, reasons=pages.REVIEW_REASONS,
            by=request.query_params.get("by", "")[:REVIEWER_CHARS],
        )

    async def decide(self, request: Request) -> Response:
        """A decision from the review queue: ``merge``, ``apart`` or ``clear`` for the groups ``a`` and
        ``b``, kept in the index for the next ingest (the index must be writable here)."""
        return await self._decide(request, bulk=False)

    async def decide_checked(self, request: Request) -> Response:
        """A bulk decision from the review queue: ``merge``, ``apart`` or ``clear`` for every pair
        checked on the page (``pair``: the two group ids, a space between), all kept or none."""
        return await self._decide(request, bulk=True)

    async def _decide(self, request: Request, *, bulk: bool) -> Response:
        body = await request.body()  # the form's fields, URL-encoded (the browser's default)
        if len(body) > (_BULK_FORM_BYTES if bulk else _FORM_BYTES):
            return self.error(request, 413, "Too large", "a decision is a few fields: reload the review page")
        try:
            form = parse_qs(body.decode("utf-8", "replace"), max_num_fields=8 + (MAX_LIMIT if bulk else 0))
        except ValueError:
            return self.error(request, 400, "Not a decision",
                              "a decision is a few fields: reload the review page")
        fields = {k: (form.get(k) or [""])[0] for k in ("a", "b", "decision", "token", "back", "by")}
        # as UTF-8 bytes: compare_digest takes a str of ASCII only, and a form may post any text
        if not secrets.compare_digest(fields["token"].encode("utf-8"), self.token.encode("utf-8")):
            return self.error(request, 403, "Not accepted",
                              "the form is not this server's: reload the review page")
        if bulk:  # "A B": a value without the space reads as A and "", no group id
            pairs = [(a, b) for a, _, b in (p.partition(" ") for p in form.get("pair", []))]
            if not pairs:
                return self.error(request, 400, "Not a decision", "check the pairs to decide, then decide")
        else:
            pairs = [(fields["a"], fields["b"])]
        ids = all(_GROUP.fullmatch(a) and _GROUP.fullmatch(b) for a, b in pairs)
        if fields["decision"] not in ("merge", "apart", "clear") or not ids:
            return self.error(request, 400, "Not a decision",
                              "decision is merge, apart or clear on pairs of two group ids")

        decision: Decision | None = None if fields["decision"] == "clear" else fields["decision"]  # type: ignore[assignment]
        def write() -> None:
            keep_decisions(self.index_path, pairs, decision, fields["by"] or None)

        try:
            await run_in_threadpool(write)
        except IndexBusyError as e:  # an ingest holds the writer lock: the decision can be made again after
            said = f"{e} (then make the decision again)"
            return self.error(request, 409, "The decision was not kept", said)
        except ChunkdedupError as e:
            return self.error(request, 409, "The decision was not kept", f"{e}: serve a writable index file")
        except SQLITE_FAILURES as e:
            return self.error(request, 409, "The decision was not kept", str(index_error(self.index_path, e)))
        except ValueError as e:  # not two groups of the index (a UnicodeDecodeError is caught above)
            return self.error(request, 400, "Not a decision", str(e))
        back = fields["back"] if fields["back"].startswith("/review") else "/review"
        if fields["by"].strip():  # the page after it fills the reviewer's name in again
            back = f"{back}{'&' if '?' in back else '?'}{urlencode({'by': fields['by'].strip()})}"
        return RedirectResponse(back, status_code=303)

    def query(self, request: Request) -> Response:
        params = request.query_params
        form = QueryForm(
            q=params.get("q", ""),
            where=tuple(w.strip() for w in params.getlist("where") if w.strip()),
            versions=params.get("versions") or "latest",
            retriever=params.get("retriever") or "auto",
            safety_net=params.get("safety_net", "on") != "off",
            k=_int(request, "k", 5, 1, 100),
        )

        def build(ix: Index) -> pages.QueryPage:
            try:
                return pages.query_page(ix, form)
            except IndexError_:
                raise
            except ChunkdedupError as e:  # a bad option or filter, an extra the retriever needs
                return pages.QueryPage(form, None, (), str(e))

        record = self.with_index(request, build)
        if isinstance(record, Response):
            return record
        status = 400 if record.error else 200
        if _wants_json(request):
            return JSONResponse(record.to_json(), status_code=status)
        qs = _Params(params)
        return self.render("query.html", status, page=record, query_string=qs,
                           json_href=qs.with_(format="json"), retrievers=("auto", "bm25", "vector", "hybrid"),
                           policies=("latest", "label", "all"))

    def _report_data(self, request: Request) -> dict[str, Any] | Response:
        if self.report_dir is None:
            return self.error(request, 404, "No report",
                              "this server was started without --report DIR: start it with the folder "
                              "`chunkdedup eval --out DIR` wrote")
        path = self.report_dir / "report.json"
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            return self.error(request, 503, "The report cannot be read",
                              f"{path}: {e}: write it again with `chunkdedup eval --out {self.report_dir}`")
        return data

    def report(self, request: Request) -> Response:
        data = self._report_data(request)
        if isinstance(data, Response):
            return data
        if _wants_json(request):
            return JSONResponse(data)
        return self.render("report.html", report_dir=str(self.report_dir))

    def report_view(self, request: Request) -> Response:
        from chunkdedup.report import render_html

        data = self._report_data(request)
        if isinstance(data, Response):
            return data
        return HTMLResponse(render_html(data))


_NOT_FOUND_HINT = {
    "document": "document ids are listed under Documents (or by `chunkdedup export`)",
    "chunk": "canonical ids are listed by `chunkdedup export` and linked from each document's chunks",
    "boilerplate key": "the stripped keys are listed under Boilerplate",
}


class _Params:
    """The request's query string, to build a link that changes one or two parameters (pagination)."""

    def __init__(self, params: QueryParams) -> None:
        self.items = list(params.multi_items())

    def with_(self, **changes: object) -> str:
        """The query string with ``changes`` (in place where the parameter is there already)."""
        out: list[tuple[str, str]] = []
        done: set[str] = set()
        for k, v in self.items:
            if k in changes:
                if k not in done and changes[k] is not None:
                    out.append((k, str(changes[k])))
                done.add(k)
            else:
                out.append((k, v))
        out += [(k, str(v)) for k, v in changes.items() if k not in done and v is not None]
        return "?" + urlencode(out)


def _wants_json(request: Request) -> bool:
    return request.query_params.get("format") == "json"


def _int(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    try:
        value = int(request.query_params.get(name, default))
    except ValueError:
        return default
    return min(max(value, lo), hi)


def _search(request: Request) -> str | None:
    """The words a page searches for (``?q=``), at most :data:`_SEARCH_CHARS`; ``None`` when none."""
    return request.query_params.get("q", "").strip()[:_SEARCH_CHARS] or None


def _similarity(request: Request, name: str) -> float | None:
    """A similarity bound of the review queue (``?min=0.8``): ``None`` when not given; ``ValueError``
    unless a number from 0 to 1."""
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return None
    value = float(raw)
    if not 0.0 <= value <= 1.0:  # NaN too
        raise ValueError(name)
    return value


def _paging(request: Request) -> tuple[int, int]:
    return _int(request, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT), _int(request, "offset", 0, 0, 1 << 62)
