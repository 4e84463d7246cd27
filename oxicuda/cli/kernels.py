"""``python -m oxicuda kernels [--validate sm_86,sm_90] [--regs] [--family F]``.

Without ``--validate``: one line per registered configuration (family, arch, spec key).
With it: every configuration of every family that supports each listed arch is generated and
assembled with ptxas (Hopper ``sm_90a`` configurations for ``sm_90a``), one line per failure with
ptxas's message, and the last line ``N kernels valid, M failed``; exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import sys

from oxicuda.ptx import registry
from oxicuda.ptx.validate import PtxasNotFound, assemble_many, find_ptxas, parse_arch_list


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m oxicuda kernels", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "--validate",
        metavar="ARCHS",
        help="comma-separated archs to assemble for, e.g. sm_86,sm_90",
    )
    p.add_argument(
        "--regs",
        action="store_true",
        help="print registers/spills/shared per kernel (with --validate)",
    )
    p.add_argument("--family", help="only this family")
    p.add_argument("--jobs", type=int, default=None, help="parallel ptxas processes")
    p.add_argument(
        "--sample",
        type=int,
        default=None,
        metavar="K",
        help="with --validate: at most K configurations per family and arch, evenly spaced "
        "through its list (a quick pass; without it every configuration is assembled)",
    )
    p.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="with --validate: only the I-th of N interleaved shares of the configurations "
        "(0 <= I < N), so that N processes assemble a large family together",
    )
    return p


def _check_targeted(archs: list[str], family: str | None) -> None:
    """ValueError for an arch no registered configuration (of ``family``, when given) targets:
    validating it would assemble nothing and report success."""
    fams = registry.families()
    targeted = sorted({a for f in fams.values() for a in f.archs} if family is None
                      else fams[family].archs)
    for arch in archs:
        if arch not in targeted:
            whose = f"family {family!r}" if family else "registered kernel"
            raise ValueError(f"no {whose} targets {arch}; the targeted archs are "
                             f"{', '.join(targeted)}")


def _selected(specs: list, sample: int | None) -> list:
    """All of ``specs``, or at most ``sample`` per family, evenly spaced through each family's
    list (deterministic, so a failure reproduces)."""
    if sample is None:
        return specs
    by_family: dict[str, list] = {}
    for spec in specs:
        by_family.setdefault(spec.family, []).append(spec)
    chosen = []
    for group in by_family.values():
        step = max(1, -(-len(group) // sample))
        chosen.extend(group[::step])
    return chosen


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = _parser().parse_args(argv)
    registry.load_all_families()
    if args.family is not None and args.family not in registry.families():
        print(
            f"kernels: no family {args.family!r}; registered: {sorted(registry.families())}",
            file=sys.stderr,
        )
        return 2
    if not args.validate:
        specs = registry.configurations(family=args.family)
        for spec in specs:
            print(f"{registry.family_of(spec).name}\t{spec.arch}\t{spec.key()}")
        print(f"{len(specs)} configurations in {len(registry.families())} families")
        return 0
    try:
        archs = parse_arch_list(args.validate)
        _check_targeted(archs, args.family)
        find_ptxas()
    except (ValueError, PtxasNotFound) as exc:
        print(f"kernels: {exc}", file=sys.stderr)
        return 2
    if args.sample is not None and args.sample < 1:
        print(f"kernels: --sample {args.sample}; must be >= 1", file=sys.stderr)
        return 2
    shard, shards = 0, 1
    if args.shard is not None:
        try:
            shard, shards = (int(v) for v in args.shard.split("/"))
            if not 0 <= shard < shards:
                raise ValueError
        except ValueError:
            print(f"kernels: --shard {args.shard!r}; expected I/N with 0 <= I < N", file=sys.stderr)
            return 2
    jobs, labels, failures = [], [], []
    for arch in archs:
        chosen = _selected(registry.configurations(arch=arch, family=args.family), args.sample)
        for spec in chosen[shard::shards]:
            label = f"{registry.family_of(spec).name} {arch} {spec.key()}"
            try:
                text = registry.generate_ptx(spec)
            # a generator that raises is a failed kernel, reported like one
            except Exception as exc:
                failures.append(f"FAIL {label}: generator raised {type(exc).__name__}: {exc}")
                continue
            jobs.append((text, arch))
            labels.append(label)
    reports = assemble_many(jobs, workers=args.jobs)
    for label, rep in zip(labels, reports):
        if not rep.ok:
            failures.append(f"FAIL {label}: {rep.message}")
        elif args.regs:
            print(
                f"{label}: {rep.registers} registers, {rep.spill_stores}/{rep.spill_loads} bytes spilled "
                f"(stores/loads), {rep.shared_bytes} bytes shared, {rep.stack_bytes} bytes stack"
            )
    for line in failures:
        print(line)
    valid = sum(1 for r in reports if r.ok)
    print(f"{valid} kernels valid, {len(failures)} failed")
    return 1 if failures else 0
