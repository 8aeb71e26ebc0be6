"""Python client of Shoal, the constrained-clustering service.

``Shoal`` talks to one service (datasets, jobs, sessions); ``ShoalClusterer`` is a
scikit-learn estimator running there. Errors are the typed exceptions of
:mod:`shoal_client.errors`, each carrying the service's problem document.
"""

from ._version import __version__
from .client import Shoal
from .datasets import Dataset, Datasets
from .errors import (
    AuthenticationError,
    BadRequest,
    Conflict,
    ConnectionFailed,
    JobFailed,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    SessionFailed,
    ShoalError,
    Timeout,
    ValidationFailed,
)
from .estimator import ShoalClusterer
from .jobs import Job, Jobs, Progress, Result
from .sessions import Answered, Model, Question, Session, Sessions

__all__ = [
    "__version__", "Shoal", "ShoalClusterer", "Dataset", "Datasets", "Job", "Jobs", "Progress", "Result",
    "Session", "Sessions", "Question", "Answered", "Model", "ShoalError", "BadRequest", "AuthenticationError",
    "NotFound", "Conflict", "ValidationFailed", "PayloadTooLarge", "RateLimited", "ServerError",
    "ServiceUnavailable", "ConnectionFailed", "Timeout", "JobFailed", "SessionFailed",
]
