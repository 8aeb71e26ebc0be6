"""scikit-learn conventions every public estimator keeps (input handling, fitted attributes).

One small case per estimator, fitted directly (not through the worker registry), so
that the checks name the estimator class.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs

import clustering as cl
from clustering.exceptions import InvalidInputError
from clustering.validation import check_data

X, Y = make_blobs(30, centers=[[0, 0], [6, 6], [-6, 6]], cluster_std=0.6, random_state=2)
PAIRS = np.array([[0, 1], [2, 3], [4, 5], [6, 7]], dtype=np.int64)
KIND = np.array([1 if Y[i] == Y[j] else -1 for i, j in PAIRS], dtype=np.int64)
TRIPLETS = np.array([[a, b, c] for a in range(30) for b in range(30) for c in range(30)
                     if a < b and Y[a] == Y[b] != Y[c]][::97][:8], dtype=np.int64)
PAIRWISE = {"pairs": PAIRS, "pair_kind": KIND}
RELATIVE = {"triplets": TRIPLETS}

CASES = {
    "ActiveDCRC": (lambda: cl.ActiveDCRC(3, n_init=1, max_iter=10, random_state=0), {}),
    "CCSKL": (lambda: cl.CCSKL(3, n_neighbors=6, n_components=6, random_state=0), PAIRWISE),
    "COPKMeans": (lambda: cl.COPKMeans(3, n_init=2, random_state=0), PAIRWISE),
    "COPRF": (lambda: cl.COPRF(3, n_estimators=10, filter_repeats=10, random_state=0), PAIRWISE),
    "DCRC": (lambda: cl.DCRC(3, n_init=1, max_iter=10, random_state=0), RELATIVE),
    "E2CP": (lambda: cl.E2CP(3, n_neighbors=6, random_state=0), PAIRWISE),
    "ReCon": (lambda: cl.ReCon(3), RELATIVE),
    "SpectralClustering": (lambda: cl.SpectralClustering(3, n_neighbors=6, random_state=0), {}),
    "SpectralLearning": (lambda: cl.SpectralLearning(3, n_neighbors=6, random_state=0), PAIRWISE),
    "URASC": (lambda: cl.URASC(3, budget=0, random_state=0), {}),
}


def test_every_public_estimator_has_a_case():
    public = {name for name in cl.__all__ if isinstance(getattr(cl, name), type)
              and hasattr(getattr(cl, name), "fit")}
    assert public == set(CASES)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo_array"])
def test_check_data_refuses_sparse_data_by_name(fmt):
    S = {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "coo_array": sp.coo_array}[fmt](X)
    with pytest.raises(InvalidInputError, match=r"X is a sparse matrix.*dense") as exc:
        check_data(S)
    assert exc.value.field == "X"


@pytest.mark.parametrize("name", sorted(CASES))
def test_sparse_data_is_a_clear_error(name):
    make, kw = CASES[name]
    with pytest.raises(InvalidInputError, match="sparse"):
        make().fit(sp.csr_matrix(X), **kw)


def test_check_data_accepts_an_object_array_of_real_numbers():
    obj = X.astype(object)
    obj[0, 0] = int(3)
    out = check_data(obj)
    assert out.dtype == np.float64 and out[0, 0] == 3.0
    np.testing.assert_array_equal(out[1:], X[1:])
    with pytest.raises(InvalidInputError, match="only numbers"):
        check_data(np.array([[1.0, None], [2.0, 3.0]], dtype=object))
    with pytest.raises(InvalidInputError, match="only numbers"):
        check_data(np.array([[1.0, "2"], [2.0, 3.0]], dtype=object))


@pytest.mark.parametrize("name", sorted(CASES))
def test_object_array_of_numbers_fits_as_float64(name):
    make, kw = CASES[name]
    a = make().fit(X, **kw).labels_
    b = make().fit(X.astype(object), **kw).labels_
    np.testing.assert_array_equal(a, b)


def test_complex_data_is_named_as_such():
    with pytest.raises(InvalidInputError, match="Complex data not supported"):
        check_data(X + 1j)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fit_sets_n_features_in(name):
    make, kw = CASES[name]
    est = make().fit(np.hstack([X, X[:, :1]]), **kw)
    assert est.n_features_in_ == 3 and isinstance(est.n_features_in_, int)


@pytest.mark.parametrize("make", [lambda: cl.SpectralClustering(3, affinity="precomputed", random_state=0),
                                  lambda: cl.SpectralLearning(3, affinity="precomputed", random_state=0),
                                  lambda: cl.CCSKL(3, affinity="precomputed", n_components=6, random_state=0),
                                  lambda: cl.URASC(3, affinity="precomputed", budget=0, random_state=0)],
                         ids=["SpectralClustering", "SpectralLearning", "CCSKL", "URASC"])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_precomputed_affinity_counts_its_columns(make, sparse):
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    A = np.exp(-d2 / 4.0)
    np.fill_diagonal(A, 0.0)
    est = make().fit(sp.csr_matrix(A) if sparse else A)
    assert est.n_features_in_ == len(X)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("defect", ["asymmetric", "negative", "not square", "nan"])
def test_every_precomputed_affinity_is_checked_alike(defect, sparse):
    # CCSKL had its own copy of SpectralClustering's affinity check, with other messages and no cell named
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    A = np.exp(-d2 / 4.0)
    A = {"asymmetric": A + np.triu(np.full_like(A, 0.3), 1), "negative": -A, "not square": A[:, :20],
         "nan": np.where(A > 0.5, np.nan, A)}[defect]
    seen = set()
    for make, kw in ((lambda: cl.SpectralClustering(3, affinity="precomputed", random_state=0), {}),
                     (lambda: cl.SpectralLearning(3, affinity="precomputed", random_state=0), PAIRWISE),
                     (lambda: cl.CCSKL(3, affinity="precomputed", n_components=6, random_state=0), PAIRWISE)):
        with pytest.raises(InvalidInputError) as exc:
            make().fit(sp.csr_matrix(A) if sparse else A, **kw)
        seen.add((str(exc.value), exc.value.field, exc.value.index))
    assert len(seen) == 1, seen


@pytest.mark.parametrize("name", ["URASC", "ActiveDCRC"])
def test_a_restored_session_has_n_features_in(name):
    est = CASES[name][0]().fit(X)
    restored = type(est).from_state(X, est.get_state())
    assert restored.n_features_in_ == X.shape[1]


def test_active_dcrc_reports_the_em_iterations_of_its_last_fit():
    est = cl.ActiveDCRC(3, n_init=1, max_iter=3, random_state=0).fit(X)
    assert est.n_iter_ == est.model_.n_iter_ and 1 <= est.n_iter_ <= 3
    est.tell([(*q["items"], "yes") for q in est.suggest_queries(2)])
    est.update()
    assert est.n_iter_ == est.model_.n_iter_


@pytest.mark.parametrize("call", [lambda e: e.suggest_queries(1), lambda e: e.tell([]), lambda e: e.update(),
                                  lambda e: e.get_state()], ids=["suggest_queries", "tell", "update", "get_state"])
@pytest.mark.parametrize("name", ["URASC", "ActiveDCRC"])
def test_session_methods_before_fit_raise_not_fitted(name, call):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        call(CASES[name][0]())


def test_recon_to_newick_before_fit_raises_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        cl.ReCon(2).to_newick()
    assert cl.ReCon(2).fit(X[:3]).to_newick().endswith(";")


# ------------------------------------------------------------------ docstrings
METHODS = ("fit", "fit_predict", "predict", "predict_proba", "predict_triplets", "kernel", "to_newick",
           "suggest_queries", "tell", "update", "get_state", "from_state")


def _doc_names(section):
    return {name.strip() for p in section for name in p.name.split(",")}


def _own_methods(cls):
    for meth in METHODS:
        owner = next((k for k in cls.__mro__ if meth in k.__dict__), None)
        if owner is not None and owner.__module__.startswith("clustering"):
            f = owner.__dict__[meth]
            yield meth, getattr(f, "__func__", f)


@pytest.mark.parametrize("name", sorted(CASES))
def test_docstrings_name_every_parameter_fitted_attribute_and_raises(name):
    import inspect

    from sklearn.externals._numpydoc.docscrape import ClassDoc, FunctionDoc  # numpydoc, vendored by sklearn

    cls = getattr(cl, name)
    doc = ClassDoc(cls)
    assert _doc_names(doc["Parameters"]) == set(inspect.signature(cls).parameters)
    make, kw = CASES[name]
    est = make().fit(X, **kw)
    fitted = {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}
    assert fitted - _doc_names(doc["Attributes"]) == set()
    problems = []
    for meth, f in _own_methods(cls):
        fdoc = FunctionDoc(f)
        sig = {p.name for p in inspect.signature(f).parameters.values()
               if p.name not in ("self", "cls") and p.kind is not p.VAR_KEYWORD}
        if not sig <= _doc_names(fdoc["Parameters"]):
            problems.append(f"{meth}: undocumented parameters {sorted(sig - _doc_names(fdoc['Parameters']))}")
        if not fdoc["Returns"]:
            problems.append(f"{meth}: no Returns section")
        if not fdoc["Raises"]:
            problems.append(f"{meth}: no Raises section")
    assert not problems, problems


@pytest.mark.parametrize("make", [lambda: cl.SpectralClustering(3, affinity="precomputed", random_state=0),
                                  lambda: cl.SpectralLearning(3, affinity="precomputed", random_state=0),
                                  lambda: cl.CCSKL(3, affinity="precomputed", n_components=6, random_state=0)],
                         ids=["SpectralClustering", "SpectralLearning", "CCSKL"])
@pytest.mark.parametrize("scale", [1.7e308, 1e101])
def test_a_sparse_precomputed_affinity_has_the_dense_value_limit(make, scale):
    # a dense affinity goes through check_data (|value| <= 1e100); a sparse one only had to be finite, and
    # entries near 1.7e308 overflowed the degrees ("overflow encountered in reduceat", pytest's error)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    A = np.exp(-d2 / 4.0)
    np.fill_diagonal(A, 0.0)
    A[A < 1e-3] = 0.0
    S = sp.csr_matrix(A * scale)
    r, c = map(int, np.argwhere(A * scale > 1e100)[0])
    with pytest.raises(InvalidInputError, match=rf"X\[{r}\]\[{c}\] = .* is too large") as exc:
        make().fit(S, **({} if isinstance(make(), cl.SpectralClustering) else PAIRWISE))
    assert exc.value.field == "X" and exc.value.index == (r, c)
