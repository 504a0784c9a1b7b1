"""A small test world with any pair of the gate's features, and an independent scorer of it.

Nothing here imports ``retrieval_gate``: the expected values come from this file's own reading
of the documented definitions (docs/concepts/measures.md, evidence-units.md, access-time.md,
pipelines.md, per-query-scores.md), so that a fault in the gate's code cannot hide on both
sides of a comparison.

The world: 12 documents ``d00``…``d11`` of 60 characters, each cut into three chunks of 20
(``d03#1`` is characters 20–40 of ``d03``, 4–8 tokens); 30 queries ``q00``…``q29``; for each
answerable query eight judged chunks — grades 2, 2, 1, 1, 0, 0, 0, 0 — judged as documents (the
best grade of a document's chunks), as chunk ids, or as spans (characters 3–17 of the chunk;
for the first two, 10–30: a span two chunks cover together). The measures: Recall, nDCG, P,
Judged and Judged(weight=rank) at 6 (and Stale with time data), also on condensed rankings.
Two runs rank eight chunks per query (JSON Lines items with their place and tokens; chunk ids alone under a chunk unit), the
candidate a seeded reshuffle of the baseline's with one item moved.

Features (:data:`FEATURES`) switch on:

- ``unit:document`` / ``unit:chunk`` (with the chunk table pinned) / ``unit:chunk-no-table`` /
  ``unit:span`` — the evidence unit (default ``document``);
- ``access`` — documents d00–d03 visible to ``x`` only, d04–d05 to ``y`` only (a permissions
  file); queries ask as ``x`` (even), ``y`` (odd), or nobody (every fifth);
- ``time`` — d06 in force until 2020-01-01, d07 from 2030-01-01; every query asks on 2025-06-01;
- ``stages`` — a pipeline: ``candidates`` (top 8) → ``context`` (top 6, 25 tokens);
- ``costs`` — every ranking records ``latency_ms``; the mean latency is gated;
- ``slices`` — queries tagged ``even``/``odd``, the last four unanswerable (no judgment), and
  every gate on the ``even`` slice too;
- ``abstention`` — each run's last ranking records whether it abstained, per query;
  ``FalseAbstain`` is gated (and ``Abstain``, on the unanswerable queries, with slices);
- ``scores`` — both runs pin a score file (two samples per query) and ``score:f1`` is gated;
- ``scores-only`` — the candidate is its score file alone (no ranking), only ``score:f1`` gated;
- ``unjudged`` — two items of each ranking are chunks of documents nobody judged for the query;
- ``cache`` — the check runs with the cache on, twice, and off, and must not tell the
  difference;
- ``unscored-unanswerable`` — the last four queries are unanswerable, both runs pin a score
  file and ``score:f1`` is gated, and the candidate's score file leaves the unanswerable
  queries out (an evaluation of the answerable questions only): every answerable slice
  compares as with a full file;
- ``batch-latency`` — both runs were made by ``gate run --batch-size 3`` (their manifests say
  ``latency: batch``): the queries of a batch of three share one ``latency_ms``, the batch
  call's, recorded on the last stage only (a batch call returns every stage at once, as
  ``gate run`` writes it); the latency gate is an absolute budget near the mean, so that some
  pairs pass it and others fail it (a relative one is refused on batch times,
  ``tests/test_run_stages.py``).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

UNITS = ("document", "chunk", "chunk-no-table", "span")
TOGGLES = ("access", "time", "stages", "costs", "slices", "abstention", "scores", "scores-only",
           "unjudged", "cache", "batch-latency", "unscored-unanswerable")
BATCH = 3  # queries per batch call, with batch-latency
FEATURES = (*(f"unit:{u}" for u in UNITS), *TOGGLES)
DOCS = [f"d{i:02d}" for i in range(12)]
CHUNK = 20  # characters per chunk, three per document
QUERIES = [f"q{i:02d}" for i in range(30)]
K = 6  # the measures' cutoff (the context stage's, with stages)
DAY = "2025-06-01"
ACL = {"d00": ("x",), "d01": ("x",), "d02": ("x",), "d03": ("x",), "d04": ("y",),
       "d05": ("y",)}
VALID = {"d06": (None, "2020-01-01"), "d07": ("2030-01-01", None)}


def tokens_of(chunk: str) -> int:
    doc, part = chunk.split("#")
    return 4 + (int(doc[1:]) + int(part)) % 5


def place(chunk: str) -> tuple[str, int, int]:
    doc, part = chunk.split("#")
    return doc, CHUNK * int(part), CHUNK * int(part) + CHUNK


@dataclass
class World:
    """The files of one case and what the oracle needs to score them."""

    features: frozenset[str]
    unit: str
    queries: list[dict] = field(default_factory=list)
    judged: dict[str, dict[str, int]] = field(default_factory=dict)  # query → chunk → grade
    rankings: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # run → stage → …
    latency: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    scores: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    abstained: dict[str, dict[str, bool]] = field(default_factory=dict)

    @property
    def answerable(self) -> list[str]:
        return [q["id"] for q in self.queries if q.get("answerable", True)]

    @property
    def stages(self) -> list[str]:
        return ["candidates", "context"] if "stages" in self.features else [""]

    def timed(self) -> list[str]:
        """The stages whose files record a latency: every one, or with batch latencies the
        last (a batch call returns every stage at once)."""
        return self.stages[-1:] if "batch-latency" in self.features else self.stages

    def measures(self) -> list[str]:
        """The snapshot's measures (all gated)."""
        at = " [context]" if "stages" in self.features else ""
        names = [f"Recall@{K}{at}", f"nDCG@{K}{at}", f"Judged@{K}{at}", f"P@{K}{at}",
                 f"Judged(weight=rank)@{K}{at}"]
        if "stages" in self.features:
            names.append("Recall@8 [candidates]")
        if "time" in self.features:
            names.append(f"Stale@{K}{at}")
        return names


def build(features: frozenset[str], seed: int) -> World:
    """The world of ``features`` (see the module docstring)."""
    rng = random.Random(seed)
    unit = next((f.split(":")[1] for f in features if f.startswith("unit:")), "document")
    world = World(features, unit)
    chunks = [f"{d}#{j}" for d in DOCS for j in range(3)]
    unanswerable = (set(QUERIES[-4:]) if {"slices", "unscored-unanswerable"} & features
                    else set())
    for i, qid in enumerate(QUERIES):
        query: dict = {"id": qid, "text": f"question {i}"}
        if "slices" in features:
            query["tags"] = ["even" if i % 2 == 0 else "odd"]
        if qid in unanswerable:
            query["answerable"] = False
        if "access" in features and i % 5:
            query["scope"] = ["x" if i % 2 == 0 else "y"]
        if "time" in features:
            query["as_of"] = DAY
        world.queries.append(query)
        judged_docs = rng.sample(DOCS, 8)
        picked = [f"{d}#{rng.randrange(3)}" for d in judged_docs]
        world.judged[qid] = ({} if qid in unanswerable else
                             dict(zip(picked, (2, 2, 1, 1, 0, 0, 0, 0))))
        pool = picked[:]
        if "unjudged" in features or qid in unanswerable:
            others = [c for c in chunks if c.split("#")[0] not in judged_docs]
            pool[-2:] = rng.sample(others, 2)
        base = rng.sample(pool, 8)
        cand = base[:]
        rng.shuffle(cand)
        cand.insert(rng.randrange(8), cand.pop(rng.randrange(8)))
        for run, ranked in (("baseline", base), ("candidate", cand)):
            stages = world.rankings.setdefault(run, {})
            if "stages" in features:
                stages.setdefault("candidates", {})[qid] = ranked
                stages.setdefault("context", {})[qid] = rng.sample(ranked[:7], 6)
            else:
                stages.setdefault("", {})[qid] = ranked
            for stage in world.stages:
                timed = world.latency.setdefault(run, {}).setdefault(stage, {})
                first = QUERIES[QUERIES.index(qid) // BATCH * BATCH]
                drawn = round(rng.uniform(5, 50), 3)  # drawn alike with or without batches
                timed[qid] = timed[first] if "batch-latency" in features and first != qid \
                    else drawn
            world.scores.setdefault(run, {})[qid] = [round(rng.random(), 4) for _ in range(2)]
            world.abstained.setdefault(run, {})[qid] = rng.random() < 0.3
    return world


# -- the files ------------------------------------------------------------------------------

def _lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write(world: World, folder: Path) -> dict[str, Path]:
    """The world's files in ``folder``: corpus, chunk table, permissions, queries, judgments,
    each run's ranking files and score file. Returns them by name."""
    f = world.features
    files = {"corpus": _lines(folder / "corpus.jsonl", [
        {"id": d, "text": (d + "-") * 20} for d in DOCS])}
    files["chunks"] = _lines(folder / "chunks.jsonl", [
        {"id": c, "doc_id": place(c)[0], "start": place(c)[1], "end": place(c)[2],
         "tokens": tokens_of(c)} for c in (f"{d}#{j}" for d in DOCS for j in range(3))])
    if "access" in f or "time" in f:
        rows = []
        for d in DOCS:
            row: dict = {"id": d}
            if "access" in f and d in ACL:
                row["acl"] = list(ACL[d])
            if "time" in f and d in VALID:
                start, end = VALID[d]
                row.update({k: v for k, v in (("valid_from", start), ("valid_to", end)) if v})
            if len(row) > 1:
                rows.append(row)
        files["permissions"] = _lines(folder / "permissions.jsonl", rows)
    files["queries"] = _lines(folder / "queries.jsonl", world.queries)
    files["qrels"] = _lines(folder / "qrels.jsonl", _judgments(world))
    for run, stages in world.rankings.items():
        for stage, ranked in stages.items():
            rows = []
            for qid, items in ranked.items():
                row: dict = {"query_id": qid, "items": [_item(world, c, 100 - r)
                                                        for r, c in enumerate(items)]}
                if "costs" in f and stage in world.timed():
                    row["latency_ms"] = world.latency[run][stage][qid]
                if "abstention" in f and stage == world.stages[-1]:
                    row["abstained"] = world.abstained[run][qid]
                rows.append(row)
            files[f"{run}:{stage}"] = _lines(folder / f"{run}-{stage or 'run'}.jsonl", rows)
        left_out = (set(QUERIES) - set(world.answerable)
                    if run == "candidate" and "unscored-unanswerable" in f else set())
        files[f"{run}:scores"] = _lines(folder / f"{run}.scores.jsonl", [
            {"query_id": q, "sample": s, "scores": {"f1": v}}
            for q, values in world.scores[run].items() if q not in left_out
            for s, v in enumerate(values)])
    return files


def _judgments(world: World) -> list[dict]:
    rows = []
    for qid, judged in world.judged.items():
        if world.unit == "document":
            best: dict[str, int] = {}
            for chunk, grade in judged.items():
                doc = place(chunk)[0]
                best[doc] = max(best.get(doc, grade), grade)
            rows += [{"query_id": qid, "doc_id": d, "grade": g} for d, g in best.items()]
        elif world.unit == "span":
            rows += [{"query_id": qid, "doc_id": doc, "start": s, "end": e, "grade": g}
                     for (doc, s, e), g in ((span_of(c, i), g)
                                            for i, (c, g) in enumerate(judged.items()))]
        else:
            rows += [{"query_id": qid, "doc_id": c, "grade": g} for c, g in judged.items()]
    return rows


def span_of(chunk: str, i: int) -> tuple[str, int, int]:
    """The span judged for the ``i``-th judged chunk of a query: characters 3–17 of the chunk;
    10–30 for the first two (two chunks cover it together, when there is a next chunk)."""
    doc, start, end = place(chunk)
    if i < 2 and end < 3 * CHUNK:
        return doc, start + 10, start + 30
    return doc, start + 3, start + 17


def _item(world: World, chunk: str, score: int) -> dict:
    if world.unit == "chunk":  # placed by the snapshot's chunk table
        return {"id": chunk, "score": score}
    if world.unit == "chunk-no-table":  # nothing places it; its size, for a budget
        return {"id": chunk, "tokens": tokens_of(chunk), "score": score}
    doc, start, end = place(chunk)
    return {"id": chunk, "doc_id": doc, "start": start, "end": end,
            "tokens": tokens_of(chunk), "score": score}


# -- the oracle ------------------------------------------------------------------------------

def visible(world: World, qid: str, doc: str) -> bool:
    if "access" not in world.features or doc not in ACL:
        return True
    scope = next(q for q in world.queries if q["id"] == qid).get("scope") or []
    return bool(set(scope) & set(ACL[doc]))


def in_force(world: World, doc: str) -> bool:
    if "time" not in world.features or doc not in VALID:
        return True
    start, end = VALID[doc]
    return (start is None or start <= DAY) and (end is None or DAY <= end)


def passed_on(world: World, run: str, stage: str, qid: str) -> list[str]:
    """The chunks a stage passes on: its top cutoff, and of those the prefix within the token
    budget (the context stage); a one-ranking run passes on everything."""
    ranked = world.rankings[run][stage][qid]
    if stage == "candidates":
        return ranked[:8]
    if stage == "context":
        kept, spent = [], 0
        for chunk in ranked[:6]:
            spent += tokens_of(chunk)
            if spent > 25:
                break
            kept.append(chunk)
        return kept
    return ranked


def _units(world: World, qid: str) -> list[tuple[object, int]]:
    """The query's judged units (document id, chunk id, or span) with grades, without those
    of documents its asker may not see or not in force (never evidence)."""
    judged = world.judged[qid]
    if world.unit == "document":
        best: dict[str, int] = {}
        for chunk, grade in judged.items():
            doc = place(chunk)[0]
            best[doc] = max(best.get(doc, grade), grade)
        units: list[tuple[object, int]] = list(best.items())
    elif world.unit == "span":
        units = [(span_of(c, i), g) for i, (c, g) in enumerate(judged.items())]
    else:
        units = list(judged.items())
    return [(u, g) for u, g in units if _ok(world, qid, _doc(u))]


def _doc(unit: object) -> str:
    if isinstance(unit, tuple):
        return unit[0]
    return unit.split("#")[0]  # type: ignore[union-attr]


def _ok(world: World, qid: str, doc: str) -> bool:
    return visible(world, qid, doc) and in_force(world, doc)


def judged(world: World, qid: str, item: str) -> bool:
    """Whether an item (a document, under document judgments; else a chunk) has a judgment
    for the query — for spans, a judged span in its document — or its asker may not see it or
    it is not in force (it gains 0 by rule: judged)."""
    doc = item if world.unit == "document" else item.split("#")[0]
    judged_docs = {place(c)[0] for c in world.judged[qid]}
    if not _ok(world, qid, doc):
        return True
    if world.unit in ("span", "document"):
        return doc in judged_docs
    return item in world.judged[qid]


def score(world: World, run: str, stage: str, qid: str, measure: str, k: int,
          condensed: bool = False) -> float:
    """One measure's value on the ranking ``stage`` passes on (see the module docstring); with
    ``condensed``, on its judged items alone, moved up (Sakai's condensed ranking)."""
    items = passed_on(world, run, stage, qid)
    if world.unit == "document":  # chunks collapse to their documents, first rank kept
        items = list(dict.fromkeys(place(c)[0] for c in items))
    if condensed:
        items = [i for i in items if judged(world, qid, i)]
    units = _units(world, qid)
    relevant = [u for u, g in units if g >= 1]
    judged_any = {u for u, g in units}
    grades, judged_flags, covered = [], [], set()
    held: dict[str, set[int]] = {}
    for item in items[:k]:
        doc = item if world.unit == "document" else item.split("#")[0]
        ok = _ok(world, qid, doc)
        judged_flags.append(judged(world, qid, item))
        if world.unit == "span":
            gain = 0
            if ok:
                _, start, end = place(item)
                held.setdefault(doc, set()).update(range(start, end))
                for span, g in units:
                    if span not in covered and span[0] == doc and \
                            set(range(span[1], span[2])) <= held[doc]:
                        covered.add(span)
                        gain = max(gain, g)
            grades.append(gain)
        else:
            grade = dict(units).get(item)
            grades.append(grade if ok and grade is not None and item in judged_any else 0)
            if ok and item in relevant:
                covered.add(item)
    if measure == "Recall":
        return len([u for u in covered if u in relevant]) / len(relevant) if relevant else 0.0
    if measure == "P":
        return sum(g >= 1 for g in grades) / k
    if measure == "Judged":
        return sum(judged_flags) / k
    if measure == "Judged(weight=rank)":  # rank r weighs 1/r, over H_k
        return (sum(f / r for r, f in enumerate(judged_flags, 1))
                / sum(1 / r for r in range(1, k + 1)))
    if measure == "Stale":
        docs = [i if world.unit == "document" else i.split("#")[0] for i in items[:k]]
        return sum(not in_force(world, d) for d in docs) / k
    if measure == "nDCG":
        dcg = sum((2 ** g - 1) / math.log2(r + 2) for r, g in enumerate(grades))
        ideal = sorted((g for _, g in units if g > 0), reverse=True)[:k]
        idcg = sum((2 ** g - 1) / math.log2(r + 2) for r, g in enumerate(ideal))
        return dcg / idcg if idcg else 0.0
    raise ValueError(measure)


def expected_values(world: World, run: str, condensed: bool = False
                    ) -> dict[str, dict[str, float]]:
    """Per answerable query, every snapshot measure's value in ``run`` (with ``condensed``, on
    its condensed rankings)."""
    out = {}
    for qid in world.answerable:
        values = {}
        for name in world.measures():
            head, _, at = name.partition(" [")
            family, k = head.split("@")
            stage = at.rstrip("]") if at else ""
            values[name] = score(world, run, stage, qid, family, int(k), condensed)
        out[qid] = values
    return out


def expected_leaks(world: World, run: str) -> dict[str, int]:
    """Per query (answerable or not), the items its asker may not see among those the
    measures read: the top K (8 on the candidates stage; the context stage's top 6, over its
    budget or not)."""
    counts: dict[str, int] = {}
    for qid in (q["id"] for q in world.queries):
        n = 0
        for stage in world.stages:
            depth = 8 if stage == "candidates" else K
            items = world.rankings[run][stage][qid][:depth]
            if world.unit == "document":
                items = list(dict.fromkeys(place(c)[0] for c in world.rankings[run][stage][qid]
                                           ))[:depth]
            n += sum(not visible(world, qid, i if world.unit == "document" else i.split("#")[0])
                     for i in items)
        if n:
            counts[qid] = n
    return counts


def expected_latency(world: World, run: str) -> list[float]:
    """Per answerable query, its latency: the sum over the stages that record one."""
    return [math.fsum(world.latency[run][s][q] for s in world.timed())
            for q in world.answerable]


def expected_score(world: World, run: str, qid: str) -> float:
    """A query's score: the mean of its samples."""
    values = world.scores[run][qid]
    return math.fsum(values) / len(values)
