"""The one way ``clustering`` compiles its hot loops: numba's ``njit``, with two fallbacks.

* Without numba the decorated function stays plain Python (correct, slow).
* ``cache=True`` asks numba to keep the machine code on disk. Numba raises at
  decoration time (``RuntimeError: cannot cache function ...: no locator
  available``), i.e. when ``clustering`` is imported, where it finds nowhere
  to write: a package installed read-only for the user who runs it, with no
  writable home and no ``NUMBA_CACHE_DIR``. That is how the Docker images run
  (``USER nobody``, home ``/nonexistent``). There the function is compiled
  without the cache instead (once per process, on first call) and a log record
  says so; the images set ``NUMBA_CACHE_DIR`` so that the cache works there.
"""

import logging

try:  # pragma: no cover - exercised implicitly
    import numba

    HAVE_NUMBA = True
except Exception:  # pragma: no cover - numba missing
    numba = None
    HAVE_NUMBA = False

_log = logging.getLogger(__name__)


def njit(**options):
    """Decorator: ``numba.njit(**options)``, falling back as the module docstring says.

    Parameters
    ----------
    **options
        numba ``njit`` options (``cache``, ``nogil``, ...).

    Returns
    -------
    callable
        A decorator returning the compiled dispatcher, or the function itself
        without numba.

    Raises
    ------
    RuntimeError
        What numba raises at decoration for any reason other than a cache with
        nowhere to live.
    """

    def decorate(fn):
        if not HAVE_NUMBA:
            return fn
        try:
            return numba.njit(**options)(fn)
        except RuntimeError as exc:
            if not options.get("cache") or "cannot cache" not in str(exc):
                raise
            _log.info("numba cannot cache %s (%s); compiling it without the on-disk cache", fn.__qualname__, exc)
            return numba.njit(**{**options, "cache": False})(fn)

    return decorate
