"""The measures' parameter table: every family's parameters parse in every spelling, write
back through ``str()`` to the same measure, and are refused out of range with the documented
message; the table agrees with the documentation's Measures table and with trec_eval's names."""

from __future__ import annotations

import dataclasses
import re

import pytest
from conftest import ROOT, gate

from retrieval_gate import InputError, parse_measure
from retrieval_gate.scoring.measures import (
    CUTOFF,
    FAMILIES,
    GAIN,
    REL,
    STAGE,
    Family,
    Measure,
    Param,
    family_of,
    precision,
)

NAMES = [f.name for f in FAMILIES]
THRESHOLDED = [f.name for f in FAMILIES if REL in f.params]
UNTHRESHOLDED = ["Judged", "Stale", "MixedVersions"]

# A value of each parameter as written, and the value it sets.
VALID = {
    "k": [("@1", 1), ("@10", 10), ("@007", 7), ("@1000000", 1_000_000)],
    "rel": [("(rel=-100)", -100), ("(rel=0)", 0), ("(REL = 2)", 2), ("(rel=100)", 100)],
    "gain": [("(gain=linear)", "linear"), ("(Gain=LIN)", "linear"),
             ("(gain=exponential)", "exponential"), ("(gain=exp)", "exponential")],
    "weight": [("(weight=count)", "count"), ("(WEIGHT=Rank)", "rank")],
    "stage": [(" [candidates]", "candidates"), ("[c]", "c"), (" [ a.b_c-1 ]", "a.b_c-1"),
              (f" [{'s' * 64}]", "s" * 64)],
}
CUTOFF_FIX = "write a cutoff such as @10, or leave out @k to cover the whole list"
STAGE_FIX = ("name a stage of the snapshot's pipeline in brackets, e.g. Recall@50 [candidates] "
             "(letters, digits, _ . -; at most 64)")
REL_TAKES = "rel=N (an integer grade, -100..100)"


def refusal(text: str) -> str:
    with pytest.raises(InputError) as caught:
        parse_measure(text)
    return str(caught.value)


def test_the_table_is_whole():
    """Each family is reached by every spelling of its name and takes a cutoff and a stage;
    each parameter sets a field of Measure and says what it is."""
    fields = {f.name for f in dataclasses.fields(Measure)} - {"family"}
    for family in FAMILIES:
        for name in (family.name, *family.aliases):
            assert family_of(name.upper()) is family and family_of(name.lower()) is family
        assert CUTOFF in family.params and STAGE in family.params, family.name
        for param in family.params:
            assert param.key in fields and param.description and param.values, param.key
            assert param.default is not None or param.default_text, param.key
            assert not param.required  # no parameter has to be written today
        assert family.summary and family.definition
    assert {p.key for f in FAMILIES for p in f.params} == fields
    assert [f.name for f in FAMILIES if GAIN in f.params] == ["nDCG"]
    assert UNTHRESHOLDED == [f.name for f in FAMILIES if REL not in f.params and GAIN not in
                             f.params]


@pytest.mark.parametrize("family", FAMILIES, ids=NAMES)
def test_every_parameter_parses_and_round_trips(family: Family):
    for name in (family.name, *family.aliases, family.name.swapcase()):
        assert parse_measure(name) == Measure(family.name)
    for param in family.params:
        for written, value in VALID[param.key]:
            text = family.name + ("@5" if param.slot == "stage" else "") + written
            measure = parse_measure(text)
            assert getattr(measure, param.key) == value, text
            assert parse_measure(str(measure)) == measure, text
            assert str(parse_measure(str(measure))) == str(measure), text


def test_canonical_names():
    """Parameters are written only when they differ from their defaults, keywords first in
    parentheses, then the cutoff, then the stage."""
    assert str(parse_measure("mrr(REL=02)@3  [ Ctx ]")) == "RR(rel=2)@3 [Ctx]"
    assert str(parse_measure("ndcg(gain=exp)@10")) == "nDCG@10"
    assert str(parse_measure("NDCG(gain=lin)")) == "nDCG(gain=linear)"
    assert str(parse_measure("nDCG@10", "linear")) == "nDCG(gain=linear)@10"
    assert str(parse_measure("nDCG(gain=exponential)@10", "linear")) == "nDCG@10"
    assert str(parse_measure("P(rel=1,rel=3)")) == "P(rel=3)"  # the last one written counts
    assert str(parse_measure("P(,rel=2,)@4")) == "P(rel=2)@4"
    assert str(parse_measure("Stale@3 [final]")) == "Stale@3 [final]"


@pytest.mark.parametrize("family", FAMILIES, ids=NAMES)
def test_out_of_range_values_are_refused_with_the_documented_message(family: Family):
    name = family.name
    for k in ("0", "-1", "1000001", "x", "2.5", "", "99999999999999"):
        assert refusal(f"{name}@{k}") == (
            f"measure '{name}@{k}': cutoff k = '{k}' is not a positive integer up to "
            f"1,000,000 — {CUTOFF_FIX}")
    long = "1" * 30
    assert f"cutoff k = '{'1' * 12}…' is not" in refusal(f"{name}@{long}")
    for stage in ("bad name", "-x", "s" * 65, ""):
        assert refusal(f"{name}@5 [{stage}]") == (
            f"measure '{name}@5 [{stage}]': stage '{stage[:24]}' is not a stage name — "
            f"{STAGE_FIX}")
    takes = {"nDCG": "gain=exponential|linear", "Judged": "weight=count|rank"}.get(
        name, REL_TAKES if name in THRESHOLDED else "no parameters")
    for param in ("rel=101", "rel=-101", "rel=x", "rel=", "rel", "gain=log", "k=5", "stage=a"):
        assert refusal(f"{name}({param})@5") == (
            f"measure '{name}({param})@5': parameter '{param}' is not valid for {name} — "
            f"{name} takes {takes}")


def test_the_cutoff_is_checked_before_the_parameters_and_the_stage():
    assert "cutoff k = '0'" in refusal("P(rel=x)@0 [bad name]")
    assert "parameter 'rel=x'" in refusal("P(rel=x)@3 [bad name]")
    assert "parameter 'gain=x'" in refusal("P(rel=2,gain=x,rel=y)@3")


def test_unknown_names_list_the_table():
    expected = (
        "use one of Recall@k (R@k), P@k (Precision@k), Hit@k (Success@k), RR@k (MRR@k), "
        "AP@k (MAP@k), nDCG@k (NDCG@k), CP@k, Judged@k, FactCoverage@k, AllFacts@k, Stale@k, "
        "MixedVersions@k, optionally with (rel=N) or, for nDCG, (gain=linear) or, for Judged, "
        "(weight=rank); leave out @k "
        "to cover the whole list")
    unknown = "measure 'Bogus@3': unknown measure name 'Bogus'"
    assert refusal("Bogus@3") == f"{unknown} — {expected}"
    assert refusal("P@3@4") == ("measure 'P@3@4': is not of the form "
                                f"Name[(param=value)][@k] [stage] — {expected}")


def test_definition_lines():
    lines = {m: parse_measure(m).describe(2) for m in
             ("P(rel=3)@5", "Recall", "nDCG(gain=linear)@3", "nDCG", "Judged@4", "Stale")}
    assert lines == {
        "P(rel=3)@5": "P(rel=3)@5: relevant in top k / k; relevant = grade ≥ 3",
        "Recall": "Recall: relevant in top k / R; relevant = grade ≥ 2",
        "nDCG(gain=linear)@3": "nDCG(gain=linear)@3: DCG@k / IDCG@k; gain g (linear), "
                               "discount log2(rank + 1)",
        "nDCG": "nDCG: DCG@k / IDCG@k; gain 2^g − 1, discount log2(rank + 1)",
        "Judged@4": "Judged@4: judged in top k / k",
        "Stale": "Stale: items not in force on the query's day in top k / k; lower is better",
    }


def test_a_required_parameter_must_be_written():
    needed = Param(key="rel", slot="keyword", syntax="rel=N", example="(rel=2)",
                   values="an integer grade", description="d", form="rel={}", low=0, high=3,
                   required=True)
    family = Family("P", (), precision, "s", "d", params=(CUTOFF, needed, STAGE))
    assert family.measure("measure 'P(rel=2)'", [("keyword", "rel", "2", "rel=2")], {}) \
        == Measure("P", rel=2)
    with pytest.raises(InputError, match=r"^measure 'P': P needs rel=N \(an integer grade\) "
                                         r"— write it, e.g. P\(rel=2\)$"):
        family.measure("measure 'P'", [], {})


def test_the_measures_page_table_matches():
    """Each family's row of the Measures page's table states its definition."""
    section = ROOT.joinpath("docs", "concepts", "measures.md").read_text(encoding="utf-8")
    rows = {}
    for line in section.split("\n## ")[0].splitlines():
        found = re.match(r"^\| `([A-Za-z]+)@k`[^|]*\| (.*?) \| (.*?) \|$", line)
        if found:
            rows[found[1]] = found[2]
    assert rows == {f.name: f.definition for f in FAMILIES}


# ours -> trec_eval's name (as tests/test_oracle_trec_eval.py compares them)
TREC_EVAL = {"Recall@5": "recall_5", "P@5": "P_5", "P": "set_P", "Hit@5": "success_5",
             "RR": "recip_rank", "AP@5": "map_cut_5", "AP": "map",
             "nDCG(gain=linear)@5": "ndcg_cut_5", "nDCG(gain=linear)": "ndcg"}


def test_trec_eval_names():
    found = {}
    for family in FAMILIES:
        for cut in (None, 5):
            name = family.trec_eval[0 if cut else 1]
            if name is not None:
                written = family.name + (f"({family.trec_eval_needs})"
                                         if family.trec_eval_needs else "")
                found[written + (f"@{cut}" if cut else "")] = name.format(k=cut)
    assert found == TREC_EVAL


@pytest.mark.parametrize("name, expected", [
    ("nDCG(rel=2)@3", "parameter 'rel=2' is not valid for nDCG — nDCG takes gain=exponential|linear"),
    ("Judged(rel=2)@3",
     "parameter 'rel=2' is not valid for Judged — Judged takes weight=count|rank"),
    ("RR(rel=101)@3", f"parameter 'rel=101' is not valid for RR — RR takes {REL_TAKES}"),
    ("Recall@0", f"cutoff k = '0' is not a positive integer up to 1,000,000 — {CUTOFF_FIX}"),
])
def test_gate_score_refuses_in_one_line(tmp_path, name, expected):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("q 0 a 1\n")
    run.write_text("q Q0 a 1 1.0 t\n")
    code, out, err = gate("score", qrels, run, "-m", name)
    assert code == 2 and out == ""
    assert err == f"error: measure '{name}': {expected}\n"
