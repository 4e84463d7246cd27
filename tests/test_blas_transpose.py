"""The tiled shared-memory transpose (oxicuda.blas.transpose_kernels) against numpy: odd shapes,
leading dimensions above the rows, every element size, scalar and 16-byte access paths, batches
in one launch, destination padding left untouched, and bad input refused before any launch."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import transpose_kernels as tk
from oxicuda.ptx import registry

DTYPES = {2: np.float16, 4: np.float32, 8: np.float64}


def _run(rng, rows, cols, ld_src, ld_dst, es=4, batch=1, offset=0):
    """Transpose random column-major (batch, rows x cols) matrices into a NaN-filled destination;
    return (source storage, destination storage, the launches). ``offset`` elements shift both
    pointers (misaligning 16-byte vectors)."""
    dt = DTYPES[es]
    src_host = rng.standard_normal((batch, cols, ld_src)).astype(dt)  # storage[z, j, i] = A_z[i, j]
    src = oxicuda.asarray(np.concatenate([np.zeros(offset, dt), src_host.ravel()]))
    dst = oxicuda.asarray(np.full(offset + batch * rows * ld_dst, np.nan, dt))
    with oxicuda.trace() as tr:
        tk.transpose(rows, cols, src.ptr + offset * es, ld_src, dst.ptr + offset * es, ld_dst, elem_bytes=es,
                     batch=batch, stride_src=cols * ld_src, stride_dst=rows * ld_dst)
    got = dst.get()
    assert np.isnan(got[:offset]).all()
    return src_host, got[offset:].reshape(batch, rows, ld_dst), tr.launches


def _check(src_host, got, rows, cols):
    want = src_host[:, :, :rows].transpose(0, 2, 1)  # (batch, rows, cols): dst storage[z, i, j] = A_z[i, j]
    np.testing.assert_array_equal(got[:, :, :cols], want)
    assert np.isnan(got[:, :, cols:]).all(), "the destination's leading-dimension padding was written"


@pytest.mark.parametrize("rows,cols", [(1, 17), (17, 1), (127, 17), (17, 127), (1, 1000), (1000, 1), (127, 127)])
def test_transpose_matches_numpy_for_odd_shapes_with_padded_leading_dims(rng, rows, cols):
    src, got, launches = _run(rng, rows, cols, rows + 3, cols + 5)
    _check(src, got, rows, cols)
    assert len(launches) == 1 and launches[0].grid == (-(-rows // 64), -(-cols // 64), 1)
    assert (launches[0].spec.vec_in, launches[0].spec.vec_out) == (1, 1)  # odd sizes: scalar accesses


def test_transpose_1000_by_17_uses_16_byte_loads_and_stores_when_aligned(rng):
    src, got, launches = _run(rng, 1000, 20, 1004, 24)
    _check(src, got, 1000, 20)
    assert (launches[0].spec.vec_in, launches[0].spec.vec_out) == (4, 4)


def test_transpose_misaligned_pointers_fall_back_to_scalar_access(rng):
    src, got, launches = _run(rng, 64, 40, 68, 44, offset=1)
    _check(src, got, 64, 40)
    assert (launches[0].spec.vec_in, launches[0].spec.vec_out) == (1, 1)


@pytest.mark.parametrize("es", [2, 8])
def test_transpose_other_element_sizes(rng, es):
    src, got, launches = _run(rng, 72, 100, 80, 104, es=es)
    _check(src, got, 72, 100)
    assert (launches[0].spec.elem_bytes, launches[0].spec.vec_in) == (es, {2: 4, 8: 2}[es])


def test_transpose_batched_strided_in_one_launch(rng):
    src, got, launches = _run(rng, 65, 33, 68, 36, batch=3)
    _check(src, got, 65, 33)
    assert [rec.grid for rec in launches] == [(2, 1, 3)]


def test_transpose_32_tile_kernel_matches_numpy(rng):
    """choose_spec picks 64x64 tiles; the registered 32x32 variants run through the same launch."""
    rows, cols, ld_src, ld_dst = 45, 70, 48, 72
    from oxicuda.ptx import cache
    from oxicuda.ptx.target import device_arch

    spec = tk.TransposeSpec(arch=device_arch().rstrip("a"), tile=32, vec_in=4, vec_out=2)
    src_host = rng.standard_normal((cols, ld_src)).astype(np.float32)
    src = oxicuda.asarray(src_host)
    dst = oxicuda.asarray(np.full((rows, ld_dst), np.nan, np.float32))
    cache.load(spec)(spec.grid(rows, cols, 1), (tk.THREADS,), [rows, cols, src.ptr, ld_src, 0, dst.ptr, ld_dst, 0])
    _check(src_host[None], dst.get()[None], rows, cols)


def test_transpose_refuses_bad_input_before_launching():
    src, dst = 1 << 20, 1 << 24
    cases = [  # (rows, cols, src_ptr, ld_src, dst_ptr, ld_dst, keywords, message)
        (8, 8, src, 4, dst, 8, {}, "leading dimension"),
        (8, 8, src, 8, dst, 4, {}, "leading dimension"),
        (-1, 8, src, 8, dst, 8, {}, "rows"),
        (8, 8, src, 8, dst, 8, {"batch": 2, "stride_dst": 10}, "overlap"),
        (8, 8, src, 8, dst, 8, {"batch": 70000, "stride_src": 64, "stride_dst": 64}, "limits"),
        (8, 8, src + 2, 8, dst, 8, {}, "aligned"),
        (8, 8, src, 8, dst, 8, {"elem_bytes": 3}, "elem_bytes"),
    ]
    with oxicuda.trace() as tr:
        for rows, cols, sp, lds, dp, ldd, kw, what in cases:
            with pytest.raises(ValueError, match=what):
                tk.transpose(rows, cols, sp, lds, dp, ldd, **{"elem_bytes": 4, "arch": "sm_86", **kw})
    assert tr.launches == []
    with pytest.raises(ValueError, match="vec_in"):
        tk.TransposeSpec(elem_bytes=8, vec_in=4)


@pytest.mark.slow
def test_transpose_configurations_assemble_for_sm86_and_sm90():
    from oxicuda.ptx.validate import PtxasNotFound, assemble_many

    for arch in ("sm_86", "sm_90"):
        specs = registry.configurations(arch, family=tk.FAMILY)
        # element sizes 2, 4 (3 x 3 widths) and 8 (2 x 2) at both tiles
        assert len(specs) == len(tk.configurations(arch)) == 2 * (9 + 9 + 4)
        try:
            reports = assemble_many([(registry.generate_ptx(s), s.arch) for s in specs])
        except PtxasNotFound as exc:
            pytest.skip(str(exc))
        assert all(r.ok for r in reports), [r.message[:300] for r in reports if not r.ok]
        assert max(r.spills for r in reports) == 0


def test_transpose_is_public_and_registered_for_kernels_validate(rng):
    assert oxicuda.blas.transpose is tk.transpose and "transpose_kernels" in oxicuda.blas.KERNEL_MODULES
    registry.load_all_families()
    assert registry.configurations("sm_90", family=tk.FAMILY)
    src, got, _ = _run(rng, 3, 5, 3, 5)
    _check(src, got, 3, 5)
