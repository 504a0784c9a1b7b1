"""The package as users get it: the sdist carries what its tests need, the wheel carries the
schemas and ``py.typed``, and the version has one source. Builds for real (marker
``install``: ``python -m pytest -q -m install``)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

from retrieval_gate import __version__

pytestmark = pytest.mark.install


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out),
                    str(ROOT)], check=True, capture_output=True, timeout=600)
    return out


def test_wheel_carries_schemas_and_py_typed_and_the_version(dist):
    (wheel,) = dist.glob("*.whl")
    assert f"retrieval_gate-{__version__}-" in wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert "retrieval_gate/py.typed" in names
    assert {f"retrieval_gate/schemas/{n}.schema.json"
            for n in ("snapshot", "run-manifest", "config", "report")} <= set(names)


def test_sdist_runs_its_own_tests(dist, tmp_path):
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    (tree,) = tmp_path.iterdir()
    assert (tree / "src" / "retrieval_gate" / "py.typed").is_file()
    assert not list(tree.rglob("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_cli.py", "tests/test_check.py", "tests/test_snapshot.py"],
                          cwd=tree, env={"PYTHONPATH": str(tree / "src"), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
