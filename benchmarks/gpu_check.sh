#!/usr/bin/env bash
# The training half on one GPU, one command (see benchmarks/gpu_check.py):
#
#   bash benchmarks/gpu_check.sh            # on an H100/H200: <= ~8 minutes, writes results/gpu_check.json
#   bash benchmarks/gpu_check.sh --smoke    # the same parts on the CPU at toy sizes (seconds)
#
# On a machine that has torch but not datacurate's other dependencies and no package index
# (the lent GPU machines), the wheels in .whl/ (see the README's Training section) are
# installed into a private folder first when those imports fail, or when .whl/ carries Liger Kernel
# (the [gpu] extra: train.loss fused on CUDA), torch sees a GPU and Liger does not import. Extra arguments go to
# gpu_check.py (--out, --log, --parts).
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
missing() {
  "$PY" -c "import orjson, zstandard, yaml, webencodings" 2>/dev/null || return 0
  ls .whl/liger_kernel-*.whl >/dev/null 2>&1 || return 1
  "$PY" -c "import sys, torch; sys.exit(not torch.cuda.is_available())" 2>/dev/null || return 1  # CPU: no Liger
  ! "$PY" -c "import liger_kernel" 2>/dev/null
}
if ls .whl/*.whl >/dev/null 2>&1 && missing; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/dc-site .whl/*.whl \
    || { echo "gpu_check.sh: installing .whl/ failed" >&2; exit 2; }
  export PYTHONPATH="/tmp/dc-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
exec "$PY" benchmarks/gpu_check.py "$@"
