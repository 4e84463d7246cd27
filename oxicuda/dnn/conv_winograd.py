"""Winograd convolution F(m x m, 3x3), m = 2 or 4, for 3x3 / stride 1 / dilation 1 (Lavin & Gray),
as three transforms around one strided-batched SGEMM in the transformed domain.

With T = m + 2 and P the output tiles (n, tile row, tile column) of a chunk of images:

1. filter transform: ``U[t][k][c] = (G g[k, c] G^T)[t]`` (one thread per (k, c));
2. input transform: ``V[p][t][c] = (B^T d[c, p] B)[t]`` for the T x T input patch d of tile p
   (zero outside x; one thread per (p, c), channels fastest);
3. ``M[p][t][k] = sum_c V[p][t][c] U[t][k][c]`` for every point t: a 1x1 convolution over an
   image of 1 x P pixels in NHWC with T*T*groups groups, run by the float32 implicit-GEMM kernel
   (``conv_implicit_gemm_f32``: its tiles, split-K and dispatch, full float32);
4. output transform: ``y[k, tile p] = activation(A^T M[p][:][k] A + bias[k])`` (one thread per
   (p, k), channels fastest), cropped to the output.

Channels-fastest threads keep every V and M access coalesced; x and y are addressed through
element strides, so NCHW and NHWC share the kernels. U, V, M (and the GEMM's split-K partials)
live in one cached workspace; a problem whose buffers would pass ``WORKSPACE_BYTES`` runs in
chunks of images. Any element type: the transforms widen to and narrow from float32.

The transforms are the standard ones (points 0, +-1, +-2, +-1/2 for m = 4); ``TRANSFORMS`` holds
them as data and ``winograd_reference`` runs them in numpy (the tests check both against a direct
convolution).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction as F
from typing import ClassVar

import numpy as np

from oxicuda.driver.facts import device_facts
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan
from oxicuda.ptx.spec import KernelSpec

from ._common import ELEMENT_BYTES, load_f32, load_kernel, store_f32
from .conv_dispatch import choose_igemm_tile
from .conv_epilogue import ACTIVATIONS, emit_activation
from .conv_geometry import make_geometry
from .conv_implicit_gemm_f32 import REDUCE_BLOCK, igemm_plan

FAMILY_FILTER = "conv_winograd_filter"
FAMILY_INPUT = "conv_winograd_input"
FAMILY_OUTPUT = "conv_winograd_output"
BLOCK = 128
#: the most bytes U, V and M may take together; bigger problems run in chunks of images
WORKSPACE_BYTES = 512 << 20

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
class WinogradInputSpec(KernelSpec):
    """The input transform of one element type and tile size."""

    family: ClassVar[str] = FAMILY_INPUT
    dtype: str = "f32"
    tile: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in ELEMENT_BYTES or self.tile not in TRANSFORMS:
            raise ValueError(f"WinogradInputSpec: dtype={self.dtype!r}, tile={self.tile}; allowed "
                             f"{tuple(ELEMENT_BYTES)} and {tuple(TRANSFORMS)}")


@dataclass(frozen=True)
class WinogradSpec(KernelSpec):
    """The output transform with the fused epilogue: element type, tile size, bias, activation;
    ``row_vectors``: a tile row is stored as one vector (y's rows are contiguous, their length a
    multiple of the tile and the pointer aligned to the vector)."""

    family: ClassVar[str] = FAMILY_OUTPUT
    dtype: str = "f32"
    tile: int = 2
    activation: str = "none"
    bias: bool = False
    row_vectors: bool = False

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
    """U[t * total + i] = (G g G^T)[t] for i = kout*cg + c (one thread each). Parameters: w, u;
    u32 total, cg, ws_k, ws_c, ws_r, ws_s."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    w, u = kb.param_ptr("w"), kb.param_ptr("u")
    total, cg, ws_k, ws_c, ws_r, ws_s = (kb.param(n, "u32") for n in ("total", "cg", "ws_k", "ws_c", "ws_r", "ws_s"))
    kb.maxntid(BLOCK)
    es = ELEMENT_BYTES[spec.dtype]
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
        _store_points(kb, u, i, total, [v for row in res for v in row])
    return kb.ptx()


def _store_points(kb: KernelBuilder, base: Value, i: Value, stride: Value, values: list[Value]) -> None:
    """base[q * stride + i] = values[q] (f32), the T*T points of one transform."""
    ptr = kb.addr(base, i, 4)
    step = kb.mul(kb.cvt(stride, "u64"), 4)
    for q, v in enumerate(values):
        if q:
            kb.add(ptr, step, out=ptr)
        kb.st("global", ptr, v)


def _split_index(kb: KernelBuilder, i: Value, channels: Value) -> tuple[Value, Value]:
    """(channel, tile) of thread ``i`` (channels fastest)."""
    p = kb.div(i, channels)
    return kb.sub(i, kb.mul(p, channels)), p


def _tile_origin(kb: KernelBuilder, p: Value, prm: dict[str, Value], m: int) -> tuple[Value, Value, Value]:
    """(image, first output row, first output column) of tile ``p`` of the chunk."""
    per_img = kb.mul(prm["tiles_h"], prm["tiles_w"])
    n_local = kb.div(p, per_img)
    rest = kb.sub(p, kb.mul(n_local, per_img))
    ty = kb.div(rest, prm["tiles_w"])
    tx = kb.sub(rest, kb.mul(ty, prm["tiles_w"]))
    return kb.add(prm["n0"], n_local), kb.mul(ty, m), kb.mul(tx, m)


def generate_input(spec: WinogradInputSpec) -> str:
    """V[(p * T*T + t) * channels + c] = (B^T d B)[t] of the T x T patch of thread i = p * channels
    + c. Parameters: x, v; u32 total, channels, h, w, tiles_h, tiles_w, pad_h, pad_w, n0, xs_n,
    xs_c, xs_h, xs_w."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    x, v = kb.param_ptr("x"), kb.param_ptr("v")
    names = ("total", "channels", "h", "w", "tiles_h", "tiles_w", "pad_h", "pad_w", "n0",
             "xs_n", "xs_c", "xs_h", "xs_w")
    prm = {n: kb.param(n, "u32") for n in names}
    kb.maxntid(BLOCK)
    m, es = spec.tile, ELEMENT_BYTES[spec.dtype]
    t = m + 2
    bt, _, _ = TRANSFORMS[m]
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lo", i, prm["total"])):
        ch, p = _split_index(kb, i, prm["channels"])
        n, oh0, ow0 = _tile_origin(kb, p, prm, m)
        ih0, iw0 = kb.sub(oh0, prm["pad_h"]), kb.sub(ow0, prm["pad_w"])
        base = kb.mad(ch, prm["xs_c"], kb.mul(n, prm["xs_n"]))
        col_off, col_ok = [], []
        for b in range(t):
            iw = kb.add(iw0, b)
            col_off.append(kb.mul(iw, prm["xs_w"]))
            col_ok.append(kb.setp("lo", iw, prm["w"]))
        d = [[None] * t for _ in range(t)]
        for a in range(t):
            ih = kb.add(ih0, a)
            row = kb.mad(ih, prm["xs_h"], base)
            row_ok = kb.setp("lo", ih, prm["h"])
            for b in range(t):
                val = kb.mov(0.0, "f32")
                with kb.if_(kb.and_(row_ok, col_ok[b])):
                    kb.assign(val, load_f32(kb, spec.dtype, kb.addr(x, kb.add(row, col_off[b]), es))[0])
                d[a][b] = val
        vmat = _sandwich(kb, bt, d, bt)
        first = kb.mad(kb.mul(p, (t * t - 1)), prm["channels"], i)  # (p * T*T) * channels + c
        _store_points(kb, v, first, prm["channels"], [e for row in vmat for e in row])
    return kb.ptx()


def generate_output(spec: WinogradSpec) -> str:
    """y[tile of thread i = p * channels + k] = activation(A^T M A + bias[k]) from
    M[(p * T*T + t) * channels + k], cropped. Parameters: mt, y, bias; u32 total, channels, oh, ow,
    tiles_h, tiles_w, n0, ys_n, ys_c, ys_h, ys_w."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    mt, y, bias = kb.param_ptr("mt"), kb.param_ptr("y"), kb.param_ptr("bias")
    names = ("total", "channels", "oh", "ow", "tiles_h", "tiles_w", "n0", "ys_n", "ys_c", "ys_h", "ys_w")
    prm = {n: kb.param(n, "u32") for n in names}
    kb.maxntid(BLOCK)
    m, es = spec.tile, ELEMENT_BYTES[spec.dtype]
    t = m + 2
    _, _, at = TRANSFORMS[m]
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lo", i, prm["total"])):
        ch, p = _split_index(kb, i, prm["channels"])
        n, oh0, ow0 = _tile_origin(kb, p, prm, m)
        ptr = kb.addr(mt, kb.mad(kb.mul(p, (t * t - 1)), prm["channels"], i), 4)
        step = kb.mul(kb.cvt(prm["channels"], "u64"), 4)
        pts = []
        for q in range(t * t):
            if q:
                kb.add(ptr, step, out=ptr)
            pts.append(kb.ld("global", "f32", ptr))
        res = _sandwich(kb, at, [pts[a * t:(a + 1) * t] for a in range(t)], at)
        b_val = load_f32(kb, spec.dtype, kb.addr(bias, ch, es))[0] if spec.bias else None
        y_base = kb.mad(ch, prm["ys_c"], kb.mul(n, prm["ys_n"]))
        for a in range(m):
            oh = kb.add(oh0, a)
            y_row = kb.mad(oh, prm["ys_h"], y_base)
            oh_ok = kb.setp("lo", oh, prm["oh"])
            if spec.row_vectors:  # whole tile rows are inside y (OW is a multiple of the tile)
                vals = [res[a][b] if b_val is None else kb.add(res[a][b], b_val) for b in range(m)]
                with kb.if_(oh_ok):
                    store_f32(kb, spec.dtype, kb.addr(y, kb.add(y_row, ow0), es),
                              [emit_activation(kb, v, spec.activation) for v in vals])
                continue
            for b in range(m):
                ow = kb.add(ow0, b)
                val = res[a][b] if b_val is None else kb.add(res[a][b], b_val)
                val = emit_activation(kb, val, spec.activation)
                with kb.if_(kb.and_(oh_ok, kb.setp("lo", ow, prm["ow"]))):
                    store_f32(kb, spec.dtype, kb.addr(y, kb.mad(ow, prm["ys_w"], y_row), es), [val])
    return kb.ptx()


def _aligned(count: int) -> int:
    return -(-count // 4) * 4  # 16-byte boundaries between the workspace's buffers


def winograd_chunk(n: int, c: int, k: int, tiles_per_image: int, tile: int) -> int:
    """Images per chunk so that V and M of a chunk fit ``WORKSPACE_BYTES`` (at least one)."""
    per_image = (tile + 2) ** 2 * (c + k) * tiles_per_image * 4
    return max(1, min(n, WORKSPACE_BYTES // max(1, per_image)))


def winograd_gemm_geometry(problem, tile: int, tiles: int):
    """The transformed-domain GEMM of ``tiles`` output tiles as conv geometry: a grouped 1x1 NHWC
    conv of a 1 x tiles image with (tile+2)^2 * groups groups (its MEASURED key picks its tile)."""

    t2 = (tile + 2) ** 2
    p = problem
    return make_geometry((1, 1, tiles, t2 * p.c), (t2 * p.k, 1, 1, p.c // p.groups), 1, 0, 1, t2 * p.groups,
                         "NHWC", "f32", "conv2d (Winograd GEMM)")


def winograd_tiles_per_chunk(problem, tile: int) -> int:
    """Output tiles in the first chunk of images (the GEMM size the sweep tunes)."""
    p = problem
    per_img = -(-p.oh // tile) * -(-p.ow // tile)
    return winograd_chunk(p.n, p.c, p.k, per_img, tile) * per_img


def prepare_winograd(geo, xs: tuple, ws: tuple, ys: tuple, y_ptr: int, has_bias: bool, activation: str,
                     tile: int):
    """Everything of a Winograd conv2d that does not depend on the pointers and the stream
    (kernels, chunks, GEMM plans, workspace layout, launch geometry, checked once), as a
    LaunchPlan whose ``run`` takes pointers (x, w, y, bias or 0). ``xs``, ``ws``, ``ys``: element strides in
    (n, c, h, w) order; ``y_ptr`` stands for every y of its alignment (16-byte row stores)."""

    p = geo.problem
    cg = p.c // p.groups
    t2 = (tile + 2) ** 2
    arch = device_facts().arch
    tiles_h, tiles_w = -(-p.oh // tile), -(-p.ow // tile)
    per_img = tiles_h * tiles_w
    chunk = winograd_chunk(p.n, p.c, p.k, per_img, tile)
    es = ELEMENT_BYTES[p.dtype]
    row_vectors = ys[3] == 1 and p.ow % tile == 0 and y_ptr % (tile * es) == 0
    f_filter = load_kernel(WinogradFilterSpec(arch=arch, dtype=p.dtype, tile=tile))
    f_in = load_kernel(WinogradInputSpec(arch=arch, dtype=p.dtype, tile=tile))
    f_out = load_kernel(WinogradSpec(arch=arch, dtype=p.dtype, tile=tile, activation=activation,
                                     bias=has_bias, row_vectors=row_vectors))
    total_f = p.k * cg
    w_strides = ws

    def bind_filter(ptr, sc, work):
        return (ptr[1], work, total_f, cg, *w_strides)

    # U (the transformed filter, the same for every chunk) at the start of the one workspace, then
    # each chunk's V, M and GEMM partials; the filter transform runs once per call
    steps = [KernelStep(f_filter.spec, -(-total_f // BLOCK), BLOCK, bind_filter, function=f_filter)]
    keep, workspace_count = [], 0
    for n0 in range(0, p.n, chunk):
        nt = min(chunk, p.n - n0) * per_img
        # M[p][t][k] = sum_c V[p][t][c] U[t][k][c]: a grouped 1x1 NHWC conv of a 1 x nt image
        gemm_geo = winograd_gemm_geometry(p, tile, nt)
        plan = igemm_plan(gemm_geo, (0, 0, 0), False, "none",
                          *choose_igemm_tile(gemm_geo.problem, device_facts().sm_count))
        keep.append(plan.table)
        u_len, v_len, m_len = _aligned(t2 * p.k * cg), _aligned(nt * t2 * p.c), _aligned(nt * t2 * p.k)
        workspace_count = max(workspace_count, u_len + v_len + m_len + plan.workspace_count)
        steps += _chunk_steps(f_in, f_out, plan, 4 * u_len, 4 * (u_len + v_len), 4 * (u_len + v_len + m_len),
                              (p.c * nt, p.c, p.h, p.w, tiles_h, tiles_w, p.padding[0], p.padding[1], n0, *xs),
                              (p.k * nt, p.k, p.oh, p.ow, tiles_h, tiles_w, n0, *ys))
    return LaunchPlan("conv2d_winograd", steps, 4 * workspace_count, keep=keep)


def _chunk_steps(f_in, f_out, plan, v_off: int, m_off: int, part_off: int, in_args: tuple,
                 out_args: tuple) -> list[KernelStep]:
    """One batch chunk of a Winograd plan: the input transform into V, the batched GEMM of V and U
    into M (through the float32 implicit GEMM's plan, split-K partials after M), and the output
    transform of M into y with the epilogue. Offsets are bytes into the plan's workspace."""
    table, tail = plan.table.ptr, plan.tail

    def bind_in(ptr, s, ws):
        return (ptr[0], ws + v_off, *in_args)

    def bind_out(ptr, s, ws):
        return (ws + m_off, ptr[2], ptr[3], *out_args)

    steps = [KernelStep(f_in.spec, -(-in_args[0] // BLOCK), BLOCK, bind_in, function=f_in)]
    if plan.reduce_fn is None:
        def bind_gemm(ptr, s, ws):
            return (ws + v_off, ws, ws + m_off, 0, table, *tail)

        steps.append(KernelStep(plan.fn.spec, plan.grid, plan.threads, bind_gemm, function=plan.fn))
    else:
        reduce_tail = plan.reduce_tail

        def bind_partials(ptr, s, ws):
            return (ws + v_off, ws, ws + part_off, 0, table, *tail)

        def bind_reduce(ptr, s, ws):
            return (ws + part_off, ws + m_off, 0, *reduce_tail)

        steps += [KernelStep(plan.fn.spec, plan.grid, plan.threads, bind_partials, function=plan.fn),
                  KernelStep(plan.reduce_fn.spec, plan.reduce_grid, REDUCE_BLOCK, bind_reduce,
                             function=plan.reduce_fn)]
    steps.append(KernelStep(f_out.spec, -(-out_args[0] // BLOCK), BLOCK, bind_out, function=f_out))
    return steps


def _filter_configurations(arch: str) -> list[WinogradFilterSpec]:
    return [WinogradFilterSpec(arch=arch, dtype=d, tile=m) for d in ELEMENT_BYTES for m in TRANSFORMS]


def _input_configurations(arch: str) -> list[WinogradInputSpec]:
    return [WinogradInputSpec(arch=arch, dtype=d, tile=m) for d in ELEMENT_BYTES for m in TRANSFORMS]


def _output_configurations(arch: str) -> list[WinogradSpec]:
    """Every dtype and tile with each fused epilogue, with and without row vectors."""
    return [WinogradSpec(arch=arch, dtype=d, tile=m, activation=a, bias=b, row_vectors=rv)
            for d in ELEMENT_BYTES for m in TRANSFORMS for a in ACTIVATIONS for b in (False, True)
            for rv in (False, True)]


registry.register_family(FAMILY_FILTER, WinogradFilterSpec, generate_filter, _filter_configurations)
registry.register_family(FAMILY_INPUT, WinogradInputSpec, generate_input, _input_configurations)
registry.register_family(FAMILY_OUTPUT, WinogradSpec, generate_output, _output_configurations)
