"""Named parameter sets (presets) of methods and sessions, resolved the same way for both."""

from .errors import ApiError


def params_with_preset(presets, name, given, unknown, no_presets):
    """The preset's params with the ``given`` ones on top, or a 422 at ``/preset``.

    Parameters
    ----------
    presets : dict of str -> dict
        Preset name -> its params, for the method or question type at hand.
    name : str or None
        The preset the request names (None: no preset).
    given : dict
        The request's own ``params``; they win over the preset's.
    unknown : str
        Problem detail when ``name`` is not in ``presets``.
    no_presets : str
        The ``/preset`` message when there are no presets to name.

    Returns
    -------
    dict
        Unvalidated params: the caller loads them with its params schema.

    Raises
    ------
    ApiError
        422 ``unknown_preset`` naming the pointer ``/preset`` and the accepted names.
    """
    if name is not None and name not in presets:
        raise ApiError(422, "unknown_preset", unknown,
                       errors={"/preset": [f"must be one of {', '.join(sorted(presets))}" if presets
                                           else no_presets]})
    return {**presets.get(name, {}), **given}
