"""clustering._numba.njit: numba's cache must not decide whether ``clustering`` imports."""

import numpy as np
import pytest

from clustering._numba import njit


def _function_numba_cannot_cache():
    # A function whose source file does not exist: every numba cache locator declines it, as they all do
    # for a package nobody may write to when there is no writable home (the Docker images' USER nobody).
    namespace = {}
    source = "def weighted_sum(x, w):\n    return (x * w).sum()\n"
    exec(compile(source, "/nonexistent/shoal/kernels.py", "exec"), namespace)
    return namespace["weighted_sum"]


def test_numba_itself_refuses_to_cache_such_a_function():
    import numba

    with pytest.raises(RuntimeError, match="cannot cache"):
        numba.njit(cache=True)(_function_numba_cannot_cache())


def test_njit_compiles_it_without_the_cache():
    compiled = njit(cache=True, nogil=True)(_function_numba_cannot_cache())
    x, w = np.arange(4.0), np.full(4, 0.5)
    assert compiled(x, w) == 3.0
    assert compiled.signatures  # machine code, not the Python function
    assert compiled.targetoptions["nogil"] is True


def test_clustering_imports_where_numba_has_nowhere_to_cache(tmp_path):
    # The package inside a zip (not named *.zip, which numba would try to cache beside its home), with
    # no NUMBA_CACHE_DIR and an unusable home: every locator declines, as for the Docker images' USER
    # nobody. numba.njit(cache=True) raised "cannot cache function" here when clustering was imported.
    import os
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "clustering"
    archive = tmp_path / "shoal.pyz"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in package.rglob("*.py"):
            zf.write(path, path.relative_to(package.parent).as_posix())
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_") and k != "PYTHONPATH"}
    env.update(HOME="/dev/null", XDG_CACHE_HOME="/dev/null/cache")
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import clustering\n"
        "from clustering._cop_rf import _kernels as k\n"
        "assert clustering.__file__.startswith(sys.argv[1]), clustering.__file__\n"
        "assert k.draw_features.targetoptions['nogil'], 'not compiled by numba'\n"
    )
    run = subprocess.run([sys.executable, "-c", probe, str(archive)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
