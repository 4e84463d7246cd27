"""Stream capture and graphs for the emulated driver, with the real driver's rules.

The emulator runs every call eagerly, so a capture is a recording: while a stream captures, its
launches, copies and memsets (and the graph launches made on it) become nodes of the capture's
graph instead of running, each depending on the stream's last nodes. ``cuEventRecord`` on a
capturing stream and ``cuStreamWaitEvent`` on a captured event pass those dependencies between
streams (a stream that waits on a captured event joins the capture, as on the driver).
Instantiating copies the nodes; launching an executable graph runs them in recording order (a
topological order of the dependencies: each node only depends on nodes recorded before it).

What the driver refuses, the emulator refuses with the same CUresult and the same effect on the
capture (see the CUDA programming guide, "Prohibited and Unhandled Operations"):

- synchronizing or querying a capturing stream, or the context while any stream captures:
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900), and the capture is invalidated;
- using the legacy default stream (a launch or copy on stream 0, any synchronous copy or memset)
  while a stream created without NON_BLOCKING captures: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (906),
  the capture invalidated;
- "potentially unsafe" calls (cuMemAlloc, cuMemFree, cuMemAllocHost, cuMemFreeHost) from a
  thread whose interaction mode forbids them (``cuThreadExchangeStreamCaptureMode``; global mode
  forbids them while this thread captures in a non-relaxed mode or any thread captures in global
  mode): 900, the capture invalidated;
- a copy between a capturing stream and pageable host memory (not from cuMemAllocHost): 900;
- querying, synchronizing or timing an event last recorded in a capture:
  CUDA_ERROR_CAPTURED_EVENT (907);
- waiting in a capture on an event recorded outside it: CUDA_ERROR_STREAM_CAPTURE_ISOLATION
  (905); joining two captures: CUDA_ERROR_STREAM_CAPTURE_MERGE (902);
- any call on a stream of an invalidated capture: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (901),
  until cuStreamEndCapture ends it (returning 901 and no graph);
- ending a capture on a stream other than its origin: CUDA_ERROR_STREAM_CAPTURE_UNMATCHED (903);
  with a forked stream not joined back to the origin: CUDA_ERROR_STREAM_CAPTURE_UNJOINED (904);
  from another thread than the one that began a non-relaxed capture:
  CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD (908); beginning a capture on a capturing stream or
  ending one on a stream that is not capturing: CUDA_ERROR_ILLEGAL_STATE (401); beginning one
  on the legacy stream: 900.

The stream-ordered allocator (``cuMemAllocAsync``/``cuMemFreeAsync``) runs eagerly outside a
capture. Inside one it records allocation and free nodes, as the driver does: the graph's
allocation gets its address at capture time and keeps it for the graph's life, is accessible
from its allocation node's run to its free node's run (or to a ``cuMemFreeAsync`` outside the
graph) and faults outside that span, and launching the graph while its allocation is still live
fails (CUDA_ERROR_INVALID_VALUE). The address goes back to the heap once no graph or executable
graph holds its allocation node.
"""

from __future__ import annotations

import threading

from ..driver.errors import raise_for

_ACTIVE, _INVALIDATED = 1, 2
_GLOBAL, _THREAD_LOCAL, _RELAXED = 0, 1, 2
_NON_BLOCKING = 1

# CUgraphExecUpdateResult values
_UPDATE_OK, _TOPOLOGY_CHANGED, _NODE_TYPE_CHANGED, _FUNCTION_CHANGED = 0, 2, 3, 4


class Node:
    """One recorded operation: ``kind`` ("kernel", "htod", "dtoh", "dtod", "2d", "memset8",
    "memset32", "graph"), the indices of the nodes it depends on, and the arguments of the
    emulator's ``_exec_<kind>`` that performs it."""

    __slots__ = ("deps", "kind", "params")

    def __init__(self, kind: str, deps: frozenset, params: tuple) -> None:
        self.kind = kind
        self.deps = deps
        self.params = params


class Capture:
    """One capture sequence: its origin stream, mode, thread, nodes, and the last nodes of every
    stream taking part (``tails``)."""

    def __init__(self, ident: int, origin: int, mode: int) -> None:
        self.id = ident
        self.origin = origin
        self.mode = mode
        self.thread = threading.get_ident()
        self.nodes: list[Node] = []
        self.tails: dict[int, frozenset] = {origin: frozenset()}
        self.status = _ACTIVE
        self.why = ""


class GraphCalls:
    """The capture and graph calls of ``EmulatorAPI`` (mixed into it), and the checks every
    stream operation of the emulator makes (``_capture_of``, ``_unsafe``, ``_sync_check``)."""

    def _init_graphs(self) -> None:
        self._captures: dict[int, Capture] = {}  # stream -> the capture it records into
        self._event_captures: dict[int, tuple[Capture, frozenset]] = {}
        self._stream_flags: dict[int, int] = {0: 0}
        self._graphs: dict[int, list[Node]] = {}
        self._execs: dict[int, list[Node]] = {}
        self._capture_ids = 0
        self._graph_allocs: dict[int, int] = {}  # address -> graphs and execs holding its node
        self._graph_live: set[int] = set()  # graph allocations currently accessible

    # -- the checks ---------------------------------------------------------------------------
    def _active(self) -> list[Capture]:
        return list({id(c): c for c in self._captures.values() if c.status == _ACTIVE}.values())

    def _invalidate(self, cap: Capture, why: str) -> None:
        if cap.status == _ACTIVE:
            cap.status = _INVALIDATED
            cap.why = why

    def _fail_captures(self, caps: list[Capture], code: int, call: str, why: str) -> None:
        for cap in caps:
            self._invalidate(cap, f"{call}: {why}")
        raise_for(code, call, why + "; the capture is invalidated (end it with cuStreamEndCapture)")

    def _legacy_use(self, call: str) -> None:
        """Work on (or a synchronous call through) the legacy stream: invalid while a blocking
        stream captures."""
        blocking = [c for c in self._active()
                    if any(not self._stream_flags.get(s, 0) & _NON_BLOCKING for s in c.tails)]
        if blocking:
            self._fail_captures(blocking, 906, call, "the legacy default stream was used while a "
                                "blocking stream is capturing")

    def _capture_of(self, stream: int | None, call: str) -> Capture | None:
        """The capture that records the work ``call`` puts on ``stream`` (None: run it now)."""
        if not stream:
            self._legacy_use(call)
            return None
        cap = self._captures.get(stream)
        if cap is None:
            return None
        if cap.status != _ACTIVE:
            raise_for(901, call, f"stream 0x{stream:x} belongs to an invalidated capture "
                                 f"({cap.why})")
        return cap

    def _record(self, cap: Capture, stream: int, kind: str, params: tuple) -> None:
        cap.nodes.append(Node(kind, cap.tails[stream], params))
        cap.tails[stream] = frozenset((len(cap.nodes) - 1,))

    def _unsafe(self, call: str) -> None:
        """A potentially unsafe call (allocation, free): refused where the thread's mode says."""
        mode = getattr(self._local, "capture_mode", _GLOBAL)
        if mode == _RELAXED:
            return
        me = threading.get_ident()
        bad = [c for c in self._active()
               if (c.thread == me and c.mode != _RELAXED)
               or (mode == _GLOBAL and c.thread != me and c.mode == _GLOBAL)]
        if bad:
            self._fail_captures(bad, 900, call, "a potentially unsafe call during stream capture "
                                "(switch the thread to relaxed mode with "
                                "cuThreadExchangeStreamCaptureMode to allow it)")

    def _sync_check(self, stream: int, call: str) -> None:
        """Synchronizing or querying ``stream``."""
        if stream == 0:
            self._legacy_use(call)
            return
        cap = self._captures.get(stream)
        if cap is not None:
            if cap.status != _ACTIVE:
                raise_for(901, call, f"stream 0x{stream:x} belongs to an invalidated capture")
            self._fail_captures([cap], 900, call, f"stream 0x{stream:x} is capturing")

    def _ctx_sync_check(self, call: str) -> None:
        active = self._active()
        if active:
            self._fail_captures(active, 900, call, "a stream of the context is capturing")

    def _event_check(self, event: int, call: str) -> None:
        hit = self._event_captures.get(event)
        if hit is not None:
            cap = hit[0]
            if cap.status == _ACTIVE:
                self._invalidate(cap, f"{call} on a captured event")
            raise_for(907, call, f"event 0x{event:x} was last recorded in a capture")

    def _pinned(self, ptr: int, nbytes: int) -> bool:
        base = self._host_block(ptr)
        return base is not None and ptr + nbytes <= base + self._host[base].size

    def _host_copy_capture(self, stream: int | None, host: int, nbytes: int, call: str):
        cap = self._capture_of(stream, call)
        if cap is not None and not self._pinned(host, nbytes):
            self._fail_captures([cap], 900, call, f"host memory at 0x{host:x} is pageable (not "
                                "from cuMemAllocHost); a graph cannot copy to or from it")
        return cap

    # -- capture ------------------------------------------------------------------------------
    def stream_begin_capture(self, stream: int, mode: int = 0) -> None:
        call = "cuStreamBeginCapture_v2"
        self._check_stream(stream, call)
        if mode not in (_GLOBAL, _THREAD_LOCAL, _RELAXED):
            raise_for(1, call, f"capture mode {mode}; allowed 0 (global), 1 (thread-local), "
                               "2 (relaxed)")
        if stream == 0:
            raise_for(900, call, "the legacy default stream cannot be captured")
        with self._lock:
            if stream in self._captures:
                raise_for(401, call, f"stream 0x{stream:x} is already capturing")
            self._capture_ids += 1
            self._captures[stream] = Capture(self._capture_ids, stream, mode)

    def stream_end_capture(self, stream: int) -> int:
        call = "cuStreamEndCapture"
        self._check_stream(stream, call)
        with self._lock:
            cap = self._captures.get(stream)
            if cap is None:
                raise_for(401, call, f"stream 0x{stream:x} is not capturing")
            if cap.origin != stream:
                raise_for(903, call, f"the capture began on stream 0x{cap.origin:x}, not "
                                     f"0x{stream:x}")
            if cap.mode != _RELAXED and cap.thread != threading.get_ident():
                raise_for(908, call, "the capture began in another thread")
            for s in cap.tails:
                self._captures.pop(s, None)
            if cap.status != _ACTIVE:
                self._hold_allocs(cap.nodes, 0)
                raise_for(901, call, cap.why)
            unjoined = self._unjoined(cap)
            if unjoined:
                self._hold_allocs(cap.nodes, 0)
                raise_for(904, call, f"streams {[hex(s) for s in unjoined]} forked from the "
                                     "capture and were not joined back to its origin stream")
            h = self._handle()
            self._graphs[h] = list(cap.nodes)
            self._hold_allocs(self._graphs[h], 1)
            return h

    def _unjoined(self, cap: Capture) -> list[int]:
        seen: set[int] = set()
        todo = list(cap.tails[cap.origin])
        while todo:
            i = todo.pop()
            if i not in seen:
                seen.add(i)
                todo.extend(cap.nodes[i].deps)
        return [s for s, tail in cap.tails.items() if s != cap.origin and not tail <= seen]

    def stream_is_capturing(self, stream: int) -> int:
        call = "cuStreamIsCapturing"
        self._check_stream(stream, call)
        if stream == 0:
            if any(not self._stream_flags.get(s, 0) & _NON_BLOCKING
                   for c in self._active() for s in c.tails):
                raise_for(906, call, "asked of the legacy stream while a blocking stream captures")
            return 0
        cap = self._captures.get(stream)
        return 0 if cap is None else cap.status

    def stream_get_capture_info(self, stream: int) -> tuple[int, int]:
        status = self.stream_is_capturing(stream)
        return (status, self._captures[stream].id if status else 0)

    def thread_exchange_stream_capture_mode(self, mode: int) -> int:
        if mode not in (_GLOBAL, _THREAD_LOCAL, _RELAXED):
            raise_for(1, "cuThreadExchangeStreamCaptureMode", f"mode {mode}; allowed 0, 1, 2")
        old = getattr(self._local, "capture_mode", _GLOBAL)
        self._local.capture_mode = mode
        return old

    # -- graphs -------------------------------------------------------------------------------
    def _graph(self, graph: int, call: str) -> list[Node]:
        nodes = self._graphs.get(graph)
        if nodes is None:
            raise_for(400, call, f"graph 0x{graph:x} does not exist")
        return nodes

    def _exec(self, graph_exec: int, call: str) -> list[Node]:
        nodes = self._execs.get(graph_exec)
        if nodes is None:
            raise_for(400, call, f"executable graph 0x{graph_exec:x} does not exist")
        return nodes

    def graph_instantiate(self, graph: int, flags: int = 0) -> int:
        nodes = self._graph(graph, "cuGraphInstantiateWithFlags")
        with self._lock:
            h = self._handle()
            self._execs[h] = [Node(n.kind, n.deps, n.params) for n in nodes]
            self._hold_allocs(self._execs[h], 1)
        return h

    def graph_node_count(self, graph: int) -> int:
        return len(self._graph(graph, "cuGraphGetNodes"))

    def graph_launch(self, graph_exec: int, stream: int) -> None:
        call = "cuGraphLaunch"
        nodes = self._exec(graph_exec, call)
        self._check_stream(stream, call)
        cap = self._capture_of(stream, call)
        if cap is not None:  # a child-graph node (a copy: a later update leaves it as it is)
            self._record(cap, stream, "graph", (tuple(Node(n.kind, n.deps, n.params)
                                                      for n in nodes),))
            return
        self._exec_graph(tuple(nodes))

    def _exec_graph(self, nodes: tuple) -> None:
        for node in nodes:
            getattr(self, "_exec_" + node.kind)(*node.params)

    def graph_exec_update(self, graph_exec: int, graph: int) -> int:
        call = "cuGraphExecUpdate_v2"
        old = self._exec(graph_exec, call)
        new = self._graph(graph, call)
        if len(old) != len(new) or any(a.deps != b.deps for a, b in zip(old, new)):
            return _TOPOLOGY_CHANGED
        for a, b in zip(old, new):
            if a.kind != b.kind:
                return _NODE_TYPE_CHANGED
            # a kernel node may take another function (CUDA 12 on), of this context
            if a.kind == "kernel" and b.params[0] not in self._functions:
                return _FUNCTION_CHANGED
        with self._lock:
            for a, b in zip(old, new):
                a.params = b.params
        return _UPDATE_OK

    def graph_destroy(self, graph: int) -> None:
        self._graph(graph, "cuGraphDestroy")
        self._hold_allocs(self._graphs.pop(graph), -1)

    def graph_exec_destroy(self, graph_exec: int) -> None:
        self._exec(graph_exec, "cuGraphExecDestroy")
        self._hold_allocs(self._execs.pop(graph_exec), -1)

    # -- the stream-ordered allocator -----------------------------------------------------------
    def _hold_allocs(self, nodes: list[Node], delta: int) -> None:
        for node in nodes:
            if node.kind == "alloc":
                ptr = node.params[0]
                refs = self._graph_allocs.get(ptr, 0) + delta
                if refs > 0:
                    self._graph_allocs[ptr] = refs
                else:
                    self._graph_allocs.pop(ptr, None)
                    if ptr not in self._graph_live:
                        with self._lock:
                            self.heap.free(ptr)

    def mem_alloc_async(self, nbytes: int, stream: int) -> int:
        call = "cuMemAllocAsync"
        self._check_stream(stream, call)
        cap = self._capture_of(stream, call)
        with self._lock:
            ptr = self.heap.alloc(nbytes, call)
            if cap is not None:  # mapped from the allocation node's run on
                self.heap.set_extent(ptr, 0)
                self._graph_allocs[ptr] = 0
                self._record(cap, stream, "alloc", (ptr, int(nbytes)))
        return ptr

    def mem_free_async(self, dptr: int, stream: int) -> None:
        call = "cuMemFreeAsync"
        self._check_stream(stream, call)
        cap = self._capture_of(stream, call)
        if cap is not None:
            self._record(cap, stream, "free", (dptr,))
            return
        with self._lock:
            if dptr in self._graph_allocs:  # a graph's allocation, freed outside the graph
                if dptr not in self._graph_live:
                    raise_for(1, call, f"graph allocation 0x{dptr:x} is not live")
                self._graph_live.discard(dptr)
                self.heap.set_extent(dptr, 0)
            else:
                self.heap.free(dptr, call)

    def _exec_alloc(self, ptr: int, nbytes: int) -> None:
        if ptr in self._graph_live:
            raise_for(1, "cuGraphLaunch", f"the graph's allocation at 0x{ptr:x} is still live "
                                          "(free it with cuMemFreeAsync before launching again)")
        self._graph_live.add(ptr)
        self.heap.set_extent(ptr, nbytes)

    def _exec_free(self, ptr: int) -> None:
        self._graph_live.discard(ptr)
        self.heap.set_extent(ptr, 0)
