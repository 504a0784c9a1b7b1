"""Snapshots and run manifests: schemas, freeze → validate, hashes, path escapes, the query set
against the qrels, fingerprints, comparability wording, and the shipped Cranfield example."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import CRANFIELD, ROOT, gate
from jsonschema import Draft202012Validator

from retrieval_gate.formats.jsonfmt import loads
from retrieval_gate.formats.schema import SCHEMA_NAMES, schema, schema_text
from retrieval_gate.inputs.run_manifest import comparability, load_run_manifest
from retrieval_gate.inputs.snapshot import fingerprint, load_snapshot

FREEZE = ["--queries-version", "q-v1", "--qrels-version", "j-v1", "--corpus-version", "c-v1",
          "--chunking-version", "whole", "--permissions-version", "public"]


@pytest.fixture
def testset(tmp_path: Path) -> Path:
    """A small test set: four queries (one unanswerable), graded qrels, two runs."""
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "queries.jsonl").write_text(
        '{"id": "q1", "text": "refund policy", "tags": ["billing"]}\n'
        '{"id": "q2", "text": "rate limits"}\n'
        '{"id": "q3", "text": "restore a backup", "tags": ["billing"]}\n'
        '{"id": "q4", "text": "office dog name", "answerable": false}\n')
    (folder / "qrels.tsv").write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\nq3 0 d4 3\nq4 0 d9 0\n")
    (folder / "corpus.txt").write_text("d1\nd2\nd3\nd4\nd5\nd9\n")
    (folder / "base.trec").write_text("q1 Q0 d1 1 3 b\nq1 Q0 d2 2 2 b\nq2 Q0 d5 1 1 b\n"
                                      "q3 Q0 d4 1 1 b\n")
    (folder / "cand.trec").write_text("q1 Q0 d2 1 3 c\nq2 Q0 d3 1 1 c\nq3 Q0 d4 1 1 c\n")
    return folder


def freeze(folder: Path, *extra: str) -> tuple[int, str, str]:
    return gate("snapshot", "freeze", "--queries", folder / "queries.jsonl", "--qrels",
                folder / "qrels.tsv", "--corpus-file", folder / "corpus.txt", *FREEZE, *extra,
                "-o", folder / "snapshot.json")


def manifest(folder: Path, run: str) -> None:
    code, _, err = gate("run-manifest", "--snapshot", folder / "snapshot.json", "--run",
                        folder / run, "--chunking-version", "whole", "--system", "retriever=bm25",
                        "--commit", "abc",
                        "--created", "2026-11-30T00:00:00Z")
    assert code == 0, err


def edit(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


# -- schemas ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schemas_are_valid_2020_12_with_id_and_descriptions(name):
    document = schema(name)
    loads(schema_text(name), f"{name}.schema.json")  # strict: no key given twice
    Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document["$id"].startswith("urn:retrieval-gate:schema:")

    def fields(node, where="$"):
        for key, sub in node.get("properties", {}).items():
            yield f"{where}.{key}", sub
            yield from fields(sub, f"{where}.{key}")
        for key, sub in node.get("$defs", {}).items():
            yield f"{where}.$defs.{key}", sub
            yield from fields(sub, f"{where}.$defs.{key}")
    for where, sub in fields(document):
        assert sub.get("description"), f"{name}: {where} has no description"


def test_gate_schema_prints_the_shipped_file():
    code, out, _ = gate("schema", "snapshot")
    assert code == 0 and json.loads(out) == schema("snapshot") and out == schema_text("snapshot")
    assert (ROOT / "schemas" / "snapshot.schema.json").read_text() == out
    code, _, err = gate("schema", "nope")
    assert code == 2 and "nope" in err


# -- freeze and validate ---------------------------------------------------------------------

def test_freeze_then_validate_round_trip(testset):
    code, out, err = freeze(testset, "-m", "nDCG@3", "-m", "MRR@3", "--chunking-param",
                            "size=512", "--chunking-param", "splitter=sentence")
    assert code == 0, err
    document = json.loads((testset / "snapshot.json").read_text())
    assert document["queries"] == {"path": "queries.jsonl", "version": "q-v1",
                                   "sha256": document["queries"]["sha256"]}
    assert document["chunking"]["params"] == {"size": 512, "splitter": "sentence"}
    assert document["scoring"]["measures"] == ["nDCG@3", "RR@3"]
    assert document["name"] == "set"
    snap = load_snapshot(testset / "snapshot.json")
    assert snap.fingerprint in out
    code, out, err = gate("validate", testset / "snapshot.json")
    assert code == 0, err
    assert "4 queries (3 answerable, 1 unanswerable), 5 judgments" in out


def test_freeze_default_versions_and_measures(testset):
    code, _, err = gate("snapshot", "freeze", "--queries", testset / "queries.jsonl", "--qrels",
                        testset / "qrels.tsv", "--corpus-version", "c", "--chunking-version",
                        "w", "--permissions-version", "p", "-o", testset / "snapshot.json")
    assert code == 0, err
    document = json.loads((testset / "snapshot.json").read_text())
    assert document["qrels"]["version"] == "sha256:" + document["qrels"]["sha256"][:12]
    assert document["corpus"] == {"version": "c"}
    assert document["scoring"]["measures"] == ["Recall@10", "P@10", "Hit@10", "RR@10",
                                               "nDCG@10", "AP@10"]


def test_freeze_refuses_files_outside_the_folder_and_writes_nothing(testset, tmp_path):
    outside = tmp_path / "queries.jsonl"
    shutil.copy(testset / "queries.jsonl", outside)
    code, _, err = gate("snapshot", "freeze", "--queries", outside, "--qrels",
                        testset / "qrels.tsv", *FREEZE, "-o", testset / "snapshot.json")
    assert code == 2 and "--queries" in err and "not inside the snapshot's folder" in err
    assert not (testset / "snapshot.json").exists()


def test_freeze_validates_queries_against_qrels(testset):
    with open(testset / "qrels.tsv", "a") as handle:
        handle.write("q4 0 d8 1\n")  # unanswerable query with a relevant judgment
    code, _, err = freeze(testset)
    assert code == 2 and "qrels.tsv" in err and "'q4' is marked unanswerable" in err
    assert not (testset / "snapshot.json").exists()


@pytest.mark.parametrize("line, message", [
    ("q7 0 d1 1\n", "query 'q7' is judged but not in the query set"),
    ("q4 0 d8 2\n", "query 'q4' is marked unanswerable"),
])
def test_validate_queries_and_qrels_must_agree(testset, line, message):
    assert freeze(testset)[0] == 0
    with open(testset / "qrels.tsv", "a") as handle:
        handle.write(line)
    edit(testset / "snapshot.json", lambda d: d["qrels"].update(
        sha256=hashlib.sha256((testset / "qrels.tsv").read_bytes()).hexdigest()))
    code, _, err = gate("validate", testset / "snapshot.json")
    assert code == 2 and message in err and err.startswith(f"error: {testset / 'qrels.tsv'}:")


def test_validate_answerable_query_needs_a_relevant_judgment(testset):
    code, _, err = freeze(testset, "--threshold", "2")  # q2's only judgment has grade 1
    assert code == 2 and "query 'q2' has no judgment at grade ≥ 2" in err
    code, out, err = freeze(testset, "--threshold", "2", "--unlabeled", "zero")
    assert code == 0, err
    code, out, _ = gate("validate", testset / "snapshot.json")
    assert code == 0 and "warning: 1 query without a judgment at grade ≥ 2" in out


def test_tampered_qrels_exit_3_naming_qrels_and_both_hashes(testset):
    assert freeze(testset)[0] == 0
    pinned = json.loads((testset / "snapshot.json").read_text())["qrels"]["sha256"]
    with open(testset / "qrels.tsv", "a") as handle:
        handle.write("q2 0 d7 1\n")
    code, _, err = gate("validate", testset / "snapshot.json")
    assert code == 3
    assert "qrels file 'qrels.tsv'" in err and pinned in err
    assert hashlib.sha256((testset / "qrels.tsv").read_bytes()).hexdigest() in err


def test_missing_pinned_file_is_invalid(testset):
    assert freeze(testset)[0] == 0
    (testset / "corpus.txt").unlink()
    code, _, err = gate("validate", testset / "snapshot.json")
    assert code == 2 and "corpus file 'corpus.txt' does not exist" in err


@pytest.mark.parametrize("path, problem", [
    ("../qrels.tsv", "leaves the manifest's folder"),
    ("sub/../../qrels.tsv", "leaves the manifest's folder"),
    ("/etc/hosts", "is absolute"),
    ("C:\\data\\qrels.tsv", "is absolute"),
])
def test_path_escape_is_refused(testset, path, problem):
    assert freeze(testset)[0] == 0
    edit(testset / "snapshot.json", lambda d: d["qrels"].update(path=path))
    code, _, err = gate("validate", testset / "snapshot.json")
    assert code == 2 and problem in err and '$["qrels"]["path"]' in err


@pytest.mark.parametrize("change, expected", [
    (lambda d: d.pop("qrels"), "$: 'qrels' is missing — add 'qrels'"),
    (lambda d: d.update(extra=1), "$: unknown field 'extra' — remove it"),
    (lambda d: d["queries"].update(sha256="abc"),
     '$["queries"]["sha256"]: "abc" does not have the expected form — write the SHA-256'),
    (lambda d: d["scoring"].update(threshold="1"),
     '$["scoring"]["threshold"]: "1" is not an integer'),
    (lambda d: d["scoring"].update(duplicates="keep"),
     '$["scoring"]["duplicates"]: "keep" is not one of "error", "first"'),
    (lambda d: d["scoring"].update(measures=[]), '$["scoring"]["measures"]: is empty'),
    (lambda d: d["scoring"].update(measures=["nDCG@10", "NDCG@10"]),
     "measure nDCG@10 is listed twice"),
    (lambda d: d["scoring"].update(measures=["Bogus@10"]),
     '$["scoring"]["measures"][0]: measure \'Bogus@10\': unknown measure name'),
    (lambda d: d["corpus"].pop("sha256"), "'path' is given without 'sha256'"),
    (lambda d: d["chunking"].update(params={"size": [1]}),
     '$["chunking"]["params"]["size"]: [1] is not a string or a number or a boolean or null'),
])
def test_schema_mistakes_are_named_with_their_json_path(testset, change, expected):
    assert freeze(testset)[0] == 0
    edit(testset / "snapshot.json", change)
    code, _, err = gate("validate", testset / "snapshot.json")
    assert code == 2, err
    assert expected in err
    assert all(line.startswith(f"error: {testset / 'snapshot.json'}:")
               for line in err.splitlines())


def test_every_schema_error_at_once(testset):
    assert freeze(testset)[0] == 0

    def break_it(document):
        document.pop("name")
        document["chunking"]["bogus"] = 1
        document["scoring"]["gain"] = "log"
        document["qrels"]["path"] = "../x"
    edit(testset / "snapshot.json", break_it)
    code, _, err = gate("validate", testset / "snapshot.json")
    assert code == 2 and len(err.splitlines()) == 4


# -- fingerprint -----------------------------------------------------------------------------

def test_fingerprint_ignores_key_order_whitespace_name_paths_and_measure_spelling(testset):
    assert freeze(testset, "-m", "MRR@3", "-m", "nDCG@3")[0] == 0
    path = testset / "snapshot.json"
    original = load_snapshot(path).fingerprint
    document = json.loads(path.read_text())
    reordered = {k: document[k] for k in reversed(list(document))}
    reordered["name"] = "renamed"
    reordered["description"] = "now described"
    reordered["scoring"]["measures"] = ["nDCG@3", "RR@3"]
    path.write_text(json.dumps(reordered, indent=7))
    assert load_snapshot(path).fingerprint == original
    (testset / "data").mkdir()
    shutil.move(testset / "qrels.tsv", testset / "data" / "qrels.tsv")
    edit(path, lambda d: d["qrels"].update(path="data/qrels.tsv"))
    assert load_snapshot(path).fingerprint == original
    # Writing a default explicitly is not a change either; changing one is.
    edit(path, lambda d: d["scoring"].update(missing="error"))
    assert load_snapshot(path).fingerprint == original
    edit(path, lambda d: d["scoring"].update(missing="zero"))
    assert load_snapshot(path).fingerprint != original


def test_fingerprint_is_sha256_of_canonical_identity(testset):
    assert freeze(testset)[0] == 0
    snap = load_snapshot(testset / "snapshot.json")
    canonical = json.dumps(snap.identity, sort_keys=True, separators=(",", ":")).encode()
    assert snap.fingerprint == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert fingerprint(snap.identity) == snap.fingerprint
    assert set(snap.identity) == {"queries", "qrels", "corpus", "chunking", "permissions",
                                  "scoring"}
    assert "path" not in json.dumps(snap.identity)


# -- run manifests and comparability ---------------------------------------------------------

def test_run_manifest_round_trip(testset):
    assert freeze(testset)[0] == 0
    manifest(testset, "base.trec")
    document = json.loads((testset / "base.trec.manifest.json").read_text())
    assert document["system"] == {"retriever": "bm25"}
    assert document["provenance"] == {"commit": "abc", "created": "2026-11-30T00:00:00Z"}
    assert document["snapshot"]["fingerprint"] == load_snapshot(testset /
                                                                "snapshot.json").fingerprint
    code, out, err = gate("validate", testset / "snapshot.json", testset / "base.trec")
    assert code == 0, err
    assert "base.trec: valid — made on this snapshot (retriever=bm25); 3 queries scored" in out


def test_run_without_manifest_is_invalid(testset):
    assert freeze(testset)[0] == 0
    code, _, err = gate("validate", testset / "snapshot.json", testset / "base.trec")
    assert code == 2 and "has no run manifest" in err and "gate run-manifest" in err


def test_run_changed_after_its_manifest_is_not_comparable(testset):
    assert freeze(testset)[0] == 0
    manifest(testset, "base.trec")
    with open(testset / "base.trec", "a") as handle:
        handle.write("q2 Q0 d3 2 0.5 b\n")
    code, _, err = gate("validate", testset / "snapshot.json", testset / "base.trec")
    assert code == 3 and "the run changed after its manifest was written" in err


def test_hand_edited_manifest_fingerprint_is_invalid(testset):
    assert freeze(testset)[0] == 0
    manifest(testset, "base.trec")
    edit(testset / "base.trec.manifest.json",
         lambda d: d["snapshot"]["components"]["qrels"].update(version="j-v9"))
    code, _, err = gate("validate", testset / "snapshot.json", testset / "base.trec")
    assert code == 2 and "the manifest was edited" in err


def test_version_bumped_without_rerunning_is_not_comparable(testset):
    assert freeze(testset)[0] == 0
    manifest(testset, "base.trec")
    code, _, _ = freeze(testset, "--qrels-version", "j-v2")  # the later option wins
    assert code == 0
    code, _, err = gate("validate", testset / "snapshot.json", testset / "base.trec")
    assert code == 3
    assert "not comparable: the run " in err
    row = next(line for line in err.splitlines() if "qrels version" in line)
    assert row.split()[-2:] == ["j-v1", "j-v2"]
    assert "what to do — run: re-run it on the current snapshot (qrels changed)" in err


def test_comparability_names_each_component_for_a_reviewer(testset):
    assert freeze(testset)[0] == 0
    manifest(testset, "base.trec")
    manifest(testset, "cand.trec")
    snapshot_path = testset / "snapshot.json"
    base = load_run_manifest(testset / "base.trec")
    cand = load_run_manifest(testset / "cand.trec")
    assert comparability(load_snapshot(snapshot_path), base, cand) == []
    assert freeze(testset, "--qrels-version", "j-v2", "--threshold", "1", "-m", "nDCG@3")[0] == 0
    now = load_snapshot(snapshot_path)
    found = comparability(now, base, cand)
    assert found[0] == (f"baseline {testset / 'base.trec'}: qrels: version j-v1 → j-v2 — re-run "
                        "the baseline on the new snapshot and approve it")
    assert any(line.startswith("baseline") and "scoring: measures" in line
               and "rewrite the baseline’s manifest with gate run-manifest and approve it" in line
               for line in found)
    assert any(line.startswith(f"candidate {testset / 'cand.trec'}: qrels: version j-v1 → j-v2"
                               " — re-run the candidate on the current snapshot")
               for line in found)


def test_run_coverage_is_checked_under_the_snapshot_policy(testset):
    assert freeze(testset)[0] == 0
    (testset / "short.trec").write_text("q1 Q0 d1 1 3 b\n")
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run",
                        testset / "short.trec", "--chunking-version", "whole")
    assert code == 2 and "query 'q2' has no ranking" in err
    assert not (testset / "short.trec.manifest.json").exists()


def test_a_missing_ranking_says_how_to_write_an_empty_one(testset):
    """A TREC run has no line for an empty ranking: the error gives the JSON Lines line that
    writes one, and a run written that way is accepted."""
    assert freeze(testset)[0] == 0
    (testset / "short.trec").write_text("q1 Q0 d1 1 3 b\n")
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run",
                        testset / "short.trec", "--chunking-version", "whole", "--commit", "none")
    assert code == 2
    assert ('add its ranking (an empty one is a result: in a JSON Lines run, '
            '{"query_id": "q2", "items": []}; a TREC run cannot hold one)') in err
    (testset / "short.jsonl").write_text(
        '{"query_id": "q1", "items": [{"id": "d1", "score": 3}]}\n'
        '{"query_id": "q2", "items": []}\n{"query_id": "q3", "items": []}\n')
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run",
                        testset / "short.jsonl", "--chunking-version", "whole", "--commit", "none")
    assert code == 0, err


def test_run_manifest_option_and_bad_key_value(testset):
    assert freeze(testset)[0] == 0
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run",
                        testset / "base.trec", "--chunking-version", "whole", "--system",
                        "novalue")
    assert code == 2 and "'novalue' is not KEY=VALUE" in err
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run",
                        testset / "base.trec", "--chunking-version", "whole", "--created",
                        "yesterday")
    assert code == 2 and err.startswith("error: --created: 'yesterday' is not a UTC time")
    assert not (testset / "base.trec.manifest.json").exists()
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run",
                        testset / "base.trec", "--chunking-version", "whole", "-o", testset / "elsewhere.json",
                        "--system", "k1=1.2", "--system", "stem=false")
    assert code == 0, err
    assert json.loads((testset / "elsewhere.json").read_text())["system"] == {"k1": 1.2,
                                                                               "stem": False}
    code, _, err = gate("validate", testset / "snapshot.json", testset / "base.trec",
                        "--run-manifest", testset / "elsewhere.json")
    assert code == 0, err


# -- the shipped example ---------------------------------------------------------------------

def test_shipped_cranfield_example_validates():
    runs = sorted((CRANFIELD / "runs").glob("*.trec"))
    baseline = ROOT / "baselines" / "cranfield" / "bm25.trec"
    code, out, err = gate("validate", CRANFIELD / "snapshot.json", baseline, *runs)
    assert code == 0, err
    assert "225 queries (225 answerable, 0 unanswerable), 1612 judgments" in out
    assert out.count("valid — made on this snapshot") == len(runs) + 1
    snap = load_snapshot(CRANFIELD / "snapshot.json")
    assert snap.document["corpus"]["path"] == "corpus.jsonl"
    assert snap.name == "cranfield"


# -- one vocabulary for the scoring policy ---------------------------------------------------

def test_policy_vocabulary_is_the_schemas_and_the_options():
    from retrieval_gate.scoring.rules import POLICY_NAMES, ScoringPolicy, policy_choices

    scoring = schema("snapshot")["properties"]["scoring"]["properties"]
    for name in POLICY_NAMES:
        assert tuple(scoring[name]["enum"]) == policy_choices(name)
        assert scoring[name]["default"] == getattr(ScoringPolicy(), name) == policy_choices(name)[0]
    code, out, _ = gate("score", "--help")
    assert code == 0 and all(f"--{name}" in out for name in POLICY_NAMES)
    with pytest.raises(ValueError, match="duplicates must be one of error, first"):
        ScoringPolicy(duplicates="last")


def test_errors_say_how_to_change_the_policy_where_it_was_set(testset):
    """`gate score` takes the policy from options; `gate run-manifest` from the snapshot,
    which has no --duplicates option: its advice names the snapshot instead."""
    assert freeze(testset)[0] == 0
    (testset / "dup.trec").write_text("q1 Q0 d1 1 3 b\nq1 Q0 d1 2 2 b\nq2 Q0 d5 1 1 b\n"
                                      "q3 Q0 d4 1 1 b\n")
    code, _, err = gate("run-manifest", "--snapshot", testset / "snapshot.json", "--run",
                        testset / "dup.trec", "--chunking-version", "whole")
    assert code == 2 and "appears twice" in err
    assert "pass --duplicates" not in err and '"duplicates": "first" in the snapshot' in err
    code, _, err = gate("score", testset / "qrels.tsv", testset / "dup.trec", "--unlabeled",
                        "zero")
    assert code == 2 and "pass --duplicates first" in err


def test_unlabeled_zero_warning_says_what_ndcg_still_counts(tmp_path):
    """A query whose only judgments are below the threshold: binary measures 0, nDCG not."""
    (tmp_path / "q.tsv").write_text("q1 0 a 1\nq1 0 b 2\nq2 0 c 2\n")
    (tmp_path / "r.trec").write_text("q1 Q0 a 1 2 t\nq2 Q0 c 1 1 t\n")
    code, out, err = gate("score", tmp_path / "q.tsv", tmp_path / "r.trec", "--threshold", "3",
                          "--unlabeled", "zero", "-m", "nDCG@10", "-m", "Recall@10",
                          "--output-format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["per_query"]["q1"]["Recall@10"] == 0.0
    assert doc["per_query"]["q2"]["nDCG@10"] == 1.0 and doc["per_query"]["q1"]["nDCG@10"] > 0
    assert any("binary measures are 0" in w and "nDCG counts" in w for w in doc["warnings"])
