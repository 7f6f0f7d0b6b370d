# Sourced by the test scripts. skip REASON: a test that cannot run here (no root, a tool missing)
# exits 77, which ctest reports as skipped (SKIP_RETURN_CODE) - but only outside CI: under
# CI=true a skip is a failure, since CI installs everything (scripts/setup-tests.sh).
skip() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $* (CI=true: a test that cannot run is a failure)"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
