#!/usr/bin/env bash
# One GPU session on the device machine: info, the whole suite on the real driver, the GPU tests
# under compute-sanitizer memcheck, and the benchmarks. Everything lands under $OUT.
#   bash .device-kit/run.sh bash benches/gpu_session.sh [tests|sanitize|bench|bench-full|costs]...
set -o pipefail
OUT=${OUT:-/tmp/oxicuda-out}
mkdir -p "$OUT"
# the driver's own JIT cache, shared by the test workers (the default 256 MiB is too small)
export CUDA_CACHE_MAXSIZE=${CUDA_CACHE_MAXSIZE:-4294967296}
# a new virtual environment /tmp/oxivenv over a copy of this checkout (/tmp/oxicuda-src, the
# working directory afterwards). The device machine is offline: pip takes wheels only from the
# device kit and .wheels/ (PIP_FIND_LINKS; oxicuda builds with its own standard-library backend);
# the venv sees the machine's numpy/pytest through a .pth line, like --system-site-packages would
# for a plain system Python.
new_venv() {
  local site
  site=$(python3 -c "import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))")
  echo "machine packages: $site"
  rm -rf /tmp/oxivenv /tmp/oxicuda-src && python3 -m venv --system-site-packages /tmp/oxivenv
  echo "$site" > "$(/tmp/oxivenv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/machine-packages.pth"
  cp -r . /tmp/oxicuda-src && cd /tmp/oxicuda-src || return 1
  export PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/.device-kit $PWD/.wheels"
}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests sanitize bench)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,memory.used --format=csv > "$OUT/info.log" 2>&1
python3 -m oxicuda info >> "$OUT/info.log" 2>&1
for step in "${steps[@]}"; do
  case "$step" in
    tests)
      timeout 420 python3 -m pytest -q -p no:cacheprovider -x --durations=15 2>&1 | tail -n 300 > "$OUT/gpu-tests.log"
      tail -n 5 "$OUT/gpu-tests.log" ;;
    importtime)
      timeout 120 python3 benches/import_time.py --json "$OUT/import-time.json" > "$OUT/import-time.txt" 2>&1; echo "importtime rc=$?"; cat "$OUT/import-time.txt" ;;
    demo)
      timeout 90 python3 -m oxicuda demo > "$OUT/demo.log" 2>&1; echo "demo rc=$?"; tail -n 3 "$OUT/demo.log" ;;
    venv)
      # the README's commands in a new virtual environment (new_venv), then the driver/interop tests
      { python3 -m pip list 2>/dev/null | grep -iE "^(nvidia-cuda-nvcc|setuptools|wheel|pytest|hypothesis|numpy|ml.dtypes|cffi) "
        new_venv
        env -u PYTHONPATH /tmp/oxivenv/bin/python3 -m pip install -e '.[test]' 2>&1 | tail -n 4; echo "pip install -e .[test] rc=${PIPESTATUS[0]}"
        env -u PYTHONPATH /tmp/oxivenv/bin/python3 -m pip install -e . 2>&1 | tail -n 2; echo "pip install -e . rc=${PIPESTATUS[0]}"
        env -u PYTHONPATH -u OXICUDA_BACKEND timeout 90 /tmp/oxivenv/bin/python3 -m oxicuda demo 2>&1 | tail -n 8; echo "demo rc=${PIPESTATUS[0]}"
        env -u PYTHONPATH -u OXICUDA_BACKEND timeout 90 /tmp/oxivenv/bin/python3 -m pytest -q -p no:cacheprovider tests/test_driver_gpu.py tests/test_interop_gpu.py 2>&1 | tail -n 3
        cd - >/dev/null; } > "$OUT/venv.log" 2>&1; tail -n 14 "$OUT/venv.log" ;;
    venv-full)
      # the README's two commands in a new virtual environment, the [test] extra included: its
      # nvidia-cuda-nvcc wheel (13.0.48, 37 MB, no dependencies) cannot be fetched on this offline
      # machine, so it comes along in .wheels/ (carried: `carry: [".device-kit", ".wheels"]`). The
      # suite runs with the README's command plus -n 16 (xdist) and per-test limits; the machine's
      # pytest plugins are visible through the .pth line (new_venv).
      { ls -la .wheels
        new_venv
        env -u PYTHONPATH /tmp/oxivenv/bin/python3 -m pip install -e '.[test]' 2>&1 | tail -n 3; echo "pip install -e .[test] rc=${PIPESTATUS[0]}"
        env -u PYTHONPATH /tmp/oxivenv/bin/python3 -m pip list 2>/dev/null | grep -iE "^(oxicuda|cffi|nvidia-cuda-nvcc|pytest|hypothesis|pytest-benchmark) "
        env -u PYTHONPATH -u OXICUDA_BACKEND timeout 120 /tmp/oxivenv/bin/python3 -m oxicuda demo 2>&1 | tail -n 8; echo "demo rc=${PIPESTATUS[0]}"
        env -u PYTHONPATH -u OXICUDA_BACKEND OXICUDA_TEST_LOG="$OUT/venv-test-results.log" timeout ${TESTS_LIMIT:-330} /tmp/oxivenv/bin/python3 -m pytest -q \
          -p no:cacheprovider -n 16 --timeout ${TEST_TIMEOUT:-200} --timeout-method=thread --durations=15 -rfE > "$OUT/venv-gpu-tests.log" 2>&1
        echo "venv suite rc=$?"; tail -n 4 "$OUT/venv-gpu-tests.log"
        cd - >/dev/null; } > "$OUT/venv-full.log" 2>&1; tail -n 24 "$OUT/venv-full.log" ;;
    tests-gpu)
      # the gpu-marked tests only (real sizes, vendor comparisons, the emulator differential run)
      OXICUDA_TEST_LOG="$OUT/test-results-gpu.log" timeout ${TESTS_LIMIT:-240} python3 -m pytest -q -p no:cacheprovider -n 16 --timeout 120 -m gpu -rfE > "$OUT/gpu-tests-marked.log" 2>&1
      echo "gpu-marked tests rc=$?"; tail -n 3 "$OUT/gpu-tests-marked.log" ;;
    tests-all)
      # 16 workers: on a GPU most of the suite's time is the driver's first JIT of each kernel
      OXICUDA_FULL_REGISTRY=1 OXICUDA_TEST_LOG="$OUT/test-results.log" timeout ${TESTS_LIMIT:-480} python3 -m pytest -q -p no:cacheprovider -n 16 --timeout ${TEST_TIMEOUT:-150} --timeout-method=thread --continue-on-collection-errors --durations=25 -rfE > "$OUT/gpu-tests.log" 2>&1
      tail -n 5 "$OUT/gpu-tests.log" ;;
    sanitize)
      # the kernel families' GPU tests under memcheck (the largest shapes deselected: memcheck is slow);
      # SANITIZE_FILES narrows it, e.g. to this session's new kernels: tests/test_blas_gemm_tiled_variants_gpu.py
      # tests/test_blas_perfpaths_gpu.py tests/test_blas_wgmma_gpu.py (gpu-marked tests only)
      OXICUDA_TEST_LOG="$OUT/memcheck-tests.log" timeout ${SANITIZE_LIMIT:-300} compute-sanitizer --tool memcheck --error-exitcode 9 --target-processes all \
        python3 -m pytest -q -p no:cacheprovider -n ${SANITIZE_WORKERS:-8} --timeout 200 -m gpu -k "not 4096 and not issue_shape and not bench_shape and not 8192 and not sweep_shape and not skinny_shapes and not wave_models_tile" \
        ${SANITIZE_FILES:-tests/test_driver_gpu.py tests/test_blas_gpu.py tests/test_blas_tensorcore_gpu.py tests/test_blas_wgmma_gpu.py \
        tests/test_blas_perfpaths_gpu.py tests/test_blas_gemm_tiled_variants_gpu.py tests/test_dnn_gpu.py tests/test_dnn_attention_gpu.py \
        tests/test_dnn_attention_wgmma_gpu.py tests/test_dnn_conv_gpu.py tests/test_dnn_conv_tc_gpu.py} > "$OUT/memcheck.log" 2>&1
      echo "memcheck rc=$? (API errors the tests provoke on purpose also set it)"; grep -c "ERROR SUMMARY: 0 errors" "$OUT/memcheck.log"
      echo "kernel memory errors: $(grep -cE "Invalid (__global__|__shared__|__local__)|Misaligned|Out-of-range|Uninitialized|Barrier error|Race" "$OUT/memcheck.log")"
      grep -E "^=+ Program hit" "$OUT/memcheck.log" | sed 's/^=* //' | sort | uniq -c; grep "ERROR SUMMARY" "$OUT/memcheck.log" | sort | uniq -c | head; tail -n 3 "$OUT/memcheck.log" ;;
    sweeps)
      # tuning sweeps (tile/split/algorithm candidates); each prints a table and writes JSON
      for name in ${SWEEPS:-blas conv wgmma conv_tc}; do
        lim=${SWEEP_LIMIT:-60}
        [ -f "benches/sweep_$name.py" ] || continue
        timeout "$lim" python3 "benches/sweep_$name.py" --json "$OUT/sweep-$name.json" ${SWEEP_ARGS:-} > "$OUT/sweep-$name.txt" 2>&1
        echo "sweep $name rc=$?"
      done ;;
    diag)
      # ad-hoc diagnostics carried in .diag/ (not committed): each *.sh there runs with a time limit
      for f in .diag/*.sh; do [ -f "$f" ] && timeout ${DIAG_LIMIT:-120} bash "$f" > "$OUT/diag-$(basename "$f" .sh).log" 2>&1; echo "diag $f rc=$?"; done ;;
    probe)
      # where the emulator had to guess: the GPU's answers as JSON (benches/probe_fidelity.py)
      timeout ${PROBE_LIMIT:-120} python3 benches/probe_fidelity.py --json "$OUT/probe-fidelity.json" > "$OUT/probe-fidelity.txt" 2>&1
      echo "probe rc=$?"; tail -n 25 "$OUT/probe-fidelity.txt" ;;
    bench)
      timeout 300 python3 -m oxicuda bench --quick --json "$OUT/bench-quick.json" 2>"$OUT/bench-progress.log" | tee "$OUT/bench-quick.txt" ;;
    bench-full)
      timeout 540 python3 -m oxicuda bench --json "$OUT/bench-full.json" 2>"$OUT/bench-progress.log" | tee "$OUT/bench-full.txt" ;;
    costs)
      timeout 200 python3 benches/ptx_costs.py --json "$OUT/ptx_costs.json" 2>&1 | tee "$OUT/ptx_costs.txt" ;;
    bench-*)
      # one family's full case list, e.g. bench-attention
      fam=${step#bench-}; lim_var="LIMIT_${fam}"; case_var="CASE_${fam}"
      timeout ${!lim_var:-${FAMILY_LIMIT:-120}} python3 -m oxicuda bench "$fam" ${!case_var:+--case "${!case_var}"} --json "$OUT/bench-$fam.json" > "$OUT/bench-$fam.txt" 2>&1
      echo "bench $fam rc=$?"; grep -E "^$fam/" "$OUT/bench-$fam.txt" ;;
  esac
done
# the device returns at most a few files: pack everything into one archive and keep only that
# (.npz data files stay beside it, each its own file: the archive has a 16 MiB limit too)
tar czf /tmp/oxicuda-results.tgz --exclude='*.npz' -C "$OUT" . 2>/dev/null && find "$OUT" -mindepth 1 ! -name '*.npz' -delete && mv /tmp/oxicuda-results.tgz "$OUT/results.tgz"
