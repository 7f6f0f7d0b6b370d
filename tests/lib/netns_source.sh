# shellcheck shell=bash
# A data source on a host made by netns_hosts.sh: nginx serving a directory, behind the host's
# link shaped with tc (sourced after netns_hosts.sh; needs nginx and iproute2). Usage:
#   netns_nginx NS IP ROOT DIR    serve ROOT on IP:80 from host NS (config, logs, pid in DIR;
#                                 requests in DIR/access.log), waiting until it answers
#   netns_shape NS RATE           what host NS sends leaves at RATE (tbf: "16mbit")
#   netns_shaped_bytes NS         bytes the shaped link has sent
netns_nginx() {
  local ns=$1 ip=$2 root=$3 dir=$4 nginx
  nginx=$(command -v nginx || echo /usr/sbin/nginx)
  cat >"$dir/nginx.conf" <<CONF
daemon off;
user root;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log;
events { worker_connections 256; }
http {
  access_log $dir/access.log;
  client_body_temp_path $dir/nginx-body;
  keepalive_requests 100000;
  server { listen $ip:80; root $root; }
}
CONF
  ip netns exec "$ns" "$nginx" -e "$dir/nginx-error.log" -p "$dir" -c "$dir/nginx.conf" \
    >"$dir/nginx.log" 2>&1 &
  for _ in $(seq 100); do
    ip netns exec "$ns" curl -s -o /dev/null "http://$ip/" && return 0
    sleep 0.1
  done
  echo "nginx did not start:"; cat "$dir/nginx-error.log" "$dir/nginx.log"
  return 1
}

netns_shape() { ip netns exec "$1" tc qdisc add dev eth0 root tbf rate "$2" burst 32kbit latency 400ms; }

netns_shaped_bytes() { ip netns exec "$1" tc -s qdisc show dev eth0 | awk '/Sent/ { print $2; exit }'; }
