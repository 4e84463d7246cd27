"""The kernel-family registry: every family says which spec class it takes, how it generates PTX,
and which configurations it can produce per arch, so the CLI and tests can enumerate them all.

A library module registers at import::

    register_family("sgemm_tiled", SgemmTiledSpec, generate_sgemm_tiled,
                    lambda arch: [SgemmTiledSpec(arch=arch, tile=t) for t in TILES])

``load_all_families()`` imports the library packages that exist, so that ``configurations()``
sees every family.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .spec import KernelSpec

DEFAULT_ARCHS = ("sm_80", "sm_86", "sm_90", "sm_90a")
LIBRARY_PACKAGES = (
    "oxicuda.blas",
    "oxicuda.dnn",
    "oxicuda.fft",
    "oxicuda.sparse",
    "oxicuda.solver",
    "oxicuda.rand",
    "oxicuda.primitives",
    "oxicuda.memory.copy_kernels",
    "oxicuda.jit.examples",
)


@dataclass(frozen=True)
class Family:
    """One registered kernel family."""

    name: str
    spec_cls: type
    generate: Callable[[KernelSpec], str]
    configurations: Callable[[str], Iterable[KernelSpec]]
    archs: tuple[str, ...]


_lock = threading.Lock()
_families: dict[str, Family] = {}
_by_class: dict[type, Family] = {}


def register_family(
    family: str,
    spec_cls: type,
    generate: Callable[[KernelSpec], str],
    configurations: Callable[[str], Iterable[KernelSpec]],
    archs: Iterable[str] = DEFAULT_ARCHS,
) -> Family:
    """Register a kernel family. ``generate(spec) -> PTX text``; ``configurations(arch)`` yields
    the specs the family can produce for ``arch`` (one of ``archs``). Registering the same name
    again with the same spec class replaces the entry (module reloads); another class raises."""
    if not family or not isinstance(family, str):
        raise ValueError(f"register_family: family={family!r}; a non-empty string")
    if not (isinstance(spec_cls, type) and issubclass(spec_cls, KernelSpec)):
        raise TypeError(
            f"register_family {family!r}: spec_cls={spec_cls!r} must subclass KernelSpec"
        )
    archs = tuple(archs)
    if not archs:
        raise ValueError(f"register_family {family!r}: archs is empty")
    entry = Family(family, spec_cls, generate, configurations, archs)
    with _lock:
        old = _families.get(family)
        if old is not None and old.spec_cls.__qualname__ != spec_cls.__qualname__:
            raise ValueError(
                f"register_family: {family!r} is already registered with {old.spec_cls.__qualname__}; "
                f"cannot register it again with {spec_cls.__qualname__}"
            )
        if old is not None:
            _by_class.pop(old.spec_cls, None)
        owner = _by_class.get(spec_cls)
        if owner is not None and owner.name != family:
            raise ValueError(
                f"register_family: {spec_cls.__qualname__} already belongs to family {owner.name!r}"
            )
        _families[family] = entry
        _by_class[spec_cls] = entry
    return entry


def unregister_family(family: str) -> None:
    """Remove a family (tests use this to clean up a family registered in a fixture)."""
    with _lock:
        entry = _families.pop(family, None)
        if entry is not None:
            _by_class.pop(entry.spec_cls, None)


def families() -> dict[str, Family]:
    """The registered families by name (a copy)."""
    with _lock:
        return dict(_families)


def family(name: str) -> Family:
    """The family called ``name``; KeyError listing the known ones."""
    try:
        return _families[name]
    except KeyError:
        raise KeyError(f"no kernel family {name!r}; registered: {sorted(_families)}") from None


def family_of(spec: KernelSpec) -> Family:
    """The family whose spec class is ``type(spec)`` (or a base of it)."""
    for cls in type(spec).__mro__:
        entry = _by_class.get(cls)
        if entry is not None:
            return entry
    raise KeyError(
        f"no kernel family registered for {type(spec).__qualname__} (family {getattr(spec, 'family', '')!r}); "
        f"registered: {sorted(_families)}"
    )


def generate_ptx(spec: KernelSpec) -> str:
    """Run the spec's family generator and check the result is ASCII PTX text."""
    entry = family_of(spec)
    text = entry.generate(spec)
    if not isinstance(text, str):
        raise TypeError(f"generator of {entry.name!r} returned {type(text).__name__}, not PTX text")
    if not text.isascii():
        bad = next(i for i, ch in enumerate(text) if ord(ch) > 127)
        line = text.count("\n", 0, bad) + 1
        raise ValueError(
            f"generator of {entry.name!r} produced non-ASCII PTX (line {line}); drivers reject it"
        )
    if ".entry" not in text:
        raise ValueError(f"generator of {entry.name!r} produced PTX without an .entry")
    return text


def configurations(arch: str | None = None, family: str | None = None) -> list[KernelSpec]:
    """Every registered configuration: for ``arch`` only (families that support it), or for every
    arch of every family; ``family`` restricts to one family."""
    with _lock:
        entries = [_families[family]] if family is not None else list(_families.values())
    if family is not None and not entries:
        raise KeyError(f"no kernel family {family!r}")
    out: list[KernelSpec] = []
    for entry in entries:
        for a in entry.archs:
            if arch is None or a == arch:
                out.extend(entry.configurations(a))
    return out


def load_all_families(packages: Iterable[str] = LIBRARY_PACKAGES) -> list[str]:
    """Import the library packages that exist (their import registers their families, as do the
    modules a package lists in ``KERNEL_MODULES``); returns the ones imported. A package that is absent is skipped; one that fails for another reason
    raises, since a broken library must not silently vanish from validation."""
    loaded = []
    for name in packages:
        try:
            package = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
                continue
            raise
        # a package whose __init__ stays lazy lists its generator modules here
        for module in getattr(package, "KERNEL_MODULES", ()):
            importlib.import_module(module if "." in module else f"{name}.{module}")
        loaded.append(name)
    return loaded
