#!/usr/bin/env bash
# The GPU checks: the tests marked `gpu` (skipped in CI, which has no GPU), bench/bench_gpu.py and
# bench/bench_gpu_packing.py (fractional GPUs, issue 42), on a machine with an NVIDIA GPU and a CUDA build of
# PyTorch. Logs and bench/results-style JSON go to $OUT.
#
# WHEELS=folder: install the project's other dependencies from wheels there first, into /tmp/site (for a machine
# with no package index, whose own Python already has torch); otherwise they must be importable already.
# BENCH_COMMIT: the commit measured, when the checkout has no .git.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/jupyter_dist-gpu-check}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
if [ -n "${WHEELS:-}" ]; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        "$WHEELS"/*.whl || exit 1
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PATH="/tmp/site/bin:$PATH"
fi
export PYTHONUNBUFFERED=1 JUPYTER_DIST_STORE="$OUT/store.sqlite"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PYTHON" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'

# Each stage has a ceiling, so that a hang in one still leaves the others' figures.
timeout "${TESTS_TIMEOUT:-300}" "$PYTHON" -m pytest -m gpu -p no:cacheprovider -q -rA --timeout 150 \
    tests/gpu tests/runtime/test_gpus.py tests/ddp/test_data_parallel.py tests/ddp/test_training_features.py \
    2>&1 | tee "$OUT/gpu-tests.log"
tests=$?
BENCH_RESULTS="$OUT" timeout "${BENCH_TIMEOUT:-240}" "$PYTHON" bench/bench_gpu.py 2>&1 | tee "$OUT/bench-gpu.log"
bench=$?
BENCH_RESULTS="$OUT" timeout "${PACKING_TIMEOUT:-300}" "$PYTHON" bench/bench_gpu_packing.py 2>&1 \
    | tee "$OUT/bench-gpu-packing.log"
packing=$?
echo "tests exit $tests, bench exit $bench, packing exit $packing"
exit $((tests || bench || packing))
