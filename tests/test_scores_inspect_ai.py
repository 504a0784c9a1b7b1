"""The inspect_ai reader on inspect_ai's own logs (tests/data/scores/inspect_ai, written by
inspect_ai 0.3.285, 0.3.200 and 0.3.150; see its README) and on damaged, foreign or hostile
files (zip archives that unpack to far more than they hold).

The expected values were read back from each log with inspect_ai's own ``read_eval_log`` and
``value_to_float()`` when the logs were written; the tests do not import inspect_ai."""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import random
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scorecheck
from conftest import DATA, ROOT
from scorecheck import QUESTIONS, ZIP_ZSTANDARD, Member, padded, zip_archive

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.limits import MIN_UNPACK_BYTES
from retrieval_gate.formats.scores import inspect_ai

FIXTURES = DATA / "scores" / "inspect_ai"
NAN = math.nan
ZSTANDARD = sys.version_info >= (3, 14) or importlib.util.find_spec("zstandard") is not None
zstd = pytest.mark.skipif(not ZSTANDARD, reason="the .eval logs of inspect_ai 0.3.285 are "
                          "compressed with Zstandard: Python < 3.14 reads them with the "
                          "package zstandard, which is not installed")
zstandard = pytest.mark.skipif(importlib.util.find_spec("zstandard") is None,
                               reason="the test compresses with the package zstandard")
ID_NAMES = ("exact", "includes", "keywords", "length_ratio", "match", "model_graded_qa",
            "reference_overlap")
# per sample: exact, includes, keywords, length_ratio, match, model_graded_qa,
# reference_overlap; p04's reference_overlap raised (the sample's error), so it and
# model_graded_qa, which runs after it, have no score; p05's grader gave no grade (unscored)
ID_VALUES = {
    "p01": [0, 1, 1, 0.29, 1, 1, 0.5],
    "p02": [0, 0, 0.5, 0.21, 0, 0, 0.2],
    "p03": [0, 1, 1, 0.51, 0, 1, 1],
    "p04": [1, 1, 0.5, 0.13, 1, NAN, NAN],
    "p05": [0, 1, 1, 0.46, 0, NAN, 1],
    "p06": [0, 1, 0.5, 0.32, 1, 1, 0.6666666666666666],
}
# inspect_ai 0.3.150 scores as 0.3.285 does but for one value: its model_graded_qa records a
# grader's answer without a grade as "I" (0; "Grade not found in model output"), where
# 0.3.285 leaves it unscored (NaN)
ID_VALUES_0_3_150 = {**ID_VALUES, "p05": [0, 1, 1, 0.46, 0, 0, 1]}


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def json_log(change: Callable[[dict[str, Any]], object]) -> bytes:
    """ids.json (the JSON log of p04 and p05) with ``change`` applied to its document."""
    document = json.loads(fixture("ids.json"))
    change(document)
    return json.dumps(document).encode()


def eval_log(change: Callable[[str, Any], Any] | None = None, drop: tuple[str, ...] = (),
             method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """deflate.eval rebuilt member by member (compressed with ``method``), each document passed
    through ``change(member, document)``, the members in ``drop`` left out."""
    out = io.BytesIO()
    with zipfile.ZipFile(FIXTURES / "deflate.eval") as source, \
            zipfile.ZipFile(out, "w", method) as target:
        for info in source.infolist():
            if info.filename not in drop:
                document = json.loads(source.read(info))
                if change is not None:
                    document = change(info.filename, document)
                target.writestr(info.filename, json.dumps(document))
    return out.getvalue()


def refused(data: bytes, *parts: str, where: object = None) -> InputError:
    return scorecheck.refused(inspect_ai.read, data, "log.eval", *parts, where=where)


# the ids logs of each version: file, the inspect_ai that wrote it, the values it reads
IDS_LOGS = [pytest.param("ids.eval", "0.3.285", ID_VALUES, marks=zstd, id="0.3.285"),
            pytest.param("ids-0.3.150.eval", "0.3.150", ID_VALUES_0_3_150, id="0.3.150")]
IDS_JSON_LOGS = [pytest.param("ids.json", "0.3.285", ID_VALUES, id="0.3.285"),
                 pytest.param("ids-0.3.150.json", "0.3.150", ID_VALUES_0_3_150, id="0.3.150")]


@pytest.mark.parametrize("name, version, values", IDS_LOGS)
def test_eval_log_gives_the_scores_inspect_ai_reads(name, version, values):
    rows = inspect_ai.read(fixture(name), name)
    assert rows.tool == f"inspect_ai {version}"
    assert rows.keys == tuple(ID_VALUES) and not rows.by_text
    assert rows.samples == (1,) * 6
    assert rows.places == tuple(f"samples/{q}_epoch_1.json" for q in ID_VALUES)
    assert rows.names == ID_NAMES
    np.testing.assert_array_equal(rows.values, np.array(list(values.values())))


@pytest.mark.parametrize("name, version, values", IDS_JSON_LOGS)
def test_json_log_gives_the_same_scores_and_reads_nan(name, version, values):
    rows = inspect_ai.read(fixture(name), name)
    assert rows.tool == f"inspect_ai {version}"
    assert rows.keys == ("p04", "p05") and rows.samples == (1, 1)
    assert rows.places == ('$["samples"][0]', '$["samples"][1]')
    assert rows.names == ID_NAMES
    np.testing.assert_array_equal(rows.values, np.array([values["p04"], values["p05"]]))


@zstd
def test_inspect_ai_0_3_150_writes_the_same_scores_but_an_ungraded_answer():
    """Its logs (DEFLATE) give the same ids, names and values as 0.3.285's (Zstandard), but
    p05's model_graded_qa: "I" (0) in 0.3.150, unscored (NaN) in 0.3.285."""
    for name in ("ids", "text", "epochs"):
        with zipfile.ZipFile(FIXTURES / f"{name}-0.3.150.eval") as log:
            assert {info.compress_type for info in log.infolist()} == {zipfile.ZIP_DEFLATED}
        old = inspect_ai.read(fixture(f"{name}-0.3.150.eval"), name)
        new = inspect_ai.read(fixture(f"{name}.eval"), name)
        assert (old.keys, old.samples, old.names) == (new.keys, new.samples, new.names)
        differ = ~((old.values == new.values) | (np.isnan(old.values) & np.isnan(new.values)))
        expected = [(4, ID_NAMES.index("model_graded_qa"))] if name == "ids" else []
        assert list(zip(*np.nonzero(differ))) == expected
    grade = "samples/p05_epoch_1.json"
    with zipfile.ZipFile(FIXTURES / "ids-0.3.150.eval") as log:
        assert json.loads(log.read(grade))["scores"]["model_graded_qa"]["value"] == "I"


@pytest.mark.parametrize("name", [pytest.param("text.eval", marks=zstd), "text-0.3.150.eval"])
def test_without_query_id_the_input_is_the_key_and_an_object_value_gives_one_score_a_key(name):
    rows = inspect_ai.read(fixture(name), name)
    assert rows.by_text
    assert rows.keys == tuple(QUESTIONS[f"p0{i}"] for i in range(1, 7))
    assert rows.names == ("length_ratio", "match", "size.chars", "size.words")
    expected = [[0.29, 1, 0.29, 0.5], [0.21, 0, 0.21, 0.4], [0.51, 0, 0.51, 1.1],
                [0.13, 1, 0.13, 0.2], [0.46, 0, 0.46, 0.9], [0.32, 1, 0.32, 0.6]]
    np.testing.assert_array_equal(rows.values, np.array(expected))


@pytest.mark.parametrize("name", [pytest.param("epochs.eval", marks=zstd),
                                  "epochs-0.3.150.eval"])
def test_each_epoch_is_a_row_numbered_by_its_epoch(name):
    rows = inspect_ai.read(fixture(name), name)
    assert rows.keys == ("p01", "p02", "p03") * 3
    assert rows.samples == (1, 1, 1, 2, 2, 2, 3, 3, 3)
    assert rows.names == ("includes", "length_ratio", "match")
    expected = [[1, 0.29, 1], [0, 0.21, 0], [1, 0.51, 0],
                [1, 0.38, 0], [0, 0.3, 0], [1, 0.6, 0],
                [1, 0.47, 0], [0, 0.39, 0], [1, 0.69, 0]]
    np.testing.assert_array_equal(rows.values, np.array(expected))


def test_a_deflate_eval_log_of_an_older_inspect_ai():
    rows = inspect_ai.read(fixture("deflate.eval"), "deflate.eval")
    assert rows.tool == "inspect_ai 0.3.200"
    assert rows.keys == ("p01", "p02", "p03") and rows.names == ("length_ratio", "match")
    np.testing.assert_array_equal(rows.values, np.array([[0.29, 1], [0.21, 0], [0.51, 0]]))


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="Python reads Zstandard from 3.14 on")
def test_zstandard_missing_is_said_with_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if it were not installed
    refused(fixture("epochs.eval"), "log.eval:header.json: is compressed with Zstandard", "pip install zstandard", "inspect log convert --to json")


HOSTILE = 'p01\n::error::<b>x</b> & \u2028 "NaN", NaN \\ NaN'


def test_a_hostile_id_or_text_passes_through_unchanged():
    def hostile_id(document):
        document["samples"][0]["metadata"]["query_id"] = HOSTILE

    assert inspect_ai.read(json_log(hostile_id), "x.json").keys[0] == HOSTILE

    def hostile_text(document):
        for sample in document["samples"]:
            del sample["metadata"]["query_id"]
        document["samples"][1]["input"] = HOSTILE

    assert inspect_ai.read(json_log(hostile_text), "x.json").keys[1] == HOSTILE

    def in_archive(member, document):
        if member.startswith("samples/"):
            document["metadata"]["query_id"] += HOSTILE
        return document

    keys = inspect_ai.read(eval_log(in_archive), "x.eval").keys
    assert keys == ("p01" + HOSTILE, "p02" + HOSTILE, "p03" + HOSTILE)


@pytest.mark.parametrize("value, expected", [
    ("C", 1.0), ("P", 0.5), ("I", 0.0), ("N", 0.0), ("yes", 1.0), ("FALSE", 0.0),
    ("True", 1.0), ("0.7", 0.7), (" 2e-1 ", 0.2), (True, 1.0), (False, 0.0), (3, 3.0),
    (0.25, 0.25), (None, NAN),
])
def test_values_are_read_as_inspect_ai_reads_them(value, expected):
    def change(document):
        document["samples"][1]["scores"]["match"]["value"] = value

    rows = inspect_ai.read(json_log(change), "x.json")
    np.testing.assert_array_equal(rows.values[1, rows.names.index("match")], expected)


@pytest.mark.parametrize("value, shown", [
    ("maybe", '"maybe"'), ("c", '"c"'), ("nan", '"nan"'), ("inf", '"inf"'), ("", '""'),
    ([1, 0], "[1, 0]"), ({"a": "x"}, '"x"'), ({"a": [1]}, "[1]"),
])
def test_a_value_inspect_ai_cannot_read_as_a_number_is_refused(value, shown):
    def change(document):
        document["samples"][0]["scores"]["exact"]["value"] = value

    refused(json_log(change), f"has the value {shown}, which is not a number",
            where='$["samples"][0]')


def test_an_invalidated_sample_has_no_scores():
    def change(document):
        document["samples"][1]["invalidation"] = {"author": "someone", "reason": "leaked"}

    rows = inspect_ai.read(json_log(change), "x.json")
    assert np.isnan(rows.values[1]).all() and not np.isnan(rows.values[0]).all()


def test_scorer_names_are_normalised_and_collisions_refused():
    def rename(document):
        for sample in document["samples"]:
            sample["scores"]["My pkg/Judge (v2)"] = sample["scores"].pop("exact")

    names = inspect_ai.read(json_log(rename), "x.json").names
    assert names == ("includes", "keywords", "length_ratio", "match", "model_graded_qa",
                     "my_pkg_judge_v2", "reference_overlap")

    def collide(document):
        scores = document["samples"][0]["scores"]
        scores["size"] = {"value": {"words": 1}}
        scores["size.words"] = {"value": 0}

    refused(json_log(collide), 'two scores of the sample are named "size.words"',
            where='$["samples"][0]')


def test_ids_on_some_samples_only_are_refused_naming_the_first_without():
    def change(document):
        del document["samples"][1]["metadata"]["query_id"]

    refused(json_log(change), "this sample has no metadata field query_id while others have one",
            where='$["samples"][1]')


def test_without_ids_an_input_of_messages_is_refused():
    def change(document):
        for sample in document["samples"]:
            del sample["metadata"]["query_id"]
        document["samples"][0]["input"] = [{"role": "user", "content": "hi"}]

    refused(json_log(change), "input [{", "is not a non-empty string",
            where='$["samples"][0]')


def test_foreign_truncated_and_unfinished_logs_are_refused():
    data = fixture("ids.json")
    refused(data[: len(data) // 2], "invalid JSON")
    refused(b"", "empty")
    refused((DATA / "scores" / "promptfoo" / "ids.json").read_bytes(),
            "is not an inspect_ai log")
    deflate = fixture("deflate.eval")
    refused(deflate[: len(deflate) // 2], "is not a readable zip archive")
    refused(eval_log(drop=("header.json",)), "has no header.json: its eval has not finished")
    refused(eval_log(drop=("header.json", "_journal/start.json")),
            "is a zip archive without header.json")
    refused(eval_log(drop=tuple(f"samples/p0{i}_epoch_1.json" for i in (1, 2, 3))),
            "holds no samples")

    def no_samples(document):
        del document["samples"]

    refused(json_log(no_samples), "holds no samples")


@pytest.mark.parametrize("field, value, message", [
    ("version", 1, ("with log version 1, which retrieval-gate does not read — give an "
                    "inspect_ai log of version 2")),
    ("version", 3, "log version 3"),
    ("status", "error", 'whose status is "error", not "success"'),
    ("status", "started", 'whose status is "started"'),
])
def test_an_unknown_version_or_an_unfinished_eval_is_refused(field, value, message):
    def change(document):
        document[field] = value

    refused(json_log(change), message, where=f'$["{field}"]')

    def in_header(member, document):
        if member == "header.json":
            document[field] = value
        return document

    refused(eval_log(in_header), message)


def test_an_unknown_version_names_the_inspect_ai_that_wrote_it():
    def change(document):
        document["version"] = 3
        document["eval"]["packages"]["inspect_ai"] = "0.4.0"

    refused(json_log(change), "was written by inspect_ai 0.4.0 with log version 3")

    def unnamed(document):
        document["version"] = 3
        del document["eval"]["packages"]

    refused(json_log(unnamed), "was written by inspect_ai with log version 3")

    def version_2_unnamed(document):
        del document["eval"]["packages"]

    assert inspect_ai.read(json_log(version_2_unnamed), "x.json").tool == \
        "inspect_ai (log version 2)"


@pytest.mark.parametrize("field, value, message", [
    ("epoch", "1", 'epoch "1" is not a whole number'),
    ("scores", [], "scores [] is not an object"),
    ("metadata", "p01", 'metadata "p01" is not an object'),
])
def test_a_field_of_the_wrong_kind_is_refused(field, value, message):
    def change(member, document):
        if member == "samples/p02_epoch_1.json":
            document[field] = value
        return document

    refused(eval_log(change), message, where="samples/p02_epoch_1.json")


# -- zip archives that unpack to far more than they hold -----------------------------------

with zipfile.ZipFile(FIXTURES / "deflate.eval") as _log:
    HEADER = _log.read("header.json")
    SAMPLE = json.loads(_log.read("samples/p01_epoch_1.json"))


def sample(query: str) -> bytes:
    """deflate.eval's sample p01 as the sample of ``query``."""
    return json.dumps({**SAMPLE, "metadata": {"query_id": query}}).encode()


NOISE = random.Random(0).randbytes(1 << 20)
NOISY = Member("_journal/noise.bin", zipfile.ZIP_STORED, NOISE, len(NOISE), zlib.crc32(NOISE))
"""A member not read that makes the archive 1 MiB larger: then the members read together may
unpack to 100 MiB, and a member's own bound (64 MiB) is the one it meets first."""


def hostile_log(*members: Member, aliases: tuple[tuple[str, int], ...] = ()) -> bytes:
    """A log of deflate.eval's header.json (the first member) and ``members``."""
    return zip_archive([padded("header.json", HEADER, 0), *members], aliases)


def gate_measured(*args: str | Path) -> tuple[int, str, int]:
    """``gate ARGS`` in a child process: its exit code, its standard error and its peak
    resident memory in bytes (as Linux counts it)."""
    with open(os.devnull, "wb") as null:
        child = subprocess.Popen([sys.executable, "-m", "retrieval_gate", *map(str, args)],
                                 stdout=null, stderr=subprocess.PIPE)
        assert child.stderr is not None
        err = child.stderr.read().decode()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, err, usage.ru_maxrss * 1024


def pin(scores: Path) -> tuple[int, str, int]:
    """gate run-manifest --scores-format inspect on ``scores`` (pydoc's snapshot), measured."""
    return gate_measured("run-manifest", "--snapshot", ROOT / "examples/pydoc/snapshot.json",
                         "--scores", scores, "--scores-format", "inspect", "--judge", "model=m")


@pytest.fixture(scope="module")
def memory_of_a_log() -> int:
    """The peak memory of :func:`pin` on deflate.eval (refused: it scores 3 of pydoc's queries)."""
    code, err, peak = pin(FIXTURES / "deflate.eval")
    assert code == 2 and "query p04 of the snapshot has no score" in err, err
    return peak


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB: Linux")
@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED,
                                    pytest.param(ZIP_ZSTANDARD, marks=zstandard)])
def test_a_member_that_unpacks_beyond_its_bound_is_refused_in_little_memory(
        tmp_path, memory_of_a_log, method):
    """A sample that unpacks to 200 MiB from 200 KB (DEFLATE) or 12 KB (Zstandard), a valid
    JSON document all along, is refused once 64 MiB came out: the process's peak memory is less
    than 96 MiB above its peak on a real log (about 55 MiB here; read whole, the member added
    about 440 MiB)."""
    bomb = padded("samples/p01_epoch_1.json", sample("p01"), 200, method)
    log = tmp_path / "bomb.eval"
    log.write_bytes(hostile_log(bomb, NOISY))
    code, err, peak = pin(log)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"error: {log}:samples/p01_epoch_1.json: unpacks to more than "
                          f"67,108,864 bytes (100 times its {len(bomb.packed):,} compressed "
                          "bytes, at least 67,108,864)")
    assert "inspect log convert --to json" in err
    assert peak - memory_of_a_log < MIN_UNPACK_BYTES + (32 << 20), (peak, memory_of_a_log)
    assert not list(tmp_path.glob("*.manifest.json"))


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED,
                                    pytest.param(ZIP_ZSTANDARD, marks=zstandard)])
def test_a_member_that_declares_less_than_it_unpacks_to_is_refused(method):
    """The declared size is not trusted: Python's zipfile stops a DEFLATE member there (and its
    CRC-32 then differs); a Zstandard member is unpacked to its bound and refused there."""
    honest = padded("samples/p01_epoch_1.json", sample("p01"), 100, method)
    lying = Member(honest.name, method, honest.packed, 1000, honest.crc)
    problem = "cannot be unpacked (Bad CRC-32" if method == zipfile.ZIP_DEFLATED else \
        "unpacks to more than 67,108,864 bytes"
    refused(hostile_log(lying, NOISY), f"log.eval:samples/p01_epoch_1.json: {problem}")


def test_the_members_together_unpack_to_at_most_their_bound():
    """80 samples of 1 MiB each, from 1 KB each: each within its own bound, together beyond the
    archive's (64 MiB), refused at the sample that passes it."""
    members = [padded(f"samples/q{i}_epoch_1.json", sample(f"q{i}"), 1) for i in range(80)]
    data = hostile_log(*members)
    assert len(data) * 100 < MIN_UNPACK_BYTES
    unpacked = len(HEADER)
    first_beyond = next(m for m in members if (unpacked := unpacked + m.size) > MIN_UNPACK_BYTES)
    refused(data, f"log.eval:{first_beyond.name}: with the members read before it, unpacks to "
            f"more than 67,108,864 bytes (100 times the archive's {len(data):,} bytes")
    assert inspect_ai.read(hostile_log(*members[:60]), "log.eval").keys[-1] == "q59"


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED,
                                    pytest.param(ZIP_ZSTANDARD, marks=zstandard)])
def test_members_that_share_bytes_are_refused_before_any_is_unpacked(method):
    """Entries of the central directory that point at one member (500 names for the bytes of a
    1 MiB sample) would unpack it once each: refused, whichever member comes first."""
    member = padded("samples/p01_epoch_1.json", sample("p01"), 1, method)
    aliases = tuple((f"samples/p{i}_epoch_1.json", 1) for i in range(2, 502))
    refused(hostile_log(member, aliases=aliases), "log.eval:samples/p2_epoch_1.json: shares "
            'bytes of the archive with the member "samples/p01_epoch_1.json"')


@pytest.mark.parametrize("method, problem", [
    (zipfile.ZIP_STORED, None),
    (zipfile.ZIP_BZIP2, "is compressed with the zip method 12, not DEFLATE or Zstandard"),
    (zipfile.ZIP_LZMA, "is compressed with the zip method 14, not DEFLATE or Zstandard"),
])
def test_members_stored_are_read_and_compressed_otherwise_than_inspect_ai_does_refused(
        method, problem):
    """bzip2 and LZMA, which inspect_ai never writes and Python's zipfile unpacks a block at a
    time without a bound (100 MB of one letter is 113 bytes of bzip2), are refused."""
    if problem is None:
        assert inspect_ai.read(eval_log(method=method), "log.eval").keys == ("p01", "p02", "p03")
    else:
        refused(eval_log(method=method), f"log.eval:header.json: {problem}")


@pytest.mark.parametrize("name", ["deflate.eval", pytest.param("ids.eval", marks=zstd)])
def test_damaged_archives_give_only_input_errors(name):
    data = fixture(name)
    for at in range(0, len(data), 701):
        damaged = data[:at] + bytes([data[at] ^ 0x5A]) + data[at + 1:]
        try:
            inspect_ai.read(damaged, name)
        except InputError:
            pass
        with pytest.raises(InputError):
            inspect_ai.read(data[:at], name)
