"""Reference methods: NJW spectral clustering, Spectral Learning, E2CP, COP-KMeans
(``specs/baselines.md``)."""

from ._cop_kmeans import COPKMeans
from ._e2cp import E2CP
from ._spectral_clustering import SpectralClustering
from ._spectral_learning import SpectralLearning

__all__ = ["COPKMeans", "E2CP", "SpectralClustering", "SpectralLearning"]
