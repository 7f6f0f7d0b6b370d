# Hosts made of network namespaces joined by a bridge, for tests that need several machines
# (sourced; needs root and iproute2). Usage:
#   ID=...; NET=10.77.$ID; netns_init SWITCH_NS; netns_host NS IP ...; netns_cleanup (on exit)
# netns_host names the host's veth on the switch cv$ID<last letter of NS>: taking that link
# down cuts the host off (netns_cut / netns_heal).
NETNS_ALL=()

netns_init() {  # netns_init SWITCH_NS
  NETNS_SW=$1
  NETNS_ALL+=("$1")
  ip netns add "$1"
  ip -n "$1" link add br0 type bridge
  ip -n "$1" link set br0 up
}

netns_host() {  # netns_host NS IP
  local ns=$1 ip=$2 veth=cv$ID${1: -1}
  NETNS_ALL+=("$ns")
  ip netns add "$ns"
  ip link add "$veth" type veth peer name eth0 netns "$ns"
  ip link set "$veth" netns "$NETNS_SW"
  ip -n "$NETNS_SW" link set "$veth" master br0 up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}

netns_cut() { ip -n "$NETNS_SW" link set "cv$ID${1: -1}" down; }   # netns_cut NS
netns_heal() { ip -n "$NETNS_SW" link set "cv$ID${1: -1}" up; }    # netns_heal NS

netns_cleanup() {  # kills every process in the hosts, then removes them
  local ns pid
  for ns in "${NETNS_ALL[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  done
  sleep 0.2
  for ns in "${NETNS_ALL[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
}
