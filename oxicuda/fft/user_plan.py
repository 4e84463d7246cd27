"""``oxicuda.fft.Plan`` and ``get_fft_plan`` (as ``cupyx.scipy.fftpack`` spells it): a transform
planned once for one array signature (shape, strides, dtype, axes, lengths, kind, device) and
reused, directly (``plan.execute(a)``) or as a context (``with plan: oxicuda.fft.fft(a)``: calls
inside must match the plan's signature, else ValueError before any launch).
"""

from __future__ import annotations

from typing import Self

import numpy as np

from oxicuda.memory.array import DeviceArray

from . import api

__all__ = ["Plan", "current_plan", "get_fft_plan"]

VALUE_TYPES = {"C2C": "c2c", "R2C": "r2c", "C2R": "c2r"}
_local = api._plan_stack
current_plan = api.current_plan


class Plan:
    """A transform of arrays like ``a`` over ``axes`` with lengths ``shape`` (numpy's ``s``);
    ``value_type`` 'C2C', 'R2C' or 'C2R'. Raises TypeError/ValueError for bad arguments."""

    def __init__(self, a: object, shape=None, axes=None, value_type: str = "C2C") -> None:
        if value_type not in VALUE_TYPES:
            raise ValueError(f"Plan: value_type={value_type!r}; allowed {tuple(VALUE_TYPES)}")
        self.kind = VALUE_TYPES[value_type]
        xa = api.as_input(a, "Plan")
        if self.kind == "r2c" and xa.dtype.kind != "f":
            raise TypeError(f"Plan: value_type 'R2C' needs a real array; got {xa.dtype}")
        if self.kind == "c2r" and xa.dtype.kind != "c":
            raise TypeError(f"Plan: value_type 'C2R' needs a complex array; got {xa.dtype}")
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        self.axes, self.lengths = api.axes_and_lengths(xa, shape, axes, "Plan", real_out=self.kind == "c2r")
        self.signature = (tuple(xa.shape), api._element_strides(xa), xa.dtype.name, api._ordinal())
        self.shape, self.dtype = tuple(xa.shape), xa.dtype
        # the forward (C2R: inverse) launch plan is built now, not at the first call
        problem = api.make_problem(self.kind, xa, self.axes, self.lengths, None, self.kind == "c2r", "Plan")
        self.launch_plan = api.plan_for(problem)

    def check(self, kind: str, xa: DeviceArray, axes, lengths) -> None:
        """ValueError unless the call (kind, array, axes, lengths) is the one this plan is for."""
        sig = (tuple(xa.shape), api._element_strides(xa), xa.dtype.name, api._ordinal())
        if kind != self.kind or sig != self.signature or tuple(axes) != self.axes \
                or tuple(lengths) != self.lengths:
            raise ValueError(
                f"Plan: the call ({kind}, shape {sig[0]}, strides {sig[1]}, dtype {sig[2]}, device {sig[3]}, "
                f"axes {tuple(axes)}, lengths {tuple(lengths)}) does not match the plan ({self.kind}, shape "
                f"{self.signature[0]}, strides {self.signature[1]}, dtype {self.signature[2]}, device "
                f"{self.signature[3]}, axes {self.axes}, lengths {self.lengths}); make a plan for this array")

    def execute(self, a: object, forward: bool = True, norm: str | None = None, out=None) -> DeviceArray:
        """Run the planned transform on ``a`` (forward or inverse; numpy's ``norm``)."""
        with self:
            if self.kind == "c2c":
                return api.execute("c2c", a, self.lengths, self.axes, norm, not forward, out, "Plan")
            if self.kind == "r2c":
                return api.execute("r2c", a, self.lengths, self.axes, norm, False, out, "Plan")
            return api.execute("c2r", a, self.lengths, self.axes, norm, True, out, "Plan")

    def __enter__(self) -> Self:
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _local.stack.pop()

    def __repr__(self) -> str:
        return f"oxicuda.fft.Plan({self.kind}, shape={self.shape}, dtype={self.dtype}, axes={self.axes})"


def get_fft_plan(a: object, shape=None, axes=None, value_type: str = "C2C") -> Plan:
    """A Plan for transforms of arrays like ``a`` (cupyx.scipy.fftpack.get_fft_plan's arguments)."""
    return Plan(a, shape, axes, value_type)
