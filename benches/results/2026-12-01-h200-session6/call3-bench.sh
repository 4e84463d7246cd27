# session 6 call 3: every new library's bench cases and the host-cost cases, vendor in the same process
export PYTHONUNBUFFERED=1
run() { fam=$1; lim=$2; shift 2
  timeout $lim python3 -m oxicuda bench $fam "$@" --json "$OUT/bench-$fam$SUFFIX.json" > "$OUT/bench-$fam$SUFFIX.txt" 2>"$OUT/bench-$fam$SUFFIX.err"
  echo "bench $fam $* rc=$?"; grep -E "^ *$fam/" "$OUT/bench-$fam$SUFFIX.txt"; }
run fft 60
run rand 60
run sparse 90
run primitives 80
run solver 150
SUFFIX=-hostcost run blas 25 --case host_cost
SUFFIX=-hostcost run dnn 30 --case host_cost
