"""What the tests of the evaluation tools' score readers share: the pydoc example's questions,
the check of a refusal, and zip archives made by hand (hostile ones: members that unpack to far
more than they hold, declare a size they do not have, or share bytes)."""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
from conftest import ROOT

from retrieval_gate.core.errors import InputError

QUESTIONS = {(q := json.loads(line))["id"]: q["text"]
             for line in (ROOT / "examples" / "pydoc" / "queries.jsonl").read_text().splitlines()}
"""The text of each query of examples/pydoc/queries.jsonl, by id."""


def refused(read: Callable[[bytes, str], object], data: bytes, source: str, *parts: str,
            where: object = None) -> InputError:
    """The InputError ``read(data, source)`` raises: one line starting with ``source``, holding
    each of ``parts``, at ``where`` when given, exit code 2."""
    with pytest.raises(InputError) as caught:
        read(data, source)
    message = str(caught.value)
    assert message.startswith(source) and "\n" not in message
    for part in parts:
        assert part in message
    if where is not None:
        assert caught.value.where == where
    assert caught.value.exit_code == 2
    return caught.value


ZIP_ZSTANDARD = 93  # the zip method of Zstandard (zipfile's name for it from Python 3.14 on)
SPACES = b" " * (1 << 20)
"""A mebibyte of spaces: after a JSON document, the same document."""


@dataclass(frozen=True)
class Member:
    """A member of a zip archive made by hand: its name, zip method and bytes as stored, and the
    size and CRC-32 its headers declare."""

    name: str
    method: int
    packed: bytes
    size: int
    crc: int


def padded(name: str, document: bytes, mebibytes: int, method: int = zipfile.ZIP_DEFLATED) -> Member:
    """The member ``name``: ``document`` and ``mebibytes`` MiB of spaces, compressed with
    ``method`` (DEFLATE, or Zstandard with the package zstandard) piece by piece, each piece
    compressed once and repeated (a few milliseconds for any size); its true size and CRC-32."""
    if method == zipfile.ZIP_DEFLATED:
        packed = _deflated(document) + _deflated(SPACES) * mebibytes + b"\x03\x00"  # last block
    else:
        import zstandard

        frame = zstandard.ZstdCompressor().compress
        packed = frame(document) + frame(SPACES) * mebibytes  # one frame after another
    crc = zlib.crc32(document)
    for _ in range(mebibytes):
        crc = zlib.crc32(SPACES, crc)
    return Member(name, method, packed, len(document) + mebibytes * len(SPACES), crc)


def _deflated(data: bytes) -> bytes:
    """``data`` as DEFLATE blocks that end on a byte (a full flush): streams of such pieces,
    ended by an empty last block, concatenate."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)


def zip_archive(members: Sequence[Member], aliases: Sequence[tuple[str, int]] = ()) -> bytes:
    """A zip archive of ``members`` (each local header and its bytes, then the central
    directory), whose central directory also lists each alias ``(name, i)``: the bytes of
    ``members[i]`` under another name."""
    out, offsets = bytearray(), []
    for member in members:
        offsets.append(len(out))
        name = member.name.encode()
        out += struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, member.method, 0, 0x21,
                           member.crc, len(member.packed), member.size, len(name), 0)
        out += name + member.packed
    listed = [(m.name, m, at) for m, at in zip(members, offsets)]
    listed += [(name, members[i], offsets[i]) for name, i in aliases]
    directory = bytearray()
    for name, member, at in listed:
        encoded = name.encode()
        directory += struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, member.method, 0,
                                 0x21, member.crc, len(member.packed), member.size,
                                 len(encoded), 0, 0, 0, 0, 0, at)
        directory += encoded
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, len(listed), len(listed),
                      len(directory), len(out), 0)
    return bytes(out + directory + end)
