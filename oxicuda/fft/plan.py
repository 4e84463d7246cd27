"""Plans: one transform problem turned into kernel launches, built once and run many times.

``build_launch_plan(problem, facts)`` composes the ``LaunchPlan`` of a whole call (every axis,
every pass) from three strategies per axis (``dispatch.axis_strategy``): a single Stockham
pass, a four-step transform (strided column transforms with the twiddle fused into their
stores, then row transforms stored transposed) and Bluestein's chirp-z transform (two padded
power-of-two transforms with the chirp and the chirp's spectrum fused into their loads and
stores). Real transforms add an r2c post- or c2r pre-processing pass around a half-length
complex transform (even lengths) or a gather/extract around a full one (odd lengths).

A plan reads ``pointers[0]`` (the input) and writes ``pointers[1]`` (the output); its scratch is
one block allocated when the plan is built (offsets fixed here), so a planned call allocates
nothing; like a cuFFT plan, one plan runs one transform at a time (the cache is per thread). Device tables (twiddles, chirps) are computed in float64 on the host and uploaded once
per (kind, length, dtype, device), shared by every plan that needs them.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan

from .dispatch import axis_strategy
from .kernels import elementwise as aux
from .kernels import stockham as sk

__all__ = ["Buf", "PlanBuilder", "build_launch_plan"]

#: complex dtype name -> (numpy complex dtype, numpy real dtype, aux precision)
DTYPES = {"c64": (np.complex64, np.float32, "single"), "c128": (np.complex128, np.float64, "double")}
WS_ALIGN = 256
#: the kernels' element offsets and strides are 32-bit signed per level
MAX_ELEMENTS = (1 << 31) - 1


@dataclass(frozen=True)
class Buf:
    """An array a step reads or writes: ``ref`` >= 0 is ``pointers[ref]``, -1 the workspace;
    ``offset`` in bytes; ``shape`` and ``strides`` (in elements) of its logical dims."""

    ref: int
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    itemsize: int

    def with_axis(self, axis: int, length: int, stride: int | None = None) -> Buf:
        shape = self.shape[:axis] + (length,) + self.shape[axis + 1:]
        strides = self.strides if stride is None else \
            self.strides[:axis] + (stride,) + self.strides[axis + 1:]
        return Buf(self.ref, self.offset, shape, strides, self.itemsize)


def axis_last_strides(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    """Strides (elements) of a compact layout with ``axis`` innermost and the other dims in C
    order outside it: the layout the aux kernels' contiguous side uses."""
    strides = [0] * len(shape)
    step = 1
    strides[axis] = 1
    step = shape[axis]
    for d in reversed(range(len(shape))):
        if d != axis:
            strides[d] = step
            step *= shape[d]
    return tuple(strides)


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """C-order strides (elements) of ``shape``."""
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


def levels(bufs: tuple[Buf, ...], axis: int) -> list[tuple[int, tuple[int, ...]]]:
    """The batch dims of ``bufs`` (all dims but ``axis``) as (count, strides per buf), innermost
    first, size-1 dims dropped and neighbours merged where every buffer allows it."""
    dims = [d for d in range(len(bufs[0].shape)) if d != axis and bufs[0].shape[d] != 1]
    out: list[tuple[int, tuple[int, ...]]] = []
    for d in reversed(dims):
        count, strides = bufs[0].shape[d], tuple(b.strides[d] for b in bufs)
        if out and all(s == inner * out[-1][0] for s, inner in zip(strides, out[-1][1])):
            out[-1] = (out[-1][0] * count, out[-1][1])
        else:
            out.append((count, strides))
    return out


_tables: dict[tuple, object] = {}
_tables_lock = threading.Lock()


def device_table(key: tuple, values, dtype) -> object:
    """The device copy of ``values()`` (complex128 computed in float64) rounded to ``dtype``,
    uploaded once per key (the key holds the device ordinal)."""
    table = _tables.get(key)
    if table is None:
        from oxicuda.memory.array import asarray

        host = np.ascontiguousarray(values()).astype(dtype)
        with _tables_lock:
            table = _tables.get(key)
            if table is None:
                table = _tables[key] = asarray(host)
    return table


def chirp(n: int) -> np.ndarray:
    """exp(-i pi j^2 / n), j < n, with j^2 reduced mod 2n in integers first."""
    j = np.arange(n, dtype=np.int64)
    return np.exp(-1j * np.pi * ((j * j) % (2 * n)) / n)


class PlanBuilder:
    """Collects the steps, tables and workspace of one plan."""

    def __init__(self, dtype: str, facts: object) -> None:
        self.dtype = dtype
        self.cdtype, self.rdtype, self.precision = DTYPES[dtype]
        self.esize = COMPLEX = np.dtype(self.cdtype).itemsize
        self.rsize = COMPLEX // 2
        self.facts = facts
        self.arch = facts.arch
        self.smem = facts.smem_per_block_optin
        self.ordinal = facts.ordinal
        self.steps: list[KernelStep] = []
        self.keep: list[object] = []
        self.ws = 0
        self.rt = self.rdtype
        self._ws_ptr = [0]  # the plan's own workspace, allocated by finish()

    # -- resources ---------------------------------------------------------------------------------
    def scratch(self, shape: tuple[int, ...], axis: int, itemsize: int) -> Buf:
        if math.prod(shape) > MAX_ELEMENTS:
            raise ValueError(f"fft: the transform needs a scratch array of {math.prod(shape)} elements; the "
                             f"kernels index at most {MAX_ELEMENTS} (split the batch)")
        offset = self.ws
        self.ws += -(-max(1, math.prod(shape)) * itemsize // WS_ALIGN) * WS_ALIGN
        return Buf(-1, offset, shape, axis_last_strides(shape, axis), itemsize)

    def table(self, kind: str, n: int, values) -> int:
        t = device_table((kind, n, self.dtype, self.ordinal), values, self.cdtype)
        self.keep.append(t)
        return t.ptr

    def twiddles(self, n: int) -> int:
        return self.table("tw", n, lambda: np.exp(-2j * np.pi * np.arange(n) / n))

    def four_step_twiddles(self, n: int) -> tuple[int, int]:
        lo_n = 1 << sk.TW_LO_BITS
        lo = self.table("tw_lo", n, lambda: np.exp(-2j * np.pi * np.arange(lo_n) / n))
        hi = self.table("tw_hi", n, lambda: np.exp(-2j * np.pi * lo_n * np.arange(-(-n // lo_n)) / n))
        return lo, hi

    # -- steps -------------------------------------------------------------------------------------
    def _bind(self, src: Buf, dst: Buf, rest: tuple) -> object:
        sref, soff, dref, doff = src.ref, src.offset, dst.ref, dst.offset
        holder = self._ws_ptr
        # plain Python ints and floats (exact: numpy scalars' values), so that the launch packs
        # them with struct directly instead of converting each numpy scalar on every call
        rest = tuple(v.item() if isinstance(v, np.generic) else v for v in rest)

        def bind(p, s, ws):
            ws = holder[0]
            return ((ws if sref < 0 else p[sref]) + soff, (ws if dref < 0 else p[dref]) + doff) + rest
        return bind

    def stockham(self, n: int, src: Buf, dst: Buf, batch: tuple[int, int, int],
                 ins: tuple, outs: tuple, signs: tuple[float, float], scale: float,
                 pre: int = 0, post: int = 0, tw4: tuple[int, int, int] = (0, 0, 0)) -> None:
        """One Stockham launch; ``batch`` = (total, c0, c1); ``ins``/``outs`` = (d0, d1, d2, gs,
        a, b, valid) as the kernel takes them."""
        spec = sk.StockhamSpec(arch=self.arch, n=n, dtype=self.dtype,
                               per_cta=sk.default_per_cta(n, self.dtype))
        total, c0, c1 = batch
        f, u, i = self.rt, np.uint32, np.int32
        tw = self.twiddles(n)
        def side(sd: tuple) -> tuple:
            return (i(sd[0]), i(sd[1]), i(sd[2]), i(sd[3]), u(sd[4]), u(sd[5]), u(sd[6]))

        def staged(sd: tuple) -> int:
            # through shared memory by columns when neighbouring transforms are neighbours in
            # memory but one transform's elements are not
            d0, d1, d2, gs, a, b = sd[:6]
            delta = d0 if c0 > 1 else (d1 + b * gs if c1 > 1 else d2)
            return int(spec.per_cta > 1 and abs(a * gs) != 1 and abs(delta) == 1)

        st_in, st_out = staged(ins), staged(outs)
        if not st_in and not st_out:
            # neither side goes through shared memory by columns: the variant with more threads
            # per transform (fewer registers each, more CTAs per SM); its staged flags stay 0
            wide = sk.wide_spec(self.arch, n, self.dtype)
            if wide is not None:
                spec = wide
        rest = (tw, pre, post, tw4[0], tw4[1], u(total), u(c0), u(c1), *side(ins), *side(outs),
                u(tw4[2]), u(st_in), u(st_out), f(signs[0]), f(signs[1]), f(scale))
        grid = -(-total // spec.per_cta)
        self.steps.append(KernelStep(spec, grid, spec.threads, self._bind(src, dst, rest),
                                     shared_mem=spec.shared_bytes))

    def aux(self, op: str, src: Buf, dst: Buf, strided: Buf, axis: int, length: int, clen: int,
            valid: int, extra: tuple = (), widen: bool = False) -> None:
        """One element-wise launch over every (batch, j < length) of ``strided``'s batch dims."""
        spec = aux.AuxSpec(arch=self.arch, op=op, precision=self.precision, widen=widen)
        lv = levels((strided,), axis)
        if len(lv) > 3 and strided is src:
            src = strided = self.contiguous(src, axis)
            lv = levels((strided,), axis)
        if len(lv) > 3:
            raise ValueError(f"fft: the layout {strided.strides} cannot be addressed by the passes")
        lv = lv + [(1, (0,))] * (3 - len(lv))
        batch = math.prod(c for c, _ in lv)
        total = batch * length
        u, i = np.uint32, np.int32
        rest = (u(total), u(length), u(clen), u(valid), u(lv[0][0]), u(lv[1][0]),
                i(lv[0][1][0]), i(lv[1][1][0]), i(lv[2][1][0]), i(strided.strides[axis])) + extra
        self.steps.append(KernelStep(spec, -(-total // aux.THREADS), aux.THREADS, self._bind(src, dst, rest)))

    def nd_copy(self, src: Buf, dst: Buf, shifts: tuple[int, ...]) -> None:
        """dst (src's shape; its strides, C order when empty) = src rolled by ``shifts``."""
        nd = len(src.shape)
        if nd > aux.MAX_DIMS:
            raise ValueError(f"fft: arrays of {nd} dimensions are not supported; at most {aux.MAX_DIMS}")
        spec = aux.AuxSpec(arch=self.arch, op="nd_copy", itemsize=src.itemsize)
        pad = aux.MAX_DIMS - nd
        shape = (1,) * pad + src.shape
        shift = (0,) * pad + tuple(shifts)
        strides = (0,) * pad + src.strides
        dstrides = (0,) * pad + (dst.strides or c_strides(src.shape))
        total = math.prod(src.shape)
        u, i = np.uint32, np.int32
        rest = (u(total),)
        for d in reversed(range(aux.MAX_DIMS)):
            rest += (u(shape[d]), u(shift[d] % max(shape[d], 1)), i(strides[d]), i(dstrides[d]))
        self.steps.append(KernelStep(spec, -(-total // aux.THREADS), aux.THREADS, self._bind(src, dst, rest)))

    def contiguous(self, src: Buf, axis: int) -> Buf:
        """A copy of ``src`` in the axis-last compact layout (for inputs the passes cannot address)."""
        tmp = self.scratch(src.shape, axis, src.itemsize)
        # nd_copy writes C order of its shape: copy in the permuted order the scratch uses
        perm = [d for d in range(len(src.shape)) if d != axis] + [axis]
        view = Buf(src.ref, src.offset, tuple(src.shape[d] for d in perm),
                   tuple(src.strides[d] for d in perm), src.itemsize)
        out = Buf(tmp.ref, tmp.offset, view.shape, (), tmp.itemsize)
        self.nd_copy(view, out, (0,) * len(perm))
        return tmp

    # -- complex transforms along one axis -----------------------------------------------------------
    def c2c(self, src: Buf, dst: Buf, axis: int, n: int, signs: tuple[float, float], scale: float) -> None:
        """dst[..., k, ...] = scale * conj_if(sout) DFT_n(conj_if(sin) src (padded/truncated to n))
        along ``axis``, for k < dst.shape[axis]."""
        strategy = axis_strategy(n, self.dtype, self.smem)
        if strategy[0] == "bluestein":
            self._bluestein(src, dst, axis, n, strategy[1], strategy[2], signs, scale)
        else:
            self._smooth(strategy, src, dst, axis, n, signs, scale)

    def _smooth(self, strategy: tuple, src: Buf, dst: Buf, axis: int, n: int, signs, scale,
                pre: int = 0, post: int = 0, in_valid: int | None = None, out_valid: int | None = None) -> None:
        in_valid = min(src.shape[axis], n) if in_valid is None else in_valid
        out_valid = min(dst.shape[axis], n) if out_valid is None else out_valid
        room = 3 if strategy[0] == "single" else 2
        lv = levels((src, dst), axis)
        if len(lv) > room:
            src = self.contiguous(src, axis)
            lv = levels((src, dst), axis)
            if len(lv) > room:
                raise ValueError(f"fft: the output layout {dst.strides} cannot be addressed by the passes")
        lv = lv + [(1, (0, 0))] * (3 - len(lv))
        gin, gout = src.strides[axis], dst.strides[axis]
        batch = math.prod(c for c, _ in lv)
        if strategy[0] == "single":
            self.stockham(n, src, dst, (batch, lv[0][0], lv[1][0]),
                          (lv[0][1][0], lv[1][1][0], lv[2][1][0], gin, 1, 0, in_valid),
                          (lv[0][1][1], lv[1][1][1], lv[2][1][1], gout, 1, 0, out_valid),
                          signs, scale, pre=pre, post=post)
            return
        _, n1, n2 = strategy
        (ci, (i0, o0)), (co, (i2, o2)) = lv[0], lv[1]
        work = self.scratch((batch * n,), 0, self.esize)
        lo, hi = self.four_step_twiddles(n)
        # columns: j1 = element, j2 = b1; stored as work[b2][b0][k1][j2]
        self.stockham(n1, src, work, (ci * n2 * co, ci, n2),
                      (i0, 0, i2, gin, n2, 1, in_valid),
                      (n, 1, ci * n, n2, 1, 0, n1),
                      (signs[0], signs[0]), 1.0, pre=pre, tw4=(lo, hi, n))
        # rows: k1 = b1; output index k2*n1 + k1
        self.stockham(n2, work, dst, (ci * n1 * co, ci, n1),
                      (n, n2, ci * n, 1, 1, 0, n2),
                      (o0, 0, o2, gout, n1, 1, out_valid),
                      (signs[0], signs[1]), scale, post=post)

    def _bluestein(self, src: Buf, dst: Buf, axis: int, n: int, m: int, inner: tuple, signs, scale) -> None:
        sin, sout = signs
        pre = self.table("chirp", n, lambda: chirp(n))

        def spectrum() -> np.ndarray:
            b = np.zeros(m, np.complex128)
            c = np.conj(chirp(n))
            b[:n] = c
            b[m - n + 1:] = c[1:][::-1]
            return np.fft.fft(b)

        bspec = self.table(f"bluestein_b{m}", n, spectrum)
        q = self.table("chirp_out" if sout > 0 else "chirp_out_conj", n,
                       lambda: (chirp(n) if sout > 0 else np.conj(chirp(n))) / m)
        work = self.scratch(src.shape[:axis] + (m,) + src.shape[axis + 1:], axis, self.esize)
        self._smooth(inner, src, work, axis, m, (sin, 1.0), 1.0, pre=pre, post=bspec,
                     in_valid=min(src.shape[axis], n), out_valid=m)
        self._smooth(inner, work, dst, axis, m, (-1.0, -sout), scale, post=q,
                     in_valid=m, out_valid=min(dst.shape[axis], n))

    # -- real transforms along one axis --------------------------------------------------------------
    def r2c(self, src: Buf, dst: Buf, axis: int, n: int, sout: float, scale: float, pairs_ok: bool) -> None:
        """dst = scale * conj_if(sout) rfft_n(src) along ``axis`` (dst.shape[axis] = n//2 + 1)."""
        h = n // 2
        shape = src.shape[:axis] + (h + 1,) + src.shape[axis + 1:]
        if n % 2 == 0 and n >= 2:
            direct = pairs_ok and src.strides[axis] == 1 and src.shape[axis] >= n and \
                all(s % 2 == 0 for d, s in enumerate(src.strides) if d != axis and src.shape[d] > 1)
            if direct:
                pairs = Buf(src.ref, src.offset, shape[:axis] + (h,) + shape[axis + 1:],
                            tuple(1 if d == axis else s // 2 for d, s in enumerate(src.strides)), self.esize)
            else:
                real = self.scratch(src.shape[:axis] + (n,) + src.shape[axis + 1:], axis, self.rsize)
                self.aux("gather_real", src, real, src, axis, n, n, min(src.shape[axis], n))
                pairs = Buf(-1, real.offset, real.shape[:axis] + (h,) + real.shape[axis + 1:],
                            axis_last_strides(real.shape[:axis] + (h,) + real.shape[axis + 1:], axis), self.esize)
            z = self.scratch(pairs.shape, axis, self.esize)
            self.c2c(pairs, z, axis, h, (1.0, 1.0), 1.0)
            f = self.rt
            self.aux("r2c_post", z, dst, dst, axis, h + 1, h, h + 1,
                     extra=(self.table("r2c_w", n, lambda: np.exp(-2j * np.pi * np.arange(h + 1) / n)),
                            np.uint32(h), f(sout), f(scale)))
            return
        wide = self.scratch(src.shape[:axis] + (n,) + src.shape[axis + 1:], axis, self.esize)
        self.aux("gather_real", src, wide, src, axis, n, n, min(src.shape[axis], n), widen=True)
        self.c2c(wide, dst, axis, n, (1.0, sout), scale)

    def c2r(self, src: Buf, dst: Buf, axis: int, n: int, sin: float, scale: float, pairs_ok: bool) -> None:
        """dst = scale * irfft_n unnormalized(conj_if(sin) src) along ``axis`` (dst.shape[axis] = n)."""
        h = n // 2
        valid = min(src.shape[axis], h + 1)
        f = self.rt
        if n % 2 == 0 and n >= 2:
            zshape = src.shape[:axis] + (h,) + src.shape[axis + 1:]
            z = self.scratch(zshape, axis, self.esize)
            self.aux("c2r_pre", src, z, src, axis, h, h, valid,
                     extra=(self.table("r2c_w", n, lambda: np.exp(-2j * np.pi * np.arange(h + 1) / n)),
                            np.uint32(h), f(sin)))
            direct = pairs_ok and dst.strides[axis] == 1 and \
                all(s % 2 == 0 for d, s in enumerate(dst.strides) if d != axis and dst.shape[d] > 1)
            if direct:
                pairs = Buf(dst.ref, dst.offset, zshape,
                            tuple(1 if d == axis else s // 2 for d, s in enumerate(dst.strides)), self.esize)
                self.c2c(z, pairs, axis, h, (-1.0, -1.0), 2.0 * scale)
                return
            z2 = self.scratch(zshape, axis, self.esize)
            self.c2c(z, z2, axis, h, (-1.0, -1.0), 2.0 * scale)
            self.aux("scatter_real", z2, dst, dst, axis, n, n, n, extra=(np.uint32(1),))
            return
        yshape = src.shape[:axis] + (n,) + src.shape[axis + 1:]
        y = self.scratch(yshape, axis, self.esize)
        self.aux("hermitian", src, y, src, axis, n, n, valid, extra=(np.uint32(n), f(sin)))
        y2 = self.scratch(yshape, axis, self.esize)
        self.c2c(y, y2, axis, n, (-1.0, -1.0), scale)
        self.aux("scatter_real", y2, dst, dst, axis, n, n, n, extra=(np.uint32(2),))

    def freq(self, dst: Buf, n: int, split: int, scale: float) -> None:
        spec = aux.AuxSpec(arch=self.arch, op="freq", precision="double")
        total = dst.shape[0]
        rest = (np.uint32(total), np.uint32(n), np.uint32(split), np.float64(scale))
        self.steps.append(KernelStep(spec, -(-total // aux.THREADS), aux.THREADS, self._bind(dst, dst, rest)))

    def finish(self, name: str) -> LaunchPlan:
        """The LaunchPlan; its workspace is its own (allocated here, kept with the plan), so that
        plans of different threads never share scratch (the cache is per thread, as cupy's)."""
        if self.ws:
            from oxicuda.memory.array import empty

            work = empty((self.ws,), np.uint8)
            self._ws_ptr[0] = work.ptr
            self.keep.append(work)
        return LaunchPlan(name, self.steps, 0, self.keep)


def build_launch_plan(problem: object, facts: object) -> LaunchPlan:
    """The LaunchPlan of ``problem`` (an ``api.Problem``) on the device of ``facts``."""
    return problem.compose(PlanBuilder(problem.dtype, facts))
