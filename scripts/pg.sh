#!/usr/bin/env bash
# scripts/pg.sh — ensure a reachable Postgres and a database on it.
#
# Usage:
#   scripts/pg.sh [--fresh] [DBNAME]    # DBNAME defaults to "bpc"
#   scripts/pg.sh --drop DBNAME         # drop DBNAME (a test run's own database)
#   scripts/pg.sh --stop                # stop this repo's private cluster, if running
#   . scripts/pg.sh [--fresh] DBNAME    # sourced: same, and sets BPC_PG_URL in the caller
#
# stdout carries exactly one line, the URL to use; every diagnostic goes to stderr.
# So: url=$(scripts/pg.sh bpc) && export DATABASE_URL="$url"
#
# Where the database comes from, first match wins:
#   1. $DATABASE_URL, used as is (checked with pg_isready). DBNAME and --fresh are
#      ignored: this script never drops or creates anything on a URL you gave it.
#   2. A Postgres on 127.0.0.1:5432 that lets user "postgres" in without a password.
#   3. A private cluster for this checkout in .pgdata/ (git-ignored), on 127.0.0.1 only,
#      trust auth, superuser "postgres", its socket in .pgdata/run. When run as root it
#      runs as the system user "bpcpg" (created if missing), since initdb/pg_ctl refuse
#      root. If that user cannot reach the repo (a parent dir without o+x, e.g. /root),
#      or the socket path would be too long, the cluster lives in
#      /tmp/bpc-pgdata-<hash of repo path> instead (printed on stderr).
# For 2 and 3 the database DBNAME is created if missing; --fresh drops it first
# (DROP DATABASE ... WITH (FORCE)). The test scripts use --fresh and --drop on a
# name of their own per run (scripts/test_env.sh), never on a name another run
# could be using. --drop prints no URL.
#
# Environment:
#   DATABASE_URL           see 1.
#   BPC_PGPORT             port of the private cluster (default 55432).
#   BPC_PG_FORCE_PRIVATE=1 skip step 2 (always use the private cluster; handy to test the
#                          path CI takes on a machine without Postgres).
#   BPC_PG_FAST=1          start the private cluster with fsync/synchronous_commit/
#                          full_page_writes off (throwaway data only; off by default so
#                          benchmarks measure a normally configured server).
#   BPC_PG_USER            system user that runs the private cluster as root (default bpcpg).

_bpc_pg_main() (
	set -euo pipefail

	log() { printf 'pg.sh: %s\n' "$*" >&2; }
	die() { printf 'pg.sh: error: %s\n' "$*" >&2; exit 1; }

	# --- arguments ------------------------------------------------------------------
	local fresh=0 stop=0 drop=0 db=""
	while [ $# -gt 0 ]; do
		case "$1" in
		--fresh) fresh=1 ;;
		--stop) stop=1 ;;
		--drop) drop=1 ;;
		-h | --help)
			sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
			exit 0
			;;
		--) shift; [ $# -gt 0 ] && db="$1"; break ;;
		-*) die "unknown option: $1 (see --help)" ;;
		*)
			[ -z "$db" ] || die "only one database name expected, got '$db' and '$1'"
			db="$1"
			;;
		esac
		shift
	done
	db="${db:-bpc}"
	[[ "$db" =~ ^[A-Za-z_][A-Za-z0-9_]{0,62}$ ]] ||
		die "database name '$db' must match [A-Za-z_][A-Za-z0-9_]* (max 63 chars)"

	local root
	root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

	local port="${BPC_PGPORT:-55432}"
	[[ "$port" =~ ^[0-9]+$ ]] || die "BPC_PGPORT must be a port number, got '$port'"

	# Connections made by this script: never prompt, never hang, no stray password.
	unset PGPASSWORD PGSERVICE PGDATABASE PGUSER PGHOST PGPORT PGHOSTADDR PGOPTIONS
	export PGCONNECT_TIMEOUT=3 PGSSLMODE=disable PGOPTIONS="-c client_min_messages=warning"

	local is_root=0
	[ "$(id -u)" -eq 0 ] && is_root=1
	local run_user="${BPC_PG_USER:-bpcpg}"

	# --- helpers --------------------------------------------------------------------
	redact() { printf '%s' "$1" | sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#'; }

	hash_of() {
		if command -v sha1sum >/dev/null 2>&1; then
			printf '%s' "$1" | sha1sum | cut -c1-12
		elif command -v shasum >/dev/null 2>&1; then
			printf '%s' "$1" | shasum | cut -c1-12
		else
			printf '%s' "$1" | cksum | cut -d' ' -f1
		fi
	}

	# Directory with initdb + pg_ctl (and usually psql). $1 = wanted major version, if any.
	local pgbin=""
	find_pgbin() {
		local want="${1:-}" d c
		local -a cands=()
		if [ -n "$want" ]; then
			cands+=("/usr/lib/postgresql/$want/bin" "/opt/homebrew/opt/postgresql@$want/bin"
				"/usr/local/opt/postgresql@$want/bin" "/usr/pgsql-$want/bin")
		fi
		if c="$(command -v initdb 2>/dev/null)"; then
			# Resolve symlinks (Debian wrappers in /usr/local/bin point into /usr/lib/postgresql).
			c="$(readlink -f "$c" 2>/dev/null || printf '%s' "$c")"
			cands+=("$(dirname "$c")")
		fi
		while IFS= read -r d; do cands+=("$d"); done < <(
			for d in /usr/lib/postgresql/*/bin /usr/pgsql-*/bin /opt/homebrew/opt/postgresql@*/bin \
				/usr/local/opt/postgresql@*/bin; do
				[ -d "$d" ] && printf '%s\n' "$d"
			done | sort -V -r
		)
		for d in "${cands[@]}"; do
			if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
				if [ -n "$want" ]; then
					local v
					v="$("$d/pg_ctl" --version 2>/dev/null | awk '{print $3}' | cut -d. -f1)"
					[ "$v" = "$want" ] || continue
				fi
				pgbin="$d"
				return 0
			fi
		done
		return 1
	}

	local psql_bin=""
	find_psql() {
		if [ -n "$pgbin" ] && [ -x "$pgbin/psql" ]; then
			psql_bin="$pgbin/psql"
		elif command -v psql >/dev/null 2>&1; then
			psql_bin="$(command -v psql)"
		else
			find_pgbin "" 2>/dev/null || true
			[ -n "$pgbin" ] && [ -x "$pgbin/psql" ] && psql_bin="$pgbin/psql"
		fi
		[ -n "$psql_bin" ]
	}

	# Run a command as the cluster owner (bpcpg when we are root), from / so that an
	# unreadable current directory does not bother postgres. fd 9 (our lock) is closed so
	# that a postmaster started here does not hold the lock forever.
	as_owner() {
		if [ "$is_root" -eq 1 ]; then
			if command -v runuser >/dev/null 2>&1; then
				(cd / && runuser -u "$run_user" -- "$@") 9>&-
			else
				local q
				q="$(printf '%q ' "$@")"
				(cd / && su -s /bin/sh "$run_user" -c "$q") 9>&-
			fi
		else
			(cd / && "$@") 9>&-
		fi
	}

	ensure_run_user() {
		[ "$is_root" -eq 1 ] || return 0
		id -u "$run_user" >/dev/null 2>&1 && return 0
		log "creating system user '$run_user' to run the private Postgres (initdb/pg_ctl refuse root)"
		if command -v useradd >/dev/null 2>&1; then
			local nologin=/usr/sbin/nologin
			[ -x "$nologin" ] || nologin=/bin/false
			useradd --system --user-group --no-create-home --home-dir /nonexistent \
				--shell "$nologin" "$run_user" >&2 ||
				id -u "$run_user" >/dev/null 2>&1 || die "useradd $run_user failed"
		elif command -v adduser >/dev/null 2>&1; then # Alpine/BusyBox
			adduser -S -D -H -s /sbin/nologin "$run_user" >&2 ||
				id -u "$run_user" >/dev/null 2>&1 || die "adduser $run_user failed"
		else
			die "running as root and no useradd/adduser to create user '$run_user'; run as a normal user"
		fi
	}

	local_base="$root/.pgdata"
	tmp_base="/tmp/bpc-pgdata-$(hash_of "$root")"

	running_port() { # port from postmaster.pid (4th line), if there is one
		if [ -f "$1/data/postmaster.pid" ]; then sed -n 4p "$1/data/postmaster.pid" 2>/dev/null || true; fi
	}

	is_running() { # $1 = base dir
		[ -f "$1/data/PG_VERSION" ] || return 1
		[ -f "$1/data/postmaster.pid" ] || return 1
		local ver
		ver="$(cat "$1/data/PG_VERSION")"
		if [ -z "$pgbin" ]; then find_pgbin "$ver" || find_pgbin "" || return 1; fi
		as_owner "$pgbin/pg_ctl" status -D "$1/data" >/dev/null 2>&1
	}

	# --- --stop -------------------------------------------------------------------------
	if [ "$stop" -eq 1 ]; then
		local b stopped=0
		for b in "$local_base" "$tmp_base"; do
			[ -f "$b/data/PG_VERSION" ] || continue
			if is_running "$b"; then
				log "stopping private cluster in $b/data (port $(running_port "$b"))"
				as_owner "$pgbin/pg_ctl" stop -D "$b/data" -m fast -w >&2
				stopped=1
			fi
		done
		[ "$stopped" -eq 1 ] || log "no private cluster running for $root"
		exit 0
	fi

	# --- 1. DATABASE_URL --------------------------------------------------------------
	if [ -n "${DATABASE_URL:-}" ]; then
		if [ "$fresh" -eq 1 ] || [ "$drop" -eq 1 ]; then
			log "DATABASE_URL is set: using it as is; --fresh and --drop ignored (nothing dropped)"
		fi
		[ "$drop" -eq 0 ] || exit 0
		if command -v pg_isready >/dev/null 2>&1; then
			if ! pg_isready -q -t 5 -d "$DATABASE_URL" >/dev/null 2>&1; then
				die "DATABASE_URL is set but its server is not reachable: $(redact "$DATABASE_URL")
       (unset DATABASE_URL to let this script find or start a local Postgres)"
			fi
		fi
		log "using DATABASE_URL ($(redact "$DATABASE_URL"))"
		printf '%s\n' "$DATABASE_URL"
		exit 0
	fi

	local host=127.0.0.1 use_port="" how=""

	# --- 2. a Postgres on 127.0.0.1:5432 with passwordless user postgres -----------------
	if [ "${BPC_PG_FORCE_PRIVATE:-0}" != "1" ] && find_psql; then
		local ready=1
		if command -v pg_isready >/dev/null 2>&1; then
			pg_isready -q -t 3 -h 127.0.0.1 -p 5432 >/dev/null 2>&1 || ready=0
		fi
		if [ "$ready" -eq 1 ] &&
			"$psql_bin" -w -X -h 127.0.0.1 -p 5432 -U postgres -d postgres -Atc 'select 1' \
				</dev/null >/dev/null 2>&1; then
			use_port=5432
			how="Postgres on 127.0.0.1:5432"
		fi
	fi

	# --- 3. private cluster --------------------------------------------------------------
	if [ -z "$use_port" ]; then
		# Version of an existing cluster decides which binaries we need.
		local want_ver="" b
		for b in "$local_base" "$tmp_base"; do
			if [ -f "$b/data/PG_VERSION" ]; then want_ver="$(cat "$b/data/PG_VERSION")"; break; fi
		done
		if ! find_pgbin "$want_ver"; then
			if [ -n "$want_ver" ] && find_pgbin ""; then
				die "the private cluster was created by Postgres $want_ver but only $("$pgbin/pg_ctl" --version) is installed.
       Remove it and retry: scripts/pg.sh --stop; rm -rf '$local_base' '$tmp_base'"
			fi
			log "no initdb/pg_ctl found (PATH, /usr/lib/postgresql/*/bin, Homebrew)."
			log "install Postgres, or set DATABASE_URL to an existing server:"
			log "  Debian/Ubuntu: apt-get install -y postgresql   (binaries land in /usr/lib/postgresql/<ver>/bin)"
			log "  macOS:         brew install postgresql@16"
			exit 1
		fi
		find_psql || die "psql not found next to $pgbin/initdb nor on PATH (Debian: apt-get install -y postgresql-client)"

		ensure_run_user

		# Pick the base directory: .pgdata in the repo unless unusable.
		local base="$local_base" why=""
		if [ -f "$tmp_base/data/PG_VERSION" ] && [ ! -f "$local_base/data/PG_VERSION" ]; then
			base="$tmp_base"
		elif [ "$is_root" -eq 1 ] && ! as_owner test -x "$root" 2>/dev/null; then
			base="$tmp_base"
			why="user '$run_user' cannot traverse the path to $root"
		elif [ "$(printf '%s' "$local_base/run/.s.PGSQL.$port" | wc -c)" -gt 100 ]; then
			base="$tmp_base"
			why="unix socket path under $root would be too long"
		fi
		if [ "$base" = "$tmp_base" ]; then
			log "private cluster lives in $tmp_base${why:+ ($why)}"
		fi
		local data="$base/data" run="$base/run" logf="$base/postgres.log"

		if [ "$base" = "$tmp_base" ] && [ -e "$base" ] && [ ! -O "$base" ] &&
			{ [ "$is_root" -eq 0 ] || [ "$(stat -c %U "$base" 2>/dev/null)" != "$run_user" ]; }; then
			die "$base exists but belongs to someone else; remove it or set DATABASE_URL"
		fi
		mkdir -p "$base" "$run"

		# Serialize concurrent invocations (two test runs at once) around init/start.
		if command -v flock >/dev/null 2>&1; then
			exec 9>"$base/.lock"
			flock -w 180 9 || die "timed out waiting for another pg.sh on $base"
		fi
		if [ "$is_root" -eq 1 ]; then
			# chown only when needed (first run, or a tree created by another uid).
			if [ "$(stat -c %U "$base")" != "$run_user" ] || [ "$(stat -c %U "$run")" != "$run_user" ] ||
				{ [ -e "$data" ] && [ "$(stat -c %U "$data")" != "$run_user" ]; }; then
				chown -R "$run_user:" "$base"
			fi
		fi
		chmod 700 "$base"

		if [ ! -f "$data/PG_VERSION" ]; then
			log "initializing private cluster in $data ($("$pgbin/initdb" --version))"
			rm -rf "$data"
			as_owner "$pgbin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-locale \
				>"$base/initdb.log" 2>&1 || {
				cat "$base/initdb.log" >&2
				die "initdb failed (log above, also in $base/initdb.log)"
			}
		fi

		if is_running "$base"; then
			local rp
			rp="$(running_port "$base")"
			if [ -n "$rp" ] && [ "$rp" != "$port" ]; then
				log "private cluster already running on port $rp (BPC_PGPORT=$port ignored; scripts/pg.sh --stop to change it)"
			fi
			use_port="${rp:-$port}"
			how="private cluster in $data (already running)"
		else
			local opts="-p $port -k '$run' -c listen_addresses=127.0.0.1 -c max_connections=200"
			if [ "${BPC_PG_FAST:-0}" = "1" ]; then
				opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
			fi
			log "starting private cluster on 127.0.0.1:$port (log: $logf)"
			if ! as_owner "$pgbin/pg_ctl" -D "$data" -l "$logf" -o "$opts" -w -t 60 start >/dev/null 2>&1; then
				tail -n 20 "$logf" >&2 2>/dev/null || true
				die "could not start the private cluster on port $port (log above: $logf).
       If the port is taken, pick another: BPC_PGPORT=55433 $0 ..."
			fi
			use_port="$port"
			how="private cluster in $data"
		fi
	fi

	# --- database ---------------------------------------------------------------------
	local -a psql=("$psql_bin" -w -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$use_port" -U postgres -d postgres)
	if [ "$drop" -eq 1 ]; then
		"${psql[@]}" -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" </dev/null >&2 ||
			die "could not drop database $db on $host:$use_port"
		log "dropped database $db"
		exit 0
	fi
	if [ "$fresh" -eq 1 ]; then
		"${psql[@]}" -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" </dev/null >&2 ||
			die "could not drop database $db on $host:$use_port"
	fi
	local exists
	exists="$("${psql[@]}" -Atc "SELECT 1 FROM pg_database WHERE datname = '$db'" </dev/null)" ||
		die "could not connect as postgres to $host:$use_port"
	if [ "$exists" != "1" ]; then
		local err
		if ! err="$("${psql[@]}" -c "CREATE DATABASE \"$db\"" </dev/null 2>&1)"; then
			case "$err" in
			*"already exists"*) ;; # lost a race with a concurrent run: fine
			*) printf '%s\n' "$err" >&2; die "could not create database $db on $host:$use_port" ;;
			esac
		fi
	fi
	if [ "$fresh" -eq 1 ]; then how="$how, fresh database $db"; else how="$how, database $db"; fi
	log "using $how"
	printf 'postgres://postgres@%s:%s/%s?sslmode=disable\n' "$host" "$use_port" "$db"
)

if (return 0 2>/dev/null); then
	# Sourced: run in a subshell (so errors cannot kill the caller's shell), print the URL
	# and leave it in BPC_PG_URL.
	if BPC_PG_URL="$(_bpc_pg_main "$@")"; then
		printf '%s\n' "$BPC_PG_URL"
		unset -f _bpc_pg_main
		true
	else
		unset -f _bpc_pg_main
		false
	fi
else
	_bpc_pg_main "$@"
fi
