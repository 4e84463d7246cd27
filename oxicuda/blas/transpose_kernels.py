"""Out-of-place matrix transpose through shared memory: ``dst[z] = src[z]^T`` for a batch of
column-major ``rows x cols`` matrices (``src`` leading dimension ``ld_src``) into ``cols x rows``
ones (``ld_dst``), one launch for the whole batch (grid.z).

It is a copy: bandwidth-bound, so the floors are bytes / copy bandwidth (8192^2 float32 on the
H200: 2 x 256 MiB at 4.26 TB/s, ~0.13 ms). A CTA of ``THREADS`` threads moves one ``tile x tile``
block: it reads ``vec_in`` consecutive source rows per load (16 bytes where the source allows),
writes them into a shared tile with one padding element per ``tile`` (so column j of the block
starts ``tile + 1`` elements after column j - 1), waits, and reads the shared tile along the other
axis to write ``vec_out`` consecutive destination rows per store. A warp's lanes cover 32
consecutive elements of a column (``32 / vec`` lanes) times ``vec`` columns: with 4-byte
elements every shared access of a warp then falls in 32 distinct banks (bank = column + row,
because ``tile + 1`` is 1 modulo 32), and every global access of a warp is whole 128-byte lines.

Used by ``gemm_wgmma`` (tf32 wgmma reads K-major operands only: an MN-major operand is transposed
into a K-major scratch buffer first) and by ``DeviceArray.copy`` of transposed 2-D views.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.driver.facts import device_facts
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.launch_plan import KernelStep, PlanCache
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

FAMILY = "transpose"
THREADS = 256
TILES = (32, 64)
#: the tile ``choose_spec`` uses (4-byte elements: 16.6 KB of shared memory per CTA, 8 CTAs of 256 threads per
#: sm_90 SM with 4 x 16 bytes of loads in flight per thread, 128 KB per SM)
DEFAULT_TILE = 64
#: element bytes -> the PTX bit type moved (the transpose never looks at values)
BIT_TYPES = {2: "b16", 4: "b32", 8: "b64"}
MAX_GRID_YZ = 65535
#: launch plans of ``transpose``, by spec and grid
PLANS = PlanCache("transpose")


@dataclass(frozen=True)
class TransposeSpec(KernelSpec):
    """One transpose kernel: element size (``elem_bytes``: 2, 4 or 8), square ``tile`` (32 or 64)
    and the elements per global access on each side (``vec_in`` along the source's contiguous
    rows, ``vec_out`` along the destination's; 1 or up to 16 bytes, the caller guaranteeing that
    rows, leading dimension, pointer and batch stride keep whole aligned vectors)."""

    family: ClassVar[str] = FAMILY
    elem_bytes: int = 4
    tile: int = 64
    vec_in: int = 1
    vec_out: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        name = type(self).__name__
        if self.elem_bytes not in BIT_TYPES:
            raise ValueError(f"{name}: elem_bytes={self.elem_bytes!r}; allowed {tuple(BIT_TYPES)}")
        if self.tile not in TILES:
            raise ValueError(f"{name}: tile={self.tile!r}; allowed {TILES}")
        for what, v in (("vec_in", self.vec_in), ("vec_out", self.vec_out)):
            if v not in self.vec_widths:
                raise ValueError(f"{name}: {what}={v!r} with {self.elem_bytes}-byte elements; allowed "
                                 f"{self.vec_widths}")

    @property
    def vec_widths(self) -> tuple[int, ...]:
        """Elements per access this element size allows: 1, 2, 4 within 16 bytes."""
        return tuple(v for v in (1, 2, 4) if v * self.elem_bytes <= 16)

    @property
    def shared_elems(self) -> int:
        return self.tile * (self.tile + 1)

    def grid(self, rows: int, cols: int, batch: int) -> tuple[int, int, int]:
        return (-(-rows // self.tile), -(-cols // self.tile), batch)


def _slots(spec: TransposeSpec, vec: int) -> list[tuple[int, int]]:
    """Per unrolled step r: (offset along the strided axis, offset in vectors along the
    contiguous axis) added to the thread's own (tid // Q, tid % Q), Q = 32 / vec lanes per
    32 contiguous elements. Slot s = tid + THREADS * r covers vector (s % Q) + Q * (s // Q // tile)
    of line (s // Q) % tile; THREADS / Q = 8 * vec divides the tile, so both parts split cleanly."""
    q = 32 // vec
    lines = THREADS // q
    steps = spec.tile * spec.tile // (vec * THREADS)
    return [((lines * r) % spec.tile, q * (lines * r // spec.tile)) for r in range(steps)]


def generate(spec: TransposeSpec) -> str:
    """PTX of the transpose. Parameters: rows cols (u32), src ld_src stride_src dst ld_dst
    stride_dst (u64; leading dimensions and batch strides in elements). Launch: block (THREADS,),
    grid ``spec.grid(rows, cols, batch)``."""
    T, es, bt = spec.tile, spec.elem_bytes, BIT_TYPES[spec.elem_bytes]
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.reqntid(THREADS)
    rows, cols = kb.param("rows", "u32"), kb.param("cols", "u32")
    src, ld_src, stride_src = kb.param_ptr("src"), kb.param("ld_src", "u64"), kb.param("stride_src", "u64")
    dst, ld_dst, stride_dst = kb.param_ptr("dst"), kb.param("ld_dst", "u64"), kb.param("stride_dst", "u64")
    tile = kb.shared("tile", bt, spec.shared_elems, align=16)
    base = kb.shared_addr(tile)
    tid = kb.tid()
    i0, j0 = kb.mul(kb.ctaid("x"), T), kb.mul(kb.ctaid("y"), T)
    z = kb.cvt(kb.ctaid("z"), "u64")
    src = kb.addr(src, kb.mul(z, stride_src), es)
    dst = kb.addr(dst, kb.mul(z, stride_dst), es)

    # read: source rows i0 + vec_in * (vi) .. + vec_in - 1 of source column j0 + jc
    v = spec.vec_in
    q = 32 // v
    own_line, own_vec = kb.shr(tid, q.bit_length() - 1), kb.and_(tid, q - 1)
    # every load of the thread is issued before the first shared store waits for its data
    loaded = []
    for line_off, vec_off in _slots(spec, v):
        jc = kb.add(own_line, line_off)
        ri = kb.mul(kb.add(own_vec, vec_off), v)  # row within the tile
        i, j = kb.add(i0, ri), kb.add(j0, jc)
        ok = kb.and_(kb.setp("lt", i, rows), kb.setp("lt", j, cols))
        vals = [kb.mov(0, bt) for _ in range(v)]
        with kb.if_(ok):
            g = kb.addr(src, kb.add(kb.cvt(i, "u64"), kb.mul(kb.cvt(j, "u64"), ld_src)), es)
            got = kb.ld("global", bt, g, vec=v)
            for r, x in zip(vals, got if v > 1 else (got,)):
                kb.assign(r, x)
        loaded.append((kb.addr(base, kb.mad(jc, T + 1, ri), es), vals))
    for s, vals in loaded:  # out-of-range elements land in the tile too (as 0); nothing writes them out
        for e, val in enumerate(vals):
            kb.st("shared", s, val, offset=e * es)
    kb.bar_sync()

    # write: destination rows j0 + vec_out * vj .. (source columns) of destination column i0 + ic
    w = spec.vec_out
    q = 32 // w
    own_line, own_vec = kb.shr(tid, q.bit_length() - 1), kb.and_(tid, q - 1)
    # the whole tile was written above, so the shared reads need no guard; the global stores do
    for line_off, vec_off in _slots(spec, w):
        ic = kb.add(own_line, line_off)
        jr = kb.mul(kb.add(own_vec, vec_off), w)  # source column within the tile
        i, j = kb.add(i0, ic), kb.add(j0, jr)
        ok = kb.and_(kb.setp("lt", i, rows), kb.setp("lt", j, cols))
        s = kb.addr(base, kb.mad(jr, T + 1, ic), es)
        vals = [kb.ld("shared", bt, s, offset=e * (T + 1) * es) for e in range(w)]
        with kb.if_(ok):
            g = kb.addr(dst, kb.add(kb.cvt(j, "u64"), kb.mul(kb.cvt(i, "u64"), ld_dst)), es)
            kb.st("global", g, vals if w > 1 else vals[0])
    return kb.ptx()


def configurations(arch: str) -> list[TransposeSpec]:
    """Every element size and tile (``transpose(tile=)``) with every access width on each side."""
    out = []
    for es in BIT_TYPES:
        widths = TransposeSpec(elem_bytes=es).vec_widths  # each one ``choose_spec`` can pick
        for tile in TILES:
            for vi in widths:
                for vo in widths:
                    out.append(TransposeSpec(arch=arch, elem_bytes=es, tile=tile, vec_in=vi, vec_out=vo))
    return out


#: transposes build for the plain arch (sm_90, never sm_90a): they use no Hopper-only instruction
register_family(FAMILY, TransposeSpec, generate, configurations, archs=("sm_80", "sm_86", "sm_90"))


def _widest(es: int, *counts: int) -> int:
    """The widest vector (elements, at most 16 bytes) dividing every count (element counts and
    byte addresses / es)."""
    for v in (4, 2):
        if v * es <= 16 and all(c % v == 0 for c in counts):
            return v
    return 1


def choose_spec(arch: str, elem_bytes: int, rows: int, cols: int, src_ptr: int, ld_src: int, stride_src: int,
                dst_ptr: int, ld_dst: int, stride_dst: int, tile: int = DEFAULT_TILE) -> TransposeSpec:
    """The kernel for one transpose: ``DEFAULT_TILE`` square tiles, the widest accesses whose vectors stay whole
    and aligned (rows, leading dimension, pointer and batch stride of each side)."""
    es = elem_bytes
    vec_in = _widest(es, rows, ld_src, stride_src, src_ptr // es) if src_ptr % es == 0 else 1
    vec_out = _widest(es, cols, ld_dst, stride_dst, dst_ptr // es) if dst_ptr % es == 0 else 1
    return TransposeSpec(arch=arch.rstrip("a"), elem_bytes=es, tile=tile, vec_in=vec_in, vec_out=vec_out)


def _checked_spec(rows: int, cols: int, ld_src: int, ld_dst: int, elem_bytes: int, batch: int, stride_src: int,
                  stride_dst: int, arch: str, src_ptr: int, dst_ptr: int,
                  tile: int = DEFAULT_TILE) -> tuple[TransposeSpec, tuple]:
    """The spec and grid of one transpose after every argument check (ValueError)."""
    for name, val in (("rows", rows), ("cols", cols), ("batch", batch), ("stride_src", stride_src),
                      ("stride_dst", stride_dst)):
        if not isinstance(val, int) or isinstance(val, bool) or val < 0:
            raise ValueError(f"transpose: {name}={val!r}; a non-negative int")
    if elem_bytes not in BIT_TYPES:
        raise ValueError(f"transpose: elem_bytes={elem_bytes!r}; allowed {tuple(BIT_TYPES)}")
    if ld_src < max(1, rows) or ld_dst < max(1, cols):
        raise ValueError(f"transpose: ld_src={ld_src} (rows {rows}) and ld_dst={ld_dst} (cols {cols}); each "
                         "leading dimension must be at least its matrix's row count")
    if src_ptr % elem_bytes or dst_ptr % elem_bytes:
        raise ValueError(f"transpose: src 0x{src_ptr:x} / dst 0x{dst_ptr:x} not aligned to {elem_bytes} bytes")
    if batch > 1 and stride_dst < ld_dst * (rows - 1) + cols:
        raise ValueError(f"transpose: stride_dst={stride_dst} makes batch entries of dst overlap; it must be >= "
                         f"ld_dst * (rows - 1) + cols = {ld_dst * (rows - 1) + cols}")
    if tile not in TILES:
        raise ValueError(f"transpose: tile={tile!r}; allowed {TILES}")
    spec = choose_spec(arch, elem_bytes, rows, cols, src_ptr, ld_src, stride_src, dst_ptr, ld_dst, stride_dst, tile)
    grid = spec.grid(rows, cols, batch)
    if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ or grid[0] >= 2**31:
        raise ValueError(f"transpose: grid {grid} (rows {rows}, cols {cols}, batch {batch}) exceeds the launch "
                         f"limits (65535 in y and z); split the problem")
    return spec, grid


def transpose_step(rows: int, cols: int, ld_src: int, ld_dst: int, *, elem_bytes: int, batch: int,
                   stride_src: int, stride_dst: int, arch: str, src, dst, src_align: int = 16,
                   dst_offset: int = 0) -> KernelStep:
    """One transpose as a launch-plan step: ``src``/``dst`` map a plan's (pointers, workspace
    address) to the source and destination addresses; ``src_align`` (bytes, a power of two) and
    ``dst_offset`` (the destination's offset in a 16-byte aligned workspace) fix the vector
    widths. Checks as ``transpose``."""
    spec, grid = _checked_spec(rows, cols, ld_src, ld_dst, elem_bytes, batch, stride_src, stride_dst, arch,
                               src_align % 16, dst_offset)

    def bind(ptr, s, ws):
        return (rows, cols, src(ptr, ws), ld_src, stride_src, dst(ptr, ws), ld_dst, stride_dst)

    return KernelStep(spec, grid, THREADS, bind)


def transpose(rows: int, cols: int, src_ptr: int, ld_src: int, dst_ptr: int, ld_dst: int, *, elem_bytes: int,
              batch: int = 1, stride_src: int = 0, stride_dst: int = 0, arch: str | None = None,
              stream: object = None, tile: int = DEFAULT_TILE) -> None:
    """``dst[z] = src[z]^T`` for z < ``batch``: ``src`` column-major ``rows x cols`` (``ld_src``),
    ``dst`` column-major ``cols x rows`` (``ld_dst``); pointers are device addresses, leading
    dimensions and batch strides in elements of ``elem_bytes`` (2, 4 or 8) bytes. One launch,
    asynchronous on ``stream``. ``dst`` must not overlap ``src``. ``tile``: the square tile
    edge (one of ``TILES``; the default is what every caller uses, the other is for sweeps).

    Raises ValueError (before any launch) for negative sizes, leading dimensions below the
    rows, misaligned pointers, batch entries of dst that would overlap, or a grid over the
    limits (cols above 65535 tiles, batch above 65535)."""
    spec, grid = _checked_spec(rows, cols, ld_src, ld_dst, elem_bytes, batch, stride_src, stride_dst,
                               arch or device_facts().arch, src_ptr, dst_ptr, tile)
    if rows == 0 or cols == 0 or batch == 0:
        return
    plan = PLANS.single((device_facts().ordinal, spec, grid), lambda: spec, grid, THREADS)
    plan.run((), (rows, cols, src_ptr, ld_src, stride_src, dst_ptr, ld_dst, stride_dst), stream)
