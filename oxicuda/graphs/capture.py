"""``oxicuda.graph(stream=s)``: capture the oxicuda work made on a stream into a CUDA graph.

::

    with oxicuda.graph(stream=s) as g:      # cuStreamBeginCapture_v2 ... cuStreamEndCapture
        y = oxicuda.dnn.softmax(oxicuda.blas.gemm(a, b))
    g.replay()                              # cuGraphLaunch on s: the whole sequence again
    with g.recapture():                     # same calls, new pointers: cuGraphExecUpdate
        y2 = oxicuda.dnn.softmax(oxicuda.blas.gemm(a2, b2))

Everything launched or copied on ``s`` inside the block (library calls included: their arrays
must live on ``s``, e.g. ``oxicuda.asarray(x, stream=s)``) becomes the graph; nothing runs until
``replay``. Arrays allocated inside the block belong to the graph (``oxicuda.memory.capture``):
replays write them again, so ``y`` above holds the latest replay's result. The inputs are
read from the addresses captured: keep those arrays alive as long as the graph and refill them
in place (``a.set(...)``, ``a[...] = b``) to replay on new data, as with PyTorch's graphs (the
emulator faults on a replay that reads freed memory). Warm every call up once before capturing
it: a first call uploads tables and builds plans, which a capture cannot.

A call that cannot be captured (one that reads a result back to the host, uploads host data, or
waits for the device) raises ``GraphCaptureError`` naming itself before it reaches the driver;
the capture is then discarded and the stream usable. A driver error during the capture (for
example a launch on the legacy stream while a blocking stream captures) discards it likewise.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from ..driver.backend import api
from ..driver.context import ensure_context
from ..driver.enums import STREAM_CAPTURE_MODES
from ..driver.errors import CudaError
from ..driver.stream import as_stream_handle
from ..driver.trace import ACTIVE as _TRACES
from ..driver.trace import LaunchRecord, Trace, record
from ..driver.trace import _lock as _traces_lock
from ..memory import capture as _capture
from ..memory.capture import GraphCaptureError
from ..memory.pool import get_pool

__all__ = ["Graph", "GraphCaptureError", "graph"]


class _ThreadLaunches(list):
    """The launch list of a capture's trace: only launches made by the capturing thread (another
    thread's work on other streams is not part of the graph)."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def append(self, item) -> None:
        if threading.get_ident() == self.thread:
            super().append(item)


def _release(drv, handles: list[int], execs: list[int], reserves: list) -> None:
    # the driver may be shutting down (interpreter exit): nothing here may raise
    for h in execs:
        with contextlib.suppress(Exception):
            drv.graph_exec_destroy(h)
    for h in handles:
        with contextlib.suppress(Exception):
            drv.graph_destroy(h)
    for reserve in reserves:
        reserve.holders -= 1
        if reserve.holders <= 0:  # no graph replays this memory any more
            with contextlib.suppress(Exception):
                reserve.release(lambda ptr: get_pool())


class Graph:
    """A CUDA graph captured from one stream; see the module docstring.

    ``launches``: the kernel launches captured (``oxicuda.trace`` records), in order; a replay
    inside an ``oxicuda.trace()`` records them again. ``node_count``: the graph's nodes
    (launches, copies, memsets). ``replay_count``: how many times it was launched.
    """

    def __init__(self, stream: object, mode: str = "global", memory: str = "reserve") -> None:
        if stream is None:
            raise ValueError("oxicuda.graph: pass stream= (an oxicuda Stream or another package's "
                             "stream); the legacy default stream cannot be captured, and the "
                             "arrays of the captured calls must live on that stream")
        if mode not in STREAM_CAPTURE_MODES and mode.upper() not in STREAM_CAPTURE_MODES:
            raise ValueError(f"oxicuda.graph: mode={mode!r}; allowed: 'global', 'thread_local', "
                             "'relaxed'")
        self._stream = stream  # kept alive while the graph lives
        self.stream = as_stream_handle(stream)
        if self.stream == 0:
            raise ValueError("oxicuda.graph: stream 0 is the legacy default stream, which cannot "
                             "be captured; create one with oxicuda.Stream()")
        self.mode = STREAM_CAPTURE_MODES[mode.upper()]
        if memory not in ("reserve", "async"):
            raise ValueError(f"oxicuda.graph: memory={memory!r}; allowed: 'reserve' (blocks the "
                             "pool keeps for the graph) or 'async' (cuMemAllocAsync nodes)")
        self.memory = memory
        self.launches: list = []
        self.replay_count = 0
        self.updated_in_place: bool | None = None
        self._graphs: list[int] = []
        self._execs: list[int] = []
        self._reserves: list = []
        self._exec = 0
        self._graph = 0
        self._finalizer = None

    # -- capture -------------------------------------------------------------------------------
    def __enter__(self) -> Graph:  # noqa: PYI034 - the class is not meant to be subclassed
        if self._exec:
            raise RuntimeError("oxicuda.graph: this graph was captured already; use "
                               "g.recapture() to capture the calls again")
        self._pending = self._begin()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        graph_handle, launches = self._end(*self._pending, failed=exc is not None)
        del self._pending
        if exc is not None:
            return
        drv = api()
        self._graph = graph_handle
        self._exec = drv.graph_instantiate(graph_handle)
        self.launches = launches
        self._graphs.append(graph_handle)
        self._execs.append(self._exec)
        self._reserve_of_last.holders += 1
        self._reserves.append(self._reserve_of_last)
        self._finalizer = weakref.finalize(self, _release, drv, self._graphs, self._execs,
                                           self._reserves)

    def _begin(self):
        ensure_context()
        drv = api()
        h = self.stream
        if h in _capture.ACTIVE:
            raise RuntimeError(f"oxicuda.graph: stream 0x{h:x} is already capturing a graph; "
                               "captures cannot be nested on one stream (capture on another "
                               "stream, or replay the inner graph inside the outer capture)")
        if drv.stream_is_capturing(h):
            raise RuntimeError(f"oxicuda.graph: stream 0x{h:x} is already capturing (a capture "
                               "another package began); captures cannot be nested")
        drv.stream_begin_capture(h, self.mode)
        ident = drv.stream_get_capture_info(h)[1]
        blocking = not getattr(self._stream, "non_blocking", False)
        reserve = _capture.begin(h, ident, blocking, stream_ordered=self.memory == "async")
        launches = Trace(_ThreadLaunches())
        with _traces_lock:
            _TRACES.append(launches)
        return launches, reserve

    def _end(self, launches, reserve, failed: bool) -> tuple[int, list]:
        drv = api()
        with _traces_lock:
            for i in range(len(_TRACES) - 1, -1, -1):
                if _TRACES[i] is launches:
                    del _TRACES[i]
                    break
        if reserve.stream_ordered:  # scratch lives to the graph's end: free nodes close it
            reserve.workspaces.clear()
        try:
            handle = drv.stream_end_capture(self.stream)
        except CudaError as err:
            _capture.end(reserve)  # before release: blocks freed from here on go to the pool
            reserve.release(lambda ptr: get_pool())
            if failed:
                return 0, []
            raise GraphCaptureError(
                f"oxicuda.graph: the capture on stream 0x{self.stream:x} was invalidated by a "
                f"call the driver refused during it ({err}); nothing was captured and the "
                "stream is usable again. Common causes: a synchronize or an event query during "
                "the capture, or work on the legacy default stream (from any thread) while a "
                "blocking stream captures; oxicuda.Stream(non_blocking=True) lets the legacy "
                "stream run beside the capture"
            ) from err
        finally:
            _capture.end(reserve)
        if not failed and reserve.async_ptrs:
            drv.graph_destroy(handle)
            reserve.release(lambda ptr: get_pool())
            raise GraphCaptureError(
                f"oxicuda.graph(memory='async'): {len(reserve.async_ptrs)} array(s) allocated "
                "in the capture outlive it; the driver cannot relaunch a graph whose allocation "
                "is still live. Preallocate the outputs outside the capture (out=, c=) or use "
                "memory='reserve'")
        if failed:
            drv.graph_destroy(handle)
            reserve.release(lambda ptr: get_pool())
            return 0, []
        self._reserve_of_last = reserve
        kept = [r for r in launches.launches if r.stream != 0]
        if len(kept) < len(launches.launches):
            warnings.warn(
                f"oxicuda.graph: {len(launches.launches) - len(kept)} launch(es) during the "
                f"capture on stream 0x{self.stream:x} ran at once on the legacy default stream "
                "and are not in the graph (their arrays were made without stream=?)",
                RuntimeWarning, stacklevel=3)
        return handle, kept

    @contextmanager
    def recapture(self) -> Iterator[Graph]:
        """Capture the calls again (same sequence, new pointers or scalars) and make this graph
        run them: cuGraphExecUpdate when the topology is unchanged (``updated_in_place`` True),
        else a new instantiation (False)."""
        if not self._exec:
            raise RuntimeError("oxicuda.graph: recapture() needs a captured graph; capture one "
                               "with `with oxicuda.graph(stream=s) as g:` first")
        pending = self._begin()
        failed = True
        try:
            yield self
            failed = False
        finally:
            handle, launches = self._end(*pending, failed=failed)
        if failed:
            return
        self._install(handle, launches, self._reserve_of_last)

    def update(self, other: Graph) -> bool:
        """Give this graph the parameters of ``other`` (captured from the same sequence of
        calls) with cuGraphExecUpdate: True when the driver accepted, False when the topology
        differs (this graph is then unchanged). Both graphs then replay ``other``'s memory,
        which lives as long as either does; this graph's previous memory goes back to the pool."""
        if not (self._exec and other._graph):
            raise RuntimeError("oxicuda.graph: update() needs two captured graphs")
        if other is self:
            return True
        drv = api()
        result = drv.graph_exec_update(self._exec, other._graph)
        if result:
            return False
        self.launches = list(other.launches)
        # this graph now replays other's memory: take its reserves over (other keeps its own
        # executable graph) and give back the ones no longer replayed
        old = list(self._reserves)
        for reserve in other._reserves:
            reserve.holders += 1
        self._reserves[:] = other._reserves
        _release(drv, [], [], old)
        return True

    def _install(self, handle: int, launches: list, reserve) -> None:
        drv = api()
        result = drv.graph_exec_update(self._exec, handle)
        if result == 0:
            self.updated_in_place = True
        else:
            self._exec = drv.graph_instantiate(handle)
            self._execs.append(self._exec)
            self.updated_in_place = False
        # the previous capture's memory is no longer replayed: back to the pool (after the
        # last replay's work, through the event the pool records), and its graph is not needed
        # (executable graphs stay until close: a replay of one may still be running)
        old_reserves, old_graphs = list(self._reserves), list(self._graphs)
        self._graph = handle
        self._graphs[:] = [handle]
        reserve.holders += 1
        self._reserves[:] = [reserve]
        self.launches = launches
        _release(drv, old_graphs, [], old_reserves)

    # -- replay --------------------------------------------------------------------------------
    def replay(self, stream: object = None) -> None:
        """Launch the graph on ``stream`` (None: the stream it was captured on); asynchronous
        like any launch."""
        if not self._exec:
            raise RuntimeError("oxicuda.graph: nothing to replay; the capture has not ended or "
                               "was discarded")
        h = self.stream if stream is None else as_stream_handle(stream)
        api().graph_launch(self._exec, h)
        self.replay_count += 1
        for reserve in self._reserves:
            reserve.last_stream = h
        if _TRACES:
            for r in self.launches:
                record(LaunchRecord(r.kernel, r.spec, r.grid, r.block, r.shared_mem, h))

    @property
    def node_count(self) -> int:
        """Nodes of the captured graph (kernel launches, copies, memsets)."""
        return api().graph_node_count(self._graph) if self._graph else 0

    def close(self) -> None:
        """Destroy the graph now and give its memory back to the pool (arrays allocated during
        the capture keep theirs until they go). Idempotent."""
        if self._finalizer is not None:
            self._finalizer()
        self._exec = self._graph = 0

    def __repr__(self) -> str:
        state = f"{len(self.launches)} launches, {self.replay_count} replays" if self._exec else "empty"
        return f"<oxicuda.Graph stream=0x{self.stream:x} {state}>"


def graph(stream: object = None, mode: str = "global", memory: str = "reserve") -> Graph:
    """A context manager capturing the oxicuda work on ``stream`` into a CUDA graph:
    ``with oxicuda.graph(stream=s) as g: ...`` then ``g.replay()``.

    ``stream``: an oxicuda ``Stream`` (or a handle or another package's stream: PyTorch's,
    CuPy's); required, the legacy default stream cannot be captured. ``mode``: the capture mode,
    "global" (default: other threads' unsafe calls are refused too), "thread_local" or
    "relaxed". ``memory``: where the capture's allocations come from, "reserve" (default: blocks
    the pool keeps for the graph as long as it lives) or "async" (the driver's stream-ordered
    allocator: allocation and free nodes in the graph; every array allocated in the capture must
    be freed in it). Raises ValueError for a bad stream, mode or memory, RuntimeError for a
    nested capture on the same stream, GraphCaptureError for a call that cannot be captured.
    """
    return Graph(stream, mode, memory)

