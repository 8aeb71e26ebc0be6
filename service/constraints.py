"""Constraint checks against a dataset (shared by job submission and
``POST /v1/constraints/check``), using :mod:`clustering.validation` so a
request and a direct ``fit`` reject the same input for the same reason."""

import numpy as np
from flask import current_app
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from clustering.exceptions import InvalidInputError
from clustering.feasibility import check_relative_feasibility, hierarchy_constraints
from clustering.validation import (
    check_hierarchy,
    check_pairs,
    check_triplets,
    count_hierarchy_constraints,
    find_pairwise_conflicts,
)
from schemas.constraints import ConstraintCheckSchema, ConstraintsSchema

from . import get_store
from .errors import ApiError, problem_docs

blp = Blueprint("constraints", __name__, url_prefix="/v1/constraints",
                description="Check constraint sets for consistency")

PAIR_FIELDS = ("must_link", "cannot_link")


def present_kinds(constraints):
    """Constraint kinds present in a parsed constraints dict."""
    c = constraints or {}
    kinds = set()
    if any(c.get(k) is not None and len(c[k]) for k in PAIR_FIELDS):
        kinds.add("pairwise")
    if c.get("triplets") is not None and len(c["triplets"][0]):
        kinds.add("triplets")
    if c.get("relative") is not None and len(c["relative"]):
        kinds.add("relative")
    if c.get("hierarchy") is not None:
        kinds.add("hierarchy")
    return kinds


def validate_constraints(constraints, n_samples, *, prefix="/constraints"):
    """Check indices against ``n_samples``; return a JSON-able copy and counts.

    A ``hierarchy`` counts towards ``SHOAL_MAX_CONSTRAINTS`` as the ab|c
    constraints it stands for (ReCon fits those, and the check tests them),
    not as its leaves.

    Parameters
    ----------
    constraints : dict or None
        Parsed ``constraints`` member (:class:`schemas.constraints.ConstraintsSchema`).
    n_samples : int
        Rows of the dataset the indices refer to.
    prefix : str, default="/constraints"
        JSON pointer of ``constraints`` in the request, for ``errors``.

    Returns
    -------
    checked : dict
        JSON-able lists (``triplets`` rows ``[a, b, c, answer]``).
    counts : dict of str to int
        Entries per list given, and ``hierarchy_leaves``.

    Raises
    ------
    ApiError
        422 naming the offending entry by JSON pointer; 413 when there are
        more constraints than ``SHOAL_MAX_CONSTRAINTS`` (at
        ``/constraints/hierarchy`` when its ab|c constraints take the total past it).
    """
    c = constraints or {}
    out, counts = {}, {}
    try:
        for k in PAIR_FIELDS:
            if c.get(k) is not None:
                arr = check_pairs(c[k], n_samples, name=k)
                out[k] = arr.tolist()
                counts[k] = len(arr)
                w = c.get(f"{k}_weights")
                if w is not None:
                    out[f"{k}_weights"] = [float(v) for v in w]
        if c.get("triplets") is not None:
            idx, answers = c["triplets"]
            arr, _ = check_triplets(idx, n_samples, answers, name="triplets")
            out["triplets"] = [row + [a] for row, a in zip(arr.tolist(), answers)]
            counts["triplets"] = len(arr)
        if c.get("relative") is not None:
            arr, _ = check_triplets(c["relative"], n_samples, name="relative")
            out["relative"] = arr.tolist()
            counts["relative"] = len(arr)
        if c.get("hierarchy") is not None:
            leaves = check_hierarchy(c["hierarchy"], n_samples, name="hierarchy")
            out["hierarchy"] = c["hierarchy"]
            counts["hierarchy_leaves"] = len(leaves)
    except InvalidInputError as exc:
        raise ApiError.from_invalid(exc, "invalid_constraints", prefix) from exc
    total = sum(v for k, v in counts.items() if k != "hierarchy_leaves")
    limit = current_app.config["SHOAL_MAX_CONSTRAINTS"]
    # a tree of n leaves can stand for about n^2 / 4 (n / 2 pairs under the root): the worker builds them all
    derived = count_hierarchy_constraints(out["hierarchy"]) if "hierarchy" in out else 0
    if derived and total + derived > limit:
        msg = (f"stands for {derived} relative constraints, with the {total} other constraints more than the "
               f"{limit} allowed")
        raise ApiError(413, "too_large", f"hierarchy {msg}", errors={f"{prefix}/hierarchy": [msg]})
    if total > limit:
        raise ApiError(413, "too_large", f"{total} constraints, at most {limit} are allowed")
    return out, counts


def pairwise_conflicts(checked, item_ids=None):
    """Contradictions between must-links and cannot-links, with item ids."""
    ml = np.asarray(checked.get("must_link") or [], dtype=np.int64).reshape(-1, 2)
    cl = np.asarray(checked.get("cannot_link") or [], dtype=np.int64).reshape(-1, 2)
    conflicts, count = find_pairwise_conflicts(ml, cl, None)
    if item_ids is not None:
        for c in conflicts:
            c["cannot_link_item_ids"] = [item_ids[i] for i in c["cannot_link"]]
            c["must_link_chain_item_ids"] = [item_ids[i] for i in c["must_link_chain"]]
    return conflicts, count


class CheckRequestSchema(Schema):
    dataset_id = fields.String(required=True, validate=validate.Length(min=1, max=100))  # as jobs and sessions
    constraints = fields.Nested(ConstraintsSchema, required=True)


@blp.route("/check", methods=["POST"])
@blp.arguments(CheckRequestSchema)
@blp.response(200, ConstraintCheckSchema)
@problem_docs(blp, (404, "Unknown dataset"), (413, "Too many constraints"), (422, "Malformed constraints"))
def check(body):
    """Are these constraints consistent? Lists the contradictions found (synchronous).

    Relative constraints (``triplets``, ``relative``, with the ab|c
    constraints a ``hierarchy`` stands for) get ``relative``:
    ``{feasible, n_relative, minimal, conflicting}``, a conflicting subset
    by position in the request (a hierarchy's constraints have ``field``
    "hierarchy", ``index`` null and their ``items``); ``minimal`` is false
    when the bounded search stopped before proving that subset minimal.
    """
    from .datasets import dataset_or_404

    store = get_store()
    meta = dataset_or_404(store, body["dataset_id"], "/dataset_id")
    checked, counts = validate_constraints(body["constraints"], meta["n_samples"])
    item_ids = store.get_item_ids(meta["id"]) if meta.get("has_item_ids") else None
    conflicts, count = pairwise_conflicts(checked, item_ids)
    out = {"consistent": count == 0, "n_constraints": counts, "n_conflicts": count, "conflicts": conflicts}
    relative = relative_feasibility(checked, meta["n_samples"], item_ids)
    if relative is not None:
        out["relative"] = relative
        out["consistent"] = out["consistent"] and relative["feasible"]
    return out


def relative_feasibility(checked, n_samples, item_ids=None):
    """BUILD feasibility of triplet answers and ab|c constraints together.

    Returns None when there are no relative constraints (no ``triplets``,
    ``relative`` or ``hierarchy``), else
    ``{"feasible", "n_relative", "minimal", "conflicting": [{"field", "index",
    "items", "answer", "item_ids"}]}`` naming a conflicting subset by its
    position in the request (``index`` null for an ab|c constraint of the
    ``hierarchy``, which has no list to index: its ``items`` name it).
    ``minimal`` says whether that subset is proven minimal (every proper
    subset feasible): the shrinking has a work bound
    (long conflict cycles in large noisy sets), and a subset it stopped on
    still conflicts but may hold constraints that are not needed.
    """
    rows, answers, origin = [], [], []
    for k, t in enumerate(checked.get("triplets") or []):
        rows.append(t[:3])
        answers.append(t[3])
        origin.append(("triplets", k))
    for k, t in enumerate(checked.get("relative") or []):
        rows.append(t)
        answers.append("yes")
        origin.append(("relative", k))
    if not rows:
        if checked.get("hierarchy") is None:
            return None
        # a hierarchy alone is displayed by itself: no BUILD needed
        return {"feasible": True, "n_relative": count_hierarchy_constraints(checked["hierarchy"]),
                "minimal": True, "conflicting": []}
    if checked.get("hierarchy") is not None:
        # ReCon takes the hierarchy as the ab|c constraints it stands for, beside the lists: so does the check
        # (validate_constraints held their number to SHOAL_MAX_CONSTRAINTS)
        for t in hierarchy_constraints(checked["hierarchy"]).tolist():
            rows.append(t)
            answers.append("yes")
            origin.append(("hierarchy", None))
    res = check_relative_feasibility(rows, n_samples, answers)
    conflicting = []
    for r in res["conflicting_triplets"]:
        field, k = origin[r]
        items = [int(v) for v in rows[r]]
        conflicting.append({"field": field, "index": k, "items": items, "answer": answers[r],
                            "item_ids": [item_ids[i] for i in items] if item_ids else None})
    return {"feasible": res["feasible"], "n_relative": res["n_relative"], "minimal": res["minimal"],
            "conflicting": conflicting}
