#!/usr/bin/env bash
# The runner cargo starts every test binary with (scripts/test.sh sets it as
# CARGO_TARGET_<triple>_RUNNER): libtest then prints each test's time (`--report-time`, an
# unstable libtest option, enabled for the test binary alone; the compilers never see
# RUSTC_BOOTSTRAP, so nothing is rebuilt).
exec env RUSTC_BOOTSTRAP=1 "$@" -Z unstable-options --report-time
