"""bench/README.md's tables are what ``python -m bench.report`` computes from bench/results/."""

import re

import pytest

from bench import report


def _table_lines_outside_blocks(text):
    outside = report.BLOCK.sub("", text)
    return [line for line in outside.splitlines() if line.startswith("|")]


def test_the_committed_readme_tables_match_the_committed_results_files():
    text = report.README.read_text()
    assert report.rebuild(text) == text, "run: python -m bench.report --write"
    assert report.main(["--check"]) == 0


def test_every_table_of_the_readme_is_generated():
    text = report.README.read_text()
    assert _table_lines_outside_blocks(text) == []
    names = [m.group(2) for m in report.BLOCK.finditer(text)]
    assert sorted(names) == sorted(report.TABLES)  # each table once, none left out


def test_a_stale_table_is_rewritten_from_the_results(tmp_path):
    text = report.README.read_text()
    stale = re.sub(r"(<!-- table:passive -->\n)(.*?)(<!-- /table -->)", r"\1| stale |\n\3", text, count=1, flags=re.S)
    assert stale != text
    path = tmp_path / "README.md"
    path.write_text(stale)
    assert report.main(["--check", "--readme", str(path)]) == 1
    assert report.main(["--write", "--readme", str(path)]) == 0
    assert path.read_text() == text


def test_every_results_file_is_described_and_named_without_history():
    files = sorted(p.name for p in report.RESULTS.glob("*.json"))
    assert files == sorted(report.FILES)
    history = re.compile(r"_(first|second|third|(four|fif|six|seven|eigh|nin|ten|eleven|twelf)th|[a-z]+teenth|"
                         r"twentieth|twenty-?[a-z]+|thirt[a-z]*|before)(\.json|_)")
    assert [f for f in files if history.search(f)] == []


def test_an_unknown_table_name_is_refused():
    with pytest.raises(KeyError, match="no table 'nope'"):
        report.rebuild("<!-- table:nope -->\n<!-- /table -->")
