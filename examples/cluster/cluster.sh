#!/usr/bin/env bash
# A sandgate cluster on one machine: three `sandgate serve` nodes on loopback that
# share one API token. `make cluster` runs it; Ctrl-C stops every node it started.
#
#   node  HTTP             raft             data
#   n1    127.0.0.1:7070   127.0.0.1:7071   ./data/cluster/n1   (bootstraps the cluster)
#   n2    127.0.0.1:7080   127.0.0.1:7081   ./data/cluster/n2   (--join 127.0.0.1:7070)
#   n3    127.0.0.1:7090   127.0.0.1:7091   ./data/cluster/n3   (--join 127.0.0.1:7070)
#
# Each node logs to ./data/cluster/nN.log. The token is made once and kept in
# ./data/cluster/token, so a second run resumes the same cluster with the same token.
#
# Environment (all optional):
#   SANDGATE_BIN         the sandgate binary (default ./bin/sandgate)
#   SANDGATE_TOKEN       the API token (default: ./data/cluster/token, made if missing)
#   CLUSTER_DATA         the data directory (default ./data/cluster)
#   CLUSTER_HTTP_PORTS   HTTP ports, one node per port (default "7070 7080 7090")
#   CLUSTER_RAFT_PORTS   raft ports, as many (default "7071 7081 7091")
#   CLUSTER_WAIT         seconds to wait for every node to be an alive member (default 60)
#   CLUSTER_SERVE_ARGS   extra flags for every `sandgate serve` (e.g. "--runtime local")
set -euo pipefail

BIN=${SANDGATE_BIN:-./bin/sandgate}
DATA=${CLUSTER_DATA:-./data/cluster}
read -r -a HTTP_PORTS <<<"${CLUSTER_HTTP_PORTS:-7070 7080 7090}"
read -r -a RAFT_PORTS <<<"${CLUSTER_RAFT_PORTS:-7071 7081 7091}"
WAIT=${CLUSTER_WAIT:-60}
read -r -a SERVE_ARGS <<<"${CLUSTER_SERVE_ARGS:-}"
HOST=127.0.0.1
N=${#HTTP_PORTS[@]}

say() { printf 'cluster: %s\n' "$*"; }
die() { printf 'cluster: %s\n' "$*" >&2; exit 1; }

[[ -x $BIN ]] || die "no sandgate binary at $BIN: run \`make build\` (or set SANDGATE_BIN)"
((N > 0 && N == ${#RAFT_PORTS[@]})) || die "CLUSTER_HTTP_PORTS and CLUSTER_RAFT_PORTS must list as many ports"

mkdir -p "$DATA"
if [[ -z ${SANDGATE_TOKEN:-} ]]; then
	if [[ ! -s $DATA/token ]]; then
		(umask 077 && od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$DATA/token")
	fi
	SANDGATE_TOKEN=$(<"$DATA/token")
fi
export SANDGATE_TOKEN

# Every node runs in a session of its own (setsid), so a Ctrl-C at the terminal reaches
# this script only, and each node gets exactly one SIGTERM from stop: serve takes a
# second signal as "stop now, skip the clean shutdown". Without setsid (macOS) the
# nodes get the terminal's SIGINT themselves, and stop only waits for them after one.
SETSID=()
command -v setsid >/dev/null && SETSID=(setsid)
PIDS=()
stopping=0

stop() { # stop [interrupted]
	((stopping)) && return
	stopping=1
	trap - INT TERM
	local pid
	if [[ ${1:-} != interrupted || ${#SETSID[@]} -gt 0 ]]; then
		for pid in "${PIDS[@]}"; do
			kill -TERM "$pid" 2>/dev/null || true
		done
	fi
	# serve ends its sandboxes' processes and closes storage; give it 20 s, then kill.
	local deadline=$((SECONDS + 20))
	for pid in "${PIDS[@]}"; do
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
		if kill -0 "$pid" 2>/dev/null; then
			say "node (pid $pid) did not stop within 20 s: killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
	done
}
trap 'stop interrupted; say "stopped"; exit 130' INT
trap 'stop; say "stopped"; exit 143' TERM
trap stop EXIT

start() { # start I [--join ADDR]: starts node n(I+1) in the background
	local i=$1
	shift
	local id=n$((i + 1))
	mkdir -p "$DATA/$id"
	# ${a[@]+"${a[@]}"}: an empty array under set -u, for bash 3 (macOS) too.
	${SETSID[@]+"${SETSID[@]}"} "$BIN" serve --node-id "$id" --listen "$HOST:${HTTP_PORTS[$i]}" --raft-listen "$HOST:${RAFT_PORTS[$i]}" \
		--data "$DATA/$id" --token "$SANDGATE_TOKEN" --labels "node=$id" ${SERVE_ARGS[@]+"${SERVE_ARGS[@]}"} "$@" \
		>"$DATA/$id.log" 2>&1 </dev/null &
	PIDS+=($!)
}

# check_running fails, saying why, when a node has exited.
check_running() {
	local i
	for i in "${!PIDS[@]}"; do
		kill -0 "${PIDS[$i]}" 2>/dev/null && continue
		local code=0
		wait "${PIDS[$i]}" || code=$?
		local id=n$((i + 1))
		printf '\ncluster: node %s exited (code %d) before the cluster formed. The end of %s:\n' "$id" "$code" "$DATA/$id.log" >&2
		tail -n 8 "$DATA/$id.log" | sed 's/^/    /' >&2
		return 1
	done
}

# alive ADDR prints how many members node ADDR counts alive (nothing if it does not answer).
alive() {
	SANDGATE_ADDR=http://$1 "$BIN" cluster -o json 2>/dev/null | grep -c '"status": "alive"' || true
}

# wait_alive ADDR WANT waits until node ADDR counts WANT alive members.
wait_alive() {
	local deadline=$((SECONDS + WAIT)) n
	while :; do
		check_running || exit 1
		n=$(alive "$1")
		[[ $n == "$2" ]] && return 0
		((SECONDS < deadline)) || die "timed out after ${WAIT}s: $1 counts ${n:-no} alive members, want $2 (logs in $DATA/)"
		sleep 0.5
	done
}

say "starting $N nodes with the token $SANDGATE_TOKEN"
for ((i = 0; i < N; i++)); do
	say "  n$((i + 1))  http $HOST:${HTTP_PORTS[$i]}  raft $HOST:${RAFT_PORTS[$i]}  data $DATA/n$((i + 1))  log $DATA/n$((i + 1)).log"
done
start 0
wait_alive "$HOST:${HTTP_PORTS[0]}" 1
for ((i = 1; i < N; i++)); do
	start "$i" --join "$HOST:${HTTP_PORTS[0]}"
done
for ((i = 0; i < N; i++)); do
	wait_alive "$HOST:${HTTP_PORTS[$i]}" "$N"
done

first=http://$HOST:${HTTP_PORTS[0]}
all=$first
for ((i = 1; i < N; i++)); do all+=",http://$HOST:${HTTP_PORTS[$i]}"; done
echo
SANDGATE_ADDR=$first "$BIN" cluster
cat <<EOF

cluster: ready: $N nodes, every one an alive member.

  token:      $SANDGATE_TOKEN
  dashboard:  $first/?token=$SANDGATE_TOKEN
  CLI:        export SANDGATE_ADDR=$all SANDGATE_TOKEN=$SANDGATE_TOKEN
              (every node: the CLI moves on to the next when one cannot be reached)
              $BIN create --id demo && $BIN exec demo -- uname -a
              $BIN cluster          (members, leader, term, partitions)

Any node answers any request: one that does not own the sandbox forwards to the
owner. Stop a node (kill its pid) and its sandboxes move to the others once its
lease has run out, a few seconds later. Node pids: ${PIDS[*]}

Ctrl-C stops all $N nodes.
EOF

# Wait for Ctrl-C (the trap stops the nodes), or for a node to end by itself, which
# stops the others too.
while :; do
	for pid in "${PIDS[@]}"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			say "node (pid $pid) exited by itself: stopping the others"
			exit 1
		fi
	done
	sleep 1
done
