# A Corral head on a host made by netns_hosts.sh, and what tests on such hosts share (sourced
# after netns_hosts.sh; CORRAL is the binary). Usage:
#   netns_head NS IP STATE_DIR CHECKPOINTS LOG [HEAD_FLAGS...]
#                                                start the head, export the client's CORRAL_*
#   corral ARGS...                               the CLI, run on the head's host
#   netns_wait_ready N                           until N nodes are ready
#   netns_finish RC DIR                          on failure the logs' tails, else remove DIR

netns_head() {  # the head serves HTTPS off loopback: the CLI and agents trust its CA
  NETNS_HEAD=$1
  ip netns exec "$1" "$CORRAL" head --state-dir "$3" --listen "$2:7070" --checkpoint-root "$4" \
    "${@:6}" >"$5" 2>&1 &
  for _ in $(seq 100); do [ -s "$3/tls/ca.pem" ] && [ -s "$3/admin.token" ] && break; sleep 0.1; done
  CORRAL_TOKEN=$(cat "$3/admin.token")
  export CORRAL_ADDR="https://$2:7070" CORRAL_CA="$3/tls/ca.pem" CORRAL_TOKEN
  export CORRAL_CONFIG="$3/no-config.json"
}

corral() { ip netns exec "$NETNS_HEAD" "$CORRAL" "$@"; }

netns_wait_ready() {
  for _ in $(seq 100); do
    [ "$(corral nodes -o json 2>/dev/null | grep -o '"ready"' | wc -l)" -ge "$1" ] && return 0
    sleep 0.2
  done
}

netns_finish() {
  if [ "$1" -ne 0 ]; then
    echo "---- logs ($2)"
    tail -n 30 "$2"/*.log 2>/dev/null || true
  else
    rm -rf "$2"
  fi
}
