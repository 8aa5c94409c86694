#!/usr/bin/env bash
# model_classifier on one GPU against the plain Hugging Face loop, one command
# (see benchmarks/model_classifier_gpu.py):
#
#   bash benchmarks/model_classifier_gpu.sh           # on an H100/H200: a few minutes, writes results/model_classifier_gpu.json
#   bash benchmarks/model_classifier_gpu.sh --smoke   # the same code on the CPU, a tiny model (seconds)
#
# On a machine with torch but not datacurate's other dependencies and no package index (the
# lent GPU machines), the wheels in .whl/ are installed into a private folder first when those
# imports fail. Prepare them where pip works (Python of the device, e.g. 3.12):
#   pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d .whl \
#     transformers tokenizers safetensors huggingface_hub pyarrow
# and carry .whl/ to the run (the run tool's `carry`). Extra arguments go to the .py (--docs, --batch-tokens, --out).
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
. benchmarks/carry_wheels.sh
carry_wheels model_classifier_gpu.sh "import transformers, tokenizers, safetensors, huggingface_hub, pyarrow"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" benchmarks/model_classifier_gpu.py "$@"
