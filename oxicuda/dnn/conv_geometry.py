"""The validated geometry of a conv2d call (``make_geometry``), shared by conv's front end and
the algorithm modules (im2col, Winograd, implicit GEMM) so that none of them imports conv."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oxicuda.memory.array import DeviceArray

from ._common import int_pair
from .conv_dispatch import ConvProblem

__all__ = ["LAYOUTS", "ConvGeometry", "element_strides_nchw", "make_geometry"]

LAYOUTS = ("NCHW", "NHWC")
_INT31 = (1 << 31) - 1


@dataclass(frozen=True)
class ConvGeometry:
    """A validated problem: sizes, per-dimension parameters, and the layout."""

    problem: ConvProblem
    layout: str

    @property
    def x_shape(self) -> tuple[int, ...]:
        p = self.problem
        return (p.n, p.c, p.h, p.w) if self.layout == "NCHW" else (p.n, p.h, p.w, p.c)

    @property
    def w_shape(self) -> tuple[int, ...]:
        p = self.problem
        cg = p.c // p.groups
        return (p.k, cg, p.r, p.s) if self.layout == "NCHW" else (p.k, p.r, p.s, cg)

    @property
    def y_shape(self) -> tuple[int, ...]:
        p = self.problem
        return (p.n, p.k, p.oh, p.ow) if self.layout == "NCHW" else (p.n, p.oh, p.ow, p.k)


def element_strides_nchw(arr: DeviceArray, layout: str) -> tuple[int, int, int, int]:
    """Element strides of a 4-D tensor in (n, c, h, w) order (for w: (k, c, r, s))."""
    s = tuple(st // arr.dtype.itemsize for st in arr.strides)
    return s if layout == "NCHW" else (s[0], s[3], s[1], s[2])


def make_geometry(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: object, padding: object,
                  dilation: object, groups: object, layout: str, dtype: str, op: str) -> ConvGeometry:
    """Validate sizes and parameters (nothing touches the device) and return the geometry."""
    if layout not in LAYOUTS:
        raise ValueError(f"{op}: layout={layout!r}; allowed: {LAYOUTS}")
    if len(x_shape) != 4:
        raise ValueError(f"{op}: x has shape {tuple(x_shape)}; it must be 4-D ({layout})")
    if len(w_shape) != 4:
        raise ValueError(f"{op}: w has shape {tuple(w_shape)}; it must be 4-D "
                         f"({'K, C/groups, R, S' if layout == 'NCHW' else 'K, R, S, C/groups'})")
    st, pad, dil = int_pair(stride, "stride", op, 1), int_pair(padding, "padding", op, 0), int_pair(dilation, "dilation", op, 1)
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{op}: groups={groups!r}; it must be an int >= 1")
    groups = int(groups)
    if layout == "NCHW":
        n, c, h, w = x_shape
        k, cg, r, s = w_shape
    else:
        n, h, w, c = x_shape
        k, r, s, cg = w_shape
    if min(n, c, h, w) < 1 or min(k, cg, r, s) < 1:
        raise ValueError(f"{op}: x {tuple(x_shape)} and w {tuple(w_shape)} must have no empty dimension")
    if c % groups or k % groups:
        raise ValueError(f"{op}: groups={groups} must divide the input channels ({c}) and the output "
                         f"channels ({k})")
    if cg != c // groups:
        raise ValueError(f"{op}: w has shape {tuple(w_shape)} with {cg} input channels per group; x has {c} "
                         f"channels and groups={groups}, so it must be {c // groups}")
    eff_r, eff_s = dil[0] * (r - 1) + 1, dil[1] * (s - 1) + 1
    if eff_r > h + 2 * pad[0] or eff_s > w + 2 * pad[1]:
        raise ValueError(f"{op}: the dilated filter is {eff_r}x{eff_s} but the padded input is only "
                         f"{h + 2 * pad[0]}x{w + 2 * pad[1]}; the filter must fit the padded input")
    oh = (h + 2 * pad[0] - eff_r) // st[0] + 1
    ow = (w + 2 * pad[1] - eff_s) // st[1] + 1
    problem = ConvProblem(n, c, h, w, k, r, s, oh, ow, st, pad, dil, groups, dtype)
    for what, count in (("x", n * c * h * w), ("w", k * cg * r * s), ("y", n * k * oh * ow)):
        if count > _INT31:
            raise ValueError(f"{op}: {what} has {count} elements; at most {_INT31} are supported per call")
    return ConvGeometry(problem, layout)
