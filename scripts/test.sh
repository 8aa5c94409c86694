#!/usr/bin/env bash
# The README's test command: installs what the suite needs on a fresh machine, then runs it.
#
#   bash scripts/test.sh [pytest arguments]
#
# * Chromium (tests/test_report.py drives a real headless browser): pip cannot install it;
#   Debian's `chromium` package is installed with apt-get when no browser is on PATH
#   (as root, else through sudo). Set DATACURATE_SKIP_BROWSER_INSTALL=1 to leave the
#   system alone (the browser tests then fail, naming what is missing).
# * .venv with the package and its test extras (pip install -e ".[test]").
# * ruff check . (the rules in pyproject.toml [tool.ruff.lint]), then pytest -q; the tests run
#   either way, and the script fails if either fails ("no tests collected", pytest's exit 5,
#   is a failure).
set -uo pipefail
cd "$(dirname "$0")/.."

browser() { command -v chromium || command -v chromium-browser || command -v google-chrome; }
# GNU wget: tests/test_wget_crawl.py crawls pages served on the loopback with it (an independent WARC writer)
missing=""
command -v wget >/dev/null || missing="wget"

browser >/dev/null || missing="$missing chromium"
if [ -z "${DATACURATE_SKIP_BROWSER_INSTALL:-}" ] && [ -n "$missing" ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      echo "scripts/test.sh:$missing missing and this user cannot install it (not root, no sudo);" \
           "install Debian's chromium package, or the browser tests will fail" >&2
    fi
  fi
  if [ "$(id -u)" -eq 0 ] || [ -n "$sudo" ]; then
    if ! command -v apt-get >/dev/null; then
      echo "scripts/test.sh:$missing missing and there is no apt-get: install it by hand" >&2
    else
      echo "scripts/test.sh: installing$missing (apt-get)" >&2
      $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null \
        || echo "scripts/test.sh: apt-get install$missing failed; the browser / wget tests will fail or skip" >&2
    fi
  fi
fi

python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" || exit $?
.venv/bin/ruff check .
lint=$?
[ "$lint" -eq 0 ] || echo "scripts/test.sh: ruff check failed (fix the lines above; the tests run anyway)" >&2
.venv/bin/python -m pytest -q --durations=20 "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests" >&2
  exit 1
fi
[ "$rc" -ne 0 ] && exit "$rc"
exit "$lint"
