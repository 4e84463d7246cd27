"""The kernel cache: spec -> PTX text -> loaded function, in memory and on disk.

Levels:
- memory: ``spec -> PTX`` and ``(context handle, spec) -> oxicuda.driver.module.Function``; a hit
  of ``load(spec)`` is one thread-local read and one dict lookup;
- disk: one file per spec under ``OXICUDA_CACHE_DIR`` (default ``$XDG_CACHE_HOME/oxicuda`` or
  ``~/.cache/oxicuda``), in ``ptx-v<schema>/``; ``OXICUDA_CACHE=off`` disables this level.

On-disk format (one ASCII file ``<key>.ptx``)::

    // oxicuda-kernel-cache key=<key> sha256=<sha256 of the PTX text>
    <the PTX text>

Driver-linked binaries (on by default for the real driver, ``OXICUDA_CUBIN_CACHE=0`` turns them off,
``=1`` turns them on for the emulator too; never without the disk level): beside each
``<key>.ptx``, ``<key>-<device tag>.bin`` holds what ``DriverAPI.link_ptx`` built from it (a cubin
on the real driver), so a warm start loads a binary (~0.1 ms) instead of JIT-compiling PTX
(7-400 ms per kernel on the H200). The device tag is ``<backend>-sm<major><minor>-drv<version>``:
everything the binary depends on beyond the PTX. Format::

    // oxicuda-cubin-cache key=<key> tag=<device tag> sha256=<sha256 of the image>\n<image bytes>

A binary whose header or checksum is wrong, or that the driver refuses to load, is deleted and
rebuilt; any failure of the binary path falls back to loading the PTX (counted in
``cache_info()["disk"]["cubin_errors"]``). The real-driver path (cuLink*) passed its GPU tests on
the H200 (tests/test_ptx_cubin_cache.py).

``key = sha256(spec.key() NUL oxicuda.__version__ NUL CODEGEN_SCHEMA_VERSION NUL code_fingerprint())``: every spec field
(arch and math mode included), the package version and the code-generation schema. Writes go
through a temporary file and ``os.replace`` (atomic); a file whose header or checksum does not
match is counted as corrupt, ignored, and rewritten after regeneration.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path

from .registry import generate_ptx
from .spec import KernelSpec

#: Bump when the generators' output changes for unchanged specs (invalidates disk caches).
CODEGEN_SCHEMA_VERSION = 1
_HEADER = re.compile(r"^// oxicuda-kernel-cache key=([0-9a-f]{64}) sha256=([0-9a-f]{64})\n")
_BIN_HEADER = re.compile(
    rb"^// oxicuda-cubin-cache key=([0-9a-f]{64}) tag=([A-Za-z0-9_.-]+) sha256=([0-9a-f]{64})\n"
)

_lock = threading.RLock()
_ptx: dict[KernelSpec, str] = {}
_functions: dict[tuple[int, KernelSpec], object] = {}
_stats = {
    "function": {"hits": 0, "misses": 0},
    "ptx_memory": {"hits": 0, "misses": 0},
    "disk": {
        "hits": 0, "misses": 0, "writes": 0, "corrupt": 0, "errors": 0,
        "cubin_hits": 0, "cubin_misses": 0, "cubin_writes": 0, "cubin_corrupt": 0,
        "cubin_errors": 0,
    },
}
_device_tags: dict[int, str] = {}
_checked_versions: set[str] = set()


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of every source file of the installed package, read once per process.

    Generators share helper modules, so no single file says whether a spec's PTX changed; with
    the whole package in the key, editing any generator (or installing another build of the same
    version) can never serve stale PTX from the disk cache.
    """
    import oxicuda

    root = Path(oxicuda.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key(spec: KernelSpec) -> str:
    """The disk key of a spec: sha256 of its key, the package version, the schema version and
    the package's code fingerprint."""
    from oxicuda import __version__

    text = f"{spec.key()}\0{__version__}\0{CODEGEN_SCHEMA_VERSION}\0{code_fingerprint()}"
    return hashlib.sha256(text.encode()).hexdigest()


def cache_dir() -> Path:
    """The disk cache folder (not created until a write)."""
    root = os.environ.get("OXICUDA_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "oxicuda")
    return Path(root) / f"ptx-v{CODEGEN_SCHEMA_VERSION}"


def disk_cache_enabled() -> bool:
    """False when ``OXICUDA_CACHE`` is off/0/false/no."""
    return os.environ.get("OXICUDA_CACHE", "").strip().lower() not in ("off", "0", "false", "no")


def _read_disk(key: str) -> str | None:
    path = cache_dir() / f"{key}.ptx"
    try:
        raw = path.read_text(encoding="ascii")
    except FileNotFoundError:
        _stats["disk"]["misses"] += 1
        return None
    except (OSError, UnicodeDecodeError):
        _stats["disk"]["corrupt"] += 1
        return None
    m = _HEADER.match(raw)
    body = raw[m.end() :] if m else ""
    if m is None or m.group(1) != key or hashlib.sha256(body.encode()).hexdigest() != m.group(2):
        _stats["disk"]["corrupt"] += 1
        return None
    _stats["disk"]["hits"] += 1
    return body


def _write_disk(key: str, text: str) -> None:
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        header = f"// oxicuda-kernel-cache key={key} sha256={hashlib.sha256(text.encode()).hexdigest()}\n"
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key[:16]}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="ascii", newline="") as fh:
                fh.write(header + text)
            os.replace(tmp, folder / f"{key}.ptx")
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        _stats["disk"]["writes"] += 1
    except OSError:
        # a read-only or full cache folder must not break kernel loading
        _stats["disk"]["errors"] += 1


def cubin_cache_enabled() -> bool:
    """Whether loads go through the disk cache of driver-linked binaries: ``OXICUDA_CUBIN_CACHE``
    1/on/true/yes or 0/off/false/no decides; unset, it is on for the real driver (where it turns a
    7-400 ms JIT into a ~0.1 ms load; verified on the H200) and off on the emulator (nothing to
    save there). Never without the disk level."""
    flag = os.environ.get("OXICUDA_CUBIN_CACHE", "").strip().lower()
    if not disk_cache_enabled():
        return False
    if flag:
        return flag in ("1", "on", "true", "yes")
    from oxicuda.driver.backend import get_backend

    return get_backend() == "cuda"


def device_tag() -> str:
    """What a linked binary depends on besides its PTX, for the current context's device:
    ``<backend>-sm<major><minor>-drv<driver version>`` (computed once per context)."""
    from oxicuda.driver.backend import api, get_backend
    from oxicuda.driver.context import ensure_context
    from oxicuda.driver.enums import DEVICE_ATTRIBUTES

    ctx = ensure_context()
    tag = _device_tags.get(ctx)
    if tag is None:
        drv = api()
        dev = drv.ctx_get_device()
        major = drv.device_get_attribute(DEVICE_ATTRIBUTES["COMPUTE_CAPABILITY_MAJOR"], dev)
        minor = drv.device_get_attribute(DEVICE_ATTRIBUTES["COMPUTE_CAPABILITY_MINOR"], dev)
        tag = f"{get_backend()}-sm{major}{minor}-drv{drv.driver_get_version()}"
        _device_tags[ctx] = tag
    return tag


def cubin_path(key: str, tag: str) -> Path:
    """Where the linked binary of the PTX entry ``key`` for device ``tag`` lives."""
    return cache_dir() / f"{key}-{tag}.bin"


def _discard(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _read_binary(key: str, tag: str) -> bytes | None:
    path = cubin_path(key, tag)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        _stats["disk"]["cubin_corrupt"] += 1
        return None
    m = _BIN_HEADER.match(raw)
    body = raw[m.end() :] if m else b""
    if (
        m is None
        or m.group(1).decode() != key
        or m.group(2).decode() != tag
        or not body
        or hashlib.sha256(body).hexdigest() != m.group(3).decode()
    ):
        _stats["disk"]["cubin_corrupt"] += 1
        _discard(path)
        return None
    return body


def _write_binary(key: str, tag: str, image: bytes) -> None:
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(image).hexdigest()
        header = f"// oxicuda-cubin-cache key={key} tag={tag} sha256={digest}\n".encode("ascii")
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key[:16]}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(header + image)
            os.replace(tmp, cubin_path(key, tag))
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        _stats["disk"]["cubin_writes"] += 1
    except OSError:
        _stats["disk"]["errors"] += 1


def _load_linked(spec: KernelSpec, text: str):
    """The Module of ``text`` from its cached binary (or a freshly linked and stored one)."""
    from oxicuda.driver.backend import api
    from oxicuda.driver.module import Module

    key, tag = cache_key(spec), device_tag()
    image = _read_binary(key, tag)
    if image is not None:
        try:
            module = Module(text, image=image)
        except Exception:
            _stats["disk"]["cubin_errors"] += 1  # unloadable (e.g. a driver update): rebuild
            _discard(cubin_path(key, tag))
        else:
            _stats["disk"]["cubin_hits"] += 1
            return module
    _stats["disk"]["cubin_misses"] += 1
    image = api().link_ptx(text.encode("ascii"))
    module = Module(text, image=image)  # store only a binary that loaded
    _write_binary(key, tag, image)
    return module


def _load_module(spec: KernelSpec, text: str):
    from oxicuda.driver.module import Module

    if cubin_cache_enabled():
        try:
            return _load_linked(spec, text)
        except Exception:
            # the binary path must never be worse than PTX: count it and load the PTX
            _stats["disk"]["cubin_errors"] += 1
    return Module(text)


def ptx_for(spec: KernelSpec) -> str:
    """The PTX text of ``spec``: from memory, else disk, else the family's generator."""
    text = _ptx.get(spec)
    if text is not None:
        _stats["ptx_memory"]["hits"] += 1
        return text
    with _lock:
        text = _ptx.get(spec)
        if text is not None:
            _stats["ptx_memory"]["hits"] += 1
            return text
        _stats["ptx_memory"]["misses"] += 1
        use_disk = disk_cache_enabled()
        key = cache_key(spec) if use_disk else ""
        text = _read_disk(key) if use_disk else None
        if text is None:
            text = generate_ptx(spec)
            if use_disk:
                _write_disk(key, text)
        _ptx[spec] = text
        return text


def _entry_name(module, spec: KernelSpec) -> str:
    wanted = spec.kernel_name()
    entries = module.entries() if callable(getattr(module, "entries", None)) else module.entries
    if wanted in entries:
        return wanted
    if len(entries) == 1:
        return entries[0]
    raise ValueError(f"PTX of {spec.key()} has entries {entries}; expected one named {wanted!r}")


def _check_driver(text: str) -> None:
    m = re.search(r"^\.version (\d+\.\d+)", text, re.MULTILINE)
    if m is None or m.group(1) in _checked_versions:
        return
    from .target import check_driver_supports

    check_driver_supports(m.group(1))
    _checked_versions.add(m.group(1))


def load(spec: KernelSpec):
    """The loaded ``Function`` of ``spec`` in the current context (generating, caching and
    loading it on first use). This is the call every library makes per launch."""
    from oxicuda.driver.context import ensure_context

    key = (ensure_context(), spec)
    fn = _functions.get(key)
    if fn is not None:
        _stats["function"]["hits"] += 1
        return fn
    with _lock:
        fn = _functions.get(key)
        if fn is not None:
            _stats["function"]["hits"] += 1
            return fn
        _stats["function"]["misses"] += 1
        text = ptx_for(spec)
        _check_driver(text)
        module = _load_module(spec, text)
        fn = module.get_function(_entry_name(module, spec))
        fn.spec = spec
        _functions[key] = fn
        return fn


def cache_info() -> dict[str, dict[str, object]]:
    """Hits and misses per level, with sizes and the disk folder."""
    info = {level: dict(counts) for level, counts in _stats.items()}
    info["function"]["size"] = len(_functions)
    info["ptx_memory"]["size"] = len(_ptx)
    info["disk"]["enabled"] = disk_cache_enabled()
    info["disk"]["cubin_enabled"] = cubin_cache_enabled()
    info["disk"]["dir"] = str(cache_dir())
    return info


def clear_memory_cache() -> None:
    """Forget the memory levels (PTX and loaded functions) and zero the statistics."""
    with _lock:
        _ptx.clear()
        _functions.clear()
        _device_tags.clear()
        for counts in _stats.values():
            for k in counts:
                counts[k] = 0
