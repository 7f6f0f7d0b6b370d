#!/usr/bin/env bash
# Distributed training in containers across hosts (ctest labels ddp and container; needs root,
# iproute2, crun, umoci and python3-torch).
#
# Three hosts made of network namespaces joined by a bridge: the head on 10.78.N.1, an agent
# running as root (--run-as owner) on each of .2 and .3. The image is an OCI layout the test
# builds: a root file system of its own (merged-/usr links, the linker cache and alternatives)
# into which the job mounts the host's /usr, where Debian's PyTorch lives. A 2-replica DDP job
# (gloo, CPU), one replica in a container on each host with host networking: it succeeds, its
# ranks end with identical parameters (DDP's all-reduce agreed), each ran as the job's owner in
# the image's root file system with its one (simulated) GPU, and its results are the owner's.
set -euo pipefail
CORRAL=${CORRAL:?path of the corral binary}
EXAMPLE=${EXAMPLE:?path of examples/ddp/train.py}
PY=/usr/bin/python3
USER_NAME=corral-ddp-ct
# shellcheck source=../lib/skip.sh
. "$(dirname "$0")/../lib/skip.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces and containers"
for tool in /usr/bin/crun /usr/bin/umoci /usr/bin/skopeo /usr/sbin/ip /usr/bin/nsenter; do
  [ -x "$tool" ] || skip "needs $tool (scripts/setup-tests.sh)"
done
"$PY" -c 'import torch' 2>/dev/null || skip "$PY has no torch (apt-get install python3-torch)"
[ -L /lib ] || skip "the image links /lib to /usr/lib: needs a merged-/usr host"

# shellcheck source=../lib/netns_hosts.sh
. "$(dirname "$0")/../lib/netns_hosts.sh"
# shellcheck source=../lib/netns_cluster.sh
. "$(dirname "$0")/../lib/netns_cluster.sh"
ID=$(( $$ % 200 + 20 ))
NET=10.78.$ID
W=$(mktemp -d /tmp/corral-ddpct.XXXXXX)
chmod 755 "$W"
# Hosts end in x, y, z: their veths (cv$ID + that letter) differ from ddp_netns_test's.
SW=cct$ID-sw H=cct$ID-x A=cct$ID-y B=cct$ID-z

cleanup() {
  local rc=$? d
  netns_cleanup
  # Containers left by a failure (the agents are gone): crun's state and overlays.
  for d in "$W"/node0?/crun/*/; do
    if [ -d "$d" ]; then
      crun --cgroup-manager=disabled --root "$(dirname "$d")" delete --force "$(basename "$d")" \
        >/dev/null 2>&1 || true
    fi
  done
  grep " $W/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  netns_finish "$rc" "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

id "$USER_NAME" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$USER_NAME"

# ---- the image: its own root; the host's /usr comes in as a mount
R=$W/rootfs
mkdir -p "$R/usr" "$R/etc" "$R/tmp" "$R/proc" "$R/sys" "$R/dev"
for l in bin lib lib64 sbin; do ln -s "usr/$l" "$R/$l"; done
cp -a /etc/alternatives "$R/etc/"
cp /etc/ld.so.cache "$R/etc/"
getent passwd root "$USER_NAME" >"$R/etc/passwd"
getent group root "$(id -gn "$USER_NAME")" >"$R/etc/group"
echo ddp-image >"$R/etc/image-tag"
(cd "$W" && umoci init --layout layout && umoci new --image layout:v1 &&
  umoci insert --image layout:v1 "$R" / >/dev/null &&
  umoci config --image layout:v1 --config.env PATH=/usr/bin:/bin --config.workingdir /)
IMAGE="oci:$W/layout:v1"

# ---- hosts and the cluster. The agents enter only their host's network namespace (nsenter):
# `ip netns exec` would remount /sys, hiding the cgroups a run needs.
mkdir -m 755 "$W/checkpoints"  # the owner reaches its job's directory in it
netns_init "$SW"
netns_host "$H" "$NET.1"
netns_host "$A" "$NET.2"
netns_host "$B" "$NET.3"
netns_head "$H" "$NET.1" "$W/head" "$W/checkpoints" "$W/head.log"
for n in 1 2; do
  ns=$A; [ "$n" = 2 ] && ns=$B
  nsenter --net="/run/netns/$ns" "$CORRAL" agent --head "$CORRAL_ADDR" \
    --join-token-file "$W/head/join.token" --name "node0$n" --run-as owner \
    --advertise-addr "$NET.$((n + 1))" --state-dir "$W/node0$n" --simulate-gpus 1 --cpus 4 \
    --memory 4G >"$W/node0$n.log" 2>&1 &
done
netns_wait_ready 2
TOKEN=$(corral token create --user "$USER_NAME" | head -n1)
OUT=$W/out
mkdir -p "$OUT"
chown "$USER_NAME" "$OUT"

# ---- the job: one replica per host, each in a container of the image
job=$(CORRAL_TOKEN=$TOKEN corral submit --parsable --name ddp-ct --replicas 2 --gpus 1 --cpus 1 \
  --memory 1G --image "$IMAGE" --mount /usr:/usr:ro --mount "$(dirname "$EXAMPLE"):/example:ro" \
  --mount "$OUT:$OUT" -- "$PY" /example/train.py --steps 20 --out "$OUT")
corral wait "$job" --timeout 300s >/dev/null 2>&1 || true
state=$(corral show "$job" -o json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["state"])')
[ "$state" = succeeded ] || {
  corral show "$job"
  corral logs "$job" --stderr | tail -20
  fail "job $job is $state, want succeeded"
}

# Each replica ran in a container on its own host: crun's state directory on each node names
# the job's container, and the image entered each node's cache.
for n in 1 2; do
  ls "$W/node0$n/images"/sha256-* >/dev/null 2>&1 || fail "node0$n cached no image"
done
"$PY" - "$OUT" "$NET" "$(id -u "$USER_NAME")" <<'PYEOF'
import json, os, sys
out, net, uid = sys.argv[1], sys.argv[2], int(sys.argv[3])
rs = [json.load(open(os.path.join(out, f"result.{r}.json"))) for r in range(2)]
assert len({r["params"] for r in rs}) == 1, f"ranks disagree: {[r['params'][:12] for r in rs]}"
assert all(r["world"] == 2 for r in rs), rs
assert all(r["loss_last"] < r["loss_first"] for r in rs), rs
assert sorted(r["env"]["CORRAL_NODE"] for r in rs) == ["node01", "node02"], rs
assert rs[0]["env"]["MASTER_ADDR"] in (f"{net}.2", f"{net}.3"), rs
assert all(r["env"]["CUDA_VISIBLE_DEVICES"] == "0" for r in rs), rs
for r in range(2):
    st = os.stat(os.path.join(out, f"result.{r}.json"))
    assert st.st_uid == uid, f"result.{r}.json is uid {st.st_uid}, want the owner's {uid}"
print(f"ok: 2 ranks on node01 and node02, params {rs[0]['params'][:12]}, "
      f"loss {rs[0]['loss_first']:.3f} -> {rs[0]['loss_last']:.3f}")
PYEOF
# Inside: the image's root, the owner's uid, one GPU device node (a second job, same image).
probe=$(CORRAL_TOKEN=$TOKEN corral submit --parsable --name probe --gpus 1 --cpus 1 --memory 1G \
  --image "$IMAGE" --mount /usr:/usr:ro -- "$PY" -c \
  'import os; print(open("/etc/image-tag").read().strip(), os.getuid(), len([d for d in os.listdir("/dev") if d.startswith("nvidia")]))')
corral wait "$probe" --timeout 120s >/dev/null 2>&1 || true
got=$(corral logs "$probe")
want="ddp-image $(id -u "$USER_NAME") 1"
[ "$got" = "$want" ] || fail "probe printed '$got', want '$want'"
echo "PASS: 2-replica DDP in containers on two netns hosts"
