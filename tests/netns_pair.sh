# netns_pair.sh — sourced by the namespace tests: two network namespaces
# joined by a veth pair, standing in for two machines.
#   netns_pair PREFIX SUBNET   (SUBNET like 10.77.0: addresses .1 and .2)
# sets ns0, ns1 (the namespaces' names) and work (a scratch directory), and
# removes all of it, with any process left inside, when the script exits.
# Exits 77 (CTest's skip) where the machine does not allow namespaces (not
# root, no `ip`, no veth, no programs inside a namespace).
netns_pair() {
  local prefix=$1 subnet=$2 v0=${1}v0_$$ v1=${1}v1_$$
  ns0=${prefix}0_$$ ns1=${prefix}1_$$
  if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! ip netns add "$ns0" 2>/dev/null; then
    echo "SKIP: network namespaces are not available here"
    exit 77
  fi
  work=$(mktemp -d)
  trap netns_pair_cleanup EXIT
  if ! ip netns add "$ns1" || ! ip link add "$v0" type veth peer name "$v1"; then
    echo "SKIP: cannot create a veth pair here"
    exit 77
  fi
  if ! ip netns exec "$ns0" true 2>/dev/null; then
    echo "SKIP: cannot run programs inside a network namespace here"
    exit 77
  fi
  ip link set "$v0" netns "$ns0" && ip link set "$v1" netns "$ns1" || exit 1
  ip -n "$ns0" addr add "$subnet.1/24" dev "$v0" && ip -n "$ns1" addr add "$subnet.2/24" dev "$v1" ||
    exit 1
  for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
  ip -n "$ns0" link set "$v0" up && ip -n "$ns1" link set "$v1" up || exit 1
}

netns_pair_cleanup() {
  for ns in "$ns0" "$ns1"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -rf "/etc/netns/$ns"
  done
  rm -rf "$work"
}
