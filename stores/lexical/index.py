"""The lexical channel of recall: BM25 over (id, text) documents in SQLite FTS5, English and Chinese.

Text is tokenized here, in Python, and FTS5 indexes the space-joined tokens, so English gets
stopword removal and Snowball stemming ("painted" finds "painting") and Chinese, which has no
spaces, gets overlapping character bigrams ("数据库" -> "数据", "据库"). Scoring is FTS5's own
`bm25()` (k1 = 1.2, b = 0.75), so the index is a maintained library's, transactional, and lives in
one SQLite file that survives restarts.

Documents live in scopes (for example one per user and kind: `"memories/alice"`); each scope has its
own FTS5 table, so BM25's statistics (document frequencies, average length) are the scope's own and
dropping a scope removes everything of it. A document may carry `context`: text that helps find it
but is not it, such as the message a chat turn replies to. Context terms count `context_weight`
(default 0.5) as much as the document's own.

Keeping it consistent with a primary store (`ChromaStore` keeps one): `upsert` and `delete` are
idempotent and atomic (one SQLite transaction each). Before changing documents in its own store, the
caller journals their ids with `mark_pending` (committed at once); `upsert` and `delete` clear the
marks of the ids they write, in the same transaction. Ids still `pending` after a crash are the only
ones that can disagree with the primary store: re-read them there and write them again. `digests`
returns each document's content fingerprint, for a full comparison.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Self

import Stemmer

logger = logging.getLogger(__name__)


def _bm25s_stopwords() -> tuple[str, ...]:
    """bm25s' English stopword list, read from its `stopwords` module alone: importing it as
    `bm25s.stopwords` runs bm25s' `__init__`, which loads scipy into every CLI start."""
    package = importlib.util.find_spec("bm25s")
    if package is None or not package.submodule_search_locations:
        raise ImportError("bm25s is not installed: pip install bm25s")
    path = Path(package.submodule_search_locations[0]) / "stopwords.py"
    spec = importlib.util.spec_from_file_location("_engram_bm25s_stopwords", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot read bm25s' stopwords from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.STOPWORDS_EN_PLUS)


STOPWORDS_EN_PLUS = _bm25s_stopwords()
"""The default stopwords (bm25s' `STOPWORDS_EN_PLUS`)."""

INDEX_FILE = "lexical.sqlite3"
"""File name of the index inside the folder given to `LexicalIndex`."""
BUSY_TIMEOUT_SECONDS = 60.0
"""How long a write waits for another process's write to the same index file."""

# Han ideographs (with extension A and compatibility forms), Japanese kana: written without spaces.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUNS = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")
_ASCII_WORDS = re.compile(r"[a-z0-9]+")
"""What `_RUNS` finds in lowercase ASCII text (NFKC and casefold change no ASCII character)."""
_IDS_PER_QUERY = 500  # ids bound into one `IN (...)`, well under SQLite's variable limit
_TOKENIZER_VERSION = 1  # bump when `Tokenizer.__call__` changes what it returns


@dataclass(frozen=True)
class LexicalDocument:
    """One document of a `LexicalIndex` scope."""

    id: str
    """Caller's id, unique within the scope."""
    text: str
    """What the document says; its terms count fully."""
    context: str = ""
    """Text that helps find the document without being it (e.g. the previous chat turn)."""

    @property
    def digest(self) -> str:
        """Fingerprint of `text` and `context`, to check the index against another store."""
        return hashlib.sha256(f"{self.text}\x1f{self.context}".encode()).hexdigest()[:32]


class Tokenizer:
    """Splits English and Chinese text into BM25 terms.

    Text is NFKC-normalised and case-folded. Runs of letters and digits become words; English
    stopwords and one-letter words are dropped and the rest Snowball-stemmed. Runs of CJK characters
    become overlapping character bigrams (a lone character stays a unigram), which needs no
    dictionary and finds names and new words a segmenter would split wrongly.

    Args:
        stopwords: Words dropped before stemming (lowercase). Defaults to bm25s' English list.
        language: Snowball stemmer language (PyStemmer), or None for no stemming.

    Example:
        >>> Tokenizer()("Melanie painted a sunrise; 她喜欢数据库")
        ['melani', 'paint', 'sunris', '她喜', '喜欢', '欢数', '数据', '据库']
    """

    def __init__(
        self, stopwords: Iterable[str] | None = None, language: str | None = "english"
    ) -> None:
        self.stopwords = frozenset(STOPWORDS_EN_PLUS if stopwords is None else stopwords)
        self.language = language
        self._stem_words = Stemmer.Stemmer(language).stemWords if language else None
        self._lock = threading.Lock()  # PyStemmer objects are not thread-safe

    @property
    def signature(self) -> str:
        """Identifies what this tokenizer produces; an index re-tokenizes when it changes."""
        words = hashlib.sha256("\n".join(sorted(self.stopwords)).encode()).hexdigest()[:12]
        return f"v{_TOKENIZER_VERSION}:{self.language}:{words}"

    def __call__(self, text: str) -> list[str]:
        """The terms of `text`, in order, repeats kept."""
        if text.isascii():  # most text: the same terms, found several times faster
            terms = [
                word
                for word in _ASCII_WORDS.findall(text.lower())
                if word not in self.stopwords and (len(word) > 1 or word.isdigit())
            ]
            return self._stemmed(terms) if terms and self._stem_words is not None else terms
        terms: list[str] = []
        words: list[int] = []  # positions of the terms that are words, stemmed in one call
        for match in _RUNS.finditer(unicodedata.normalize("NFKC", text).casefold()):
            word = match.group("word")
            if word is None:
                run = match.group("cjk")
                terms.extend(
                    [run[i : i + 2] for i in range(len(run) - 1)] if len(run) > 1 else [run]
                )
            elif word not in self.stopwords and (len(word) > 1 or word.isdigit()):
                words.append(len(terms))
                terms.append(word)
        if words and self._stem_words is not None:
            stems = self._stemmed([terms[i] for i in words])
            for position, stem in zip(words, stems, strict=True):
                terms[position] = stem
        return terms

    def _stemmed(self, words: list[str]) -> list[str]:
        assert self._stem_words is not None
        with self._lock:
            return self._stem_words(words)


def lexical_terms(text: str) -> list[str]:
    """`text`'s terms as the default `Tokenizer` reads them (stemmed words, CJK bigrams): what
    the write policy and the extractors compare when they ask whether two texts share a term."""
    return _default_tokenizer()(text)


_CJK_RUN = re.compile(rf"[{_CJK}]+")
_CJK_FUNCTION_CHARS = frozenset(
    "的了着过是在有和与跟及或把被给让对从向往到为于以之而且但就也都还又再才只很太更最挺真"
    "不没别未我你他她它们这那哪谁啥什么吗呢吧啊呀哦嗯个些一两几要会能可想得地现"
)
"""Chinese characters that mostly do grammar's work (particles, pronouns, negation, auxiliaries,
measure words, and the 现 of 现在): a bigram with one of them ("我不", "现在") names no topic."""


def topic_terms(text: str) -> set[str]:
    """The `lexical_terms` of `text` that name a topic: no number or measure ("5", "10mg"), no
    lone Chinese character, no Chinese bigram with a function character. What two texts must
    share to be about one thing: "我不吃香菜" and "力量训练我不太会" share only "我不", "现在82kg"
    and "卧推现在60kg" only "现在", two drugs taken at 10mg only "10mg".

    Example:
        >>> sorted(topic_terms("卧推现在60kg做5个"))
        ['卧推']
        >>> sorted(topic_terms("we moved to Linear 2 weeks ago"))
        ['ago', 'linear', 'move', 'week']
    """
    return {
        term
        for term in lexical_terms(text)
        if not term[0].isdigit()
        and not (_CJK_RUN.fullmatch(term) and (len(term) == 1 or set(term) & _CJK_FUNCTION_CHARS))
    }


@cache
def _default_tokenizer() -> Tokenizer:
    return Tokenizer()


class LexicalIndex:
    """A persistent BM25 index of scoped documents, backed by SQLite FTS5.

    Args:
        folder: Where `lexical.sqlite3` lives (created if missing); None keeps the index in memory.
        tokenizer: Defaults to `Tokenizer()`. When it differs from the one that built the file,
            every document is re-tokenized on open.
        context_weight: How much a term of a document's `context` counts, relative to its `text`.

    Example:
        >>> index = LexicalIndex()
        >>> index.upsert("memories/alice", [
        ...     LexicalDocument("m1", "Alice prefers dark mode in every editor"),
        ...     LexicalDocument("m2", "Alice's cat is called Mochi"),
        ... ])
        >>> [doc_id for doc_id, _ in index.search("memories/alice", "which editor theme? dark?")]
        ['m1']
    """

    def __init__(
        self,
        folder: str | Path | None = None,
        *,
        tokenizer: Tokenizer | None = None,
        context_weight: float = 0.5,
    ) -> None:
        if not 0.0 <= context_weight <= 1.0:
            raise ValueError(f"context_weight must be between 0 and 1, got {context_weight}")
        self.tokenizer = tokenizer or Tokenizer()
        self.context_weight = context_weight
        if folder is None:
            self.path: Path | None = None
            target = ":memory:"
        else:
            self.path = Path(folder) / INDEX_FILE
            self.path.parent.mkdir(parents=True, exist_ok=True)
            target = str(self.path)
        self._lock = threading.RLock()
        self._shrunk: set[str] = set()
        """Scopes that lost documents since the last `scrub`."""
        self._db = sqlite3.connect(
            target, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS
        )
        if not _has_fts5(self._db):
            self._db.close()
            raise RuntimeError(
                f"this Python's sqlite3 (SQLite {sqlite3.sqlite_version}) lacks FTS5, which the "
                "lexical index needs: use a Python build whose SQLite has FTS5 (most do)"
            )
        self._setup()

    # -- writes ---------------------------------------------------------------------------------

    def upsert(self, scope: str, documents: Iterable[LexicalDocument]) -> None:
        """Add documents to `scope`, replacing any with the same id; all or nothing."""
        documents = list({doc.id: doc for doc in documents}.values())  # last one of an id wins
        rows = [(doc, self._terms(doc)) for doc in documents]  # tokenize outside the lock
        with self._transaction():
            table = self._table(scope, create=True)
            self._clear_pending(scope, [doc.id for doc, _ in rows])
            self._delete_docs(scope, table, [doc.id for doc, _ in rows])
            # rowids chosen as SQLite would (after the largest), so both tables take one call
            first = self._db.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM docs").fetchone()[0]
            self._db.executemany(
                "INSERT INTO docs(rowid, scope, doc_id, text, context, digest) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (first + n, scope, doc.id, doc.text, doc.context, doc.digest)
                    for n, (doc, _) in enumerate(rows)
                ],
            )
            self._db.executemany(
                f"INSERT INTO {table}(rowid, text, context) VALUES (?, ?, ?)",
                [(first + n, text, context) for n, (_, (text, context)) in enumerate(rows)],
            )

    def delete(self, scope: str, ids: Iterable[str]) -> None:
        """Remove documents by id; unknown ids are ignored."""
        ids = list(ids)
        with self._transaction():
            self._clear_pending(scope, ids)
            table = self._table(scope, create=False)
            if table is not None:
                self._delete_docs(scope, table, ids)
                self._shrunk.add(scope)

    def drop_scope(self, scope: str) -> None:
        """Remove every document of `scope` and its table."""
        with self._transaction():
            table = self._table(scope, create=False)
            if table is not None:
                self._db.execute(f"DROP TABLE {table}")
                self._db.execute("DELETE FROM docs WHERE scope = ?", (scope,))
                self._db.execute("DELETE FROM scopes WHERE scope = ?", (scope,))

    def scrub(self) -> None:
        """Leave nothing of deleted documents in the file.

        Deleted rows and dropped tables are overwritten as they go (`secure_delete`), but FTS5
        keeps a deleted document's terms in its segments until they are merged: the scopes that
        lost documents since the last scrub are merged here ('optimize'), then the write-ahead
        log, which still holds earlier versions of the pages, is emptied.
        """
        with self._lock:
            scopes, self._shrunk = self._shrunk, set()
        with self._transaction():
            for scope in sorted(scopes):
                table = self._table(scope, create=False)
                if table is not None:
                    self._db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        with self._lock:
            if self.path is not None:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def mark_pending(self, scope: str, ids: Iterable[str]) -> None:
        """Journal ids whose documents are about to change in the caller's primary store."""
        with self._transaction():
            self._db.executemany(
                "INSERT OR IGNORE INTO pending(scope, doc_id) VALUES (?, ?)",
                [(scope, doc_id) for doc_id in ids],
            )

    def pending(self) -> dict[str, list[str]]:
        """Journaled ids not written since, by scope."""
        with self._lock:
            rows = self._db.execute("SELECT scope, doc_id FROM pending ORDER BY scope").fetchall()
        found: dict[str, list[str]] = {}
        for scope, doc_id in rows:
            found.setdefault(scope, []).append(doc_id)
        return found

    def get_meta(self, key: str) -> str | None:
        """A caller's setting stored with the index (None if unset)."""
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM meta WHERE key = ?", ("user:" + key,)
            ).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Store a caller's setting with the index."""
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", ("user:" + key, value)
            )

    def delete_meta(self, key: str) -> None:
        """Remove a caller's setting (nothing if unset)."""
        with self._transaction():
            self._db.execute("DELETE FROM meta WHERE key = ?", ("user:" + key,))

    # -- reads ----------------------------------------------------------------------------------

    def search(self, scope: str, query: str, *, limit: int = 100) -> list[tuple[str, float]]:
        """The best `limit` documents of `scope` for `query`, as (id, BM25 score), best first.

        Scores are positive and only comparable within one query. Documents sharing no term
        with the query are not returned; a query without terms returns nothing.
        """
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        terms = list(dict.fromkeys(self.tokenizer(query)))
        if not terms:
            return []
        expression = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        with self._lock:
            table = self._table(scope, create=False)
            if table is None:
                return []
            rows = self._db.execute(
                f"SELECT d.doc_id, m.rank FROM (SELECT rowid, rank FROM {table} WHERE {table} MATCH ? "
                "AND rank MATCH ? ORDER BY rank LIMIT ?) AS m JOIN docs AS d ON d.rowid = m.rowid "
                "ORDER BY m.rank",
                (expression, f"bm25(1.0, {self.context_weight!r})", limit),
            ).fetchall()
        return [(doc_id, -rank) for doc_id, rank in rows]

    def ids(self, scope: str) -> list[str]:
        """Every document id of `scope`."""
        with self._lock:
            rows = self._db.execute("SELECT doc_id FROM docs WHERE scope = ?", (scope,))
            return [row[0] for row in rows.fetchall()]

    def data_version(self) -> int:
        """Changes when another connection (another process) commits to the index file."""
        with self._lock:
            return self._db.execute("PRAGMA data_version").fetchone()[0]

    def digests(self, scope: str) -> dict[str, str]:
        """Every document id of `scope` with its `LexicalDocument.digest`."""
        with self._lock:
            rows = self._db.execute("SELECT doc_id, digest FROM docs WHERE scope = ?", (scope,))
            return dict(rows.fetchall())

    def count(self, scope: str) -> int:
        """How many documents `scope` holds."""
        with self._lock:
            return self._db.execute(
                "SELECT count(*) FROM docs WHERE scope = ?", (scope,)
            ).fetchone()[0]

    def scopes(self) -> list[str]:
        """Every scope that holds or held documents (until dropped), sorted."""
        with self._lock:
            return [row[0] for row in self._db.execute("SELECT scope FROM scopes ORDER BY scope")]

    def close(self) -> None:
        """Close the SQLite connection; the index is unusable afterwards."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- private --------------------------------------------------------------------------------

    def _setup(self) -> None:
        with self._lock:
            self._db.execute("PRAGMA secure_delete=ON")  # what is deleted is overwritten
            if self.path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
        with self._transaction():
            self._db.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)")
            self._db.execute("CREATE TABLE IF NOT EXISTS scopes(scope TEXT PRIMARY KEY, tab TEXT)")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS docs(scope TEXT NOT NULL, doc_id TEXT NOT NULL, "
                "text TEXT NOT NULL, context TEXT NOT NULL, digest TEXT NOT NULL, "
                "UNIQUE(scope, doc_id))"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS pending(scope TEXT NOT NULL, doc_id TEXT NOT NULL, "
                "PRIMARY KEY(scope, doc_id))"
            )
            row = self._db.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
            if row is not None and row[0] != self.tokenizer.signature:
                self._retokenize(previous=row[0])
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('tokenizer', ?)",
                (self.tokenizer.signature,),
            )

    def _retokenize(self, previous: str) -> None:
        logger.info(
            "lexical index %s was built by tokenizer %s; re-tokenizing for %s",
            self.path,
            previous,
            self.tokenizer.signature,
        )
        for scope, table in self._db.execute("SELECT scope, tab FROM scopes").fetchall():
            self._db.execute(f"DELETE FROM {table}")
            docs = self._db.execute(
                "SELECT rowid, doc_id, text, context FROM docs WHERE scope = ?", (scope,)
            ).fetchall()
            for rowid, doc_id, text, context in docs:
                text_terms, context_terms = self._terms(LexicalDocument(doc_id, text, context))
                self._db.execute(
                    f"INSERT INTO {table}(rowid, text, context) VALUES (?, ?, ?)",
                    (rowid, text_terms, context_terms),
                )

    def _terms(self, doc: LexicalDocument) -> tuple[str, str]:
        return " ".join(self.tokenizer(doc.text)), " ".join(self.tokenizer(doc.context))

    def _table(self, scope: str, *, create: bool) -> str | None:
        row = self._db.execute("SELECT tab FROM scopes WHERE scope = ?", (scope,)).fetchone()
        if row is not None:
            return row[0]
        if not create:
            return None
        table = "fts_" + hashlib.sha256(scope.encode()).hexdigest()[:24]
        # Our terms are already split, so unicode61 only has to split them at the spaces.
        self._db.execute(
            f"CREATE VIRTUAL TABLE {table} USING fts5(text, context, "
            "tokenize = 'unicode61 remove_diacritics 0')"
        )
        self._db.execute("INSERT INTO scopes(scope, tab) VALUES (?, ?)", (scope, table))
        return table

    def _clear_pending(self, scope: str, ids: list[str]) -> None:
        self._db.executemany(
            "DELETE FROM pending WHERE scope = ? AND doc_id = ?", [(scope, i) for i in ids]
        )

    def _delete_docs(self, scope: str, table: str, ids: list[str]) -> None:
        rowids: list[tuple[int]] = []
        for start in range(0, len(ids), _IDS_PER_QUERY):
            chunk = ids[start : start + _IDS_PER_QUERY]
            rowids += self._db.execute(
                f"SELECT rowid FROM docs WHERE scope = ? AND doc_id IN ({','.join('?' * len(chunk))})",
                (scope, *chunk),
            ).fetchall()
        self._db.executemany(f"DELETE FROM {table} WHERE rowid = ?", rowids)
        self._db.executemany("DELETE FROM docs WHERE rowid = ?", rowids)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")


def _has_fts5(db: sqlite3.Connection) -> bool:
    try:
        db.execute("CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(x)")
    except sqlite3.OperationalError:
        return False
    db.execute("DROP TABLE temp.fts5_probe")
    return True
