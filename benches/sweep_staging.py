"""Sweep the pinned staging path (``oxicuda/memory/staging.py``) over copy threads and chunk
sizes, for 256 MiB host-to-device and device-to-host copies of a pageable numpy array, beside
plain ``cuMemcpyHtoD/DtoH`` of the same array, a pinned source (the peak), and the host-only
copy between pageable and pinned memory with the same threads; then the default buffer against
plain copies at smaller sizes (where ``STAGING_THRESHOLD_BYTES`` belongs).

    python benches/sweep_staging.py [--json PATH] [--mib 256] [--repeats 5] [--tiny]

Each figure is the median of ``--repeats`` host-clock timings of one whole synchronous copy, in
GB/s; every staged copy is checked byte for byte against the source. ``--tiny`` (any backend,
the emulator included) copies 3 MiB with small chunks: it keeps this script working in the test
suite, and its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from oxicuda.memory import staging  # after the path insert

THREADS = (1, 2, 4, 6, 8, 12, 16)
CHUNKS_MIB = (1, 2, 4, 8)
SIZES_MIB = (1, 2, 4, 8, 16, 32, 64)


def _gbps(nbytes: int, fn, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return nbytes / statistics.median(samples) / 1e9


def _host_copy(dst: np.ndarray, src: np.ndarray, pool) -> None:
    """``dst[:] = src`` split across the pool's threads (the host-only bound of staging)."""
    n, parts = dst.size, pool._max_workers
    step = -(-n // parts)
    for f in [pool.submit(np.copyto, dst[i:i + step], src[i:i + step]) for i in range(0, n, step)]:
        f.result()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args(argv)

    import oxicuda
    from oxicuda.driver.backend import api

    drv = api()
    if drv.name != "cuda" and not args.tiny:
        print(f"no GPU (backend {drv.name}): run with --tiny to check the script only")
        return 2
    nbytes = (3 << 20) if args.tiny else args.mib << 20
    threads = (1, 2) if args.tiny else THREADS
    chunks = ((1 << 19), (1 << 20)) if args.tiny else tuple(c << 20 for c in CHUNKS_MIB)
    sizes = ((1 << 18), nbytes) if args.tiny else tuple(c << 20 for c in SIZES_MIB if c << 20 <= nbytes)
    repeats = 1 if args.tiny else args.repeats
    rng = np.random.default_rng(0)
    src = rng.integers(0, 256, nbytes, dtype=np.uint8)
    back = np.zeros_like(src)
    dev = oxicuda.empty(nbytes, np.uint8)
    rows: list[dict] = []

    def row(kind: str, direction: str, gbps: float, **extra) -> None:
        rows.append({"kind": kind, "direction": direction, "GB/s": round(gbps, 2), **extra})
        detail = " ".join(f"{k}={v}" for k, v in extra.items())
        print(f"{kind:10s} {direction:4s} {gbps:7.2f} GB/s  {detail}", flush=True)

    hptr, view = drv.mem_alloc_host(nbytes)
    pinned = np.frombuffer(view, dtype=np.uint8)
    try:
        row("plain", "h2d", _gbps(nbytes, lambda: drv.memcpy_htod(dev.ptr, src.ctypes.data, nbytes), repeats))
        row("plain", "d2h", _gbps(nbytes, lambda: drv.memcpy_dtoh(back.ctypes.data, dev.ptr, nbytes), repeats))
        if not np.array_equal(back, src):
            raise AssertionError("plain copy round trip differs")
        row("pinned", "h2d", _gbps(nbytes, lambda: drv.memcpy_htod(dev.ptr, hptr, nbytes), repeats))
        row("pinned", "d2h", _gbps(nbytes, lambda: drv.memcpy_dtoh(hptr, dev.ptr, nbytes), repeats))
        for n in threads:
            with ThreadPoolExecutor(n) as pool:
                row("host-only", "to-pinned", _gbps(nbytes, lambda: _host_copy(pinned, src, pool), repeats), threads=n)
                row("host-only", "from-pinned", _gbps(nbytes, lambda: _host_copy(back, pinned, pool), repeats), threads=n)
        for chunk in chunks:
            for n in threads:
                buf = staging.StagingBuffer(chunk, workers=n)
                try:
                    back[:] = 0
                    up = _gbps(nbytes, lambda: buf.upload(dev.ptr, src), repeats)
                    down = _gbps(nbytes, lambda: buf.download(back, dev.ptr), repeats)
                    if not np.array_equal(back, src):
                        raise AssertionError(f"staged round trip differs (workers={n}, chunk={chunk})")
                    row("staging", "h2d", up, workers=n, chunk_mib=chunk / (1 << 20))
                    row("staging", "d2h", down, workers=n, chunk_mib=chunk / (1 << 20))
                finally:
                    buf.close()
        # small copies: the default buffer against plain copies, for STAGING_THRESHOLD_BYTES
        buf = staging.StagingBuffer()
        try:
            for size in sizes:
                part, out = src[:size], back[:size]
                row("plain", "h2d", _gbps(size, lambda: drv.memcpy_htod(dev.ptr, part.ctypes.data, size), repeats), mib=size / (1 << 20))
                row("plain", "d2h", _gbps(size, lambda: drv.memcpy_dtoh(out.ctypes.data, dev.ptr, size), repeats), mib=size / (1 << 20))
                row("staging", "h2d", _gbps(size, lambda: buf.upload(dev.ptr, part), repeats), mib=size / (1 << 20),
                    workers=buf.workers, chunk_mib=buf.chunk_bytes / (1 << 20))
                out[:] = 0
                row("staging", "d2h", _gbps(size, lambda: buf.download(out, dev.ptr), repeats), mib=size / (1 << 20),
                    workers=buf.workers, chunk_mib=buf.chunk_bytes / (1 << 20))
                if not np.array_equal(out, part):
                    raise AssertionError(f"staged round trip of {size} bytes differs")
        finally:
            buf.close()
    finally:
        drv.mem_free_host(hptr)
    if args.json:
        Path(args.json).write_text(json.dumps({"bytes": nbytes, "repeats": repeats, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
