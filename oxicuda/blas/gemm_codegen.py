"""Code generation shared by the SIMT GEMM/GEMV kernels: element kinds, loads that widen to the
accumulator type, complex arithmetic, alpha/beta scalars (host value or device pointer), per-batch
operand addresses (strided or pointer arrays) and the ``C = alpha * acc + beta * C`` epilogue.

An element is a tuple of accumulator-typed registers: one for real types, ``(re, im)`` for
complex ones. float16/bfloat16 widen to f32 on load and narrow (round to nearest even) on store.
"""

from __future__ import annotations

from dataclasses import dataclass

from oxicuda.ptx.builder import KernelBuilder, Value


@dataclass(frozen=True)
class ElementKind:
    """How one GEMM dtype lives in memory and in registers."""

    dtype: str      # oxicuda dtype name
    storage: str    # PTX type a component is loaded as (f32, f64, f16, bf16)
    comps: int      # 1 for real, 2 for complex
    acc: str        # accumulator component type (f32 or f64)

    @property
    def nbytes(self) -> int:
        """Bytes of one element in global memory."""
        return self.comps * {"f32": 4, "f64": 8, "f16": 2, "bf16": 2}[self.storage]

    @property
    def acc_nbytes(self) -> int:
        """Bytes of one element widened to the accumulator type (shared-memory tiles)."""
        return self.comps * (4 if self.acc == "f32" else 8)

    @property
    def complex(self) -> bool:
        return self.comps == 2


ELEMENT_KINDS: dict[str, ElementKind] = {
    "float32": ElementKind("float32", "f32", 1, "f32"),
    "float64": ElementKind("float64", "f64", 1, "f64"),
    "float16": ElementKind("float16", "f16", 1, "f32"),
    "bfloat16": ElementKind("bfloat16", "bf16", 1, "f32"),
    "complex64": ElementKind("complex64", "f32", 2, "f32"),
    "complex128": ElementKind("complex128", "f64", 2, "f64"),
}
GEMM_DTYPES = tuple(ELEMENT_KINDS)

Element = tuple[Value, ...]


#: data dtype -> accumulator dtype (float32 for the half types, as cublasGemmEx with
#: CUBLAS_COMPUTE_32F): the type of split-K partials and of device-pointer alpha/beta
ACC_DTYPES = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "float64": "float64",
              "complex64": "complex64", "complex128": "complex128"}


def kind_of(dtype: str) -> ElementKind:
    """The ElementKind of a dtype name; ValueError listing the allowed ones."""
    try:
        return ELEMENT_KINDS[dtype]
    except KeyError:
        raise ValueError(f"GEMM dtype {dtype!r} is not supported; allowed: {GEMM_DTYPES}") from None


def zero(kb: KernelBuilder, kind: ElementKind) -> Element:
    """A fresh zero element in accumulator registers."""
    return tuple(kb.mov(0.0, kind.acc) for _ in range(kind.comps))


def widen(kb: KernelBuilder, kind: ElementKind, parts: tuple[Value, ...]) -> Element:
    """Loaded storage components as accumulator-typed components."""
    if kind.storage in ("f16", "bf16"):
        return tuple(kb.cvt(p, "f32") for p in parts)
    return parts


def load(kb: KernelBuilder, kind: ElementKind, addr: Value, *, space: str = "global",
         conj: bool = False) -> Element:
    """One element from ``[addr]`` widened to the accumulator type (conjugated if ``conj``)."""
    if kind.complex:
        re, im = kb.ld(space, kind.storage, addr, vec=2)
        return (re, kb.neg(im)) if conj else (re, im)
    return widen(kb, kind, (kb.ld(space, kind.storage, addr),))


def store(kb: KernelBuilder, kind: ElementKind, addr: Value, value: Element, *, space: str = "global",
          raw: bool = False) -> None:
    """Store an accumulator element to ``[addr]`` (narrowed to the storage type unless ``raw``)."""
    if raw or kind.storage in ("f32", "f64"):
        kb.st(space, addr, list(value) if kind.complex else value[0])
        return
    kb.st(space, addr, kb.cvt(value[0], kind.storage))


def mul_add(kb: KernelBuilder, kind: ElementKind, a: Element, b: Element, acc: Element,
            neg_a_im: Value | None = None) -> None:
    """``acc += a * b`` in place (complex: four fma; ``neg_a_im`` = -a.im when precomputed)."""
    if not kind.complex:
        kb.fma(a[0], b[0], acc[0], out=acc[0])
        return
    nim = neg_a_im if neg_a_im is not None else kb.neg(a[1])
    kb.fma(a[0], b[0], acc[0], out=acc[0])
    kb.fma(nim, b[1], acc[0], out=acc[0])
    kb.fma(a[0], b[1], acc[1], out=acc[1])
    kb.fma(a[1], b[0], acc[1], out=acc[1])


def scale(kb: KernelBuilder, kind: ElementKind, s: Element, x: Element) -> Element:
    """``s * x`` as a fresh element."""
    if not kind.complex:
        return (kb.mul(s[0], x[0]),)
    re = kb.mul(s[0], x[0])
    re = kb.fma(kb.neg(s[1]), x[1], re)
    im = kb.mul(s[0], x[1])
    im = kb.fma(s[1], x[0], im)
    return (re, im)


# -- scalars -----------------------------------------------------------------------------------

def scalar_params(kb: KernelBuilder, kind: ElementKind, name: str) -> tuple[Element, Value]:
    """Declare ``name`` (and ``name_im`` for complex) by value plus ``name_ptr``; returns the
    scalar (read from the device pointer when it is nonzero) and a predicate ``scalar == 0``."""
    return resolve_scalar(kb, kind, *declare_scalar(kb, kind, name))


def declare_scalar(kb: KernelBuilder, kind: ElementKind, name: str) -> tuple[Element, Value]:
    """The parameters of ``scalar_params`` (host value components, device pointer), declared
    now and resolved later by ``resolve_scalar`` (kernels that keep registers free in a loop)."""
    host = tuple(kb.param(f"{name}{'_im' if c else ''}", kind.acc) for c in range(kind.comps))
    return host, kb.param(f"{name}_ptr", "u64")


def resolve_scalar(kb: KernelBuilder, kind: ElementKind, host: Element, ptr: Value) -> tuple[Element, Value]:
    """The scalar of ``declare_scalar``'s parameters and the predicate ``scalar == 0``."""
    value = tuple(kb.mov(h) for h in host)
    with kb.if_(kb.setp("ne", ptr, 0)):
        dev = kb.cvta("global", ptr, to_generic=False)
        parts = kb.ld("global", kind.acc, dev, vec=2) if kind.complex else (kb.ld("global", kind.acc, dev),)
        for v, p in zip(value, parts):
            kb.assign(v, p)
    is_zero = kb.setp("eq", value[0], 0.0)
    if kind.complex:
        is_zero = kb.and_(is_zero, kb.setp("eq", value[1], 0.0))
    return value, is_zero


def scalar_args(kind: ElementKind, value: object) -> list[object]:
    """Host launch arguments for a scalar declared by ``scalar_params`` (value then imag part)."""
    if kind.complex:
        z = complex(value)  # type: ignore[arg-type]
        return [z.real, z.imag]
    return [float(value.real) if isinstance(value, complex) else float(value)]  # type: ignore[arg-type]


# -- operands of one batch entry ---------------------------------------------------------------

def batch_operand(kb: KernelBuilder, base: Value, stride: Value, z: Value, elem_bytes: int,
                  pointer_array: bool) -> Value:
    """The operand address of batch entry ``z``: ``base[z]`` from a device array of pointers, or
    ``base + z * stride`` (stride in elements, u64)."""
    if pointer_array:
        entry = kb.ld("global", "u64", kb.addr(base, z, 8))
        return kb.cvta("global", entry, to_generic=False)
    off = kb.mul(kb.cvt(z, "u64"), stride)
    return kb.addr(base, off, elem_bytes)


def epilogue(kb: KernelBuilder, kind: ElementKind, addr: Value, acc: Element, alpha: Element,
             beta: Element, beta_zero: Value, *, raw: bool = False) -> None:
    """``[addr] = alpha * acc + beta * [addr]``; C is never read when beta == 0. ``raw`` stores
    the accumulator unscaled in accumulator precision (split-K partial products)."""
    if raw:
        store(kb, kind, addr, acc, raw=True)
        return
    out = scale(kb, kind, alpha, acc)
    with kb.if_(beta_zero, negate=True):
        old = load(kb, kind, addr)
        if kind.complex:
            re = kb.fma(beta[0], old[0], out[0])
            re = kb.fma(kb.neg(beta[1]), old[1], re)
            im = kb.fma(beta[0], old[1], out[1])
            im = kb.fma(beta[1], old[0], im)
            kb.assign(out[0], re)
            kb.assign(out[1], im)
        else:
            kb.fma(beta[0], old[0], out[0], out=out[0])
    store(kb, kind, addr, out)


# -- launch-plan binds --------------------------------------------------------------------------
#: the largest grid.z of one launch; longer batches run as several steps
MAX_GRID_Z = 65535


def batch_chunks(p) -> list[tuple[int, int, int, int, int]]:
    """(z0, count, a_offset, b_offset, c_offset) per launch of a batched SIMT GEMM (grid.z at most
    MAX_GRID_Z): byte offsets of the operands (of the pointer arrays, 8 bytes per entry, for
    pointer-array batches)."""
    kind = kind_of(p.dtype)
    if p.pointer_array:
        steps = (8, 8, 8)
    else:
        steps = (p.stride_a * kind.nbytes, p.stride_b * kind.nbytes, p.stride_c * p.c_kind.nbytes)
    return [(z0, min(MAX_GRID_Z, p.batch - z0), z0 * steps[0], z0 * steps[1], z0 * steps[2])
            for z0 in range(0, p.batch, MAX_GRID_Z)]


def simt_bind(kind: ElementKind, head, offsets: tuple[int, int, int] = (0, 0, 0)):
    """The ``bind`` of a SIMT GEMM step: ``head(a, b, c, workspace)`` gives the kernel's leading
    arguments for the operand addresses (the call's pointers plus ``offsets``), then the scalars as
    ``scalar_params`` declares them (alpha parts, alpha_ptr, beta parts, beta_ptr) from the call's
    scalars (alpha, beta; complex: alpha.re, alpha.im, beta.re, beta.im) and pointers."""
    offsets = tuple(offsets)
    oa, ob, oc = offsets
    if kind.complex:
        def bind(ptr, s, ws):
            return (*head(ptr[0] + oa, ptr[1] + ob, ptr[2] + oc, ws), s[0], s[1], ptr[3], s[2], s[3], ptr[4])
    elif offsets == (0, 0, 0):
        def bind(ptr, s, ws):
            return (*head(ptr[0], ptr[1], ptr[2], ws), s[0], ptr[3], s[1], ptr[4])
    else:
        def bind(ptr, s, ws):
            return (*head(ptr[0] + oa, ptr[1] + ob, ptr[2] + oc, ws), s[0], ptr[3], s[1], ptr[4])
    return bind
