"""The security headers of Shoal's HTML pages: the annotator pages (``/annotate``) and the result pages (``/ui``).

One policy for both: no inline script, nothing loaded but from Shoal itself, except item images
(``image_url``: http(s) or ``data:``), no framing, no referrer (an annotator page's URL holds its
token). The result pages allow inline styles, which plotly.js sets on its SVG from script.
"""

_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'{styles}; img-src 'self' data: https: http:; "
        "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def page_headers(inline_styles=False):
    """The headers every HTML page and its JSON endpoints carry.

    Parameters
    ----------
    inline_styles : bool, default=False
        Allow ``style`` attributes and elements (``style-src 'unsafe-inline'``): plotly.js needs it.

    Returns
    -------
    dict
        ``Content-Security-Policy``, ``Referrer-Policy``, ``X-Content-Type-Options``, ``X-Frame-Options``.
    """
    return {"Content-Security-Policy": _CSP.format(styles=" 'unsafe-inline'" if inline_styles else ""),
            "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"}
