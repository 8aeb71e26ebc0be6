"""docs/client.md's Python blocks, run in order against the real stack, so the page cannot rot."""

import re
from pathlib import Path

import pytest
from sklearn.metrics import adjusted_rand_score

pytestmark = pytest.mark.integration

PAGE = Path(__file__).resolve().parents[2] / "docs" / "client.md"
PLACEHOLDER = "http://127.0.0.1:8000"


def python_blocks(text):
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_every_python_block_of_the_client_page_runs(live, capsys):
    blocks = python_blocks(PAGE.read_text())
    assert len(blocks) >= 6 and PLACEHOLDER in blocks[0]
    ns = {"__name__": "client_page"}
    for i, block in enumerate(blocks):
        exec(compile(block.replace(PLACEHOLDER, live), f"{PAGE.name} block {i + 1}", "exec"), ns)
    out = capsys.readouterr().out
    assert "422 invalid_params /params/n_estimators" in out and "404 not_found" in out
    y = ns["y"]
    assert adjusted_rand_score(y, ns["result"].labels) > 0.5 and ns["A"].shape == (150, 150)
    assert ns["session"].budget_used == 20 and ns["model"].labels.shape == (150,)
    assert adjusted_rand_score(y, ns["labels"]) > 0.5
    assert ns["shoal"].base_url == live


def test_the_client_readme_example_runs(live, iris):
    (block,) = python_blocks((PAGE.parents[1] / "client" / "README.md").read_text())
    X, y = iris
    ns = {"X": X, "y": y}
    exec(compile(block.replace(PLACEHOLDER, live), "client/README.md", "exec"), ns)
    assert ns["result"].labels.shape == (150,) and ns["job"].affinity().shape == (150, 150)
    ns["shoal"].close()
