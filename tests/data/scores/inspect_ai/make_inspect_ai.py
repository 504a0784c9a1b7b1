"""Writes ids.eval, ids.json, text.eval and epochs.eval with inspect_ai and its mock model
(mockllm/model, which calls no model): python make_inspect_ai.py [FOLDER], in a venv with
inspect_ai, into FOLDER (default: this file's folder). With inspect_ai 0.3.200, whose .eval
logs are compressed with DEFLATE (later ones use Zstandard), python make_inspect_ai.py deflate
[FOLDER] writes deflate.eval.

The mock model answers each question with a fixed text; in later epochs of one question it
adds " I think." per earlier call, so that epochs differ. The scorer reference_overlap reads
the metadata field "reference", which the sample of p04 lacks: it raises there. The mock
grader of model_graded_qa gives a fixed grade per question, and for p05 an answer with no
grade in it: inspect_ai leaves that sample unscored (NaN)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    PARTIAL,
    Score,
    Target,
    accuracy,
    exact,
    includes,
    match,
    mean,
    model_graded_qa,
    scorer,
    value_to_float,
)
from inspect_ai.solver import TaskState, generate

HERE = Path(__file__).resolve().parent
DEFLATE = sys.argv[1:2] == ["deflate"]
FOLDER = sys.argv[2:] if DEFLATE else sys.argv[1:]
OUT = Path(FOLDER[0]).resolve() if FOLDER else HERE
QUESTIONS = {(q := json.loads(line))["id"]: q["text"] for line in
             (HERE.parents[3] / "examples" / "pydoc" / "queries.jsonl").read_text().splitlines()}
# id: (question as in examples/pydoc/queries.jsonl, target, answer of the mock model,
#      keywords, reference)
CASES = {
    "p01": (QUESTIONS["p01"], "finally", "The value returned in finally", ["finally", "return"],
            "the finally return wins"),
    "p02": (QUESTIONS["p02"], "finally", "Yes, it overrides it.", ["finally", "override"],
            "yes the finally return overrides"),
    "p03": (QUESTIONS["p03"], "deleted", "The name is deleted at the end of the except clause",
            ["deleted", "except"], "the name is deleted at the end"),
    "p04": (QUESTIONS["p04"], "without break", "without break", ["break", "exhausted"], None),
    "p05": (QUESTIONS["p05"], "break", "A break skips the else part; otherwise it runs",
            ["break"], "a break skips the else part"),
    "p06": (QUESTIONS["p06"], "evaluated once", "The default [] is evaluated once",
            ["evaluated once", "shared"], "the default value is evaluated once"),
}
ANSWERS = {question: answer for question, _, answer, _, _ in CASES.values()}
GRADES = {"p01": "GRADE: C", "p02": "GRADE: I", "p03": "GRADE: C", "p04": "GRADE: P",
          "p05": "I cannot grade this answer.", "p06": "GRADE: C"}


def usage(output: ModelOutput, prompt: str) -> ModelOutput:
    """The output with token counts (words): the mock model would otherwise fetch a tokenizer."""
    words_in, words_out = len(prompt.split()), len(output.completion.split())
    output.usage = ModelUsage(input_tokens=words_in, output_tokens=words_out,
                              total_tokens=words_in + words_out)
    return output


def mock_model():
    calls: Counter[str] = Counter()

    def answer(messages, tools, tool_choice, config) -> ModelOutput:
        question = messages[-1].text
        calls[question] += 1
        text = ANSWERS[question] + " I think." * (calls[question] - 1)
        return usage(ModelOutput.from_content(model="mockllm", content=text), question)

    return get_model("mockllm/model", custom_outputs=answer)


def mock_grader():
    def grade(messages, tools, tool_choice, config) -> ModelOutput:
        prompt = messages[-1].text
        [qid] = [qid for qid, case in CASES.items() if case[0] in prompt]
        return usage(ModelOutput.from_content(model="mockllm", content=GRADES[qid]), prompt)

    return get_model("mockllm/model", custom_outputs=grade)


@scorer(metrics=[mean()])
def length_ratio():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=len(state.output.completion) / 100)
    return score


@scorer(metrics=[accuracy()])
def keywords():
    async def score(state: TaskState, target: Target) -> Score:
        words = state.metadata["keywords"]
        found = sum(w in state.output.completion for w in words)
        value = CORRECT if found == len(words) else PARTIAL if found else INCORRECT
        return Score(value=value, explanation=f"{found} of {len(words)} keywords")
    return score


@scorer(metrics=[mean()])
def reference_overlap():
    async def score(state: TaskState, target: Target) -> Score:
        reference = state.metadata["reference"].split()
        return Score(value=sum(w in state.output.completion for w in reference)
                     / len(reference))
    return score


@scorer(metrics={"words": [mean()], "chars": [mean()]})
def size():
    async def score(state: TaskState, target: Target) -> Score:
        text = state.output.completion
        return Score(value={"words": len(text.split()) / 10, "chars": len(text) / 100})
    return score


def samples(ids: list[str], with_id: bool) -> list[Sample]:
    out = []
    for qid in ids:
        question, target, _, words, reference = CASES[qid]
        metadata: dict = {"keywords": words}
        if reference is not None:
            metadata["reference"] = reference
        if with_id:
            metadata["query_id"] = qid
        out.append(Sample(input=question, target=target, id=qid if with_id else None,
                          metadata=metadata))
    return out


def run(out_name: str, task: Task, epochs: int, log_format: str = "eval") -> None:
    with tempfile.TemporaryDirectory() as folder:
        [log] = eval(task, model=mock_model(), log_dir=folder, log_format=log_format,
                     epochs=epochs, display="none", max_samples=1, fail_on_error=False)
        print(out_name, log.status, log.results and {
            s.name: {m: v.value for m, v in s.metrics.items()} for s in log.results.scores},
            file=sys.stderr)
        [written] = Path(folder).glob(f"*.{log_format}")
        shutil.copyfile(written, OUT / out_name)
    print_values(out_name)


def print_values(out_name: str) -> None:
    """Each sample's scores as inspect_ai itself reads them back (the tests' expected values)."""
    to_float = value_to_float()
    for sample in read_eval_log(str(OUT / out_name)).samples or []:
        values = {}
        for name, score in (sample.scores or {}).items():
            parts = score.value if isinstance(score.value, dict) else {name: score.value}
            values.update({key if key == name else f"{name}.{key}": to_float(value)
                           for key, value in parts.items()})
        print(" ", sample.metadata.get("query_id") or sample.input, sample.epoch, values,
              file=sys.stderr)


ALL = list(CASES)


def by_id(ids: list[str]) -> Task:
    return Task(name="pydoc_ids", dataset=samples(ids, True), solver=generate(),
                scorer=[match(), includes(), exact(), length_ratio(), keywords(),
                        reference_overlap(),
                        model_graded_qa(partial_credit=True, model=mock_grader())])


if DEFLATE:
    run("deflate.eval", Task(name="pydoc_deflate", dataset=samples(ALL[:3], True),
                             solver=generate(), scorer=[match(), length_ratio()]), epochs=1)
    sys.exit()
run("ids.eval", by_id(ALL), epochs=1)
run("ids.json", by_id(["p04", "p05"]), epochs=1, log_format="json")
run("text.eval", Task(name="pydoc_text", dataset=samples(ALL, False), solver=generate(),
                      scorer=[match(), length_ratio(), size()]), epochs=1)
run("epochs.eval", Task(name="pydoc_epochs", dataset=samples(ALL[:3], True), solver=generate(),
                        scorer=[match(), includes(), length_ratio()]), epochs=3)
