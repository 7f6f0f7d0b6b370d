#!/usr/bin/env bash
# `corral up` as a newcomer meets it:
# - a CLI command with no head reachable (one head configured) fails at once, saying why;
# - `corral up` on a port another process holds fails at once, naming the address;
# - `--head-arg` reaches the head (one it refuses ends `corral up` with the head's words);
# - the command `corral up` suggests works on simulated GPUs, as printed;
# - a command that cannot be started says why in `corral show`, not only in its stderr.
set -euo pipefail
dir="$(mktemp -d /tmp/corral-up-test.XXXXXX)"
up_pid=""
busy_pid=""
cleanup() {
  [[ -n $busy_pid ]] && kill "$busy_pid" 2>/dev/null || true
  if [[ -n $up_pid ]]; then
    kill -TERM "$up_pid" 2>/dev/null || true
    wait "$up_pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.out "$dir"/s/head.log; do
    [[ -f $f ]] && { echo "== $f"; tail -n 40 "$f"; }
  done
  exit 1
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# Seconds since the epoch, for how long a command took.
now() { date +%s; }

# No head at all, one configured: "Connection refused" at once, not after the failover window.
port="$(free_port)"
t0="$(now)"
if CORRAL_CONFIG="$dir/none.json" CORRAL_ADDR="http://127.0.0.1:$port" CORRAL_TOKEN=x \
    "$CORRAL" jobs >"$dir/nohead.out" 2>&1; then
  fail "corral jobs with no head succeeded"
fi
(($(now) - t0 < 10)) || fail "corral jobs with no head took $(($(now) - t0)) s (the window is 20 s)"
grep -q "Connection refused" "$dir/nohead.out" || fail "no 'Connection refused' from corral jobs"
echo "ok: no head: $(cat "$dir/nohead.out")"

# A port another process listens on: corral up fails at once and names it.
python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(300)' >"$dir/busy.port" &
busy_pid=$!
for _ in $(seq 100); do [[ -s $dir/busy.port ]] && break; sleep 0.1; done
busy="$(cat "$dir/busy.port")"
t0="$(now)"
if "$CORRAL" up --agents 1 --gpus-per-agent 1 --state-dir "$dir/busy" --listen "127.0.0.1:$busy" \
    --no-user-config >"$dir/busy.out" 2>&1; then
  fail "corral up on a busy port succeeded"
fi
(($(now) - t0 < 10)) || fail "corral up on a busy port took $(($(now) - t0)) s"
grep -q "cannot listen on 127.0.0.1:$busy: Address already in use" "$dir/busy.out" ||
  fail "corral up on a busy port did not name it"
kill "$busy_pid"
busy_pid=""
echo "ok: busy port: $(cat "$dir/busy.out")"

# A head option passed through that the head refuses: corral up ends, with the head's words.
if "$CORRAL" up --agents 1 --gpus-per-agent 1 --state-dir "$dir/badarg" \
    --listen "127.0.0.1:$(free_port)" --no-user-config \
    --head-arg=--no-such-head-flag >"$dir/badarg.out" 2>&1; then
  fail "corral up with a head option the head refuses succeeded"
fi
grep -q "the head exited" "$dir/badarg.out" || fail "corral up did not say the head exited"
grep -q "no-such-head-flag" "$dir/badarg.out" || fail "corral up did not show the head's error"
echo "ok: --head-arg reaches the head"

# A cluster, with a head option it accepts.
port="$(free_port)"
"$CORRAL" up --agents 1 --gpus-per-agent 2 --state-dir "$dir/s" --listen "127.0.0.1:$port" \
  --no-user-config --head-arg=--min-runtime-before-preempt=0s >"$dir/up.out" 2>&1 &
up_pid=$!
for _ in $(seq 600); do grep -q "press Ctrl-C" "$dir/up.out" && break; sleep 0.1; done
grep -q "press Ctrl-C" "$dir/up.out" || fail "corral up did not come up"
export CORRAL_CONFIG="$dir/s/client.json"
unset CORRAL_ADDR CORRAL_TOKEN CORRAL_CA

# The suggested command, exactly as printed (with this build's corral).
line="$(grep '^try: ' "$dir/up.out")"
try="${line#try: }"
try="${try%%; corral jobs*}"
[[ $try == "corral submit "* ]] || fail "unexpected suggestion: $line"
eval "\"\$CORRAL\" ${try#corral }" >"$dir/try.out" 2>&1 || fail "the suggestion did not submit"
id="$(grep -o '[0-9]\+' "$dir/try.out" | head -n 1)"
"$CORRAL" wait "$id" --timeout 120s >"$dir/wait.out" 2>&1 ||
  fail "the suggested job did not succeed: $("$CORRAL" show "$id")"
"$CORRAL" logs "$id" >"$dir/logs.out" 2>&1
grep -q "GPUs 0,1 on node1" "$dir/logs.out" || fail "the suggested job printed: $(cat "$dir/logs.out")"
echo "ok: suggestion: $try -> $(cat "$dir/logs.out")"

# A program that is not there: the job fails, and `corral show` says why in words.
id="$("$CORRAL" submit --parsable -- no-such-program-corral)"
if "$CORRAL" wait "$id" --timeout 120s >"$dir/wait2.out" 2>&1; then
  fail "a job of a missing program succeeded"
fi
"$CORRAL" show "$id" >"$dir/show.out" 2>&1
grep -q "cannot execute no-such-program-corral: No such file or directory (not found on PATH" \
  "$dir/show.out" || fail "corral show does not say why the job could not start"
echo "ok: missing program: $(grep -m1 'cannot execute' "$dir/show.out")"
echo "PASS"
