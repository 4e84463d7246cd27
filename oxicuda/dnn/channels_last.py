"""NCHW -> NHWC ("channels last") for 2-byte elements: ``dst[n, p, c] = src[n, c, p]`` over
(N, C, P) with P = H*W, a tiled transpose through shared memory.

The tensor-core conv (``conv_implicit_gemm_tc``) runs NCHW problems whose channels per group are a
multiple of 8 on its cp.async NHWC path by transforming x (N, C, H*W) and the filter (K, Cg, R*S)
into a workspace first; its output is written straight into the NCHW result through strides.

A CTA of 32 x 8 threads moves one 32 (c) x 32 (p) tile: reads run along p and writes along c, so
both are coalesced; the shared tile has one column of padding against bank conflicts.
Launch: grid (ceil(P / 32), ceil(C / 32), N), block 256; parameters src, dst, u32 c, p.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.launch_plan import KernelStep
from oxicuda.ptx.spec import KernelSpec

FAMILY = "channels_last_b16"
TILE = 32
ROWS = 8  # thread rows: each thread moves TILE / ROWS elements
THREADS = TILE * ROWS


@dataclass(frozen=True)
class ChannelsLastSpec(KernelSpec):
    """The NCHW -> NHWC transpose of 2-byte elements (one kernel per arch)."""

    family: ClassVar[str] = FAMILY


def generate(spec: ChannelsLastSpec) -> str:
    """PTX of the transpose (see the module docstring)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    src_p, dst_p = kb.param_ptr("src"), kb.param_ptr("dst")
    c, p = kb.param("c", "u32"), kb.param("p", "u32")
    kb.reqntid(THREADS)
    tile = kb.shared("tile", "u16", TILE * (TILE + 1), align=16)
    tid = kb.tid()
    tx, ty = kb.and_(tid, TILE - 1), kb.shr(tid, 5)
    p0, c0, n = kb.mul(kb.ctaid("x"), TILE), kb.mul(kb.ctaid("y"), TILE), kb.ctaid("z")
    plane = kb.mul(c, p)
    src = kb.addr(src_p, kb.mul(n, plane), 2)
    dst = kb.addr(dst_p, kb.mul(n, plane), 2)
    # read: element (c0 + ty + 8j, p0 + tx) into tile[ty + 8j][tx]
    pr = kb.add(p0, tx)
    p_ok = kb.setp("lo", pr, p)
    for j in range(TILE // ROWS):
        row = kb.add(ty, j * ROWS)
        cr = kb.add(c0, row)
        with kb.if_(kb.and_(p_ok, kb.setp("lo", cr, c))):
            v = kb.ld("global", "u16", kb.addr(src, kb.mad(cr, p, pr), 2))
            kb.st("shared", kb.shared_addr(tile, kb.mul(kb.mad(row, TILE + 1, tx), 2)), v)
    kb.bar_sync(0)
    # write: element (p0 + ty + 8j, c0 + tx) from tile[tx][ty + 8j]
    cw = kb.add(c0, tx)
    c_ok = kb.setp("lo", cw, c)
    for j in range(TILE // ROWS):
        row = kb.add(ty, j * ROWS)
        pw = kb.add(p0, row)
        with kb.if_(kb.and_(c_ok, kb.setp("lo", pw, p))):
            v = kb.ld("shared", "u16", kb.shared_addr(tile, kb.mul(kb.mad(tx, TILE + 1, row), 2)))
            kb.st("global", kb.addr(dst, kb.mad(pw, c, cw), 2), v)
    return kb.ptx()


def configurations(arch: str) -> list[ChannelsLastSpec]:
    """The one kernel of the family."""
    return [ChannelsLastSpec(arch=arch)]


registry.register_family(FAMILY, ChannelsLastSpec, generate, configurations)


def channels_last_step(arch: str, src, dst, n: int, c: int, p: int) -> KernelStep:
    """dst (N, P, C) = src (N, C, P) transposed per n, as a launch-plan step: ``src``/``dst`` map
    (pointers, workspace) to the device addresses of 2-byte elements (non-overlapping)."""
    if max(-(-c // TILE), n) > 65535:
        raise ValueError(f"channels_last: C={c}, N={n}; the grid allows at most {65535 * TILE} channels and "
                         "65535 images")

    def bind(ptr, s, ws):
        return (src(ptr, ws), dst(ptr, ws), c, p)

    return KernelStep(ChannelsLastSpec(arch=arch), (-(-p // TILE), -(-c // TILE), n), THREADS, bind)
