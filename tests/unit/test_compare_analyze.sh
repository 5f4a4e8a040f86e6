#!/usr/bin/env bash
# test_compare_analyze.sh - the parsers (ftrace, perf, btd_events lines), the
# call decoder and the window/truth arithmetic of scripts/compare_analyze.py
# (`make bench-compare`) on small built-in samples. No root, no kernel, < 1 s.
cd "$(dirname "$0")/../.." || exit 1
exec python3 scripts/compare_analyze.py selftest
