#!/bin/sh
# draped as a service: tests/integration/service.sh BUILD_DIR
# (tests/run.sh passes the build folder and exports DRAPED and DRAPE).
# Prints PASS/FAIL lines and ends with "N passed, M failed".
#
# What is asserted, each against a real daemon:
#   - deploy/draped.service passes `systemd-analyze verify` (ExecStart
#     pointed at this build, the man pages of man/ on MANPATH); skipped with
#     a message if systemd-analyze is not installed.
#   - make install-service puts the unit (ExecStart following PREFIX), the
#     example config and both man pages under DESTDIR; uninstall-service
#     removes every one.
#   - --check-config: 0 for a valid config, 64 naming the unknown key, 66
#     naming an unreadable token file; the default config file
#     ($DRAPED_CONFIG standing in for /etc/drape/draped.json) is read when no
#     --config is given.
#   - sd_notify on the test's own NOTIFY_SOCKET: READY=1 arrives and the
#     daemon answers a request right after it (the sockets were bound before
#     it was sent); WATCHDOG=1 at least 4 times within 3 s of an interval of
#     0.4 s (a ping every 0.2 s); STOPPING=1 after SIGTERM.
#   - SIGHUP does not kill the daemon (it did before reload.c).
#   - 32 clients x 2 sessions with SIGHUP sent 5 times during the load (each
#     reload changing a limit in the config file): 0 errors, 0 lost frames,
#     all 1280 frames received, and each reload logged as done.
#   - /metrics scraped during that load: every scrape passes
#     `promtool check metrics`; after it, frames solved and sessions created
#     grew by exactly what the load counted, frames served and requests by at
#     least as much; one mesh collider used by two sessions counts one
#     field-cache miss and one hit; one refused request counts one EPERM;
#     /healthz answers 200, and 503 while a reload blocks the loop (its
#     token file a FIFO with no writer), 200 again once it finishes.
#   - after the token file is replaced and SIGHUP sent: the new token is
#     accepted and the old one refused (EPERM); an empty token file on the
#     next SIGHUP is refused, logged, and the previous token still works; so
#     is a config file that no longer parses (no limit of it applied).
#   - TLS: a certificate file replaced by garbage is refused on SIGHUP and
#     clients trusting the old certificate still connect; a new certificate
#     is then served after SIGHUP: clients trusting only it connect, clients
#     trusting only the old one are refused.
#   - SIGUSR1 reopens --log-file: after the file is renamed and the signal
#     sent, a new file of that name receives the following lines.
#   - --log-format json: every line is one JSON object with time, level and
#     msg; with JOURNAL_STREAM naming stderr's device and inode, every line
#     starts with a syslog priority "<N>" (info 6, warning 4).
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
T=$(mktemp -d /tmp/drape-service-XXXXXX)
export XDG_CACHE_HOME="$T/cache"
# No system-wide /etc/drape/draped.json in these daemons unless a test asks.
export DRAPED_CONFIG=
unset DRAPE_TOKEN NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID JOURNAL_STREAM
passed=0
failed=0
daemon_pid=
bg_pids=

stop_daemon() {
	if [ -n "$daemon_pid" ]; then
		kill "$daemon_pid" 2>/dev/null
		i=0
		while kill -0 "$daemon_pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
		daemon_pid=
	fi
}
cleanup() {
	for p in $bg_pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	stop_daemon
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# wait_for SECONDS COMMAND...: polls COMMAND every 0.05 s until it succeeds.
wait_for() {
	limit=$(($1 * 20))
	shift
	n=0
	while [ $n -lt $limit ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.05
		n=$((n + 1))
	done
	return 1
}

# Below Linux's ephemeral range (32768 and up), so that no outgoing
# connection of another program can hold a port this test listens on; the
# sections use PORT up to PORT + 300.
PORT=$((10000 + ($$ % 10000) * 2))

# start_daemon LOG ARGS...: starts draped on tcp loopback (URL) with a
# metrics listener (MURL); returns 1 if it never answered.
start_daemon() {
	log=$1
	shift
	tries=0
	while [ $tries -lt 5 ]; do
		URL="tcp://127.0.0.1:$PORT"
		MURL="http://127.0.0.1:$((PORT + 1))"
		mkdir -p "$T/state"
		"$DRAPED" --listen "$URL" --state-dir "$T/state" --metrics "tcp://127.0.0.1:$((PORT + 1))" "$@" \
			>"$log" 2>&1 &
		daemon_pid=$!
		if wait_for 10 grep -q "ready:" "$log"; then
			return 0
		fi
		stop_daemon
		PORT=$((PORT + 2))
		tries=$((tries + 1))
	done
	return 1
}

# ---- systemd-analyze verify ------------------------------------------------------

if command -v systemd-analyze >/dev/null 2>&1; then
	sed "s|^ExecStart=[^ ]*|ExecStart=$DRAPED|" "$TOP/deploy/draped.service" >"$T/draped.service"
	if MANPATH="$TOP/man:" systemd-analyze verify "$T/draped.service" >"$T/verify.out" 2>&1 && ! grep -qi "draped.service" "$T/verify.out"; then
		pass unit_file_passes_systemd_analyze_verify
	else
		fail unit_file_passes_systemd_analyze_verify "$(head -c 600 "$T/verify.out")"
	fi
else
	echo "SKIP unit_file_passes_systemd_analyze_verify: systemd-analyze is not installed (package systemd)"
fi

# ---- make install-service / uninstall-service --------------------------------------

D="$T/destdir"
if make -s -C "$TOP" install-service DESTDIR="$D" PREFIX=/usr SYSTEMD_UNIT_DIR=/lib/systemd/system >"$T/inst.out" 2>&1 &&
	[ -f "$D/lib/systemd/system/draped.service" ] && [ -f "$D/etc/drape/draped.json.example" ] &&
	[ -f "$D/usr/share/man/man1/drape.1" ] && [ -f "$D/usr/share/man/man8/draped.8" ] &&
	grep -q "^ExecStart=/usr/bin/draped " "$D/lib/systemd/system/draped.service" &&
	make -s -C "$TOP" uninstall-service DESTDIR="$D" PREFIX=/usr SYSTEMD_UNIT_DIR=/lib/systemd/system >>"$T/inst.out" 2>&1 &&
	[ -z "$(find "$D" -type f)" ]; then
	pass install_service_and_uninstall_service
else
	fail install_service_and_uninstall_service "$(head -c 300 "$T/inst.out"); left: $(find "$D" -type f | head -n 5)"
fi

# ---- --check-config and the default config file ----------------------------------

echo "tok-A" >"$T/tokA"
cat >"$T/good.json" <<EOF
{ "listen": "tcp://127.0.0.1:$PORT", "max-sessions": 100, "auth-token-file": "$T/tokA" }
EOF
echo '{ "max-sesions": 100 }' >"$T/badkey.json"
echo "{ \"auth-token-file\": \"$T/missing-token\" }" >"$T/badtok.json"
"$DRAPED" --config "$T/good.json" --check-config >"$T/cc1.out" 2>&1
rc1=$?
"$DRAPED" --config "$T/badkey.json" --check-config >"$T/cc2.out" 2>&1
rc2=$?
"$DRAPED" --config "$T/badtok.json" --check-config >"$T/cc3.out" 2>&1
rc3=$?
DRAPED_CONFIG="$T/badkey.json" "$DRAPED" --check-config >"$T/cc4.out" 2>&1
rc4=$?
DRAPED_CONFIG="$T/good.json" "$DRAPED" --check-config >"$T/cc5.out" 2>&1
rc5=$?
if [ $rc1 -eq 0 ] && grep -q "configuration OK" "$T/cc1.out" &&
	[ $rc2 -eq 64 ] && grep -q '"max-sesions"' "$T/cc2.out" &&
	[ $rc3 -eq 66 ] && grep -q "auth-token-file" "$T/cc3.out"; then
	pass check_config_exit_codes_name_the_fault
else
	fail check_config_exit_codes_name_the_fault "$rc1/$rc2/$rc3: $(cat "$T/cc1.out" "$T/cc2.out" "$T/cc3.out" | head -c 600)"
fi
if [ $rc4 -eq 64 ] && grep -q '"max-sesions"' "$T/cc4.out" && [ $rc5 -eq 0 ] && grep -q "$T/good.json" "$T/cc5.out"; then
	pass default_config_file_read_without_config_option
else
	fail default_config_file_read_without_config_option "$rc4/$rc5: $(cat "$T/cc4.out" "$T/cc5.out" | head -c 600)"
fi

# ---- sd_notify ---------------------------------------------------------------------

cat >"$T/notify.py" <<'EOF'
import socket, sys, time
path, out, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(0.2)
end = time.time() + limit
with open(out, "a", buffering=1) as f:
    while time.time() < end:
        try:
            data = s.recv(4096).decode()
        except socket.timeout:
            continue
        for line in data.split("\n"):
            if line:
                f.write("%.3f %s\n" % (time.monotonic(), line))
EOF
python3 "$T/notify.py" "$T/notify.sock" "$T/notify.log" 60 &
notify_pid=$!
bg_pids="$notify_pid"
wait_for 10 test -S "$T/notify.sock"
NPORT=$((PORT + 100))
NOTIFY_SOCKET="$T/notify.sock" WATCHDOG_USEC=400000 "$DRAPED" --listen "tcp://127.0.0.1:$NPORT" \
	--state-dir "$T/nstate" >"$T/notify-daemon.log" 2>&1 &
daemon_pid=$!
if wait_for 20 grep -q "READY=1" "$T/notify.log"; then
	# READY=1 was sent after the listeners started: the first request
	# right after it must be answered.
	if "$DRAPE" status --server "tcp://127.0.0.1:$NPORT" --timeout 5000 >/dev/null 2>"$T/nstatus.err"; then
		pass notify_ready_after_sockets_bound
	else
		fail notify_ready_after_sockets_bound "status after READY=1 failed: $(head -c 300 "$T/nstatus.err")"
	fi
else
	fail notify_ready_after_sockets_bound "no READY=1: $(tail -n 5 "$T/notify-daemon.log")"
fi
w0=$(grep -c "WATCHDOG=1" "$T/notify.log")
sleep 3
w1=$(grep -c "WATCHDOG=1" "$T/notify.log")
if [ $((w1 - w0)) -ge 4 ] && [ $((w1 - w0)) -le 30 ]; then
	pass notify_watchdog_at_half_the_interval
else
	fail notify_watchdog_at_half_the_interval "$((w1 - w0)) pings in 3 s for WATCHDOG_USEC=400000"
fi
kill -TERM "$daemon_pid"
if wait_for 20 grep -q "STOPPING=1" "$T/notify.log"; then
	pass notify_stopping_on_sigterm
else
	fail notify_stopping_on_sigterm "no STOPPING=1: $(cat "$T/notify.log" | tail -n 3)"
fi
stop_daemon
kill "$notify_pid" 2>/dev/null
wait "$notify_pid" 2>/dev/null
bg_pids=

# ---- SIGHUP under load, metrics, token reload ----------------------------------------

cat >"$T/live.json" <<EOF
{ "max-sessions": 200, "auth-token-file": "$T/tokA" }
EOF
if ! start_daemon "$T/draped.log" --config "$T/live.json" --threads 2 --max-sessions-per-client 0; then
	fail daemon_start "draped did not start: $(tail -n 5 "$T/draped.log")"
	echo "$passed passed, $failed failed"
	exit 1
fi

kill -HUP "$daemon_pid"
if wait_for 10 grep -q "reload done" "$T/draped.log" && kill -0 "$daemon_pid" 2>/dev/null &&
	"$DRAPE" status --server "$URL" --token-file "$T/tokA" >/dev/null 2>&1; then
	pass sighup_keeps_the_daemon_running
else
	fail sighup_keeps_the_daemon_running "$(tail -n 5 "$T/draped.log")"
	echo "$passed passed, $failed failed"
	exit 1
fi

scrape() { curl -s -f --max-time 10 "$MURL/metrics"; }
metric() { awk -v n="$2" '$1 == n { print $2; exit }' "$1"; }
metric_sum() { awk -v n="$2" 'index($0, n "{") == 1 { s += $NF } END { printf "%d\n", s }' "$1"; }

scrape >"$T/m0.txt"
"$DRAPE" loadtest --server "$URL" --token-file "$T/tokA" --clients 32 --sessions-per-client 2 \
	--frames 20 --vertices 256 --json >"$T/lt.json" 2>"$T/lt.err" &
lt_pid=$!
bg_pids="$lt_pid"
# Five reloads and scrapes while the load runs, each reload changing a limit.
k=0
while [ $k -lt 5 ] && kill -0 "$lt_pid" 2>/dev/null; do
	k=$((k + 1))
	echo "{ \"max-sessions\": $((200 + k)), \"auth-token-file\": \"$T/tokA\" }" >"$T/live.json"
	kill -HUP "$daemon_pid"
	scrape >"$T/during$k.txt"
	sleep 0.2
done
wait "$lt_pid"
ltrc=$?
bg_pids=
hups=$(grep -c "reload done" "$T/draped.log")
json_field() { sed -n -E "1s/.*\"$2\":([0-9.]+).*/\1/p" "$1"; }
echo "  load with $k SIGHUPs: $(cat "$T/lt.json")"
grep "reload done" "$T/draped.log" | sed 's/^/  /'
if [ $ltrc -eq 0 ] && [ $k -ge 1 ] && [ "$(json_field "$T/lt.json" errors)" = 0 ] &&
	[ "$(json_field "$T/lt.json" lost_frames)" = 0 ] &&
	[ "$(json_field "$T/lt.json" frames_received)" = 1280 ] && [ "$hups" -ge $((k + 1)) ] &&
	! grep -q "reload failed" "$T/draped.log"; then
	pass sighup_during_32_client_load_no_errors_no_lost_frames
else
	fail sighup_during_32_client_load_no_errors_no_lost_frames "exit $ltrc, $k SIGHUPs, $hups reloads logged: $(cat "$T/lt.json") $(head -c 300 "$T/lt.err")"
fi
if grep -q "reload: max_sessions 20[0-9] -> 20[1-9]" "$T/draped.log"; then
	pass reload_logs_what_changed
else
	fail reload_logs_what_changed "$(grep reload "$T/draped.log" | head -n 5)"
fi

# Metrics: every scrape is valid exposition; the counters agree with the load.
bad=
for f in "$T"/m0.txt "$T"/during*.txt; do
	[ -s "$f" ] || { bad="$bad $(basename "$f"):empty"; continue; }
	promtool check metrics <"$f" >"$T/promtool.out" 2>&1 || bad="$bad $(basename "$f"):$(head -c 200 "$T/promtool.out")"
done
if command -v promtool >/dev/null 2>&1; then
	if [ -z "$bad" ]; then
		pass metrics_scraped_during_load_pass_promtool
	else
		fail metrics_scraped_during_load_pass_promtool "$bad"
	fi
else
	fail metrics_scraped_during_load_pass_promtool "promtool is not installed (package prometheus, deploy/deps.sh)"
fi
# Frames land on the loop before their replies go out, so after the load
# the counters are final; they are read once the run queue is empty.
wait_for 10 sh -c "curl -s '$MURL/metrics' | grep -q '^drape_queue_length 0'"
sleep 0.3
scrape >"$T/m1.txt"
solved=$(($(metric "$T/m1.txt" drape_frames_solved_total) - $(metric "$T/m0.txt" drape_frames_solved_total)))
served=$(($(metric "$T/m1.txt" drape_frames_served_total) - $(metric "$T/m0.txt" drape_frames_served_total)))
created=$(($(metric "$T/m1.txt" drape_sessions_created_total) - $(metric "$T/m0.txt" drape_sessions_created_total)))
reqs=$(($(metric_sum "$T/m1.txt" drape_requests_total) - $(metric_sum "$T/m0.txt" drape_requests_total)))
lt_frames=$(json_field "$T/lt.json" frames_received)
lt_sessions=$(json_field "$T/lt.json" sessions_done)
lt_reqs=$(json_field "$T/lt.json" requests)
echo "  metrics deltas: solved $solved served $served created $created requests $reqs;" \
	"load counted frames $lt_frames sessions $lt_sessions requests $lt_reqs"
if [ "$solved" = "$lt_frames" ] && [ "$created" = "$lt_sessions" ] && [ "$served" -ge "$lt_frames" ] &&
	[ "$reqs" -ge "${lt_reqs:-0}" ] && grep -q '^drape_reloads_total{result="ok"} [1-9]' "$T/m1.txt"; then
	pass metrics_counters_agree_with_the_load
else
	fail metrics_counters_agree_with_the_load "see the deltas above"
fi
# The shared field cache: the same mesh collider in two sessions is built
# once (a miss) and found once (a hit).
scrape >"$T/f0.txt"
for r in 1 2; do
	"$DRAPE" run "$TOP/tests/data/scenes/colliders.json" --server "$URL" --token-file "$T/tokA" --frames 2 \
		--out "$T/fc$r" --quiet >/dev/null 2>"$T/fc$r.err"
done
scrape >"$T/f1.txt"
hits=$(($(metric "$T/f1.txt" drape_field_cache_hits_total) - $(metric "$T/f0.txt" drape_field_cache_hits_total)))
misses=$(($(metric "$T/f1.txt" drape_field_cache_misses_total) - $(metric "$T/f0.txt" drape_field_cache_misses_total)))
if [ "$hits" = 1 ] && [ "$misses" = 1 ]; then
	pass metrics_field_cache_one_miss_then_one_hit
else
	fail metrics_field_cache_one_miss_then_one_hit "hits +$hits, misses +$misses: $(head -c 300 "$T/fc1.err") $(head -c 300 "$T/fc2.err")"
fi
code=$(curl -s -o "$T/health.txt" -w '%{http_code}' --max-time 10 "$MURL/healthz")
if [ "$code" = 200 ] && grep -q "^ok" "$T/health.txt"; then
	pass healthz_200_while_the_loop_answers
else
	fail healthz_200_while_the_loop_answers "HTTP $code: $(cat "$T/health.txt")"
fi

# The token: replaced, then broken.
echo "tok-B" >"$T/tokB"
cp "$T/tokB" "$T/tokA.new" && mv "$T/tokA.new" "$T/tokA"
n0=$(grep -c "reload done" "$T/draped.log")
kill -HUP "$daemon_pid"
wait_for 10 sh -c "[ \$(grep -c 'reload done' '$T/draped.log') -gt $n0 ]"
echo "tok-A" >"$T/tokOld"
"$DRAPE" status --server "$URL" --token-file "$T/tokB" >/dev/null 2>"$T/new.err"
rcn=$?
scrape >"$T/e0.txt"
"$DRAPE" status --server "$URL" --token-file "$T/tokOld" >/dev/null 2>"$T/old.err"
rco=$?
scrape >"$T/e1.txt"
eperm=$(($(metric "$T/e1.txt" 'drape_errors_total{code="EPERM"}') - $(metric "$T/e0.txt" 'drape_errors_total{code="EPERM"}')))
if [ "$eperm" = 1 ]; then
	pass metrics_errors_by_code_count_the_refusal
else
	fail metrics_errors_by_code_count_the_refusal "EPERM +$eperm for one refused request"
fi
if [ $rcn -eq 0 ] && [ $rco -ne 0 ] && grep -q EPERM "$T/old.err"; then
	pass reload_new_token_accepted_old_refused
else
	fail reload_new_token_accepted_old_refused "new exit $rcn ($(head -c 200 "$T/new.err")), old exit $rco ($(head -c 200 "$T/old.err"))"
fi
: >"$T/tokA"
f0=$(grep -c "reload failed" "$T/draped.log")
kill -HUP "$daemon_pid"
wait_for 10 sh -c "[ \$(grep -c 'reload failed' '$T/draped.log') -gt $f0 ]"
"$DRAPE" status --server "$URL" --token-file "$T/tokB" >/dev/null 2>"$T/kept.err"
rck=$?
if [ $rck -eq 0 ] && grep "reload failed" "$T/draped.log" | tail -n 1 | grep -q "auth-token-file"; then
	pass reload_broken_token_file_keeps_the_old
else
	fail reload_broken_token_file_keeps_the_old "exit $rck: $(grep reload "$T/draped.log" | tail -n 2)"
fi
# /healthz 503 while the loop is stuck: the token file replaced by a FIFO
# with no writer makes the reload block the loop in open(2) (as a file on a
# hung network mount would); the HTTP threads still answer, and say 503
# once the loop has been silent past the 5 s bound. A writer then lets the
# reload finish and /healthz comes back to 200.
rm -f "$T/tokA"
mkfifo "$T/tokA"
kill -HUP "$daemon_pid"
hcode() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$MURL/healthz"; }
if wait_for 30 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 '$MURL/healthz')\" = 503 ]"; then
	stuck=503
else
	stuck=$(hcode)
fi
# Opening the FIFO for writing lets the reload read tok-B (bounded, in
# case the daemon is gone and nobody reads).
timeout 10 sh -c "echo tok-B >'$T/tokA'"
wait_for 20 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 '$MURL/healthz')\" = 200 ]"
back=$(hcode)
if [ "$stuck" = 503 ] && [ "$back" = 200 ]; then
	pass healthz_503_while_the_loop_is_stuck_200_after
else
	fail healthz_503_while_the_loop_is_stuck_200_after "while stuck: HTTP $stuck, after: HTTP $back"
fi
rm -f "$T/tokA"
echo "tok-B" >"$T/tokA"

# A config file that no longer parses: refused as a whole, the old limits
# and token stay.
echo '{ "max-sessions": 5, ' >"$T/live.json"
f1=$(grep -c "reload failed" "$T/draped.log")
kill -HUP "$daemon_pid"
wait_for 10 sh -c "[ \$(grep -c 'reload failed' '$T/draped.log') -gt $f1 ]"
"$DRAPE" status --server "$URL" --token-file "$T/tokB" >/dev/null 2>"$T/kept2.err"
rck2=$?
if [ $rck2 -eq 0 ] && grep "reload failed" "$T/draped.log" | tail -n 1 | grep -q "config" &&
	! grep -q "max_sessions 20[0-9] -> 5" "$T/draped.log"; then
	pass reload_broken_config_file_keeps_the_old
else
	fail reload_broken_config_file_keeps_the_old "exit $rck2: $(grep reload "$T/draped.log" | tail -n 2)"
fi
stop_daemon

# ---- TLS certificate reload ----------------------------------------------------------------

ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
san="-addext subjectAltName=DNS:localhost,IP:127.0.0.1"
# shellcheck disable=SC2086
if openssl req -x509 $ec -keyout "$T/k1.pem" -out "$T/c1.pem" -subj /CN=localhost $san >/dev/null 2>&1 &&
	openssl req -x509 $ec -keyout "$T/k2.pem" -out "$T/c2.pem" -subj /CN=localhost $san >/dev/null 2>&1; then
	cp "$T/c1.pem" "$T/cert.pem"
	cp "$T/k1.pem" "$T/key.pem"
	echo "tok-T" >"$T/tokT"
	# The port may be taken by another program's connection (ports here
	# overlap the ephemeral range): like start_daemon, try the next ones.
	TPORT=$((PORT + 200))
	tries=0
	while :; do
		TURL="tls+tcp://127.0.0.1:$TPORT"
		"$DRAPED" --listen "$TURL" --state-dir "$T/tstate" --tls-cert "$T/cert.pem" --tls-key "$T/key.pem" \
			--auth-token-file "$T/tokT" >"$T/tls.log" 2>&1 &
		daemon_pid=$!
		if wait_for 10 grep -q "ready:" "$T/tls.log"; then
			break
		fi
		tries=$((tries + 1))
		if [ $tries -ge 5 ]; then
			echo "  the TLS daemon did not start on 5 ports; its log:"
			sed 's/^/    /' "$T/tls.log"
			break
		fi
		stop_daemon
		TPORT=$((TPORT + 2))
	done
	tstatus() { "$DRAPE" status --server "$TURL" --token-file "$T/tokT" --tls-ca "$1" --timeout 3000 >/dev/null 2>&1; }
	tstatus "$T/c1.pem"
	r0=$?
	echo "not a certificate" >"$T/cert.pem"
	kill -HUP "$daemon_pid"
	wait_for 10 grep -q "reload failed" "$T/tls.log"
	tstatus "$T/c1.pem"
	r1=$?
	if [ $r0 -eq 0 ] && [ $r1 -eq 0 ] && grep "reload failed" "$T/tls.log" | grep -q "tls-cert"; then
		pass reload_broken_certificate_keeps_the_old
	else
		fail reload_broken_certificate_keeps_the_old "before $r0, after $r1: $(grep reload "$T/tls.log" | tail -n 2)"
	fi
	cp "$T/c2.pem" "$T/cert.pem"
	cp "$T/k2.pem" "$T/key.pem"
	kill -HUP "$daemon_pid"
	wait_for 10 grep -q "reload done" "$T/tls.log"
	tstatus "$T/c2.pem"
	r2=$?
	tstatus "$T/c1.pem"
	r3=$?
	if [ $r2 -eq 0 ] && [ $r3 -ne 0 ]; then
		pass reload_new_certificate_served
	else
		fail reload_new_certificate_served "trusting the new: exit $r2, trusting the old: exit $r3: $(grep reload "$T/tls.log" | tail -n 3)"
	fi
	stop_daemon
else
	fail tls_reload "openssl could not make test certificates (package openssl)"
fi

# ---- SIGUSR1 reopens the log file -----------------------------------------------------------

LPORT=$((PORT + 300))
"$DRAPED" --listen "tcp://127.0.0.1:$LPORT" --state-dir "$T/lstate" --log-file "$T/d.log" >"$T/l.stderr" 2>&1 &
daemon_pid=$!
wait_for 10 grep -q "ready:" "$T/d.log"
mv "$T/d.log" "$T/d.log.1"
kill -USR1 "$daemon_pid"
wait_for 10 test -f "$T/d.log"
kill -HUP "$daemon_pid"
if wait_for 10 grep -q "reload done" "$T/d.log" && grep -q "reopened" "$T/d.log" &&
	! grep -q "reload done" "$T/d.log.1"; then
	pass sigusr1_reopens_the_log_file
else
	fail sigusr1_reopens_the_log_file "new: $(head -c 300 "$T/d.log" 2>/dev/null); old tail: $(tail -n 2 "$T/d.log.1")"
fi
stop_daemon

# ---- log formats ----------------------------------------------------------------------------

"$DRAPED" --listen "tcp://127.0.0.1:$LPORT" --state-dir "$T/lstate" --log-format json \
	>"$T/json.log" 2>&1 &
daemon_pid=$!
wait_for 10 grep -q "ready:" "$T/json.log"
stop_daemon
if python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    o = json.loads(line)
    assert set(o) == {"time", "level", "msg"}, o
    n += 1
assert n >= 3
' "$T/json.log" 2>"$T/json.err"; then
	pass log_format_json_one_object_per_line
else
	fail log_format_json_one_object_per_line "$(head -c 300 "$T/json.err"): $(head -n 2 "$T/json.log")"
fi
: >"$T/journal.log"
JOURNAL_STREAM=$(stat -c '%d:%i' "$T/journal.log") "$DRAPED" --listen "tcp://127.0.0.1:$LPORT" \
	--state-dir "$T/lstate" >>"$T/journal.log" 2>&1 &
daemon_pid=$!
wait_for 10 grep -q "ready:" "$T/journal.log"
kill -USR1 "$daemon_pid" # an info line; no --log-file: "nothing to reopen"
wait_for 10 grep -q "SIGUSR1" "$T/journal.log"
stop_daemon
if grep -q '^<6>info .*ready:' "$T/journal.log" && ! grep -v -q '^<[3-7]>' "$T/journal.log"; then
	pass journald_lines_carry_priority_prefixes
else
	fail journald_lines_carry_priority_prefixes "$(head -n 3 "$T/journal.log")"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
