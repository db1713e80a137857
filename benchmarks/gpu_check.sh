#!/usr/bin/env bash
# The GPU check (issue 32), one script to run as is on a machine with an NVIDIA GPU, CuPy and a
# CUDA torch, from the repository root:
#
#     bash benchmarks/gpu_check.sh [RESULTS_DIR]      # default: $OUT if set, else gpu-results/
#
# It installs nothing: aiograd is imported from this checkout (PYTHONPATH) and its pytest plugin
# named with -p, so a machine without network needs only what CuPy's image already holds
# (numpy, anyio, threadpoolctl, pytest, pytest-xdist, hypothesis, uvloop, torch). It writes:
#
#   versions.txt   GPU, driver, CUDA, CuPy, torch, numpy, Python (nvidia-smi and the libraries)
#   tests.txt      tests/test_cuda.py and the device tests, every GPU-marked test among them;
#                  the skips are listed (-rs) so a test skipped for want of the GPU shows
#   bench.txt      benchmarks/bench_cuda.py: the MLP step and a wide backward, aiograd on the
#                  GPU against torch CUDA in the same run
#   models.txt     benchmarks/bench_cuda_models.py: a ResNet-18 step (224x224, batch 32), 64
#                  saliency requests batched, two backward calls on two streams, the event
#                  loop's longest stall while the GPU works
#   summary.txt    one line per step: its exit status and seconds
#
# Sized for a 15-minute device budget with room for a second run after a fix: the tests take
# about a minute, the benchmarks two to four each (BENCH_ARGS and MODELS_ARGS trim them). Each
# step runs under its own timeout, so one that hangs leaves the others' results.
set -u
cd "$(dirname "$0")/.."
RESULTS="${1:-${OUT:-gpu-results}}"
mkdir -p "$RESULTS"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
TEST_TIMEOUT="${TEST_TIMEOUT:-300}"
BENCH_TIMEOUT="${BENCH_TIMEOUT:-300}"
BENCH_ARGS="${BENCH_ARGS:---repeats 10 --warmup 3 --rounds 2 --cpu-repeats 1}"
MODELS_ARGS="${MODELS_ARGS:---repeats 10 --warmup 3}"
: >"$RESULTS/summary.txt"

step() {  # step NAME FILE TIMEOUT COMMAND...: run it, output to FILE, a line in summary.txt
    local name=$1 file=$2 limit=$3
    shift 3
    local start=$SECONDS
    timeout "$limit" "$@" >"$RESULTS/$file" 2>&1
    local rc=$?
    echo "$name: exit $rc, $((SECONDS - start)) s ($file)" | tee -a "$RESULTS/summary.txt"
}

versions() {
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "no nvidia-smi"
    "$PY" - <<'EOF'
import platform
import numpy
print("python", platform.python_version(), "| numpy", numpy.__version__)
try:
    import cupy
    runtime = cupy.cuda.runtime
    print("cupy", cupy.__version__, "| CUDA runtime", runtime.runtimeGetVersion(),
          "| driver API", runtime.driverGetVersion(),
          "| device 0:", runtime.getDeviceProperties(0)["name"].decode())
except Exception as exc:  # (the report says what is missing; the steps below say the rest)
    print("cupy unavailable:", type(exc).__name__, exc)
try:
    import torch
    print("torch", torch.__version__, "| CUDA", torch.version.cuda,
          "| GPU", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
except Exception as exc:
    print("torch unavailable:", type(exc).__name__, exc)
import aiograd
print("aiograd", aiograd.__version__, "| cuda.is_available():", aiograd.cuda.is_available())
EOF
}

versions >"$RESULTS/versions.txt" 2>&1
echo "versions: exit $?, $SECONDS s (versions.txt)" | tee -a "$RESULTS/summary.txt"
# aiograd's pytest plugin: named here unless an installed aiograd already registers it
PLUGIN=(-p aiograd.pytest_plugin)
if "$PY" -c 'import importlib.metadata as m, sys; sys.exit(not any(e.name == "aiograd" for e in m.entry_points(group="pytest11")))' 2>/dev/null; then
    PLUGIN=()
fi
# The device tests: CUDA on the GPU (test_cuda.py's GPU part skips without one), the CPU doubles
# they share code with (simcuda, the CuPy stand-in), streams, and the namespaces that answer
# differently with a GPU (torch.cuda's and torch.backends' stand-ins).
step tests tests.txt "$TEST_TIMEOUT" "$PY" -m pytest "${PLUGIN[@]}" -p no:cacheprovider \
    -o addopts="" -n 4 -q -rs \
    tests/test_cuda.py tests/test_streams.py tests/test_devices.py tests/test_engine_devices.py \
    tests/test_device_types.py tests/test_device_arrays.py tests/test_training_namespaces.py
# shellcheck disable=SC2086  # (BENCH_ARGS is a list of arguments)
step bench bench.txt "$BENCH_TIMEOUT" "$PY" benchmarks/bench_cuda.py $BENCH_ARGS
# ResNet-18 at 224x224 batch 32, 64 saliency requests, two streams, the loop's longest stall
step models models.txt "$BENCH_TIMEOUT" "$PY" benchmarks/bench_cuda_models.py $MODELS_ARGS
cat "$RESULTS/summary.txt"
