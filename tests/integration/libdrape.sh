#!/bin/sh
# What a DCC plugin loads: tests/integration/libdrape.sh BUILD_DIR.
# libdrape.so must not bring the solver, OpenVDB, TBB, Imath or the C++
# runtime into Houdini, Maya or Blender (they ship their own), must export
# drape_* and nothing else, keep its SONAME, and install as a library a
# program finds through pkg-config. Prints PASS/FAIL lines and ends with
# "N passed, M failed".
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SO="$TOP/$B/libdrape.so"
T=$(mktemp -d /tmp/drape-libso-XXXXXX)
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

if [ ! -f "$SO" ]; then
	fail setup "$SO was not built"
	finish
fi

# ---- What it loads ----------------------------------------------------------
ldd "$SO" >"$T/ldd" 2>&1
if grep -Eiq 'openvdb|tbb|imath|stdc\+\+|libuv|not found' "$T/ldd"; then
	fail ldd_no_solver_deps "$(grep -Ei 'openvdb|tbb|imath|stdc\+\+|libuv|not found' "$T/ldd" | tr '\n' ' ')"
elif grep -q libnng "$T/ldd" && grep -q libmsgpackc "$T/ldd" && grep -q libcjson "$T/ldd"; then
	pass ldd_no_solver_deps
else
	fail ldd_no_solver_deps "nng, msgpack-c or cJSON missing: $(tr '\n' ' ' <"$T/ldd")"
fi

# Its own needs, not those of its dependencies: exactly these libraries.
readelf -d "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort >"$T/needed"
extra=$(grep -Ev '^(libnng|libmsgpackc|libcjson|libc|libm|libpthread)\.so' "$T/needed")
if [ -z "$extra" ] && [ -s "$T/needed" ]; then
	pass needed_only_nng_msgpack_cjson_libc
else
	fail needed_only_nng_msgpack_cjson_libc "DT_NEEDED: $(tr '\n' ' ' <"$T/needed")"
fi

# No C++ (mangled names) and no OpenVDB among what it calls.
if nm -D --undefined-only "$SO" | grep -Eq ' _Z|openvdb|tbb'; then
	fail no_cxx_imports "$(nm -D --undefined-only "$SO" | grep -E ' _Z|openvdb|tbb' | head -5 | tr '\n' ' ')"
else
	pass no_cxx_imports
fi

soname=$(readelf -d "$SO" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" = libdrape.so.1 ]; then pass soname; else fail soname "SONAME is '$soname'"; fi

# No AVX-512 (zmm or mask registers, the EVEX-only registers 16-31): with
# SIMD=avx512 only the solver's kernels use it, and a plugin's library must
# load on a desktop CPU without it.
objdump -d "$SO" >"$T/dis" 2>&1
evex='%zmm|%k[1-7]|%[xy]mm(1[6-9]|2[0-9]|3[01])'
if ! grep -q 'drape_client' "$T/dis"; then
	fail no_avx512 "objdump -d gave no code: $(head -c 200 "$T/dis")"
elif grep -Eq "$evex" "$T/dis"; then
	fail no_avx512 "$(grep -E "$evex" "$T/dis" | head -3 | tr '\n' ' ')"
else
	pass no_avx512
fi

# ---- What it exports ----------------------------------------------------------
# The version node (LIBDRAPE_1, an absolute symbol) names no code.
nm -D --defined-only "$SO" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort >"$T/exports"
count=$(wc -l <"$T/exports")
others=$(grep -v '^drape_' "$T/exports" | head -5 | tr '\n' ' ')
if [ -z "$others" ] && [ "$count" -ge 40 ]; then
	pass "exports_only_drape ($count symbols)"
else
	fail exports_only_drape "$count symbols; not drape_*: $others"
fi
missing=
for f in drape_version drape_abi_struct_size drape_scene_load drape_connect drape_next_frame \
	drape_frames_each drape_strerror drape_sim_params_default drape_material_preset; do
	grep -qx "$f" "$T/exports" || missing="$missing $f"
done
if [ -z "$missing" ]; then pass exports_the_api; else fail exports_the_api "missing:$missing"; fi
# Internal drape_-named helpers and the solver stay out.
leaked=$(grep -E '^drape_(obj|anim|sim_create|sim_step|sdf|pool|preflight$)' "$T/exports" | tr '\n' ' ')
if [ -z "$leaked" ]; then pass no_internal_exports; else fail no_internal_exports "$leaked"; fi

# The program built like a plugin needs libdrape.so.1 and libc, nothing else.
P="$TOP/$B/itests/test_libdrape"
if [ -x "$P" ]; then
	pn=$(readelf -d "$P" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
	if [ "$pn" = "libc.so.6 libdrape.so.1 " ]; then pass plugin_program_links_only_libdrape
	else fail plugin_program_links_only_libdrape "DT_NEEDED: $pn"; fi
else
	fail plugin_program_links_only_libdrape "$P was not built"
fi

# ---- make install-lib / uninstall-lib ------------------------------------------
D="$T/dest"
if make -s -C "$TOP" BUILD="$B" DESTDIR="$D" PREFIX=/usr install-lib >"$T/inst" 2>&1; then
	L="$D/usr/lib"
	if [ -f "$L/libdrape.so.1" ] && [ ! -L "$L/libdrape.so.1" ] && [ "$(readlink "$L/libdrape.so")" = libdrape.so.1 ] &&
		[ -f "$D/usr/include/drape/drape.h" ] && [ -f "$D/usr/include/drape/scene.h" ] &&
		[ -f "$L/pkgconfig/drape.pc" ]; then
		pass install_lib_files
	else
		fail install_lib_files "$(cd "$D" && find . | sort | tr '\n' ' ')"
	fi
	# A program built with pkg-config against the installed copy runs
	# and reports the headers' version.
	cat >"$T/v.c" <<'EOF2'
#include <drape/drape.h>
#include <drape/scene.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	if (drape_abi_struct_size("drape_scene_info") != sizeof(drape_scene_info))
		return 2;
	printf("%s %s\n", drape_version(), DRAPE_VERSION_STRING);
	return strcmp(drape_version(), DRAPE_VERSION_STRING) != 0;
}
EOF2
	flags=$(PKG_CONFIG_SYSROOT_DIR="$D" PKG_CONFIG_PATH="$L/pkgconfig" PKG_CONFIG_LIBDIR="$L/pkgconfig" \
		pkg-config --cflags --libs drape 2>"$T/pc.err")
	ver=$(PKG_CONFIG_SYSROOT_DIR="$D" PKG_CONFIG_LIBDIR="$L/pkgconfig" pkg-config --modversion drape 2>/dev/null)
	# shellcheck disable=SC2086
	if cc -std=c17 -Wall -Werror -o "$T/v" "$T/v.c" $flags 2>"$T/cc.err" &&
		out=$(LD_LIBRARY_PATH="$L" "$T/v") && [ "$out" = "$ver $ver" ]; then
		pass "pkg_config_build_and_run ($flags; $out)"
	else
		fail pkg_config_build_and_run "flags '$flags' version '$ver': $(cat "$T/pc.err" "$T/cc.err" | head -c 400) $(LD_LIBRARY_PATH="$L" "$T/v" 2>&1)"
	fi
	if make -s -C "$TOP" BUILD="$B" DESTDIR="$D" PREFIX=/usr uninstall-lib >"$T/uninst" 2>&1 &&
		[ -z "$(find "$D" ! -type d)" ]; then
		pass uninstall_lib_removes_all
	else
		fail uninstall_lib_removes_all "left: $(find "$D" ! -type d | tr '\n' ' ') $(head -c 300 "$T/uninst")"
	fi
else
	fail install_lib_files "make install-lib: $(head -c 400 "$T/inst")"
fi

finish
