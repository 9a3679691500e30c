#!/bin/sh
# Installs the Debian 12 packages drape needs to build, test and fuzz.
# This file is the one place the dependency list lives: the Makefile calls
# it (via `deploy/deps.sh --check`) before building, and CI gets the same list.
#
#   deploy/deps.sh          install whatever is missing (needs root)
#   deploy/deps.sh --check  exit 0 if everything is present, 1 otherwise
#   deploy/deps.sh --list   print the package names
set -eu

PACKAGES="build-essential pkg-config libuv1-dev libnng-dev nng-utils libmsgpack-dev \
libopenvdb-dev libtbb-dev libcjson-dev clang libclang-rt-14-dev openssl \
prometheus systemd"
# The farm tests start a single-node Slurm cluster (tests/integration/farm.sh).
PACKAGES="$PACKAGES slurm-wlm"
PACKAGES="$PACKAGES slurmd"
PACKAGES="$PACKAGES slurmctld"
PACKAGES="$PACKAGES munge"
PACKAGES="$PACKAGES libpng-dev"
PACKAGES="$PACKAGES nodejs chromium"
command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES npm"
PACKAGES="$PACKAGES python3 python3-numpy python3-pytest"  # the drape Python package and its tests
PACKAGES="$PACKAGES blender"  # the Blender add-on's test (blender -b)

missing() {
	for p in $PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
	done
}

case "${1:-}" in
--list) echo $PACKAGES; exit 0 ;;
--check) [ -z "$(missing)" ]; exit $? ;;
"") ;;
*) echo "usage: deploy/deps.sh [--check|--list]" >&2; exit 64 ;;
esac

need=$(missing)
if [ -z "$need" ]; then
	exit 0
fi
echo "drape: installing missing Debian packages:" $need >&2
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		SUDO=sudo
	else
		echo "drape: these packages are missing and this is not root:" >&2
		echo "    $need" >&2
		echo "drape: run as root:  apt-get update && apt-get install -y $need" >&2
		echo "drape: or run:       sudo deploy/deps.sh" >&2
		exit 1
	fi
else
	SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $need
