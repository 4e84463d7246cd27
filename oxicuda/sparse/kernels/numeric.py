"""Real and complex element arithmetic for the sparse kernels: a value is one register (real) or
a (re, im) pair; loads, stores, products and shuffles are written once for both."""

from __future__ import annotations

from oxicuda.ptx.builder import KernelBuilder, Value

#: numpy dtype name -> (PTX real type, components)
DTYPES = {"float32": ("f32", 1), "float64": ("f64", 1), "complex64": ("f32", 2), "complex128": ("f64", 2)}


class Num:
    """Arithmetic on values of one sparse dtype."""

    def __init__(self, kb: KernelBuilder, dtype: str) -> None:
        self.kb = kb
        self.real, self.parts = DTYPES[dtype]
        self.rbytes = 4 if self.real == "f32" else 8
        self.size = self.rbytes * self.parts

    def zero(self) -> tuple[Value, ...]:
        return tuple(self.kb.mov(0.0, self.real) for _ in range(self.parts))

    def param(self, name: str) -> tuple[Value, ...]:
        kb = self.kb
        if self.parts == 1:
            return (kb.param(name, self.real),)
        return kb.param(f"{name}_re", self.real), kb.param(f"{name}_im", self.real)

    def load(self, base: Value, index: Value, space: str = "global", nc: bool = False,
             cache: str | None = None) -> tuple[Value, ...]:
        """One element; ``nc`` reads through the read-only (non-coherent) path: only for data no
        thread of the launch writes; ``cache="cg"`` reads at L2, past a possibly stale L1 line
        (for data other CTAs of the same launch write)."""
        kb = self.kb
        a = kb.addr(base, index, self.size)
        if self.parts == 1:
            return (kb.ld(space, self.real, a, nc=nc, cache=cache),)
        return tuple(kb.ld(space, self.real, a, vec=2, nc=nc, cache=cache))

    def store(self, base: Value, index: Value, v: tuple[Value, ...], space: str = "global") -> None:
        kb = self.kb
        a = kb.addr(base, index, self.size)
        kb.st(space, a, list(v) if self.parts == 2 else v[0])

    def red_add(self, base: Value, index: Value, v: tuple[Value, ...]) -> None:
        kb = self.kb
        a = kb.addr(base, index, self.size)
        for k, part in enumerate(v):
            kb.red("global", "add", self.real, a, part, offset=k * self.rbytes)

    def add(self, a, b):
        return tuple(self.kb.add(x, y) for x, y in zip(a, b))

    def sub(self, a, b):
        return tuple(self.kb.sub(x, y) for x, y in zip(a, b))

    def conj(self, a):
        return a if self.parts == 1 else (a[0], self.kb.neg(a[1]))

    def mul(self, a, b):
        kb = self.kb
        if self.parts == 1:
            return (kb.mul(a[0], b[0]),)
        re = kb.fma(a[0], b[0], kb.neg(kb.mul(a[1], b[1])))
        im = kb.fma(a[0], b[1], kb.mul(a[1], b[0]))
        return re, im

    def fma(self, a, b, c):
        """a * b + c."""
        kb = self.kb
        if self.parts == 1:
            return (kb.fma(a[0], b[0], c[0]),)
        re = kb.fma(a[0], b[0], kb.fma(kb.neg(a[1]), b[1], c[0]))
        im = kb.fma(a[0], b[1], kb.fma(a[1], b[0], c[1]))
        return re, im

    def assign(self, dst, src) -> None:
        for d, s in zip(dst, src):
            self.kb.assign(d, s)

    def mov(self, v):
        return tuple(self.kb.mov(x) for x in v)

    def shfl_bfly(self, v, step: int):
        from oxicuda.primitives.kernels.common import shfl

        return tuple(shfl(self.kb, "bfly", x, step) for x in v)

    def shfl_idx(self, v, lane):
        from oxicuda.primitives.kernels.common import shfl

        return tuple(shfl(self.kb, "idx", x, lane) for x in v)


def divide(nm: Num, a, d):
    """a / d (complex: a conj(d) / |d|^2)."""
    kb = nm.kb
    if nm.parts == 1:
        return (kb.div(a[0], d[0]),)
    den = kb.fma(d[0], d[0], kb.mul(d[1], d[1]))
    num = nm.mul(a, nm.conj(d))
    return kb.div(num[0], den), kb.div(num[1], den)
