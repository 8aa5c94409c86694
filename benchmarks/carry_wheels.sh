# Sourced by the device scripts (gpu_check.sh, model_classifier_gpu.sh, science_gpu.sh): the
# wheels carried in .whl/ are installed into a private folder (/tmp/dc-site, put first on
# PYTHONPATH) when the imports the script needs fail on the machine's own Python.
#   carry_wheels NAME "import a, b, c"      (needs $PY)
carry_wheels() {
  if ls .whl/*.whl >/dev/null 2>&1 && ! "$PY" -c "$2" 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/dc-site .whl/*.whl \
      || { echo "$1: installing .whl/ failed" >&2; exit 2; }
    export PYTHONPATH="/tmp/dc-site${PYTHONPATH:+:$PYTHONPATH}"
  fi
}
