"""Differential test of the kernel language: a seeded generator writes small random expression
kernels, which run on the emulator through oxicuda.elementwise and in Python on numpy scalars
(the same source, evaluated by the interpreter), on random and edge inputs (NaN, infinities,
negative zero, integer extremes that overflow and wrap, zero divisors). Results must agree bit
for bit (NaN matching NaN).

Semantics under test, as documented in oxicuda.jit.ops: numpy promotion with weak Python
literals, wrap-around integer arithmetic, Python/numpy floor division and modulo (divisor's
sign; 0 for a zero divisor), IEEE float arithmetic without contraction, NaN-propagating
``np.maximum``/``np.minimum``.
"""

from __future__ import annotations

import importlib.util
import itertools
import os

import numpy as np
import pytest

import oxicuda

INT_DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64)
FLOAT_DTYPES = (np.float16, np.float32, np.float64)
_counter = itertools.count()


class _ExprGen:
    def __init__(self, rng: np.random.Generator, mode: str, names: list[str]) -> None:
        self.rng, self.mode, self.names = rng, mode, names

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def expr(self, depth: int) -> str:
        r = self.rng.random()
        if depth == 0 or r < 0.2:
            return self.leaf()
        if self.mode == "int":
            op = self.pick(["+", "-", "*", "//", "%", "&", "|", "^", "+", "*"])
            return f"({self.expr(depth - 1)} {op} {self.expr(depth - 1)})"
        kind = self.pick(["bin", "bin", "bin", "neg", "abs", "max", "min", "where", "cast"])
        if kind == "bin":
            op = self.pick(["+", "-", "*", "/"])
            return f"({self.expr(depth - 1)} {op} {self.expr(depth - 1)})"
        if kind == "neg":
            return f"(-{self.expr(depth - 1)})"
        if kind == "abs":
            return f"abs({self.expr(depth - 1)})"
        if kind in ("max", "min"):
            fn = "np.maximum" if kind == "max" else "np.minimum"
            return f"{fn}({self.expr(depth - 1)}, {self.expr(depth - 1)})"
        if kind == "cast":
            return f"{self.pick(['f32', 'f64'])}({self.expr(depth - 1)})"
        cmp = self.pick(["<", "<=", ">", ">=", "==", "!="])
        return (f"np.where({self.expr(depth - 1)} {cmp} {self.expr(depth - 1)}, "
                f"{self.expr(depth - 1)}, {self.expr(depth - 1)})")

    def leaf(self) -> str:
        if self.rng.random() < 0.7:
            return self.pick(self.names)
        if self.mode == "int":
            return str(int(self.rng.integers(-3, 8)))
        return self.pick(["0.5", "2", "-1.5", "3", "0.0", "-0.0", "1e30"])


def _edges(dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, 65504.0, 1e-5],
                        dtype=dt)
    info = np.iinfo(dt)
    vals = [0, 1, 2, 3, -1, -2, -7, info.max, info.max - 1, info.min + 1]
    return np.array([v for v in vals if info.min <= v <= info.max], dtype=dt)


def _inputs(rng, dtypes, n: int) -> list[np.ndarray]:
    out = []
    for dt in dtypes:
        dt = np.dtype(dt)
        if dt.kind == "f":
            body = (rng.standard_normal(n) * 10).astype(dt)
        else:
            info = np.iinfo(dt)
            lo, hi = max(info.min + 1, -10**6), min(info.max, 10**6)
            body = rng.integers(lo, hi, n).astype(dt)
        edges = _edges(dt)
        body[: len(edges)] = edges
        perm = rng.permutation(n)
        out.append(body[perm])
    return out


def _module(tmp_path, source: str):
    path = tmp_path / f"jit_diff_{next(_counter)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    if got.dtype.kind == "f":
        return (got == want) | (np.isnan(got) & np.isnan(want))
    return got == want


@pytest.mark.parametrize("mode", ["int", "float"])
@pytest.mark.parametrize("seed", range(int(os.environ.get("OXICUDA_JIT_DIFF_SEEDS", "16"))))
def test_random_expression_kernels_agree_with_python_evaluation(mode, seed, tmp_path):
    rng = np.random.default_rng(1000 * seed + (mode == "float"))
    nargs = int(rng.integers(1, 4))
    names = ["x", "y", "z"][:nargs]
    gen = _ExprGen(rng, mode, names)
    body = gen.expr(int(rng.integers(2, 5)))
    source = ("import numpy as np\nfrom oxicuda.types import f32, f64\n\n\n"
              f"def f({', '.join(names)}):\n    return {body}\n")
    fn = _module(tmp_path, source).f
    pool = INT_DTYPES if mode == "int" else FLOAT_DTYPES
    dtypes = [pool[int(rng.integers(len(pool)))] for _ in names]
    inputs = _inputs(rng, dtypes, 48)
    try:
        with np.errstate(all="ignore"):
            host = [fn(*(a[i] for a in inputs)) for i in range(48)]
    except (OverflowError, TypeError, ZeroDivisionError):
        # what Python/numpy refuse (a Python integer out of range of the array dtype, no loop
        # for the types, a constant division by zero) the compiler refuses too
        with pytest.raises(oxicuda.jit.CompileError):
            oxicuda.elementwise(fn)(*(oxicuda.asarray(a) for a in inputs))
        return
    want_dtype = np.asarray(host[0]).dtype
    want = np.array([np.asarray(h).astype(want_dtype) for h in host])
    got = oxicuda.elementwise(fn)(*(oxicuda.asarray(a) for a in inputs))
    assert got.dtype == want_dtype, (body, dtypes)
    ok = _same(got.get(), want)
    bad = np.flatnonzero(~ok)
    assert not bad.size, (body, dtypes, [(tuple(a[i] for a in inputs), got.get()[i], want[i])
                                         for i in bad[:3]])
