"""Winograd convolution F(m x m, 3x3), m = 2 or 4, for 3x3 / stride 1 / dilation 1 (Lavin & Gray).

Two kernels: a filter transform ``U[k, c] = G g[k, c] G^T`` (T x T, T = m + 2, float32, into a
cached workspace laid out (K, C/groups, T*T)), then a fused kernel in which each thread owns one
m x m output tile of one output channel: for every input channel it loads the T x T input patch
(zero outside x), transforms it (``V = B^T d B``), accumulates ``U * V`` element-wise, and at the
end applies ``Y = A^T M A``, the bias and the activation. Tensors are addressed through element
strides, so NCHW and NHWC share the kernels.

The transforms are the standard ones (points 0, +-1, +-2, +-1/2 for m = 4); ``TRANSFORMS`` holds
them as data and ``winograd_reference`` runs them in numpy (the tests check both against a direct
convolution).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction as F
from typing import ClassVar

import numpy as np

from oxicuda.memory.array import DeviceArray
from oxicuda.memory.workspace import workspace
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from ._common import ELEMENT_BYTES, load_f32, load_kernel, store_f32, stream_of
from .conv_epilogue import ACTIVATIONS, emit_activation

FAMILY_FILTER = "conv_winograd_filter"
FAMILY_MAIN = "conv_winograd"
BLOCK = 128

#: m -> (B^T (T x T), G (T x 3), A^T (m x T)) as exact fractions
TRANSFORMS = {
    2: (
        [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [F(1, 2), F(1, 2), F(1, 2)], [F(1, 2), F(-1, 2), F(1, 2)], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]],
    ),
    4: (
        [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
         [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
        [[F(1, 4), 0, 0], [F(-1, 6), F(-1, 6), F(-1, 6)], [F(-1, 6), F(1, 6), F(-1, 6)],
         [F(1, 24), F(1, 12), F(1, 6)], [F(1, 24), F(-1, 12), F(1, 6)], [0, 0, 1]],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
    ),
}


def winograd_reference(x: np.ndarray, w: np.ndarray, m: int, padding: tuple[int, int] = (0, 0)) -> np.ndarray:
    """F(m x m, 3x3) in float64 numpy (NCHW, groups 1): the algorithm the kernels run."""
    bt, g, at = (np.array(t, dtype=np.float64) for t in TRANSFORMS[m])
    t = m + 2
    n, c, h, wd = x.shape
    k = w.shape[0]
    oh, ow = h + 2 * padding[0] - 2, wd + 2 * padding[1] - 2
    th, tw = -(-oh // m), -(-ow // m)
    xp = np.zeros((n, c, th * m + 2, tw * m + 2))
    xp[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + wd] = x
    u = np.einsum("ia,kcab,jb->kcij", g, w, g)
    y = np.zeros((n, k, th * m, tw * m))
    for i in range(th):
        for j in range(tw):
            d = xp[:, :, i * m:i * m + t, j * m:j * m + t]
            v = np.einsum("ia,ncab,jb->ncij", bt, d, bt)
            mm = np.einsum("kcij,ncij->nkij", u, v)
            y[:, :, i * m:(i + 1) * m, j * m:(j + 1) * m] = np.einsum("ia,nkab,jb->nkij", at, mm, at)
    return y[:, :, :oh, :ow]


@dataclass(frozen=True)
class WinogradFilterSpec(KernelSpec):
    """The filter transform of one element type and tile size."""

    family: ClassVar[str] = FAMILY_FILTER
    dtype: str = "f32"
    tile: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in ELEMENT_BYTES or self.tile not in TRANSFORMS:
            raise ValueError(f"WinogradFilterSpec: dtype={self.dtype!r}, tile={self.tile}; allowed "
                             f"{tuple(ELEMENT_BYTES)} and {tuple(TRANSFORMS)}")


@dataclass(frozen=True)
class WinogradSpec(KernelSpec):
    """The fused Winograd kernel: element type, tile size, fused epilogue."""

    family: ClassVar[str] = FAMILY_MAIN
    dtype: str = "f32"
    tile: int = 2
    activation: str = "none"
    bias: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in ELEMENT_BYTES or self.tile not in TRANSFORMS or self.activation not in ACTIVATIONS:
            raise ValueError(f"WinogradSpec: dtype={self.dtype!r}, tile={self.tile}, activation={self.activation!r}")


def _apply(kb: KernelBuilder, matrix, vec: list[Value]) -> list[Value]:
    """matrix @ vec with constant coefficients (zeros skipped, +-1 as add/sub)."""
    out = []
    for row in matrix:
        acc = None
        for coef, v in zip(row, vec):
            if coef == 0:
                continue
            c = float(coef)
            if acc is None:
                acc = v if c == 1 else (kb.neg(v) if c == -1 else kb.mul(v, c))
            elif c == 1:
                acc = kb.add(acc, v)
            elif c == -1:
                acc = kb.sub(acc, v)
            else:
                acc = kb.fma(v, c, acc)
        out.append(acc if acc is not None else kb.mov(0.0, "f32"))
    return out


def _sandwich(kb: KernelBuilder, left, mat: list[list[Value]], right_t) -> list[list[Value]]:
    """left @ mat @ right_t^T for a matrix of registers (rows of ``mat`` are lists)."""
    cols = len(mat[0])
    tmp_cols = [_apply(kb, left, [mat[a][b] for a in range(len(mat))]) for b in range(cols)]  # (left@mat)[:, b]
    rows = len(left)
    return [_apply(kb, right_t, [tmp_cols[b][i] for b in range(cols)]) for i in range(rows)]


def generate_filter(spec: WinogradFilterSpec) -> str:
    """U[kc, :] = (G g G^T).ravel() for kc = kout*cg + c (one thread each). Parameters: w, u;
    u32 total, cg, ws_k, ws_c, ws_r, ws_s."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    w, u = kb.param_ptr("w"), kb.param_ptr("u")
    total, cg, ws_k, ws_c, ws_r, ws_s = (kb.param(n, "u32") for n in ("total", "cg", "ws_k", "ws_c", "ws_r", "ws_s"))
    kb.maxntid(BLOCK)
    es, t = ELEMENT_BYTES[spec.dtype], spec.tile + 2
    _, g_mat, _ = TRANSFORMS[spec.tile]
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lo", i, total)):
        kout = kb.div(i, cg)
        c = kb.sub(i, kb.mul(kout, cg))
        base = kb.mad(c, ws_c, kb.mul(kout, ws_k))
        taps = [[None] * 3 for _ in range(3)]
        for r in range(3):
            for s in range(3):
                off = kb.mad(ws_s, s, kb.mad(ws_r, r, base))
                taps[r][s] = load_f32(kb, spec.dtype, kb.addr(w, off, es))[0]
        res = _sandwich(kb, g_mat, taps, g_mat)
        out = kb.addr(u, i, t * t * 4)
        flat = [v for row in res for v in row]
        for q in range(0, t * t, 4):
            kb.st("global", out, flat[q:q + 4], offset=q * 4)
    return kb.ptx()


def generate_main(spec: WinogradSpec) -> str:
    """The fused kernel; thread idx -> (tile = idx / kg, kout = idx % kg), group = ctaid.y.
    Parameters: x, u, y, bias; u32 total, kg, cg, h, w, oh, ow, tiles_h, tiles_w, pad_h, pad_w,
    xs_n, xs_c, xs_h, xs_w, ys_n, ys_c, ys_h, ys_w."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    x, u, y, bias = (kb.param_ptr(n) for n in ("x", "u", "y", "bias"))
    names = ("total", "kg", "cg", "h", "w", "oh", "ow", "tiles_h", "tiles_w", "pad_h", "pad_w",
             "xs_n", "xs_c", "xs_h", "xs_w", "ys_n", "ys_c", "ys_h", "ys_w")
    p = {n: kb.param(n, "u32") for n in names}
    kb.maxntid(BLOCK)
    m, es = spec.tile, ELEMENT_BYTES[spec.dtype]
    t = m + 2
    bt, _, at = TRANSFORMS[m]
    grp = kb.ctaid("y")
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lo", i, p["total"])):
        tile = kb.div(i, p["kg"])
        kout = kb.sub(i, kb.mul(tile, p["kg"]))
        per_img = kb.mul(p["tiles_h"], p["tiles_w"])
        n = kb.div(tile, per_img)
        rest = kb.sub(tile, kb.mul(n, per_img))
        ty = kb.div(rest, p["tiles_w"])
        tx = kb.sub(rest, kb.mul(ty, p["tiles_w"]))
        oh0, ow0 = kb.mul(ty, m), kb.mul(tx, m)
        ih0, iw0 = kb.sub(oh0, p["pad_h"]), kb.sub(ow0, p["pad_w"])
        c0 = kb.mul(grp, p["cg"])
        x_img = kb.mad(c0, p["xs_c"], kb.mul(n, p["xs_n"]))
        # per patch row/col: offset and in-range predicate (c-independent)
        row_off, row_ok, col_off, col_ok = [], [], [], []
        for a in range(t):
            ih = kb.add(ih0, a)
            row_off.append(kb.mul(ih, p["xs_h"]))
            row_ok.append(kb.setp("lo", ih, p["h"]))
            iw = kb.add(iw0, a)
            col_off.append(kb.mul(iw, p["xs_w"]))
            col_ok.append(kb.setp("lo", iw, p["w"]))
        kglob = kb.add(kb.mul(grp, p["kg"]), kout)
        u_row = kb.addr(u, kb.mul(kglob, p["cg"]), t * t * 4)
        acc = [kb.mov(0.0, "f32") for _ in range(t * t)]
        with kb.loop(0, p["cg"], 1, type_="u32") as c:
            xc = kb.mad(c, p["xs_c"], x_img)
            d = [[None] * t for _ in range(t)]
            for a in range(t):
                ra = kb.add(xc, row_off[a])
                for b in range(t):
                    v = kb.mov(0.0, "f32")
                    with kb.if_(kb.and_(row_ok[a], col_ok[b])):
                        kb.assign(v, load_f32(kb, spec.dtype, kb.addr(x, kb.add(ra, col_off[b]), es))[0])
                    d[a][b] = v
            vmat = _sandwich(kb, bt, d, bt)
            ua = kb.addr(u_row, c, t * t * 4)
            uv: list[Value] = []
            for q in range(0, t * t, 4):
                uv.extend(kb.ld("global", "f32", ua, offset=q * 4, vec=4))
            for q in range(t * t):
                kb.fma(uv[q], vmat[q // t][q % t], acc[q], out=acc[q])
        res = _sandwich(kb, at, [acc[a * t:(a + 1) * t] for a in range(t)], at)
        b_val = None
        if spec.bias:
            b_val = load_f32(kb, spec.dtype, kb.addr(bias, kglob, es))[0]
        y_base = kb.mad(kglob, p["ys_c"], kb.mul(n, p["ys_n"]))
        for a in range(m):
            oh = kb.add(oh0, a)
            y_row = kb.mad(oh, p["ys_h"], y_base)
            oh_ok = kb.setp("lo", oh, p["oh"])
            for b in range(m):
                ow = kb.add(ow0, b)
                v = res[a][b] if b_val is None else kb.add(res[a][b], b_val)
                v = emit_activation(kb, v, spec.activation)
                with kb.if_(kb.and_(oh_ok, kb.setp("lo", ow, p["ow"]))):
                    store_f32(kb, spec.dtype, kb.addr(y, kb.mad(ow, p["ys_w"], y_row), es), [v])
    return kb.ptx()


def run_winograd(geo, x: DeviceArray, w: DeviceArray, y: DeviceArray, bias: DeviceArray | None,
                 activation: str, tile: int) -> None:
    """conv2d forward by F(tile x tile, 3x3) over validated, C-contiguous x, w, y (see conv.py)."""
    from .conv import _arch, element_strides_nchw

    p = geo.problem
    cg, kg = p.c // p.groups, p.k // p.groups
    t = tile + 2
    arch, stream = _arch(), stream_of(y)
    u = workspace(("float32", p.k * cg * t * t), stream)
    total_f = p.k * cg
    load_kernel(WinogradFilterSpec(arch=arch, dtype=p.dtype, tile=tile))(
        ((total_f + BLOCK - 1) // BLOCK,), BLOCK, [w, u, total_f, cg, *element_strides_nchw(w, geo.layout)],
        stream=stream)
    tiles_h, tiles_w = -(-p.oh // tile), -(-p.ow // tile)
    total = p.n * tiles_h * tiles_w * kg
    spec = WinogradSpec(arch=arch, dtype=p.dtype, tile=tile, activation=activation, bias=bias is not None)
    load_kernel(spec)(((total + BLOCK - 1) // BLOCK, p.groups), BLOCK,
                      [x, u, y, bias if bias is not None else 0, total, kg, cg, p.h, p.w, p.oh, p.ow, tiles_h,
                       tiles_w, p.padding[0], p.padding[1], *element_strides_nchw(x, geo.layout),
                       *element_strides_nchw(y, geo.layout)], stream=stream)


def _filter_configurations(arch: str) -> list[WinogradFilterSpec]:
    return [WinogradFilterSpec(arch=arch, dtype=d, tile=m) for d in ELEMENT_BYTES for m in TRANSFORMS]


def _main_configurations(arch: str) -> list[WinogradSpec]:
    out = [WinogradSpec(arch=arch, dtype=d, tile=m) for d in ELEMENT_BYTES for m in TRANSFORMS]
    out += [WinogradSpec(arch=arch, tile=m, activation=a, bias=True) for m in TRANSFORMS for a in ACTIVATIONS]
    return out


registry.register_family(FAMILY_FILTER, WinogradFilterSpec, generate_filter, _filter_configurations)
registry.register_family(FAMILY_MAIN, WinogradSpec, generate_main, _main_configurations)
