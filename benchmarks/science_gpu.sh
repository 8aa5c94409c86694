#!/usr/bin/env bash
# The four science ablations at the GPU budget (issue 50), one command on a lent H200:
#
#   bash benchmarks/science_gpu.sh --prepare   # here, once: corpus, curation (Ray), the carry (<= 64 MiB)
#   bash benchmarks/science_gpu.sh             # on the GPU: probe, then the four ablations (no Ray);
#                                              # writes benchmarks/results/science_gpu/*.ablation.json
#   bash benchmarks/science_gpu.sh --smoke     # all of it at toy size on the CPU (a test does)
#
# The device needs the carry, benchmarks/.science_gpu/carry/science.tar.zst, and wheels of what it
# lacks in .whl/ (PyYAML, orjson, zstandard, webencodings, xxhash: `pip download --only-binary=:all:
# --python-version 3.12 --platform manylinux2014_x86_64 --no-deps -d .whl pyyaml orjson zstandard
# webencodings xxhash`); they are installed into a private folder when those imports fail, as
# benchmarks/gpu_check.sh does. Extra arguments go to science_gpu.py (e.g. --only doremi).
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
. benchmarks/carry_wheels.sh
carry_wheels science_gpu.sh "import orjson, zstandard, yaml, webencodings, xxhash"
export PYTHONUNBUFFERED=1
case "${1:-}" in
  --smoke) shift; exec "$PY" benchmarks/science_gpu.py smoke --smoke "$@" ;;
  --prepare) shift; exec "$PY" benchmarks/science_gpu.py prepare "$@" ;;
  *) "$PY" benchmarks/science_gpu.py probe || echo "science_gpu.sh: the probe failed; running the ablations" >&2
     "$PY" benchmarks/science_gpu.py run "$@"; rc=$?
     # on a lent machine, what is under $OUT comes back
     if [ -n "${OUT:-}" ]; then cp -r benchmarks/results/science_gpu "$OUT"/; fi
     exit $rc ;;
esac
