"""Make the DeepEval fixtures: run deepeval.evaluate with deterministic metrics only (no model
is called) on the six cases of ../pydoc_cases.py and keep the test-run files DeepEval saves.

    python make_deepeval.py [FOLDER]   # with deepeval installed (see README.md for the version)

Two runs, each in a fresh working folder (DeepEval writes `.deepeval/` into the current one),
whose files are copied into FOLDER (default: this file's folder):
  test_run-ids.json   run 1, each test case's metadata holds {"query_id": ...}: the file
                      DeepEval writes into DEEPEVAL_RESULTS_FOLDER (test_run_<timestamp>.json)
  latest_test_run.json  run 2, the same cases without metadata: DeepEval's own
                      .deepeval/.latest_test_run.json ({"testRunData": <test run>})
  latest_run_full.json  run 2: .deepeval/.latest_run_full.json, the test run as in
                      test_run_<timestamp>.json, which DeepEval writes from 4.0.2 on whether
                      or not DEEPEVAL_RESULTS_FOLDER is set (not copied when absent)
Metrics: DeepEval's ExactMatchMetric, and two custom BaseMetric subclasses, "Token F1" (F1 of
the word tokens of the actual and expected outputs) and "Context Term Recall" (the share of
the expected output's words found in the retrieval context), which raises for a case whose
retrieval context is empty; with ErrorConfig(ignore_errors=True) DeepEval records the error
for that case and metric. Prints DeepEval's own per-case results (EvaluationResult).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "YES"  # no telemetry
os.environ["DEEPEVAL_UPDATE_WARNING_OPT_IN"] = "NO"
os.environ["ERROR_REPORTING"] = "NO"

HERE = Path(__file__).resolve().parent
OUT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE
sys.path.insert(0, str(HERE.parent))

import deepeval
from deepeval import evaluate
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig
from deepeval.metrics import BaseMetric, ExactMatchMetric
from deepeval.test_case import LLMTestCase
from pydoc_cases import cases

WORD = re.compile(r"[a-z0-9_]+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


class WordMetric(BaseMetric):
    """A deterministic metric on the words of a test case; ``value`` gives its score."""

    def __init__(self, threshold: float = 0.5):
        self.threshold = threshold

    def value(self, test_case: LLMTestCase) -> float:
        raise NotImplementedError

    def measure(self, test_case: LLMTestCase, *args, **kwargs) -> float:
        self.score = self.value(test_case)
        self.success = self.score >= self.threshold
        return self.score

    async def a_measure(self, test_case: LLMTestCase, *args, **kwargs) -> float:
        return self.measure(test_case)

    def is_successful(self) -> bool:
        return bool(self.success)


class TokenF1(WordMetric):
    """F1 of the word tokens (multiset) of the actual and the expected output."""

    def value(self, test_case: LLMTestCase) -> float:
        actual, expected = words(test_case.actual_output), words(test_case.expected_output)
        common = sum(min(actual.count(w), expected.count(w)) for w in set(actual))
        self.reason = f"{common} tokens in common"
        return 0.0 if not common else 2 * common / (len(actual) + len(expected))

    @property
    def __name__(self):
        return "Token F1"


class ContextTermRecall(WordMetric):
    """Share of the expected output's distinct words found in the retrieval context."""

    def value(self, test_case: LLMTestCase) -> float:
        if not test_case.retrieval_context:
            raise ValueError("the retrieval context is empty")
        context = set(words(" ".join(test_case.retrieval_context)))
        expected = set(words(test_case.expected_output))
        return len(expected & context) / len(expected)

    @property
    def __name__(self):
        return "Context Term Recall"


# The test case's metadata field: `metadata` from deepeval 3.9.9 on, `additional_metadata`
# before (saved as "metadata" and "additionalMetadata").
METADATA = "metadata" if "metadata" in LLMTestCase.model_fields else "additional_metadata"


def run(with_ids: bool, folder: Path):
    test_cases = [
        LLMTestCase(input=c["question"], actual_output=c["answer"],
                    expected_output=c["reference"], retrieval_context=c["retrieved"],
                    **{METADATA: {"query_id": c["id"]} if with_ids else None})
        for c in cases()]
    os.chdir(folder)
    result = evaluate(test_cases, [ExactMatchMetric(), TokenF1(), ContextTermRecall()],
                      async_config=AsyncConfig(run_async=False),
                      display_config=DisplayConfig(print_results=False, show_indicator=False),
                      error_config=ErrorConfig(ignore_errors=True))
    for test in result.test_results:
        print(test.name, [(m.name, repr(m.score), m.error) for m in test.metrics_data])
    return result


print("deepeval", deepeval.__version__)
with tempfile.TemporaryDirectory() as tmp:
    first, second = Path(tmp, "ids"), Path(tmp, "text")
    first.mkdir()
    second.mkdir()
    os.environ["DEEPEVAL_RESULTS_FOLDER"] = str(first / "results")
    run(True, first)
    [saved] = (first / "results").glob("test_run_*.json")
    shutil.copyfile(saved, OUT / "test_run-ids.json")
    del os.environ["DEEPEVAL_RESULTS_FOLDER"]
    run(False, second)
    shutil.copyfile(second / ".deepeval" / ".latest_test_run.json",
                    OUT / "latest_test_run.json")
    full = second / ".deepeval" / ".latest_run_full.json"
    if full.exists():
        shutil.copyfile(full, OUT / "latest_run_full.json")
    os.chdir(HERE)
