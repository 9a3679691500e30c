#!/bin/sh
# Runs the Blender add-on's test in Debian's Blender, headless, with a user
# folder of its own (the add-on is installed there, not in ~/.config).
#   tests/blender/run.sh BUILD_DIR
# Prints the test's PASS/FAIL lines and its "N passed, M failed".
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BLENDER=${BLENDER:-blender}
if ! command -v "$BLENDER" >/dev/null 2>&1; then
	echo "FAIL blender: $BLENDER is not installed (deploy/deps.sh installs it)"
	echo "0 passed, 1 failed"
	exit 1
fi
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
cd "$TOP" || exit 1
DRAPE_BUILD="$TOP/$B" DRAPE_LIBRARY="${DRAPE_LIBRARY:-$TOP/$B/libdrape.so}" \
	BLENDER_USER_SCRIPTS="$home/scripts" BLENDER_USER_CONFIG="$home/config" \
	"$BLENDER" -b --factory-startup --python-exit-code 1 --python tests/blender/test_addon.py
