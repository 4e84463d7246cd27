"""Every exception class oxicuda defines survives pickling (CuPy's TestExceptionPicklable): the
copy has the same type, args, str and attributes. Exceptions cross process boundaries in
multiprocessing and pytest-xdist, so an exception that cannot be rebuilt hides the real error."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil

import pytest

import oxicuda

#: modules that need an optional package or a device to import; skipped when they fail to import
_OPTIONAL_IMPORT_ERRORS = (ImportError, OSError)


def _exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(oxicuda.__path__, "oxicuda."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except _OPTIONAL_IMPORT_ERRORS:
            continue
        for obj in vars(module).values():
            if (inspect.isclass(obj) and issubclass(obj, BaseException)
                    and obj.__module__.startswith("oxicuda.")):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[k] for k in sorted(found)]


_INT_NAMES = ("code", "status", "lane", "address", "result", "line", "ordinal", "size", "nbytes")


def _example(cls: type[BaseException]) -> BaseException:
    """An instance built from the constructor's own parameters (ints where the name says so)."""
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        params = []
    args = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is not p.empty and p.name not in _INT_NAMES:
            args.append(f"{p.name} detail")
            continue
        args.append(7 if p.name in _INT_NAMES else f"{p.name} text")
    if not params or all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        args = ["something failed"]
    return cls(*args)


CLASSES = _exception_classes()


def test_the_enumeration_finds_the_known_exception_classes():
    names = {c.__name__ for c in CLASSES}
    for expected in ("CudaError", "LaunchError", "OutOfMemoryError", "CUBLASError", "cublasInvalidValue",
                     "InvalidHandle", "PtxSyntaxError", "Fault", "PointerTypeError"):
        assert expected in names, sorted(names)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_exception_round_trips_through_pickle(cls):
    err = _example(cls)
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is cls
    assert copy.args == err.args
    assert str(copy) == str(err)
    assert vars(copy) == vars(err)


def test_cublas_error_keeps_its_status_and_message():
    from oxicuda.cuda.cublas import CUBLASError

    err = pickle.loads(pickle.dumps(CUBLASError(1)))
    assert err.status == 1 and err.args == ("CUBLAS_STATUS_NOT_INITIALIZED",)
    err = pickle.loads(pickle.dumps(CUBLASError(7, "sgemm: lda=1; it must be >= 4")))
    assert err.status == 7 and str(err) == "CUBLAS_STATUS_INVALID_VALUE: sgemm: lda=1; it must be >= 4"
