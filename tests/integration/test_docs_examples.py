"""Every fenced code block of README.md and docs/*.md runs, so none can rot.

A block's info string names its kind:

* ``bash``: the file's bash blocks run in order as one script (a reader types them into one
  terminal), with ``SHOAL`` set to a live stack (real Redis, Celery worker, gunicorn) and
  ``.venv`` reachable from the working directory; the script must exit 0.
* ``python``: each block runs on its own (a reader copies one block) with the same ``SHOAL``.
  Blocks that import ``shoal_client`` need the Python client (``pip install ./client``).
* ``json``: must parse; ``json schema=Name`` must also validate against
  ``components.schemas.Name`` of ``openapi.yaml``.
* ``<kind> norun: <reason>``: a block that cannot run here (it starts Docker, runs forever, or
  is the test suite itself). The reason is required and such blocks stay few.
"""

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.openapi_schemas import errors

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
#: docs/client.md is a walk-through whose Python blocks share one client, in order:
#: tests/client/test_docs_page.py runs it that way.
DOC_FILES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "client.md")]
KINDS = {"bash", "python", "json"}
#: At most this many blocks may be exempt from running, across README and docs.
MAX_NORUN = 4
FENCE = re.compile(r"^```(.*)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    kind: str
    attrs: str  # the rest of the info string
    code: str

    @property
    def norun(self):
        return self.attrs.startswith("norun")

    @property
    def reason(self):
        return self.attrs.partition(":")[2].strip() if self.norun else ""

    @property
    def name(self):
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path):
    """The fenced blocks of one Markdown file, in order."""
    out, lines, i = [], path.read_text().split("\n"), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            info = m.group(1).strip()
            kind, _, attrs = info.partition(" ")
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            out.append(Block(path, i + 1, kind, attrs.strip(), "\n".join(lines[i + 1:j]) + "\n"))
            i = j
        i += 1
    return out


ALL = [b for p in DOC_FILES for b in blocks(p)]
PYTHON = [b for b in ALL if b.kind == "python" and not b.norun]
BASH_FILES = sorted({b.path for b in ALL if b.kind == "bash" and not b.norun})
JSON = [b for b in ALL if b.kind == "json" and not b.norun]


def test_every_block_has_a_kind_the_test_runs():
    unknown = [f"{b.name} ({b.kind or 'no info string'})" for b in ALL if b.kind not in KINDS]
    assert not unknown, f"blocks of no kind this test runs: {unknown}"
    assert len(PYTHON) >= 1 and len(BASH_FILES) >= 1 and len(JSON) >= 1


def test_blocks_that_do_not_run_are_few_and_say_why():
    norun = [b for b in ALL if b.norun]
    why = "\n".join(f"{b.name}: {b.reason}" for b in norun)
    print(why)
    assert len(norun) <= MAX_NORUN, f"{len(norun)} blocks exempt (at most {MAX_NORUN}):\n{why}"
    assert all(len(b.reason) >= 15 for b in norun), f"each exempt block says why:\n{why}"


@pytest.mark.parametrize("block", JSON, ids=lambda b: b.name)
def test_json_block_parses_and_matches_its_schema(block):
    value = json.loads(block.code)
    m = re.search(r"schema=(\w+)", block.attrs)
    if m:
        spec = yaml.safe_load((ROOT / "openapi.yaml").read_text())
        assert m.group(1) in spec["components"]["schemas"], f"no schema {m.group(1)} in openapi.yaml"
        problems = errors(spec, {"$ref": f"#/components/schemas/{m.group(1)}"}, value)
        assert not problems, problems


@pytest.fixture()
def workdir(tmp_path):
    """A directory where ``.venv/bin/python`` is the checkout's (blocks run from a checkout)."""
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    return tmp_path


def _env(live):
    return {**os.environ, "SHOAL": live, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}


def _run(args, live, cwd, timeout=600):
    proc = subprocess.run(args, cwd=cwd, env=_env(live), capture_output=True, text=True, timeout=timeout)
    return proc


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", BASH_FILES, ids=lambda p: f"{p.relative_to(ROOT)}-bash")
def test_bash_blocks_run_against_the_stack(path, live, workdir):
    parts = ["set -euo pipefail"]
    for b in blocks(path):
        if b.kind == "bash" and not b.norun:
            parts += [f"echo '--- {b.name}' >&2", b.code]
    proc = _run(["bash", "-c", "\n".join(parts)], live, workdir)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip(), "the blocks printed nothing"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.name)
def test_python_block_runs_against_the_stack(block, live, workdir):
    proc = _run([sys.executable, "-c", block.code], live, workdir)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
