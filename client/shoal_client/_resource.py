"""The one base of the service's records as the client holds them (datasets, jobs, sessions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._http import Transport


class Resource:
    """A record of the service: its last view and the transport that reads it again.

    Parameters
    ----------
    transport : Transport
    data : dict
        The service's answer for the record (it has an ``id``).
    replayed : bool
        The create was answered from an earlier request with the same ``Idempotency-Key``
        (the record already existed: nothing was created twice).
    """

    def __init__(self, transport: Transport, data: dict[str, Any], replayed: bool = False) -> None:
        self._t = transport
        self.raw = data
        self.replayed = replayed

    @property
    def id(self) -> str:
        """The record's id (``ds_...``, ``job_...``, ``ses_...``)."""
        return str(self.raw["id"])
