#!/bin/sh
# Runs the drape Python package's pytest suite and prints what tests/run.sh
# counts: a PASS or FAIL line per test case and "N passed, M failed", read
# from pytest's JUnit XML report (a test that errors in setup is a failure;
# skipped tests are listed and not counted). No report, or a report with no
# test case in it, is one failure.
#   tests/python/run.sh BUILD_DIR
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
PY=${DRAPE_PYTHON:-/usr/bin/python3}
xml=$(mktemp)
trap 'rm -f "$xml"' EXIT
cd "$TOP" || exit 1
DRAPE_BUILD="$TOP/$B" DRAPE_LIBRARY="${DRAPE_LIBRARY:-$TOP/$B/libdrape.so}" \
	"$PY" -m pytest -rA -p no:cacheprovider --junitxml="$xml" tests/python
rc=$?
"$PY" - "$xml" "$rc" <<'PYEOF'
import sys
import xml.etree.ElementTree as ET

path, rc = sys.argv[1], int(sys.argv[2])
try:
    cases = list(ET.parse(path).getroot().iter("testcase"))
except (OSError, ET.ParseError) as e:
    print("FAIL pytest: no report (%s), pytest exited %d" % (e, rc))
    print("0 passed, 1 failed")
    sys.exit(1)
passed = failed = 0
for c in cases:
    name = "%s::%s" % (c.get("classname"), c.get("name"))
    if c.find("failure") is not None or c.find("error") is not None:
        failed += 1
        print("FAIL " + name)
    elif c.find("skipped") is not None:
        print("SKIP " + name)
    else:
        passed += 1
        print("PASS " + name)
if not cases:
    print("FAIL pytest: no test case ran (pytest exited %d)" % rc)
    failed += 1
elif rc != 0 and failed == 0:
    print("FAIL pytest: exited %d" % rc)
    failed += 1
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PYEOF
