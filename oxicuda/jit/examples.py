"""Representative Python kernels, one per jit family, that the registry lists as the families'
configurations (beside every specialization compiled in the process), so that validation and
the per-family tools always have something to assemble. Each is a public object a caller can
launch: ``saxpy``, ``add`` (elementwise), ``total`` (a full reduction)."""

from __future__ import annotations

from . import types as T
from .elementwise import ElementwiseSpec, elementwise
from .intrinsics import grid
from .kernel import kernel
from .reduction import ReductionSpec, reduction


@kernel
def saxpy(a: T.f32, x: T.In[T.f32], y: T.In[T.f32], out: T.Out[T.f32]):
    i = grid(1)
    if i < len(out):
        out[i] = a * x[i] + y[i]


add = elementwise(lambda x, y: x + y, name="add")
total = reduction(lambda x: x, lambda a, b: a + b, 0, name="total")
_VEC = T.ArrayType(T.f32, 1, "C", "in")


def kernel_configurations(arch: str) -> list:
    sig = (T.f32, _VEC, _VEC, T.ArrayType(T.f32, 1, "C", "out"))
    return [saxpy.specialize(sig, arch)]


def elementwise_configurations(arch: str) -> list:
    return [ElementwiseSpec(arch=arch, name=add.name, digest=add.info.digest(),
                            args=((T.f32, True), (T.f32, True)), out=T.f32, layout=layout,
                            ndim=ndim, vec=vec)
            for layout, ndim, vec in (("contig", 1, 4), ("contig", 1, 1), ("strided", 2, 1))]


def reduction_configurations(arch: str) -> list:
    common = {"arch": arch, "name": total.name, "map": total.map.digest(),
              "reduce": total.reduce.digest(), "identity": 0, "args": ((T.f32, True),),
              "acc": T.f32, "out": T.f32}
    return [ReductionSpec(kind="partial", ndim=1, kept=0, **common),
            ReductionSpec(kind="final", ndim=1, kept=0, **common),
            ReductionSpec(kind="rows", ndim=1, kept=1, **common),
            ReductionSpec(kind="cols", ndim=1, kept=1, **common)]
