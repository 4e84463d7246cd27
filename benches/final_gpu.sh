#!/usr/bin/env bash
# A short GPU pass that fits a small device budget: the wgmma GEMM test alone, the gpu-marked tests
# (8 workers, per-test timeout), and the quick benchmark pass per family, each under a hard limit.
OUT=${OUT:-/tmp/oxicuda-out}; mkdir -p "$OUT"
P="python3 -m pytest -q -p no:cacheprovider"
timeout 50 $P --timeout 40 -x tests/test_blas_tensorcore_gpu.py -k wgmma_gemm_on_h200 > "$OUT/wgmma.log" 2>&1
echo "wgmma test rc=$? :: $(tail -n 1 "$OUT/wgmma.log")"
timeout 170 $P -n 8 --timeout 60 -m gpu -k "not wgmma and not tma and not mbarrier" -rfE > "$OUT/gpu-tests.log" 2>&1
echo "gpu tests rc=$? :: $(tail -n 1 "$OUT/gpu-tests.log")"
for fam in memory:30 blas:80 dnn:35 conv:50 attention:50; do
  f=${fam%%:*}; t=${fam##*:}
  timeout "$t" python3 -m oxicuda bench "$f" --quick --json "$OUT/bench-$f.json" >> "$OUT/bench.txt" 2>&1
  echo "bench $f rc=$?"
done
grep -E "^(memory|blas|dnn|conv|attention)/" "$OUT/bench.txt"
grep -E "^(FAILED|ERROR)" "$OUT/gpu-tests.log" | cut -c1-200 | head -40
