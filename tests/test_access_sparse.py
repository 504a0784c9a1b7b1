"""Access data at scale, and access data refused when it is wrong.

Visibility of random tables (one file, or a permissions file over a corpus) against a plain
set intersection; a document with 200,000 principals and a query with a scope of 200,000, in
little memory; the cache; ``supersedes`` cycles in either file or only in the two merged;
``"acl": null``, and what ``null`` means for the other fields.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from conftest import gate

from retrieval_gate.core import sparse
from retrieval_gate.core.errors import InputError
from retrieval_gate.core.model import Query
from retrieval_gate.formats.permissions import read_access, read_corpus_access
from retrieval_gate.scoring.visibility import allowed, askers, item_access

FIX = "remove the link that closes it (a document supersedes an older version only)"


def _lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _random_records(rng: np.random.Generator, docs: list[str], principals: list[str],
                    share: float) -> list[dict]:
    """Records for a random ``share`` of ``docs``: an ACL (absent, empty, or up to 6
    principals, repeats allowed), sometimes a date."""
    records = []
    for doc in docs:
        if rng.random() >= share:
            continue
        record: dict = {"id": doc}
        kind = rng.random()
        if kind < 0.7:
            record["acl"] = [principals[i] for i in rng.integers(0, len(principals),
                                                                 rng.integers(1, 7))]
        elif kind < 0.8:
            record["acl"] = []
        if rng.random() < 0.3 or len(record) == 1:
            record["valid_to"] = "2026-06-30"
        records.append(record)
    return records


def _merged(corpus: list[dict], permissions: list[dict]) -> dict[str, dict]:
    """The README's rule, written out: per document and field, the permissions file's when
    its line has the field, else the corpus's."""
    merged = {r["id"]: dict(r) for r in corpus}
    for record in permissions:
        merged.setdefault(record["id"], {}).update(record)
    return merged


def _brute_visible(records: dict[str, dict], doc: str, scope: tuple[str, ...] | None) -> bool:
    record = records.get(doc, {})
    return "acl" not in record or bool(set(record["acl"]) & set(scope or ()))


@pytest.mark.parametrize("seed", range(6))
def test_visibility_equals_a_set_intersection_on_random_tables(tmp_path: Path, seed: int,
                                                               monkeypatch) -> None:
    """Every (query, document) pair of random tables, some with a permissions file over the
    corpus, as a plain set intersection says; looked up a few pairs at a time, or all at
    once."""
    rng = np.random.default_rng(seed)
    principals = [f"p{i}" for i in range(int(rng.choice([1, 5, 70, 300])))] + ["é", "日本"]
    docs = [f"d{i}" for i in range(60)] + ["unlisted"]
    corpus = [{**r, "text": "x"} for r in _random_records(rng, docs[:-1], principals, 0.7)]
    corpus_file = _lines(tmp_path / "corpus.jsonl", corpus)
    if seed % 2:
        permissions = _random_records(rng, docs[:-1], principals, 0.4)
        table = read_access(_lines(tmp_path / "permissions.jsonl", permissions), corpus_file)
        records = _merged(corpus, permissions)
    else:
        table = read_corpus_access(corpus_file)
        records = {r["id"]: r for r in corpus}
    assert table is not None
    queries = [Query(f"q{i}", scope=None if i == 0 else tuple(sorted({
        principals[j] for j in rng.integers(0, len(principals), rng.integers(0, 40))})))
        for i in range(25)] + [Query("ghost", scope=("nobody", "p0"))]
    query = np.repeat(np.arange(len(queries)), len(docs))
    names = np.array([d.encode() for d in docs] * len(queries), dtype="S")
    if seed % 3 == 0:
        monkeypatch.setattr(sparse, "PAIRS_AT_ONCE", 3)
    visible = item_access(table, askers(table, queries), query, names).visible
    expected = [_brute_visible(records, d, q.scope) for q in queries for d in docs]
    assert visible.tolist() == expected
    rows = np.flatnonzero(~table.public)
    assert [set(p) for p in allowed(table, rows)] == [
        set(records[table.ids[r].decode()]["acl"]) for r in rows.tolist()]


def test_a_document_with_200000_principals_and_a_scope_of_200000_in_little_memory(
        tmp_path: Path) -> None:
    """Bitsets over the principals would take 25 KB for each of the 40,000 items (1 GB); the
    sparse sets look each item's smaller side up in the larger, and the pairs where both are
    large once each (the huge scope meets the huge ACL: 200,000 lookups, about 20 MB)."""
    many = [f"user{i}" for i in range(200_000)]
    docs = [{"id": "everyone", "acl": many}, {"id": "none", "acl": []},
            {"id": "few", "acl": ["user7", "team"]}, {"id": "last", "acl": ["user199999"]},
            {"id": "team", "acl": ["team"]}]
    table = read_access(_lines(tmp_path / "permissions.jsonl", docs))
    queries = [Query("small", scope=("team", "user5")), Query("huge", scope=tuple(many)),
               Query("outsider", scope=("team",)), Query("none", scope=None)]
    who = askers(table, queries)
    n = 10_000
    ids = np.array([b"everyone", b"none", b"few", b"last", b"team"] * (n // 5), dtype="S")
    query = np.repeat(np.arange(4), n)
    tracemalloc.start()
    try:
        visible = item_access(table, who, query, np.tile(ids, 4)).visible
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20
    by_query = visible.reshape(4, n)[:, :5].tolist()
    assert by_query == [[True, False, True, False, True],  # small: user5, team
                        [True, False, True, True, False],  # huge: every user, not team
                        [False, False, True, False, True],  # outsider: team
                        [False, False, False, False, False]]  # no scope: public only
    few = table.ids.tolist().index(b"few")
    assert allowed(table, np.array([few])) == [("team", "user7")]


def test_the_cache_gives_what_the_parse_gives(tmp_path: Path, monkeypatch) -> None:
    rows = [{"id": "a", "acl": ["é", "b", "b"]}, {"id": "b", "acl": []},
            {"id": "c", "valid_from": "2026-01-01", "supersedes": "z"}, {"id": "d", "acl": ["日"]}]
    path = _lines(tmp_path / "permissions.jsonl", rows)
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "cache"))
    parsed = read_access(path)
    assert len(list((tmp_path / "cache").glob("access-csr-v1-*"))) == 1
    cached = read_access(path)
    assert not cached.acl.codes.flags.writeable  # the entry's bytes, read-only
    assert parsed.acl.codes.flags.writeable
    for table in (parsed, cached):
        assert table.principals == ("b", "é", "日")
        assert allowed(table, np.arange(len(table.ids))) == [
            {"a": ("b", "é"), "b": (), "c": (), "d": ("日",), "z": ()}[i.decode()]
            for i in table.ids]
    for name in ("ids", "keys", "public", "valid_from", "valid_to", "family"):
        assert np.array_equal(getattr(parsed, name), getattr(cached, name))


def _freeze(folder: Path, corpus: list[dict], permissions: list[dict] | None = None
            ) -> tuple[int, str]:
    """``gate snapshot freeze`` with these access data; (exit code, standard error)."""
    _lines(folder / "corpus.jsonl", [{"text": "t", **r} for r in corpus])
    _lines(folder / "queries.jsonl", [{"id": "q", "scope": ["acme"]}])
    _lines(folder / "qrels.jsonl", [{"query_id": "q", "doc_id": corpus[0]["id"], "grade": 1}])
    pinned = [] if permissions is None else [
        "--permissions-file", _lines(folder / "permissions.jsonl", permissions)]
    code, _, err = gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                        folder / "qrels.jsonl", "--corpus-file", folder / "corpus.jsonl",
                        "--corpus-version", "c", "--permissions-version", "p", *pinned,
                        "--unit", "document", "-m", "Recall@3", "-o", folder / "snapshot.json")
    assert (folder / "snapshot.json").exists() == (code == 0)
    return code, err


PUBLIC = {"id": "pub"}
CYCLES = {
    "self": ([PUBLIC, {"id": "a", "supersedes": "a"}], 2, "'a' supersedes 'a'"),
    "two": ([PUBLIC, {"id": "b", "supersedes": "a"}, {"id": "a", "supersedes": "b"}], 2,
            "'b' supersedes 'a' supersedes 'b'"),
    "three": ([PUBLIC, {"id": "x", "supersedes": "old"}, {"id": "c", "supersedes": "a"},
               {"id": "a", "supersedes": "b"}, {"id": "b", "supersedes": "c"}], 3,
              "'c' supersedes 'a' supersedes 'b' supersedes 'c'"),
}


@pytest.mark.parametrize("where", ["corpus", "permissions"])
@pytest.mark.parametrize("cycle", sorted(CYCLES))
def test_a_supersedes_cycle_in_one_file_is_refused_naming_it(tmp_path: Path, cycle: str,
                                                              where: str) -> None:
    rows, line, named = CYCLES[cycle]
    if where == "corpus":
        code, err = _freeze(tmp_path, rows)
    else:
        code, err = _freeze(tmp_path, [PUBLIC, {"id": "a"}, {"id": "b"}, {"id": "c"}],
                            [{"id": "pub", "acl": ["acme"]}, *rows[1:]])
    assert code == 2
    assert err == (f"error: {tmp_path / f'{where}.jsonl'}:{line}: the supersedes links form a "
                   f"cycle: {named} — {FIX}\n")


@pytest.mark.parametrize(("corpus", "permissions", "line", "named"), [
    ([{"id": "a", "supersedes": "b"}], [{"id": "b", "supersedes": "a"}], 1,
     "'b' supersedes 'a' (this line) supersedes 'b' ({corpus}:1)"),
    ([{"id": "a", "supersedes": "b"}, {"id": "b", "supersedes": "old"}, {"id": "c"}],
     [{"id": "x", "acl": ["acme"]}, {"id": "c", "supersedes": "a"},
      {"id": "b", "supersedes": "c"}], 2,
     "'c' supersedes 'a' (this line) supersedes 'b' ({corpus}:1) supersedes 'c' (line 3)"),
])
def test_a_cycle_only_the_two_files_form_is_refused_naming_each_link(
        tmp_path: Path, corpus: list[dict], permissions: list[dict], line: int,
        named: str) -> None:
    """Each file alone has none; merged per field (the permissions file's ``supersedes`` wins
    — ``b`` supersedes ``c``, not ``old``), the links come back."""
    code, err = _freeze(tmp_path, corpus, permissions)
    assert code == 2
    named = named.format(corpus=tmp_path / "corpus.jsonl")
    assert err == (f"error: {tmp_path / 'permissions.jsonl'}:{line}: the supersedes links form "
                   f"a cycle: {named} — {FIX}\n")


def test_a_long_chain_is_accepted_and_a_long_cycle_named_in_part(tmp_path: Path) -> None:
    """100,000 versions in one chain are one family; 1,000 in a cycle are refused, the first
    eight links named."""
    n = 100_000
    chain = [{"id": f"v{i}", "supersedes": f"v{i + 1}"} for i in range(n)]
    table = read_access(_lines(tmp_path / "chain.jsonl", chain))
    assert len(table.ids) == n + 1 and set(table.family.tolist()) == {0}
    cycle = [{"id": f"v{i}", "supersedes": f"v{(i + 1) % 1000}"} for i in range(1000)]
    with pytest.raises(InputError) as caught:
        read_access(_lines(tmp_path / "cycle.jsonl", [PUBLIC, *cycle]))
    assert str(caught.value) == (
        f"{tmp_path / 'cycle.jsonl'}:2: the supersedes links form a cycle: 'v0' supersedes "
        "'v1' supersedes 'v2' supersedes 'v3' supersedes 'v4' supersedes 'v5' supersedes 'v6' "
        f"supersedes 'v7' supersedes 'v8' supersedes … (1000 documents) — {FIX}")


NULL_ACL = ("'acl' is null — leave \"acl\" out for a public document, write \"acl\": [] for a "
            "document nobody may see, or list the principals allowed to see it")


@pytest.mark.parametrize("where", ["corpus", "permissions"])
def test_a_null_acl_is_refused_not_public(tmp_path: Path, where: str) -> None:
    null = {"id": "secret", "acl": None}
    if where == "corpus":
        code, err = _freeze(tmp_path, [PUBLIC, null])
    else:
        code, err = _freeze(tmp_path, [PUBLIC, {"id": "secret", "acl": ["acme"]}], [null])
    assert code == 2
    line = 2 if where == "corpus" else 1
    assert err == f"error: {tmp_path / f'{where}.jsonl'}:{line}: {NULL_ACL}\n"


def test_a_principal_with_nul_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="'acl' is not a list of principals"):
        read_access(_lines(tmp_path / "permissions.jsonl", [{"id": "a", "acl": ["a\x00"]}]))


def test_null_dates_and_supersedes_are_absent_and_leave_the_corpus_fields(tmp_path: Path
                                                                           ) -> None:
    """``valid_from``, ``valid_to`` and ``supersedes`` null: as if left out — unbounded, none,
    and under a permissions file the corpus's field applies."""
    corpus = [{"id": "d", "valid_to": "2026-02-28", "supersedes": "old"},
              {"id": "e", "valid_from": None, "valid_to": None, "supersedes": None}]
    corpus_file = _lines(tmp_path / "corpus.jsonl", [{"text": "t", **r} for r in corpus])
    alone = read_corpus_access(corpus_file)
    assert alone is not None
    permissions = _lines(tmp_path / "permissions.jsonl", [
        {"id": "d", "acl": ["acme"], "valid_to": None, "supersedes": None}])
    merged = read_access(permissions, corpus_file)
    for table in (alone, merged):
        row = {i.decode(): r for r, i in enumerate(table.ids.tolist())}
        assert int(table.valid_to[row["d"]]) == _ordinal("2026-02-28")
        assert table.family[row["d"]] == table.family[row["old"]] >= 0
        assert table.valid_from[row["e"]] == np.iinfo(np.int64).min
        assert table.valid_to[row["e"]] == np.iinfo(np.int64).max
        assert table.family[row["e"]] == -1 and table.public[row["e"]]
    assert not merged.public[list(merged.ids).index(b"d")]


def _ordinal(day: str) -> int:
    import datetime as dt
    return dt.date.fromisoformat(day).toordinal()
