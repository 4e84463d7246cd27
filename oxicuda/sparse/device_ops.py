"""The device work under the sparse matrices: format conversions through oxicuda.primitives and
the sparse kernels, each launched through a cached one-step LaunchPlan. Only sizes (nnz after a
duplicate sum or a selection) come back to the host."""

from __future__ import annotations

import numpy as np

from oxicuda import primitives as prim
from oxicuda.driver.facts import device_facts
from oxicuda.memory.array import DeviceArray, empty, zeros
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache

from .kernels.convert import THREADS, ConvertSpec

PLANS = PlanCache("sparse")
INDEX = np.dtype(np.int32)
MAX_INDEX = (1 << 31) - 1


def _args(p, s, ws):
    return s


def run1(spec, grid: int, args: tuple, stream: object, block: int = THREADS) -> None:
    """Launch ``spec`` over ``grid`` CTAs of ``block`` threads with ``args`` (plan cached per spec
    and geometry)."""
    key = (device_facts().ordinal, spec, grid, block)
    plan = PLANS.get(key)
    if plan is None:
        plan = PLANS.get_or_build(key, lambda: LaunchPlan(spec.family, [KernelStep(spec, grid, block, _args)]))
    plan.run((), args, stream)


def blocks(n: int, per: int = THREADS) -> int:
    return max(1, -(-n // per))


def arch() -> str:
    return device_facts().arch


def expand_rows(indptr: DeviceArray, nnz: int, stream: object) -> DeviceArray:
    """One row index per stored entry of a CSR (int32)."""
    n_major = indptr.size - 1
    rows = empty((nnz,), INDEX, stream=stream)
    if nnz and n_major:
        run1(ConvertSpec(arch=arch(), variant="expand_rows"), blocks(n_major, THREADS // 32),
             (indptr.ptr, rows.ptr, n_major), stream)
    return rows


def indptr_from_sorted(major: DeviceArray, n_major: int, stream: object) -> DeviceArray:
    nnz = major.size
    indptr = empty((n_major + 1,), INDEX, stream=stream)
    run1(ConvertSpec(arch=arch(), variant="indptr"), blocks(nnz + 1),
         (major.ptr if nnz else indptr.ptr, indptr.ptr, nnz, n_major), stream)
    return indptr


def order_bits(major: DeviceArray, minor: DeviceArray, stream: object) -> int:
    """The ``ORDER_*`` bits of how the (major, minor) pairs already lie (a flag word read back,
    like a size)."""
    from .kernels.convert import ORDER_ITEMS

    nnz = major.size
    word = zeros((1,), np.uint32, stream=stream)
    if nnz > 1:
        run1(ConvertSpec(arch=arch(), variant="order"), blocks(nnz, THREADS * ORDER_ITEMS),
             (major.ptr, minor.ptr, word.ptr, nnz), stream)
    return int(word.get()[0])


def compress(major: DeviceArray, minor: DeviceArray, data: DeviceArray, n_major: int, n_minor: int,
             sum_duplicates: bool, stream: object, copy: bool = True) -> tuple[DeviceArray, DeviceArray, DeviceArray]:
    """COO entries sorted by (major, minor) and, with ``sum_duplicates``, merged: returns (data,
    indices, indptr) of the compressed form.

    One pass first finds how the entries lie: already sorted, the sort is skipped (and with
    ``copy=False`` and no duplicates the result shares ``data`` and ``minor``, as scipy's
    ``copy=False`` allows); minor already ascending (CSR -> CSC: the rows), a stable radix sort of
    the major index alone (its bits only) orders them; otherwise a radix sort of the u64 keys
    major * n_minor + minor (the bits the largest key needs) and a gather. Duplicates merge by a
    reduce-by-key of those keys."""
    from .kernels.convert import ORDER_DUPLICATE, ORDER_MINOR_UNSORTED, ORDER_UNSORTED

    nnz = data.size
    if nnz == 0:
        return empty((0,), data.dtype, stream=stream), empty((0,), INDEX, stream=stream), \
            zeros((n_major + 1,), INDEX, stream=stream)
    a = arch()
    bits = order_bits(major, minor, stream)
    if not bits & ORDER_UNSORTED:
        smaj = major
        if sum_duplicates and bits & ORDER_DUPLICATE:
            return _merge_sorted(major, minor, data, n_major, n_minor, stream)
        smin, sdata = (minor.copy(), data.copy()) if copy else (minor, data)
        return sdata, smin, indptr_from_sorted(smaj, n_major, stream)
    if not bits & ORDER_MINOR_UNSORTED:
        end_bit = max(1, (n_major - 1).bit_length())
        # int32 keys: their order-preserving image flips bit 31 only, so for indices below
        # 2^end_bit the low end_bit bits order them
        smaj, perm = prim.argsort(major, end_bit=end_bit, return_keys=True, stream=stream)
        smin = prim.gather(minor, perm, stream=stream)
        sdata = prim.gather(data, perm, stream=stream)
        if sum_duplicates:
            return _merge_sorted(smaj, smin, sdata, n_major, n_minor, stream)
        return sdata, smin, indptr_from_sorted(smaj, n_major, stream)
    key = empty((nnz,), np.uint64, stream=stream)
    run1(ConvertSpec(arch=a, variant="coo_key"), blocks(nnz),
         (major.ptr, minor.ptr, key.ptr, nnz, n_minor), stream)
    end_bit = max(1, (n_major * n_minor - 1).bit_length())
    sk, perm = prim.argsort(key, end_bit=end_bit, return_keys=True, stream=stream)
    sdata = prim.gather(data, perm, stream=stream)
    if sum_duplicates:
        sk, sdata = prim.reduce_by_key(sk, sdata, "sum", stream=stream)
    return _split(sk, sdata, n_major, n_minor, stream)


def _merge_sorted(major, minor, data, n_major: int, n_minor: int, stream: object):
    """Entries already sorted by (major, minor), duplicates summed: keys, reduce-by-key, split."""
    nnz = data.size
    key = empty((nnz,), np.uint64, stream=stream)
    run1(ConvertSpec(arch=arch(), variant="coo_key"), blocks(nnz),
         (major.ptr, minor.ptr, key.ptr, nnz, n_minor), stream)
    sk, sdata = prim.reduce_by_key(key, data, "sum", stream=stream)
    return _split(sk, sdata, n_major, n_minor, stream)


def _split(sk: DeviceArray, sdata: DeviceArray, n_major: int, n_minor: int, stream: object):
    m = sk.size
    out_major = empty((m,), INDEX, stream=stream)
    out_minor = empty((m,), INDEX, stream=stream)
    run1(ConvertSpec(arch=arch(), variant="split_key"), blocks(m),
         (sk.ptr, out_major.ptr, out_minor.ptr, m, n_minor), stream)
    return sdata, out_minor, indptr_from_sorted(out_major, n_major, stream)


def split_positions(pos: DeviceArray, n_minor: int, stream: object) -> tuple[DeviceArray, DeviceArray]:
    """(pos // n_minor, pos % n_minor) of int32 positions."""
    k = pos.size
    major, minor = empty((k,), INDEX, stream=stream), empty((k,), INDEX, stream=stream)
    if k:
        run1(ConvertSpec(arch=arch(), variant="split_pos"), blocks(k),
             (pos.ptr, major.ptr, minor.ptr, k, n_minor), stream)
    return major, minor


def row_lengths(indptr: DeviceArray, stream: object) -> DeviceArray:
    n = indptr.size - 1
    out = empty((n,), INDEX, stream=stream)
    if n:
        run1(ConvertSpec(arch=arch(), variant="row_lengths"), blocks(n), (indptr.ptr, out.ptr, n), stream)
    return out


def nonzero_positions(x: DeviceArray, stream: object) -> DeviceArray:
    """int32 positions of the nonzero elements of a flat float/complex array (dense -> CSR,
    eliminate_zeros): a flag kernel, then the primitives' selection."""
    n = x.size
    flags = empty((n,), np.uint32, stream=stream)
    if n:
        run1(ConvertSpec(arch=arch(), variant="nonzero_flag", dtype=x.dtype.name, to=x.dtype.name),
             blocks(n), (x.ptr, flags.ptr, n), stream)
    return prim.nonzero(flags, stream=stream)


def cast(x: DeviceArray, dtype: np.dtype, stream: object) -> DeviceArray:
    out = empty(x.shape, dtype, stream=stream)
    if x.size:
        run1(ConvertSpec(arch=arch(), variant="cast", dtype=x.dtype.name, to=np.dtype(dtype).name),
             blocks(x.size), (x.ptr, out.ptr, x.size), stream)
    return out


def conj(x: DeviceArray, stream: object) -> DeviceArray:
    if x.dtype.kind != "c":
        return x.copy()
    out = empty(x.shape, x.dtype, stream=stream)
    if x.size:
        run1(ConvertSpec(arch=arch(), variant="conj", dtype=x.dtype.name, to=x.dtype.name),
             blocks(x.size), (x.ptr, out.ptr, x.size), stream)
    return out
