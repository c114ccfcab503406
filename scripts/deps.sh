#!/usr/bin/env bash
# scripts/deps.sh — installs the system programs the tests drive when they are absent:
# Debian's chromium (the browser tests of the public verification page), poppler-utils
# (pdftotext, pdfinfo, pdfimages, pdftoppm) and zbar-tools (zbarimg), which read the PDF
# export and decode its QR code, promtool (Debian's prometheus package: the checks of
# deploy/'s alert rules and dashboard) and rabbitmq-server (the RabbitMQ job trigger's
# tests); and starts RabbitMQ when nothing answers on 127.0.0.1:5672 (unless
# TEST_AMQP_URL names another broker).
#
#   bash scripts/deps.sh          # everything the tests need
#   bash scripts/deps.sh amqp     # RabbitMQ only (what bench.sh needs)
#
# Uses apt-get as root, or through sudo without a password; otherwise says what to
# install and fails. Without Recommends: prometheus would bring node-exporter, a daemon.
# test.sh runs it before the tests, so a fresh machine needs nothing else. Already
# installed: does nothing (no network).
set -euo pipefail

need=()
if [ "${1:-}" != "amqp" ]; then
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
		[ -n "${BPC_CHROMIUM:-}" ] || need+=(chromium)
	command -v promtool >/dev/null 2>&1 || need+=(prometheus)
	for tool in pdftotext pdfinfo pdfimages pdftoppm; do
		command -v "$tool" >/dev/null 2>&1 || { need+=(poppler-utils); break; }
	done
	command -v zbarimg >/dev/null 2>&1 || need+=(zbar-tools)
fi

# RabbitMQ: the trigger's tests fail, loudly, without a broker.
amqp_up() { (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; }
want_amqp=0
if [ -z "${TEST_AMQP_URL:-}" ] && ! amqp_up; then
	want_amqp=1
	command -v rabbitmq-server >/dev/null 2>&1 || [ -x /usr/sbin/rabbitmq-server ] || need+=(rabbitmq-server)
fi

start_amqp() {
	[ "$want_amqp" -eq 1 ] || return 0
	echo "deps.sh: starting RabbitMQ (rabbitmq-server -detached)" >&2
	PATH="$PATH:/usr/sbin" rabbitmq-server -detached >/dev/null 2>&1 || true
	for _ in $(seq 1 120); do
		amqp_up && return 0
		sleep 0.5
	done
	echo "deps.sh: RabbitMQ did not start listening on 127.0.0.1:5672 within 60 s" >&2
	return 1
}

if [ ${#need[@]} -eq 0 ]; then
	start_amqp
	exit $?
fi

apt=(apt-get)
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		apt=(sudo -n apt-get)
	else
		echo "deps.sh: missing ${need[*]}; install with: apt-get install -y ${need[*]} (or set BPC_CHROMIUM, TEST_AMQP_URL)" >&2
		exit 1
	fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: missing ${need[*]} and no apt-get here; install them (for Chromium, BPC_CHROMIUM may name a binary instead; TEST_AMQP_URL a broker)" >&2
	exit 1
fi
echo "deps.sh: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${apt[@]}" install -y -q --no-install-recommends "${need[@]}" >/dev/null ||
	{ "${apt[@]}" update -q >/dev/null && "${apt[@]}" install -y -q --no-install-recommends "${need[@]}" >/dev/null; }
start_amqp
