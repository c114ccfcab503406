#!/usr/bin/env bash
# scripts/replica.sh — a private Postgres primary and a streaming replica of it, for
# the read replica tests (internal/replicatest).
#
#   . scripts/replica.sh start     # sourced: starts the pair and exports the variables
#                                  # below into the caller; `replica_stop` removes it
#   scripts/replica.sh run CMD...  # starts the pair, runs CMD with the variables set,
#                                  # removes the pair; exits with CMD's status
#   scripts/replica.sh ctl primary|replica start|stop   # what the tests call
#   scripts/replica.sh stop        # removes the pair $TEST_REPLICA_DIR names
#
# e.g. scripts/replica.sh run go test -race -count=1 ./internal/replicatest/
#
# The pair is the system's Postgres binaries (/usr/lib/postgresql/*/bin): a primary made
# by initdb (trust auth, replication allowed from 127.0.0.1 as initdb does by default)
# and a replica made from it with `pg_basebackup -R` (streaming, hot standby), each on a
# free port on 127.0.0.1, their data under a temporary directory; fsync and synchronous
# commit off (throwaway data). The system Postgres on :5432 has no replication entry in
# pg_hba, hence a pair of its own. As root, both run as the user scripts/pg.sh uses for
# its private cluster (BPC_PG_USER, default bpcpg; created there if missing): initdb and
# pg_ctl refuse root. Start waits until the replica streams (pg_stat_wal_receiver) and
# has replayed the database the tests use; it takes a few seconds.
#
# Exported:
#   TEST_REPLICA_PRIMARY_URL  the primary's database bpc_replica
#   TEST_REPLICA_URL          the same database on the replica
#   TEST_REPLICA_DIR          the pair's directory (ctl and stop read it)
#   TEST_REPLICA_CTL          this script's path, for `$TEST_REPLICA_CTL ctl primary stop`
# A test makes the replica lag with SELECT pg_wal_replay_pause() on it.

_bpc_replica_log() { printf 'replica.sh: %s\n' "$*" >&2; }

# _bpc_replica_as_owner CMD... runs CMD as the clusters' owner (BPC_PG_USER when root).
_bpc_replica_as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		(cd / && runuser -u "${BPC_PG_USER:-bpcpg}" -- "$@")
	else
		(cd / && "$@")
	fi
}

# _bpc_replica_pgbin prints the newest directory holding initdb, pg_ctl and pg_basebackup.
_bpc_replica_pgbin() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/pg_basebackup" ]; then
			printf '%s\n' "$d"
			return 0
		fi
	done
	return 1
}

# _bpc_replica_free_port prints a port nothing listens on, from a random start.
_bpc_replica_free_port() {
	local p tries=0
	p=$((20000 + RANDOM % 30000))
	while [ $tries -lt 200 ]; do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && [ "$p" != "${1:-}" ]; then
			printf '%s\n' "$p"
			return 0
		fi
		p=$((p + 1))
		tries=$((tries + 1))
	done
	return 1
}

# _bpc_replica_ctl NODE ACTION starts or stops the primary or the replica.
_bpc_replica_ctl() {
	local node="$1" action="$2" dir="${TEST_REPLICA_DIR:?TEST_REPLICA_DIR is not set (start the pair first)}"
	local bin
	bin="$(cat "$dir/pgbin")"
	case "$node:$action" in
	primary:start | replica:start)
		_bpc_replica_as_owner "$bin/pg_ctl" -D "$dir/$node" -l "$dir/$node.log" -w -t 60 start >/dev/null
		;;
	primary:stop | replica:stop)
		_bpc_replica_as_owner "$bin/pg_ctl" -D "$dir/$node" -m fast -w -t 60 stop >/dev/null
		;;
	*)
		_bpc_replica_log "usage: replica.sh ctl primary|replica start|stop"
		return 2
		;;
	esac
}

# replica_start makes and starts the pair and exports the TEST_REPLICA_* variables.
replica_start() (
	set -euo pipefail
	local t0=$SECONDS bin dir p1 p2 user="${BPC_PG_USER:-bpcpg}"
	bin="$(_bpc_replica_pgbin)" || { _bpc_replica_log "error: no initdb/pg_ctl/pg_basebackup in /usr/lib/postgresql/*/bin (apt-get install postgresql)"; exit 1; }
	if [ "$(id -u)" -eq 0 ] && ! id -u "$user" >/dev/null 2>&1; then
		# scripts/pg.sh creates the user; ask it to, as it does for its own cluster.
		useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user" >&2
	fi
	dir="$(mktemp -d /tmp/bpc-replica.XXXXXX)"
	printf '%s\n' "$bin" >"$dir/pgbin"
	mkdir -p "$dir/run"
	[ "$(id -u)" -ne 0 ] || chown -R "$user:" "$dir"
	chmod 755 "$dir"
	p1="$(_bpc_replica_free_port)"
	p2="$(_bpc_replica_free_port "$p1")"

	_bpc_replica_as_owner "$bin/initdb" -D "$dir/primary" -U postgres --auth=trust -E UTF8 --no-locale --no-sync \
		>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
	cat >>"$dir/primary/postgresql.conf" <<-EOF
		port = $p1
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '$dir/run'
		max_connections = 100
		fsync = off
		synchronous_commit = off
		full_page_writes = off
		wal_level = replica
		max_wal_senders = 4
		hot_standby = on
		hot_standby_feedback = on
		# Tests stop the primary while the replica serves: a fast shutdown must not wait.
		wal_sender_timeout = 5s
		wal_receiver_status_interval = 1s
	EOF
	TEST_REPLICA_DIR="$dir" _bpc_replica_ctl primary start ||
		{ tail -n 20 "$dir/primary.log" >&2; exit 1; }
	"$bin/psql" -w -X -q -h 127.0.0.1 -p "$p1" -U postgres -d postgres -v ON_ERROR_STOP=1 \
		-c "CREATE DATABASE bpc_replica" </dev/null >&2

	_bpc_replica_as_owner "$bin/pg_basebackup" -h 127.0.0.1 -p "$p1" -U postgres -D "$dir/replica" \
		-R -X stream -c fast --no-sync >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; exit 1; }
	cat >>"$dir/replica/postgresql.conf" <<-EOF
		port = $p2
		# Retry the primary quickly once it is back from a restart.
		wal_retrieve_retry_interval = 200ms
	EOF
	TEST_REPLICA_DIR="$dir" _bpc_replica_ctl replica start ||
		{ tail -n 20 "$dir/replica.log" >&2; exit 1; }

	# Streaming, and the database there: poll, bounded.
	local i state=""
	for i in $(seq 1 100); do
		state="$("$bin/psql" -w -X -Atq -h 127.0.0.1 -p "$p2" -U postgres -d bpc_replica \
			-c "SELECT status FROM pg_stat_wal_receiver" </dev/null 2>/dev/null || true)"
		[ "$state" = "streaming" ] && break
		sleep 0.1
	done
	if [ "$state" != "streaming" ]; then
		tail -n 20 "$dir/replica.log" >&2
		_bpc_replica_log "error: the replica did not start streaming"
		exit 1
	fi
	_bpc_replica_log "primary 127.0.0.1:$p1, replica 127.0.0.1:$p2 streaming, in $dir ($((SECONDS - t0)) s)"
	printf '%s %s %s\n' "$dir" "$p1" "$p2"
)

# replica_stop stops both servers and removes the pair's directory.
replica_stop() {
	local dir="${TEST_REPLICA_DIR:-}"
	[ -n "$dir" ] && [ -d "$dir" ] || return 0
	TEST_REPLICA_DIR="$dir" _bpc_replica_ctl replica stop 2>/dev/null || true
	TEST_REPLICA_DIR="$dir" _bpc_replica_ctl primary stop 2>/dev/null || true
	case "$dir" in /tmp/bpc-replica.*) rm -rf "$dir" ;; esac
	unset TEST_REPLICA_DIR TEST_REPLICA_PRIMARY_URL TEST_REPLICA_URL TEST_REPLICA_CTL
}

# _bpc_replica_export DIR P1 P2 exports the variables the tests read.
_bpc_replica_export() {
	export TEST_REPLICA_DIR="$1"
	export TEST_REPLICA_PRIMARY_URL="postgres://postgres@127.0.0.1:$2/bpc_replica?sslmode=disable"
	export TEST_REPLICA_URL="postgres://postgres@127.0.0.1:$3/bpc_replica?sslmode=disable"
	TEST_REPLICA_CTL="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/replica.sh"
	export TEST_REPLICA_CTL
}

_bpc_replica_main() {
	case "${1:-}" in
	start)
		local out
		out="$(replica_start)" || return 1
		# shellcheck disable=SC2086
		_bpc_replica_export $out
		;;
	run)
		shift
		local out rc=0
		out="$(replica_start)" || return 1
		# shellcheck disable=SC2086
		_bpc_replica_export $out
		trap replica_stop EXIT
		"$@" || rc=$?
		return $rc
		;;
	ctl)
		shift
		_bpc_replica_ctl "$@"
		;;
	stop)
		replica_stop
		;;
	*)
		sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
		return 2
		;;
	esac
}

if (return 0 2>/dev/null); then
	_bpc_replica_main "$@"
else
	set -uo pipefail
	_bpc_replica_main "$@"
	exit $?
fi
