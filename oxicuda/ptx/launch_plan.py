"""The launch plan: the one object between dispatch and the driver, for every kernel family.

A library call goes through three stages, each with one job::

    problem = SoftmaxProblem(rows, cols, dtype)          # the call's signature, hashable
    plan = PLANS.get_or_build(key, lambda: family.plan(problem, device_facts()))
    plan.run((x.ptr, out.ptr), (), stream)               # pack and launch, nothing else

- ``family.plan(problem, device) -> LaunchPlan`` is where dispatch's choice becomes kernels: it
  picks the spec(s) (dispatch is a pure function of problem and ``DeviceFacts``), loads them
  through the kernel cache, fixes grid, block, shared memory, tensor maps and the workspace size,
  and says how each launch's arguments come from the call's pointers and scalars (``bind``);
- ``LaunchPlan.run(pointers, scalars, stream)`` takes the workspace (cached, no allocation after
  the first call), binds and launches each step with its prepared launch: no dispatch, no spec
  hashing, no import, no geometry checks;
- ``PlanCache`` keeps plans per call signature (bounded, thread-safe); the key must hold
  everything the plan depends on, the device ordinal included.

Workspace memory comes from the memory layer above, which registers its source here when it is
imported (``set_workspace_source``; ``oxicuda.memory`` does it with its workspace cache), so that
this module imports nothing above ``ptx/`` and ``driver/``.

A ``bind`` is ``bind(pointers, scalars, workspace_ptr) -> args``: a plain function or lambda
written by the family, e.g. ``lambda p, s, ws: (p[0], p[1], ws, rows)`` where ``rows`` was fixed
when the plan was made.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Protocol

from .builder_base import STATIC_SHARED_LIMIT
from .spec import KernelSpec

__all__ = ["Bind", "KernelStep", "LaunchPlan", "PlanCache", "PlanFamily", "set_workspace_source"]

Bind = Callable[[Sequence[int], Sequence[object], int], Sequence[object]]


def _no_workspace_source(nbytes: int, stream: object) -> int:
    raise RuntimeError(f"LaunchPlan: a plan needs {nbytes} bytes of workspace but no workspace source is "
                       "registered (import oxicuda.memory, which registers its workspace cache)")


#: ``source(nbytes, stream) -> device address`` of scratch memory valid for work on ``stream``
_workspace_source: Callable[[int, object], int] = _no_workspace_source


def set_workspace_source(source: Callable[[int, object], int]) -> None:
    """Where ``LaunchPlan.run`` takes its workspace from (``oxicuda.memory.workspace`` registers
    ``workspace_ptr`` when it is imported)."""
    global _workspace_source
    _workspace_source = source


class PlanFamily(Protocol):
    """What every kernel family module offers (``plan`` may be a module-level function)."""

    def plan(self, problem: Hashable, device: object) -> LaunchPlan: ...


class KernelStep:
    """One launch of a plan: the loaded kernel of ``spec``, its geometry and its ``bind``.

    Made once per plan: loads the kernel (kernel cache), opts in to the dynamic shared memory the
    step needs, and checks the geometry against the kernel's and the device's limits (ValueError
    here, not at run time).
    """

    __slots__ = ("bind", "block", "function", "grid", "launch", "shared_mem", "spec")

    def __init__(self, spec: KernelSpec, grid: int | tuple[int, ...], block: int | tuple[int, ...],
                 bind: Bind, shared_mem: int = 0, function: object = None) -> None:
        if function is None:
            from .cache import load  # plan time only, never per run

            function = load(spec)
        if shared_mem > STATIC_SHARED_LIMIT:
            function.set_max_dynamic_shared_memory(shared_mem)
        self.spec = spec
        self.function = function
        self.grid = grid
        self.block = block
        self.shared_mem = shared_mem
        self.bind = bind
        self.launch = function.prepared_launch(grid, block, shared_mem)

    def __repr__(self) -> str:
        return (f"KernelStep({self.function.name}, grid={self.grid}, block={self.block}, "
                f"shared_mem={self.shared_mem})")


class LaunchPlan:
    """Kernels, geometry, tensor maps and workspace fixed for one problem; ``run`` launches them.

    ``steps`` run in order on one stream. ``workspace_bytes`` of scratch come from the workspace
    cache per (device, stream) and are passed to every ``bind`` as its third argument (0 when the
    plan needs none). ``keep`` holds objects the binds refer to by address (tensor maps, device
    tables) so that they live as long as the plan.
    """

    __slots__ = ("_pairs", "keep", "name", "steps", "workspace_bytes")

    def __init__(self, name: str, steps: Sequence[KernelStep], workspace_bytes: int = 0,
                 keep: Sequence[object] = ()) -> None:
        if workspace_bytes < 0:
            raise ValueError(f"LaunchPlan {name}: workspace_bytes={workspace_bytes}; must be >= 0")
        self.name = name
        self.steps = tuple(steps)
        self.workspace_bytes = int(workspace_bytes)
        self.keep = tuple(keep)
        self._pairs = tuple((s.launch, s.bind) for s in self.steps)

    def run(self, pointers: Sequence[int], scalars: Sequence[object] = (),
            stream: object = None) -> None:
        """Launch every step on ``stream`` (None: the default stream), asynchronously."""
        if self.workspace_bytes:
            ws = _workspace_source(self.workspace_bytes, stream)
        else:
            ws = 0
        for launch, bind in self._pairs:
            launch(bind(pointers, scalars, ws), stream)

    def runner(self) -> Callable[[Sequence[int], Sequence[object], object], None]:
        """``run`` as a plain function, flattened for the common plan of one step without
        workspace (what a library's cached hot path calls)."""
        if len(self._pairs) == 1 and not self.workspace_bytes:
            ((launch, bind),) = self._pairs

            def run_one(pointers: Sequence[int], scalars: Sequence[object] = (), stream: object = None) -> None:
                launch(bind(pointers, scalars, 0), stream)

            return run_one
        return self.run

    @property
    def kernels(self) -> tuple[str, ...]:
        """The kernel names this plan launches, in order."""
        return tuple(s.function.name for s in self.steps)

    def __repr__(self) -> str:
        return (f"LaunchPlan({self.name}, {len(self.steps)} steps, "
                f"workspace={self.workspace_bytes} B)")


def _pass_scalars(pointers: Sequence[int], scalars: Sequence[object], ws: int) -> Sequence[object]:
    return scalars


class PlanCache:
    """Plans by call signature: bounded (``maxsize`` plans, oldest built evicted first) and
    thread-safe. A hit is one dict lookup without the lock."""

    def __init__(self, name: str, maxsize: int = 512) -> None:
        if maxsize < 1:
            raise ValueError(f"PlanCache {name}: maxsize={maxsize}; must be >= 1")
        self.name = name
        self.maxsize = maxsize
        self._plans: OrderedDict[Hashable, object] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> object | None:
        return self._plans.get(key)

    def get_or_build(self, key: Hashable, build: Callable[[], object]) -> object:
        """The plan cached under ``key``, or ``build()``'s, cached (built outside the lock; two
        threads racing on one new key build twice and keep the first)."""
        plan = self._plans.get(key)
        if plan is not None:
            self.hits += 1
            return plan
        built = build()
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                self.misses += 1
                plan = self._plans[key] = built
                while len(self._plans) > self.maxsize:
                    self._plans.popitem(last=False)
        return plan

    def single(self, key: Hashable, make_spec: Callable[[], KernelSpec], grid: int | tuple[int, ...],
               block: int | tuple[int, ...], shared_mem: int = 0) -> LaunchPlan:
        """The one-launch plan cached under ``key`` (which must hold everything ``make_spec`` and
        the geometry depend on), built from ``make_spec()`` on a miss; its ``run((), args, stream)``
        launches the kernel with ``args`` as given (for kernels whose arguments are the call's)."""
        plan = self._plans.get(key)  # a hit builds no spec
        if plan is not None:
            self.hits += 1
            return plan
        spec = make_spec()
        return self.get_or_build(key, lambda: LaunchPlan(spec.kernel_name(), [
            KernelStep(spec, grid, block, _pass_scalars, shared_mem)]))

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._plans)

    def info(self) -> dict[str, object]:
        return {"name": self.name, "size": len(self._plans), "maxsize": self.maxsize,
                "hits": self.hits, "misses": self.misses}
