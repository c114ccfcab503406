#!/usr/bin/env bash
# scripts/demo.sh — what `make demo` calls: build bin/bpc and run `bpc demo`, which walks
# the NMC811 sample battery through the whole passport pipeline over HTTP, writes the
# artifacts to demo-out/ and verifies them offline. Extra arguments go to `bpc demo`.
#
# Environment:
#   BPC_URL          the service (default http://127.0.0.1:8080). When BPC_URL is not set
#                    and nothing answers there, this script starts a dev service itself
#                    (Postgres via scripts/pg.sh, logs in demo-out/service.log), runs the
#                    demo against it and stops it afterwards.
#   BPC_ADMIN_TOKEN  the admin token; default: .bpc-dev/admin-token (scripts/run.sh keeps
#                    the dev token there).
#   BPC_DEMO_TENANT  tenant (default the dev tenant); BPC_DEMO_OUT output dir (demo-out).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="/usr/local/go/bin:$PATH"
fi

log() { printf 'demo.sh: %s\n' "$*" >&2; }
die() { printf 'demo.sh: error: %s\n' "$*" >&2; exit 1; }

command -v curl >/dev/null 2>&1 || die "curl is required"

url_given=0
[ -n "${BPC_URL:-}" ] && url_given=1
url="${BPC_URL:-http://127.0.0.1:8080}"
url="${url%/}"
out="${BPC_DEMO_OUT:-demo-out}"
token_file=.bpc-dev/admin-token

log "building bin/bpc"
go build -o bin/bpc ./cmd/bpc

# Where the admin token comes from, said once below so that a 401 can be traced.
token_from="BPC_ADMIN_TOKEN (set in this shell)"
if [ -z "${BPC_ADMIN_TOKEN:-}" ] && [ -s "$token_file" ]; then
	BPC_ADMIN_TOKEN="$(cat "$token_file")"
	token_from="$token_file (BPC_ADMIN_TOKEN is not set)"
fi

ready() { curl -fsS --max-time 2 -o /dev/null "$url/v1/health/ready" >/dev/null 2>&1; }

svc_pid=""
stop_service() {
	[ -n "$svc_pid" ] || return 0
	if kill -0 "$svc_pid" 2>/dev/null; then
		log "stopping the service (pid $svc_pid)"
		kill -TERM "$svc_pid" 2>/dev/null || true
		local i
		for i in $(seq 1 60); do
			kill -0 "$svc_pid" 2>/dev/null || break
			sleep 0.5
		done
		if kill -0 "$svc_pid" 2>/dev/null; then
			log "the service did not stop within 30 s; killing it"
			kill -KILL "$svc_pid" 2>/dev/null || true
		fi
	fi
	wait "$svc_pid" 2>/dev/null || true
	svc_pid=""
}

if ! ready; then
	if [ "$url_given" -eq 1 ]; then
		die "$url/v1/health/ready does not answer (BPC_URL is set, so no service is started here)"
	fi
	# Port of the URL; default 8080.
	hostport="${url#*://}"
	hostport="${hostport%%/*}"
	port="${hostport##*:}"
	if [ "$port" = "$hostport" ] || ! [[ "$port" =~ ^[0-9]+$ ]]; then port=8080; fi

	if [ -z "${BPC_ADMIN_TOKEN:-}" ]; then
		BPC_ADMIN_TOKEN="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
		mkdir -p .bpc-dev
		(umask 077 && printf '%s\n' "$BPC_ADMIN_TOKEN" >"$token_file")
		chmod 600 "$token_file"
		token_from="$token_file (generated now)"
	fi
	mkdir -p "$out"
	dburl="$(bash scripts/pg.sh bpc)"
	log "no service at $url: starting one on 127.0.0.1:$port (logs: $out/service.log)"
	trap stop_service EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	DATABASE_URL="$dburl" BPC_ENV=dev BPC_ADMIN_TOKEN="$BPC_ADMIN_TOKEN" bin/bpc migrate >"$out/service.log" 2>&1 ||
		{ tail -n 20 "$out/service.log" >&2; die "bpc migrate failed (log above: $out/service.log)"; }
	DATABASE_URL="$dburl" BPC_ENV=dev BPC_ADMIN_TOKEN="$BPC_ADMIN_TOKEN" BPC_HTTP_ADDR="127.0.0.1:$port" \
		bin/bpc serve >>"$out/service.log" 2>&1 &
	svc_pid=$!
	for _ in $(seq 1 120); do
		ready && break
		if ! kill -0 "$svc_pid" 2>/dev/null; then
			wait "$svc_pid" 2>/dev/null || true
			svc_pid=""
			tail -n 20 "$out/service.log" >&2
			die "the service exited before it was ready (log above: $out/service.log)"
		fi
		sleep 0.5
	done
	ready || { tail -n 20 "$out/service.log" >&2; die "the service was not ready within 60 s (log: $out/service.log)"; }
fi

[ -n "${BPC_ADMIN_TOKEN:-}" ] ||
	die "BPC_ADMIN_TOKEN is not set and $token_file does not exist: export the service's token, or start it with make run (which keeps the dev token in $token_file)"
log "admin token from $token_from"

# The token is checked once here, so that a refusal says what to do rather than
# failing the first stage of the walk-through.
code="$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 \
	-H "Authorization: Bearer $BPC_ADMIN_TOKEN" "$url/v1/tenants" || true)"
case "$code" in
401)
	die "$url answers 401 to the admin token from $token_from: the service was started with another token.
  Either give this shell the service's token: BPC_ADMIN_TOKEN=<the token it was started with> make demo
  or restart the service with make run without BPC_ADMIN_TOKEN set: it then uses $token_file, as make demo does." ;;
esac
export BPC_ADMIN_TOKEN BPC_URL="$url"

if [ -n "$svc_pid" ]; then
	# Our own service must be stopped afterwards, so no exec.
	status=0
	bin/bpc demo "$@" || status=$?
	exit "$status"
fi
exec bin/bpc demo "$@"
