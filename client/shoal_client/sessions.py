"""Active-clustering sessions: lease questions, answer them, read the model."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

import numpy as np
import numpy.typing as npt

from ._http import jsonable, retry_after_seconds, seg
from ._resource import Resource
from .datasets import Dataset, _pages, dataset_id
from .errors import SessionFailed, Timeout

if TYPE_CHECKING:
    from ._http import Transport

#: Answer words the client takes -> the service's answer values, per question type.
ANSWERS: dict[str, dict[Any, str]] = {
    "pairwise": {"same": "must_link", "different": "cannot_link", "must_link": "must_link",
                 "cannot_link": "cannot_link", "dont_know": "dont_know", True: "must_link", False: "cannot_link"},
    "triplet": {"yes": "yes", "no": "no", "dont_know": "dont_know", True: "yes", False: "no"},
}


@dataclass(frozen=True)
class Question:
    """A leased question.

    Attributes
    ----------
    id : str
        ``question_id``.
    type : str
        ``"pairwise"`` (are rows ``items[0]`` and ``items[1]`` in the same cluster?) or ``"triplet"``
        (is ``items[0]`` closer to ``items[1]`` than to ``items[2]``?).
    items : tuple of int
        0-based rows of the dataset.
    item_ids : tuple of str or None
        The dataset's ids of those rows.
    answers : tuple of str
        The answer values the service takes for it.
    worker_id : str or None
        Who leased it (and answers it by default).
    objects : tuple or None
        The ``items`` given to ``datasets.create`` for these rows, when the session was created
        from that :class:`Dataset` object: what to show a person.
    """

    id: str
    type: str
    items: tuple[int, ...]
    item_ids: tuple[str, ...] | None
    answers: tuple[str, ...]
    worker_id: str | None = None
    objects: tuple[Any, ...] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Answered:
    """What the service did with one answer.

    Attributes
    ----------
    question_id : str
    outcome : str
        ``accepted``; ``duplicate`` (this answer was recorded already, e.g. by an attempt whose
        reply was lost); ``late`` (the question has its answers, was withdrawn, or the budget is
        used up); ``rejected`` (see ``reason``).
    reason : str or None
    """

    question_id: str
    outcome: str
    reason: str | None = None


class Model:
    """A session's current model (``GET /v1/sessions/{id}/model``).

    Attributes
    ----------
    raw : dict
        The whole answer (certain sets, derived constraints, contradicted answers, per-worker
        reliability, warnings, ...).
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    @property
    def labels(self) -> npt.NDArray[np.int64]:
        """ndarray of int64, shape (n_samples,): the cluster of each row."""
        return np.asarray(self.raw["labels"], dtype=np.int64)

    @property
    def observed_revision(self) -> int:
        """The session revision these labels reflect."""
        return int(self.raw["observed_revision"])

    @property
    def n_clusters(self) -> int:
        """Clusters in labels."""
        return int(self.raw["n_clusters"])

    @property
    def n_questions_used(self) -> int:
        """Answered questions the model used."""
        return int(self.raw.get("n_questions_used") or 0)

    @property
    def must_link(self) -> list[list[int]] | None:
        """Pairwise: pairs told as must-link."""
        value: list[list[int]] | None = self.raw.get("must_link")
        return value

    @property
    def cannot_link(self) -> list[list[int]] | None:
        """Pairwise: pairs told as cannot-link."""
        value: list[list[int]] | None = self.raw.get("cannot_link")
        return value

    @property
    def triplets(self) -> list[list[Any]] | None:
        """Triplet: [a, b, c, answer] per question."""
        value: list[list[Any]] | None = self.raw.get("triplets")
        return value

    @property
    def contradicted_answers(self) -> list[dict[str, Any]]:
        """Closed questions whose answer the labels go against."""
        return self.raw.get("contradicted_answers") or []

    @property
    def workers(self) -> list[dict[str, Any]]:
        """Per-worker agreement, least first."""
        return self.raw.get("workers") or []

    @property
    def warnings(self) -> list[dict[str, str]]:
        """What needs attention."""
        return self.raw.get("warnings") or []

    @property
    def metrics(self) -> dict[str, float] | None:
        """ARI, ... against the dataset's labels."""
        value: dict[str, float] | None = self.raw.get("metrics")
        return value

    def __repr__(self) -> str:
        return f"Model(session_id={self.raw.get('session_id')!r}, observed_revision={self.raw.get('observed_revision')})"


class Session(Resource):
    """An active-clustering session; its state is read at creation and by :meth:`refresh`.

    Attributes
    ----------
    id : str
    raw : dict
        The session's last view (``GET /v1/sessions/{id}``).
    dataset : Dataset or None
        The object it was created from (its ``items`` become the questions' ``objects``).
    """

    def __init__(self, transport: Transport, data: dict[str, Any], dataset: Dataset | None = None,
                 replayed: bool = False) -> None:
        super().__init__(transport, data, replayed)
        self.dataset = dataset

    @property
    def state(self) -> str:
        """INITIALIZING, ACTIVE, COMPLETED or FAILED."""
        return str(self.raw["state"])

    @property
    def kind(self) -> str:
        """Pairwise or triplet."""
        return str(self.raw["question_type"])

    @property
    def budget(self) -> int:
        """Questions the model may use."""
        return int(self.raw["budget"])

    @property
    def budget_used(self) -> int:
        """Questions the model used."""
        return int(self.raw["budget_used"])

    @property
    def budget_remaining(self) -> int:
        """Budget - budget_used."""
        return int(self.raw["budget_remaining"])

    @property
    def revision(self) -> int:
        """Grows with every batch adding an answer."""
        return int(self.raw["revision"])

    @property
    def observed_revision(self) -> int:
        """The revision the model reflects."""
        return int(self.raw["observed_revision"])

    @property
    def counters(self) -> dict[str, int]:
        """Answers, questions closed, ..."""
        return dict(self.raw.get("counters") or {})

    @property
    def up_to_date(self) -> bool:
        """The model reflects every answer (its ``ModelUpToDate`` condition) and the first pass is done."""
        cond = {c["type"]: c for c in self.raw.get("conditions") or []}
        status: str | None = cond.get("ModelUpToDate", {}).get("status")
        return status == "True" and self.state != "INITIALIZING"

    def refresh(self) -> Session:
        """Read the session again; returns ``self``."""
        self.raw = self._t.request("GET", f"/v1/sessions/{seg(self.id)}").json()
        return self

    def questions(self, worker_id: str | None = None, batch: int = 10,
                  timeout: float | None = None) -> Iterator[Question]:
        """Lease questions and yield them until the budget is used up.

        Leases ``batch`` questions at a time (``POST /v1/sessions/{id}/questions``). When none is
        handed out, it waits as long as the answer's ``Retry-After`` says (a re-clustering pass
        refills the pool) and leases again; an answer without ``Retry-After`` means nothing more
        will come (the budget is used up, or the session is COMPLETED) and ends the iteration.

        Parameters
        ----------
        worker_id : str, optional
            Who answers: a worker is never handed the same question twice, and :meth:`answer` sends
            it with the answers. Give one per person or crowd worker.
        batch : int
            Questions per lease, 1-100.
        timeout : float, optional
            Seconds to wait at most for questions at a time (None: as long as the service says).

        Yields
        ------
        Question

        Raises
        ------
        SessionFailed
            The session ended FAILED.
        Timeout
            No question came within ``timeout`` seconds.
        """
        items = self.dataset.items if self.dataset is not None else None
        waited_since: float | None = None
        while True:
            r = self._t.request("POST", f"/v1/sessions/{seg(self.id)}/questions",
                                json={"count": int(batch), "worker_id": worker_id}, safe=True)
            leased = r.json()["questions"]
            if leased:
                waited_since = None
                for q in leased:
                    rows = tuple(int(i) for i in q["items"])
                    yield Question(str(q["question_id"]), str(q["type"]), rows,
                                   tuple(q["item_ids"]) if q.get("item_ids") else None, tuple(q["answers"]),
                                   worker_id, tuple(items[i] for i in rows) if items is not None else None)
                continue
            pause = retry_after_seconds(r)
            if pause is None:
                self.refresh()
                if self.state == "FAILED":
                    raise SessionFailed(self.id, self.raw.get("error"))
                return
            now = time.monotonic()
            waited_since = now if waited_since is None else waited_since
            if timeout is not None:
                left = timeout - (now - waited_since)
                if left <= 0:
                    raise Timeout(message=f"session {self.id}: no question for {timeout} s")
                pause = min(pause, left)
            time.sleep(max(pause, 0.05))

    def answer(self, question: Question | str, answer: Any, worker_id: str | None = None) -> Answered:
        """Answer one question (``POST /v1/sessions/{id}/answers``).

        Parameters
        ----------
        question : Question or str
            A question from :meth:`questions`, or its id.
        answer : str or bool
            Pairwise: ``"same"`` / ``"different"`` / ``"dont_know"`` (or the service's
            ``"must_link"`` / ``"cannot_link"``; True / False). Triplet: ``"yes"`` / ``"no"`` /
            ``"dont_know"`` (True / False).
        worker_id : str, optional
            Who answered; default: the worker the question was leased to.

        Returns
        -------
        Answered

        Raises
        ------
        ValueError
            ``answer`` is not one of the values for the question's type.
        """
        return self.answer_many([(question, answer)], worker_id=worker_id)[0]

    def answer_many(self, answers: Iterable[tuple[Question | str, Any]],
                    worker_id: str | None = None) -> list[Answered]:
        """Answer several questions in one request; see :meth:`answer`.

        Each answer gets an ``assignment_id`` (a new UUID) sent with every retry of the request, so
        a retry after a lost reply records nothing twice (the service answers ``duplicate``).

        Returns
        -------
        list of Answered
            One per answer, in order.
        """
        body = []
        for question, value in answers:
            qid = question.id if isinstance(question, Question) else str(question)
            wid = worker_id if worker_id is not None else (question.worker_id if isinstance(question, Question)
                                                           else None)
            body.append({"question_id": qid, "answer": self._answer_value(value), "worker_id": wid,
                         "assignment_id": str(uuid.uuid4())})
        if not body:
            return []
        r = self._t.request("POST", f"/v1/sessions/{seg(self.id)}/answers", json={"answers": body}, safe=True)
        return [Answered(x["question_id"], x["outcome"], x.get("reason")) for x in r.json()["results"]]

    def _answer_value(self, value: Any) -> str:
        vocab = ANSWERS.get(self.kind, {})
        key = value.lower() if isinstance(value, str) else value
        if isinstance(key, np.bool_):
            key = bool(key)
        try:
            return vocab[key]
        except (KeyError, TypeError):
            words = sorted(str(k) for k in vocab if isinstance(k, str))
            raise ValueError(f"{self.kind} questions take one of {', '.join(words)} (or True / False), "
                             f"not {value!r}") from None

    def wait(self, timeout: float | None = None, poll_interval: float = 1.0) -> Session:
        """Wait until the model reflects every answer (``up_to_date``), as ``Retry-After`` paces it.

        Raises
        ------
        SessionFailed
            The session ended FAILED.
        Timeout
            Not up to date after ``timeout`` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            r = self._t.request("GET", f"/v1/sessions/{seg(self.id)}")
            self.raw = r.json()
            if self.state == "FAILED":
                raise SessionFailed(self.id, self.raw.get("error"))
            if self.up_to_date:
                return self
            pause = retry_after_seconds(r) or poll_interval
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Timeout(message=f"session {self.id}: model not up to date after {timeout} s")
                pause = min(pause, left)
            time.sleep(max(pause, 0.05))

    def model(self, wait: bool = True, timeout: float | None = None) -> Model:
        """The session's current model: labels and what the answers told it.

        Parameters
        ----------
        wait : bool
            First wait (:meth:`wait`) until the model reflects every answer given so far; False
            reads the model as it is (:class:`Conflict` ``model_not_ready`` before the first one).
        timeout : float, optional
            Seconds to wait at most.

        Returns
        -------
        Model
        """
        if wait:
            self.wait(timeout=timeout)
        return Model(self._t.request("GET", f"/v1/sessions/{seg(self.id)}/model").json())

    def delete(self) -> None:
        """Delete the session with its answers, questions and model (the dataset stays)."""
        self._t.request("DELETE", f"/v1/sessions/{seg(self.id)}", gone_ok=True)

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, state={self.state!r}, budget_used={self.raw.get('budget_used')})"


class Sessions:
    """``shoal.sessions``: ``POST/GET /v1/sessions``."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(self, dataset: Dataset | str, n_clusters: int | None = None, budget: int = 100,
               kind: str = "pairwise", params: Mapping[str, Any] | None = None, *,
               strategy: str | None = None, answers_per_question: int | None = None,
               aggregation: str | None = None, pool_size: int | None = None, lease_seconds: int | None = None,
               scale: str | None = None, preset: str | None = None, random_state: int | None = None,
               callback_url: str | None = None, idempotency_key: str | None = None,
               **fields: Any) -> Session:
        """Open a session (``POST /v1/sessions``); a worker computes the first model and questions.

        Parameters
        ----------
        dataset : Dataset or str
            The dataset (at least 3 rows) or its id.
        n_clusters : int, optional
            K if known. None: unknown, grown from the answers (pairwise sessions only).
        budget : int
            Questions the model may use, 1-100000.
        kind : {"pairwise", "triplet"}
            The body's ``question_type``: "same cluster?" pairs (URASC) or "is a closer to b than to
            c?" triplets (DCRC, ``n_clusters`` required).
        params : mapping, optional
            Strategy parameters (URASC's for pairwise sessions, ActiveDCRC's for triplet ones).
        strategy, answers_per_question, aggregation, pool_size, lease_seconds, scale, preset, \
random_state, callback_url : optional
            The body members of the same names (see ``openapi.yaml``); None leaves the service's default.
        idempotency_key : str, optional
            Default: a new UUID, sent with every retry of this call.
        **fields
            Further body members in their wire form, sent as given.

        Returns
        -------
        Session
            Usually INITIALIZING: :meth:`Session.questions` waits for the first questions.

        Raises
        ------
        ValidationFailed
            E.g. ``n_clusters`` not below the rows (``/n_clusters``), unknown parameter (``/params/...``).
        """
        body: dict[str, Any] = {"dataset_id": dataset_id(dataset), "budget": int(budget), "question_type": kind}
        optional = {"n_clusters": n_clusters, "params": None if params is None else dict(params),
                    "strategy": strategy, "answers_per_question": answers_per_question, "aggregation": aggregation,
                    "pool_size": pool_size, "lease_seconds": lease_seconds, "scale": scale, "preset": preset,
                    "random_state": random_state, "callback_url": callback_url, **fields}
        body.update(jsonable({k: v for k, v in optional.items() if v is not None}))
        r = self._t.request("POST", "/v1/sessions", json=body, idempotency_key=idempotency_key or str(uuid.uuid4()))
        return Session(self._t, r.json(), dataset if isinstance(dataset, Dataset) else None,
                       r.headers.get("Idempotent-Replayed") == "true")

    def get(self, session_id: str) -> Session:
        """A session by id (:class:`NotFound` for an unknown or expired one)."""
        return Session(self._t, self._t.request("GET", f"/v1/sessions/{seg(session_id)}").json())

    def list(self, state: str | None = None, dataset: Dataset | str | None = None,
             limit: int | None = None) -> list[Session]:
        """Sessions, newest first (every page, or the first ``limit``), optionally of one state or dataset."""
        params = {"state": state, "dataset_id": None if dataset is None else dataset_id(dataset)}
        return [Session(self._t, rec) for rec in _pages(self._t, "/v1/sessions", "sessions", params, limit)]

    def delete(self, session: Session | str) -> None:
        """Delete a session given as object or id."""
        sid = session.id if isinstance(session, Session) else str(session)
        self._t.request("DELETE", f"/v1/sessions/{seg(sid)}", gone_ok=True)


__all__ = ["Session", "Sessions", "Question", "Answered", "Model", "ANSWERS"]


