"""`gate score` through click's CliRunner: the seeds' published numbers, the JSON document,
policies, and every error case (exit code, one line naming the file, no traceback)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BASELINE, CRANFIELD, SEEDS, gate, imported_by


def score(*args: str | Path) -> tuple[int, str, str]:
    return gate("score", *args)


def score_json(*args: str | Path) -> dict:
    code, out, err = score(*args, "--output-format", "json")
    assert code == 0, err
    return json.loads(out)


# -- the seeds' published numbers ------------------------------------------------------------

SEED_000 = {  # run, query → (Recall@3, RR@3, nDCG@3), as printed in the article
    "A": {"refund": (1.0, 1.0, 0.7364), "limits": (0.5, 1.0, 0.7872),
          "restore": (1.0, 0.5, 0.6653), "MEAN": (0.8333, 0.8333, 0.7296)},
    "B": {"refund": (1.0, 1.0, 1.0), "limits": (1.0, 0.5, 0.6064),
          "restore": (1.0, 1.0, 0.9558), "MEAN": (1.0, 0.8333, 0.8541)},
}


def test_seed_000_run_table_every_row():
    doc = score_json(SEEDS / "000_fixture.json", "-m", "Recall@3", "-m", "MRR@3", "-m", "nDCG@3")
    assert set(doc) == {"runs"} and set(doc["runs"]) == {"A", "B"}
    for run, rows in SEED_000.items():
        result = doc["runs"][run]
        assert result["measures"] == ["Recall@3", "RR@3", "nDCG@3"]  # MRR@3 canonicalised
        for query, expected in rows.items():
            got = result["means"] if query == "MEAN" else result["per_query"][query]
            assert [round(got[m], 4) for m in result["measures"]] == list(expected), (run, query)


def test_seed_001_fixture():
    doc = score_json(SEEDS / "001_fixture.json", "-m", "Recall@3", "-m", "MRR@3")
    assert round(doc["means"]["Recall@3"], 4) == 0.6667
    assert doc["means"]["RR@3"] == 0.5
    assert doc["per_query"] == {"q1": {"Recall@3": 1.0, "RR@3": 0.5},
                                "q2": {"Recall@3": 1.0, "RR@3": 1.0},
                                "q3": {"Recall@3": 0.0, "RR@3": 0.0}}


def test_seed_003_unanswerable_reported_apart():
    folder = SEEDS / "003"
    doc = score_json(folder / "qrels.json", folder / "run.json", "--queries",
                     folder / "queries.jsonl", "-m", "Recall@3", "-m", "MRR@3")
    assert doc["means"] == {"Recall@3": 0.5, "RR@3": 0.25}
    assert doc["unanswerable"] == ["moon-office"]
    assert doc["counts"] == {"queries": 3, "answerable": 2, "unanswerable": 1}
    assert "moon-office" not in doc["per_query"]


# -- the JSON document and the text report ---------------------------------------------------

def test_json_document_keys_defaults_and_determinism(tmp_path):
    args = (CRANFIELD / "qrels.tsv", CRANFIELD / "runs" / "hybrid.trec")
    doc = score_json(*args)
    assert set(doc) == {"settings", "measures", "means", "per_query", "unanswerable", "counts",
                        "warnings"}
    assert doc["measures"] == ["Recall@10", "P@10", "Hit@10", "RR@10", "nDCG@10", "AP@10"]
    assert doc["settings"]["threshold"] == 1 and doc["settings"]["duplicates"] == "error"
    assert "2^g − 1" in doc["settings"]["definitions"]["nDCG@10"]
    assert round(doc["means"]["P@10"], 4) == 0.2604  # the collection README's table
    assert round(doc["means"]["RR@10"], 4) == 0.5769
    assert doc["counts"]["answerable"] == 225
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for out in (first, second):
        assert score(*args, "--output-format", "json", "-o", out)[0] == 0
    assert first.read_bytes() == second.read_bytes()


def test_text_report_states_gain_threshold_and_mean():
    code, out, _ = score(SEEDS / "000_fixture.json", "-m", "nDCG@3", "-m", "RR@3", "--threshold",
                        "2")
    assert code == 0
    assert "gain 2^g − 1" in out and "relevant = grade ≥ 2" in out
    assert "== A ==" in out and "== B ==" in out
    mean_rows = [line.split() for line in out.splitlines() if line.startswith("mean")]
    assert mean_rows[0] == ["mean", "0.7296", "0.6667"]


def test_linear_gain_matches_collection_readme():
    doc = score_json(CRANFIELD / "qrels.tsv", BASELINE,
                     "-m", "nDCG(gain=linear)@10", "-m", "ndcg(GAIN=lin)@10")
    assert doc["measures"] == ["nDCG(gain=linear)@10"]
    assert round(doc["means"]["nDCG(gain=linear)@10"], 4) == 0.3367


def test_k_sets_the_default_cutoff_and_conflicts_with_measures():
    assert score_json(SEEDS / "001_fixture.json", "-k", "3")["measures"][0] == "Recall@3"
    code, _, err = score(SEEDS / "001_fixture.json", "-k", "3", "-m", "P@3")
    assert code == 2 and "-k" in err


# -- policies --------------------------------------------------------------------------------

def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_duplicates_first_keeps_the_best_rank(tmp_path):
    qrels = write(tmp_path / "q.txt", "q 0 b 1\n")
    run = write(tmp_path / "r.txt", "q Q0 a 1 3.0 t\nq Q0 b 2 2.0 t\nq Q0 a 3 1.0 t\n")
    assert score(qrels, run)[0] == 2
    doc = score_json(qrels, run, "--duplicates", "first", "-m", "RR@10", "-m", "P")
    assert doc["per_query"]["q"] == {"RR@10": 0.5, "P": 0.5}  # a kept once, at rank 1


def test_doc_map_and_item_doc_ids_collapse_to_first_rank(tmp_path):
    qrels = write(tmp_path / "q.json", '{"q": {"D1": 1, "D2": 1}}')
    run = write(tmp_path / "r.json", '{"q": ["c1", "c2", "c3"]}')
    doc_map = write(tmp_path / "map.tsv", "c1 D1\nc2 D1\nc3 D2\n")
    doc = score_json(qrels, run, "--doc-map", doc_map, "-m", "P@2", "-m", "RR")
    assert doc["per_query"]["q"] == {"P@2": 1.0, "RR": 1.0}  # D1 (rank 1), D2 (rank 2)
    items = write(tmp_path / "r.jsonl", '{"query_id": "q", "items": [{"id": "c1", "doc_id": "D1"},'
                  ' {"id": "c2", "doc_id": "D1"}, {"id": "c3", "doc_id": "D2"}]}\n'
                  '{"query_id": "z", "items": []}\n')
    doc = score_json(qrels, items, "-m", "P@2", "--extra", "ignore")
    assert doc["per_query"]["q"] == {"P@2": 1.0}
    code, _, err = score(qrels, run, "--doc-map", write(tmp_path / "m2.tsv", "c1 D1\n"))
    assert code == 2 and "'c2' is not in the doc map" in err


def test_unjudged_error_and_judged_measure(tmp_path):
    qrels = write(tmp_path / "q.txt", "q 0 a 1\nq 0 b 0\n")
    run = write(tmp_path / "r.txt", "q Q0 a 1 3 t\nq Q0 x 2 2 t\nq Q0 b 3 1 t\n")
    doc = score_json(qrels, run, "-m", "Judged@2", "-m", "Judged@10", "-m", "Judged")
    # Judged@k divides by k (ir_measures): 7 empty slots of the top 10 are not judged items.
    assert doc["per_query"]["q"] == {"Judged@2": 0.5, "Judged@10": 2 / 10, "Judged": 2 / 3}
    code, _, err = score(qrels, run, "--unjudged", "error")
    assert code == 2 and f"{run}:2:" in err and "'x'" in err


def test_missing_zero_and_unlabeled_zero_warn(tmp_path):
    qrels = write(tmp_path / "q.txt", "q1 0 a 1\nq2 0 b 1\nq3 0 c 0\n")
    run = write(tmp_path / "r.txt", "q1 Q0 a 1 1 t\nq3 Q0 c 1 1 t\n")
    code, _, err = score(qrels, run, "--missing", "zero")
    assert code == 2 and "'q3' has no judgment at grade ≥ 1" in err
    doc = score_json(qrels, run, "--missing", "zero", "--unlabeled", "zero", "-m", "P@1")
    assert doc["per_query"] == {"q1": {"P@1": 1.0}, "q2": {"P@1": 0.0}, "q3": {"P@1": 0.0}}
    assert doc["means"]["P@1"] == 1 / 3
    assert any("'q2'" in w and "missing" in w for w in doc["warnings"])
    assert any("'q3'" in w and "unlabeled: zero" in w for w in doc["warnings"])


def test_per_measure_threshold(tmp_path):
    qrels = write(tmp_path / "q.txt", "q 0 a 1\nq 0 b 2\n")
    run = write(tmp_path / "r.txt", "q Q0 a 1 2 t\nq Q0 b 2 1 t\n")
    doc = score_json(qrels, run, "-m", "RR@10", "-m", "RR(rel=2)@10", "-m", "Recall(rel=2)@1")
    assert doc["per_query"]["q"] == {"RR@10": 1.0, "RR(rel=2)@10": 0.5, "Recall(rel=2)@1": 0.0}


def test_ties_broken_by_doc_id_descending_in_byte_order(tmp_path):
    qrels = write(tmp_path / "q.txt", "q 0 d10 1\n")
    run = write(tmp_path / "r.txt", "q Q0 d10 1 1.0 t\nq Q0 d9 2 1.0 t\n")
    doc = score_json(qrels, run, "-m", "RR@10", "-m", "P@1")
    assert doc["per_query"]["q"] == {"RR@10": 0.5, "P@1": 0.0}  # 'd9' > 'd10' in bytes
    assert any("ties straddle cutoff 1" in w for w in doc["warnings"])


def test_comment_only_at_line_start_and_hash_inside_ids(tmp_path):
    qrels = write(tmp_path / "q.txt", "# judged by hand\nq 0 doc#4_1 1\n")
    run = write(tmp_path / "r.txt", "  # a comment\nq\tQ0\tdoc#4_1\t1\t2.0\tt\textra junk\n")
    assert score_json(qrels, run, "-m", "P@1")["per_query"]["q"]["P@1"] == 1.0


# -- errors ----------------------------------------------------------------------------------

QRELS_OK = "q 0 a 1\n"
RUN_OK = "q Q0 a 1 1.0 t\n"
ERROR_CASES = {  # name: (qrels text, run text, extra args, text expected in the message, line)
    "duplicate id": (QRELS_OK, "q Q0 a 1 2 t\nq Q0 a 2 1 t\n", (), "appears twice", 2),
    "non-numeric score": (QRELS_OK, "q Q0 a 1 abc t\n", (), "is not a number", 1),
    "NaN score": (QRELS_OK, "q Q0 a 1 NaN t\n", (), "not finite", 1),
    "infinite score": (QRELS_OK, "q Q0 b 1 2 t\nq Q0 a 1 -inf t\n", (), "not finite", 2),
    "non-integer grade": ("q 0 a 1.0\n", RUN_OK, (), "not an integer", 1),
    "conflicting qrels": ("q 0 a 1\nq 0 b 0\nq 0 a 2\n", RUN_OK, (), "judged 1 and again 2", 3),
    "too few columns": (QRELS_OK, "q Q0 a 1 1.0\n", (), "5 field(s), 6 needed", 1),
    "too few qrels columns": ("q 0 a\n", RUN_OK, (), "3 field(s), 4 needed", 1),
    "run query not in qrels": (QRELS_OK, RUN_OK + "z Q0 a 1 1.0 t\n", (), "'z' is not in", 2),
    "query missing from run": (QRELS_OK + "p 0 a 1\n", RUN_OK, (), "'p' has no ranking", None),
    "k <= 0": (QRELS_OK, RUN_OK, ("-k", "0"), "not a positive integer", None),
    "measure @0": (QRELS_OK, RUN_OK, ("-m", "nDCG@0"), "not a positive integer", None),
    "unknown measure": (QRELS_OK, RUN_OK, ("-m", "F1@3"), "Recall@k (R@k)", None),
    "rel on nDCG": (QRELS_OK, RUN_OK, ("-m", "nDCG(rel=2)@3"), "not valid for nDCG", None),
    "empty run": (QRELS_OK, "", (), "empty", None),
    "comments only": (QRELS_OK, "# nothing\n", (), "no data lines", None),
}


@pytest.mark.parametrize("case", ERROR_CASES, ids=list(ERROR_CASES))
def test_error_cases(tmp_path, case):
    qrels_text, run_text, args, expected, line = ERROR_CASES[case]
    qrels = write(tmp_path / "qrels.txt", qrels_text)
    run = write(tmp_path / "run.txt", run_text)
    out_file = tmp_path / "out.json"
    code, out, err = score(qrels, run, *args, "-o", out_file)
    assert code == 2
    assert out == "" and not out_file.exists()
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert expected in err
    if case in ("k <= 0", "measure @0", "unknown measure", "rel on nDCG"):
        return
    culprit = qrels if case in ("non-integer grade", "conflicting qrels", "too few qrels columns") else run
    assert f"{culprit}{'' if line is None else f':{line}'}: " in err
    assert " — " in err  # the fix follows the problem


def test_invalid_utf8_unreadable_and_directory(tmp_path):
    qrels = write(tmp_path / "q.txt", QRELS_OK)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"q Q0 a 1 1 t\nq Q0 \xff 2 0.5 t\n")
    code, _, err = score(qrels, bad)
    assert code == 2 and f"{bad}:2: invalid UTF-8" in err
    code, _, err = score(qrels, tmp_path / "absent.txt")
    assert code == 2 and "file not found" in err
    code, _, err = score(qrels, tmp_path)
    assert code == 2 and "is a directory" in err


def test_json_errors_name_the_place(tmp_path):
    qrels = write(tmp_path / "q.json", '{"q": {"a": 1.5}}')
    code, _, err = score(qrels, write(tmp_path / "r.json", '{"q": ["a"]}'))
    assert code == 2 and '$["q"]["a"]: grade 1.5 is not an integer' in err
    code, _, err = score(write(tmp_path / "q2.json", '{"q": ["a"]}'),
                        write(tmp_path / "r2.json", '{"q": {"a": 1, "a": 2}}'))
    assert code == 2 and "key 'a' appears twice" in err
    code, _, err = score(tmp_path / "q2.json", write(tmp_path / "r3.json", '{"q": ["a", ]}'))
    assert code == 2 and "r3.json:1: invalid JSON" in err
    code, _, err = score(write(tmp_path / "q3.jsonl", '{"query_id": "q", "doc_id": "a", '
                              '"grade": 1}\n{"query_id": "q", "doc_id": "", "grade": 1}\n'),
                        tmp_path / "r2.json")
    assert code == 2 and "q3.jsonl:2: doc_id" in err


def test_internal_error_exits_70_without_traceback(monkeypatch):
    import retrieval_gate.commands.score

    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(retrieval_gate.commands.score, "score_files", broken)
    code, _, err = score(SEEDS / "001_fixture.json")
    assert code == 70 and "bug" in err and "Traceback" not in err


def test_help_imports_neither_numpy_nor_scipy():
    """``gate --help`` and a command's help: no numpy, scipy or jsonschema, nor the package's
    readers and gate."""
    heavy = ("numpy", "scipy", "jsonschema", "retrieval_gate.core.model",
             "retrieval_gate.gating.gate")
    for args in (["--help"], ["check", "--help"], ["score", "--help"]):
        help_ = ("from retrieval_gate.cli import cli\n"
                 f"try:\n    cli({args!r}, prog_name='gate')\nexcept SystemExit:\n    pass")
        assert imported_by(help_, heavy) == [], args


def test_score_imports_only_what_it_uses():
    """``gate score`` on TREC files: no decision rule, gate or corpus reader, no hashing, no
    jsonschema (the whole process starts in about the time pytrec_eval's does)."""
    code = ("from retrieval_gate.cli import cli\n"
            f"try:\n    cli(['score', {str(CRANFIELD / 'qrels.tsv')!r}, "
            f"{str(CRANFIELD / 'runs' / 'hybrid.trec')!r}], prog_name='gate')\n"
            "except SystemExit:\n    pass")
    unused = ("retrieval_gate.decide.policy", "retrieval_gate.gating.outcome",
              "retrieval_gate.formats.corpus", "retrieval_gate.scoring.visibility",
              "retrieval_gate.inputs.snapshot", "hashlib", "jsonschema", "scipy")
    assert imported_by(code, (*unused, "numpy")) == ["numpy"]


def test_commands_start_openblas_with_one_thread_unless_told():
    """The command line (not the library) starts numpy's OpenBLAS with one thread, before numpy
    is imported; a value the user set stays."""
    probe = ("import os, sys\nfrom retrieval_gate.cli import cli\n"
             f"try:\n    cli(['score', {str(SEEDS / '001_fixture.json')!r}], prog_name='gate')\n"
             "except SystemExit:\n    pass\n"
             "print(os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)")
    for given, kept in ((None, "1"), ("3", "3")):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        env.update({} if given is None else {"OPENBLAS_NUM_THREADS": given})
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                              text=True, check=True)
        assert done.stdout.splitlines()[-1] == f"{kept} True"


def test_the_command_line_leaves_its_objects_to_the_end_of_the_process(tmp_path):
    """``gate`` freezes the garbage collector's objects before it exits (shutdown does not
    trace them again); what the command wrote is complete, and ``atexit`` functions still
    run."""
    out = tmp_path / "scores.json"
    probe = ("import atexit, gc, sys\n"
             "atexit.register(lambda: sys.stderr.write(f'frozen {gc.get_freeze_count() > 0}\\n'))\n"
             "from retrieval_gate.cli import main\nmain()")
    done = subprocess.run([sys.executable, "-c", probe, "score", str(SEEDS / "001_fixture.json"),
                           "--output-format", "json", "-o", str(out)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stderr.splitlines()[-1] == "frozen True"
    assert json.loads(out.read_text())["means"]["RR@10"] == 0.5


def test_scores_equal_only_at_float32_precision_warn_at_the_cutoff(tmp_path):
    """Distinct as float64 (the gate's order, trec_eval 10's), equal as float32 (trec_eval
    9.x and pytrec_eval): the gate ranks 'a' first and says the peers may not."""
    qrels = write(tmp_path / "q.txt", "q 0 a 1\n")
    run = write(tmp_path / "r.txt", "q Q0 b 1 0.30000001 t\nq Q0 a 2 0.30000002 t\n")
    doc = score_json(qrels, run, "-m", "RR@1")
    assert doc["per_query"]["q"]["RR@1"] == 1.0
    assert any("float32" in w and "cutoff 1" in w and "'q'" in w for w in doc["warnings"])
    plain = write(tmp_path / "p.txt", "q Q0 b 1 0.3 t\nq Q0 a 2 0.4 t\n")
    assert not any("float32" in w for w in score_json(qrels, plain, "-m", "RR@1")["warnings"])
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator({"q": {"a": 1}}, {"recip_rank"})
    peer = evaluator.evaluate({"q": {"b": 0.30000001, "a": 0.30000002}})
    assert peer["q"]["recip_rank"] == 0.5  # float32: a tie, broken by id descending ('b' first)


# -- the command line's own mistakes, in the gate's words ------------------------------------


@pytest.mark.parametrize(("args", "said"), [
    (["snapshot", "freeze", "--qrels", "q.tsv"],
     "error: gate snapshot freeze: missing option '--queries' — see gate snapshot freeze --help"),
    (["check", "--fail-on", "maybe"],
     ("error: gate check: invalid value for '--fail-on': 'maybe' is not one of 'regression', "
      "'inconclusive', 'never' — see gate check --help")),
    (["run", "--bogus"], "error: gate run: no such option '--bogus' — see gate run --help"),
])
def test_a_wrong_command_line_is_one_line_in_the_gate_s_words(args, said):
    done = subprocess.run([sys.executable, "-c", "from retrieval_gate.cli import main; main()",
                           *args], capture_output=True, text=True, check=False, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", said + "\n")


def test_freeze_and_init_write_the_same_versions_by_default(tmp_path, monkeypatch):
    """Without --corpus-version and --permissions-version, freeze pins what gate init pins:
    a corpus file's version is sha256: and 12 hex digits of its hash (unversioned without
    one), the permissions public."""
    for name in ("queries.jsonl", "qrels.tsv", "corpus.jsonl"):
        (tmp_path / name).write_bytes((CRANFIELD / name).read_bytes())
    code, _, err = gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl",
                        "--qrels", tmp_path / "qrels.tsv", "-o", tmp_path / "bare.json")
    assert code == 0, err
    bare = json.loads((tmp_path / "bare.json").read_text())
    assert (bare["corpus"], bare["permissions"]) == ({"version": "unversioned"},
                                                     {"version": "public"})
    code, _, err = gate("snapshot", "freeze", "--queries", tmp_path / "queries.jsonl",
                        "--qrels", tmp_path / "qrels.tsv", "--corpus-file",
                        tmp_path / "corpus.jsonl", "-o", tmp_path / "frozen.json")
    assert code == 0, err
    digest = hashlib.sha256((tmp_path / "corpus.jsonl").read_bytes()).hexdigest()
    frozen = json.loads((tmp_path / "frozen.json").read_text())
    assert frozen["corpus"]["version"] == f"sha256:{digest[:12]}"
    monkeypatch.chdir(tmp_path)
    code, _, err = gate("init", "--queries", "queries.jsonl", "--qrels", "qrels.tsv",
                        "--corpus-file", "corpus.jsonl")
    assert code == 0, err
    init = json.loads((tmp_path / "snapshot.json").read_text())
    assert (init["corpus"], init["permissions"]) == (frozen["corpus"], frozen["permissions"])
