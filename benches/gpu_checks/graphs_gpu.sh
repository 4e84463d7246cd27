#!/usr/bin/env bash
# Issue 23 on the H200: the graph tests on the real driver (the capture-rule tests are the
# emulator's fidelity checks: a failure there means the emulator's CUresult or invalidation rule
# differs from the driver's; fix oxicuda/driver/emulator_graph.py to match), then the bench
# figures. Everything lands under $OUT.
#   bash benches/gpu_checks/graphs_gpu.sh
set -o pipefail
OUT=${OUT:-/tmp/oxicuda-out}
mkdir -p "$OUT"
export OXICUDA_BACKEND=cuda
python3 -m pytest -q -rs tests/test_graph_gpu.py tests/test_graph_capture.py tests/test_graph_async.py \
  -p no:cacheprovider 2>&1 | tee "$OUT/graphs_tests.log"
python3 -m pytest -q -s tests/test_graph_gpu.py -k tiny_kernels -p no:cacheprovider \
  2>&1 | grep "per kernel" | tee -a "$OUT/graphs_tests.log"
python3 -m oxicuda bench graphs --json "$OUT/graphs_bench.json" 2>&1 | tee "$OUT/graphs_bench.log"
