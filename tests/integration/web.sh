#!/bin/sh
# The browser view (draped --http) in a real headless Chromium:
# tests/integration/web.sh BUILD_DIR. Starts draped with an auth token and
# --http on a free loopback port, starts the flag scene on it (long enough
# to be running while the page watches), and runs web_page.cjs (playwright-
# core from BUILD/www-npm driving Debian's chromium): no token shows
# nothing, a wrong token is refused, another session's owner token shows
# none of the session, the right tokens show live frames with the counter
# advancing, and prints the median time from draped storing a frame
# (/api/sessions history.stored_ms) to the page drawing it. Then a second
# daemon with --users-file (ana, bob, an admin): each user's API and page
# show only their sessions, the admin's both. Then the colliders: a run of
# tests/data/scenes/web_colliders.json (a sphere and a mesh block) drawn by
# the page in the colliders' colour, posed at the frame shown, and none of
# it for another owner token; the flag run shows no collider pixels.
# Screenshots stay in
# BUILD/test-artefacts/web/. Also checks
# that draped refuses --http without an auth token or off loopback.
# Ends with "N passed, M failed".
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
OUT=$TOP/$B/test-artefacts/web
T=$(mktemp -d /tmp/drape-web-XXXXXX)
export XDG_CACHE_HOME="$T/cache" TMPDIR="$T/tmp"
mkdir -p "$TMPDIR" "$OUT"
dpid=""
rpid=""
cpid=""
cleanup() {
	[ -n "$rpid" ] && kill -INT "$rpid" 2>/dev/null
	[ -n "$cpid" ] && kill -INT "$cpid" 2>/dev/null
	[ -n "$dpid" ] && kill -TERM "$dpid" 2>/dev/null
	[ -n "$dpid" ] && wait "$dpid" 2>/dev/null
	[ -n "$rpid" ] && wait "$rpid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
pass=0
fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
ko() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

# --http is refused without an auth token and off loopback, naming the option.
for args in "--http tcp://127.0.0.1:1" "--http tcp://192.0.2.1:80 --auth-token-file /dev/null" \
	"--http http://127.0.0.1:80 --auth-token-file /dev/null"; do
	# shellcheck disable=SC2086
	err=$("$DRAPED" --listen "ipc://$T/x" --state-dir "$T/x-state" $args 2>&1)
	rc=$?
	if [ $rc -eq 64 ] && echo "$err" | grep -q -- "--http"; then
		ok "draped refuses $args"
	else
		ko "draped refuses $args" "exit $rc: $err"
	fi
done

if ! command -v node >/dev/null 2>&1 || [ ! -d "$TOP/$B/www-npm/node_modules/playwright-core" ]; then
	ko "browser test" "node or playwright-core missing (make builds $B/www-npm)"
	echo "$pass passed, $fail failed"
	exit 1
fi
if [ ! -x /usr/lib/chromium/chromium ] && ! command -v chromium >/dev/null 2>&1; then
	ko "browser test" "chromium is not installed (deploy/deps.sh)"
	echo "$pass passed, $fail failed"
	exit 1
fi

# A free loopback port: ask the kernel for one.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'web-test-token-%s\n' "$$" >"$T/token"
chmod 600 "$T/token"
"$DRAPED" --listen "ipc://$T/ctl" --http "tcp://127.0.0.1:$port" --auth-token-file "$T/token" \
	--state-dir "$T/state" >"$T/draped.log" 2>&1 &
dpid=$!
i=0
until python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' \
	"http://127.0.0.1:$port/" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 600 ] || ! kill -0 "$dpid" 2>/dev/null; then
		ko "draped --http starts" "$(cat "$T/draped.log")"
		echo "$pass passed, $fail failed"
		exit 1
	fi
	sleep 0.1
done
ok "draped --http serves the page"

DRAPE_TOKEN=$(head -n 1 "$T/token") "$DRAPE" run "$TOP/examples/flag.json" --server "ipc://$T/ctl" \
	--frames 100000 --quiet >/dev/null 2>"$T/run.err" &
rpid=$!
i=0
until grep -q 'owner token' "$T/run.err" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 600 ] || ! kill -0 "$rpid" 2>/dev/null; then
		ko "flag session starts" "$(cat "$T/run.err")"
		echo "$pass passed, $fail failed"
		exit 1
	fi
	sleep 0.1
done
session=$(sed -n 's/.*session \([0-9]*\) on .*/\1/p' "$T/run.err")
owner=$(sed -n 's/.*owner token \([0-9a-f]*\).*/\1/p' "$T/run.err")

# The JSON API: 401 without the token; with it, the box and the session with
# a per-frame history whose frames are consecutive and whose strain is a
# finite number, growing while the run goes on (polled, generous deadline).
api() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys, time, urllib.request, urllib.error
url, token, session = sys.argv[1], sys.argv[2], int(sys.argv[3])
def get(path, tok):
    req = urllib.request.Request(url + path)
    if tok is not None:
        req.add_header('Authorization', 'Bearer ' + tok)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
fails = []
for path in ('api/box', 'api/sessions'):
    for tok in (None, token + 'x'):
        code, body = get(path, tok)
        if code != 401 or 'sessions' in body:
            fails.append('%s with token %r: %s %s' % (path, tok, code, body))
deadline = time.time() + 120
while True:
    code, box = get('api/box', token)
    code2, lst = get('api/sessions', token)
    ss = [x for x in lst.get('sessions', []) if x['id'] == session] if code2 == 200 else []
    h = ss[0]['history'] if ss else None
    if code == 200 and box.get('sessions', 0) >= 1 and box.get('running', 0) >= 1 and h and len(h['frame']) >= 3:
        break
    if time.time() > deadline:
        fails.append('no session %d with 3 frames of history: %s %s' % (session, box, lst))
        break
    time.sleep(0.2)
if h:
    f = h['frame']
    if any(b != a + 1 for a, b in zip(f, f[1:])):
        fails.append('history frames not consecutive: %s' % f[:20])
    if not all(isinstance(v, (int, float)) and 0 <= v < 10 for v in h['max_strain']):
        fails.append('max_strain not finite numbers: %s' % h['max_strain'][:10])
    if ss[0]['state'] != 'running' or 'owner_client' not in ss[0]:
        fails.append('session fields: %s' % {k: v for k, v in ss[0].items() if k != 'history'})
print('\n'.join(fails) if fails else 'ok')
PY
}
res=$(api "http://127.0.0.1:$port/" "$(head -n 1 "$T/token")" "$session")
if [ "$res" = "ok" ]; then
	ok "JSON API: 401 without the token; box and per-frame session history with it"
else
	ko "JSON API" "$res"
fi

WEB_URL="http://127.0.0.1:$port/" WEB_TOKEN=$(head -n 1 "$T/token") WEB_OWNER=$owner \
	WEB_SESSION=$session WEB_OUT=$OUT NODE_PATH="$TOP/$B/www-npm/node_modules" \
	node "$TOP/tests/integration/web_page.cjs" >"$T/page.out" 2>&1
cat "$T/page.out" | grep -v 'passed, .* failed$'
p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$T/page.out" | tail -n 1)
f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$T/page.out" | tail -n 1)
pass=$((pass + ${p:-0}))
fail=$((fail + ${f:-1}))

# The colliders: a second run on the same daemon, watched by the page.
DRAPE_TOKEN=$(head -n 1 "$T/token") "$DRAPE" run "$TOP/tests/data/scenes/web_colliders.json" \
	--server "ipc://$T/ctl" --frames 100000 --quiet >/dev/null 2>"$T/run-col.err" &
cpid=$!
cstarted=1
i=0
until grep -q 'owner token' "$T/run-col.err" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 600 ] || ! kill -0 "$cpid" 2>/dev/null; then
		ko "colliders session starts" "$(cat "$T/run-col.err")"
		cstarted=0
		break
	fi
	sleep 0.1
done
csession=$(sed -n 's/.*session \([0-9]*\) on .*/\1/p' "$T/run-col.err")
cowner=$(sed -n 's/.*owner token \([0-9a-f]*\).*/\1/p' "$T/run-col.err")
if [ -n "$csession" ] && [ -n "$cowner" ]; then
	WEB_URL="http://127.0.0.1:$port/" WEB_TOKEN=$(head -n 1 "$T/token") WEB_COL_SESSION=$csession \
		WEB_COL_OWNER=$cowner WEB_OUT=$OUT NODE_PATH="$TOP/$B/www-npm/node_modules" \
		node "$TOP/tests/integration/web_page.cjs" >"$T/page-col.out" 2>&1
	grep -v 'passed, .* failed$' "$T/page-col.out"
	p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$T/page-col.out" | tail -n 1)
	f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$T/page-col.out" | tail -n 1)
	pass=$((pass + ${p:-0}))
	fail=$((fail + ${f:-1}))
elif [ $cstarted -eq 1 ]; then
	# (Without this the page's collider cases would vanish unreported.)
	ko "colliders session starts" "no session or owner token in: $(cat "$T/run-col.err")"
fi
kill -INT "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
cpid=""

# --http with --users-file: the JSON API authenticates the bearer token as a
# user and lists only that user's sessions; an admin sees every one.
kill -INT "$rpid" 2>/dev/null
wait "$rpid" 2>/dev/null
rpid=""
kill -TERM "$dpid" 2>/dev/null
wait "$dpid" 2>/dev/null
dpid=""
: >"$T/users"
for u in "ana user" "bob user" "boss admin"; do
	# shellcheck disable=SC2086
	set -- $u
	"$DRAPE" admin hash-token "$1" "$2" --token-file "$T/tok-$1" >>"$T/users" 2>"$T/hash.err" ||
		ko "drape admin hash-token $1" "$(cat "$T/hash.err")"
done
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$DRAPED" --listen "ipc://$T/ctl2" --http "tcp://127.0.0.1:$port2" --users-file "$T/users" \
	--state-dir "$T/state2" >"$T/draped2.log" 2>&1 &
dpid=$!
started=1
i=0
until grep -q ' ready: ' "$T/draped2.log" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 600 ] || ! kill -0 "$dpid" 2>/dev/null; then
		ko "draped --http --users-file starts" "$(cat "$T/draped2.log")"
		started=0
		break
	fi
	sleep 0.1
done
for who in ana bob; do
	[ $started -eq 1 ] || break
	DRAPE_TOKEN=$(head -n 1 "$T/tok-$who") "$DRAPE" run "$TOP/examples/flag.json" \
		--server "ipc://$T/ctl2" --frames 100000 --quiet >/dev/null 2>"$T/run-$who.err" &
	eval "rpid_$who=\$!"
	i=0
	until grep -q 'session [0-9]* on' "$T/run-$who.err" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 "$dpid" 2>/dev/null; then
			ko "$who's session starts under --users-file" "$(cat "$T/run-$who.err" "$T/draped2.log")"
			started=0
			break
		fi
		sleep 0.1
	done
done
if [ $started -eq 1 ]; then
	sa=$(sed -n 's/.*session \([0-9]*\) on .*/\1/p' "$T/run-ana.err")
	sb=$(sed -n 's/.*session \([0-9]*\) on .*/\1/p' "$T/run-bob.err")
	res=$(python3 - "http://127.0.0.1:$port2/" "$T" "$sa" "$sb" <<'PY'
import json, sys, time, urllib.request, urllib.error
url, d, sa, sb = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tok = {u: open('%s/tok-%s' % (d, u)).readline().strip() for u in ('ana', 'bob', 'boss')}
def get(path, t):
    req = urllib.request.Request(url + path)
    if t is not None:
        req.add_header('Authorization', 'Bearer ' + t)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
fails = []
want = {'ana': {sa}, 'bob': {sb}, 'boss': {sa, sb}}
got = {}
deadline = time.time() + 120
for u in ('ana', 'bob', 'boss'):
    while True:
        code, body = get('api/sessions', tok[u])
        got[u] = {x['id']: x.get('owner') for x in body.get('sessions', [])} if code == 200 else {}
        if set(got[u]) >= want[u] or time.time() > deadline:
            break
        time.sleep(0.2)
    if set(got[u]) != want[u]:
        fails.append('%s sees %s, expected %s' % (u, got[u], sorted(want[u])))
if got.get('boss', {}).get(sa) != 'ana' or got.get('boss', {}).get(sb) != 'bob':
    fails.append('owner names: %s' % got.get('boss'))
for t in (None, tok['ana'] + 'x', 'web-test-token'):
    for path in ('api/box', 'api/sessions'):
        code, body = get(path, t)
        if code != 401 or 'sessions' in body:
            fails.append('%s with token %r: %s %s' % (path, t, code, body))
print('\n'.join(fails) if fails else 'ok')
PY
)
	if [ "$res" = "ok" ]; then
		ok "--users-file JSON API: each user sees only their own sessions, the admin both, others 401"
	else
		ko "--users-file JSON API" "$res"
	fi
	WEB_URL="http://127.0.0.1:$port2/" WEB_USERS_TOKEN=$(head -n 1 "$T/tok-ana") WEB_USERS_MINE=$sa \
		WEB_USERS_OTHER=$sb WEB_OUT=$OUT NODE_PATH="$TOP/$B/www-npm/node_modules" \
		node "$TOP/tests/integration/web_page.cjs" >"$T/page2.out" 2>&1
	grep -v 'passed, .* failed$' "$T/page2.out"
	p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$T/page2.out" | tail -n 1)
	f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$T/page2.out" | tail -n 1)
	pass=$((pass + ${p:-0}))
	fail=$((fail + ${f:-1}))
	for who in ana bob; do
		eval "kill -INT \$rpid_$who 2>/dev/null; wait \$rpid_$who 2>/dev/null"
	done
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
