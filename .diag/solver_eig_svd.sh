#!/usr/bin/env bash
# solver: the batched/large eigh and svd GPU tests (syevj/gesvdj global variants, fixed in
# s7-solver 8773c97), first plainly, then under compute-sanitizer memcheck; plus the emulator
# regression tests run against the real driver. Output on stdout; the memcheck log tail in $OUT.
set -u
export OXICUDA_CACHE=off
K='test_eigh_batched_small_and_order_128_against_cupy or test_svd_batched_small_and_order_96_against_cupy or test_eigh_global_variant or test_lstsq_pinv or test_solve_triangular_zero or test_eigvalsh_tridiagonal or test_cusolver_compat'
echo "== plain"
python3 -m pytest -q -s -p no:randomly tests/test_solver_gpu.py -k "$K" 2>&1 | tail -40
echo "== emulator regression tests on the GPU"
python3 -m pytest -q -p no:randomly tests/test_solver_eigh.py tests/test_solver_svd.py -k "above_small_max or global_path" 2>&1 | tail -15
echo "== memcheck (the n = 4096 eigvalsh case left out: thousands of launches)"
KM="($K) and not 4096"
compute-sanitizer --tool memcheck --print-limit 20 python3 -m pytest -q -x -p no:randomly tests/test_solver_gpu.py -k "$KM" \
    > "${OUT:-/tmp}/memcheck_eig_svd.log" 2>&1
echo "memcheck rc=$?"
grep -E "Invalid|ERROR SUMMARY|passed|failed|at 0x|by thread" "${OUT:-/tmp}/memcheck_eig_svd.log" | head -40
tail -c 200000 "${OUT:-/tmp}/memcheck_eig_svd.log" > "${OUT:-/tmp}/memcheck_eig_svd.tail.log"; rm -f "${OUT:-/tmp}/memcheck_eig_svd.log"
