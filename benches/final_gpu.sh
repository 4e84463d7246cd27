#!/usr/bin/env bash
# A short GPU pass that fits a small device budget: every gpu-marked test (8 workers, per-test
# timeout), then the quick benchmark pass per family and the PTX host costs, each under a hard limit.
#   bash .device-kit/run.sh bash benches/final_gpu.sh      (files land under $OUT)
OUT=${OUT:-/tmp/oxicuda-out}; mkdir -p "$OUT"
timeout 100 python3 -m pytest -q -p no:cacheprovider -n 8 --timeout 60 -m gpu -rfE > "$OUT/gpu-tests.log" 2>&1
echo "gpu tests rc=$? :: $(tail -n 1 "$OUT/gpu-tests.log")"
for fam in memory:25 blas:110 dnn:25 conv:35 attention:45; do
  f=${fam%%:*}; t=${fam##*:}
  timeout "$t" python3 -m oxicuda bench "$f" --quick --json "$OUT/bench-$f.json" >> "$OUT/bench.txt" 2>&1
  echo "bench $f rc=$?"
done
grep -E "^(memory|blas|dnn|conv|attention)/" "$OUT/bench.txt"
grep -E "^(FAILED|ERROR)" "$OUT/gpu-tests.log" | cut -c1-220 | head -30
timeout 35 python3 benches/ptx_costs.py --quick --json "$OUT/ptx_costs.json" >> "$OUT/bench.txt" 2>&1
echo "ptx costs rc=$?"
