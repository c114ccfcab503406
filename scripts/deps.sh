#!/usr/bin/env bash
# scripts/deps.sh — installs the system programs the tests drive when they are absent:
# Debian's chromium (the browser tests of the public verification page), poppler-utils
# (pdftotext, pdfinfo, pdfimages, pdftoppm) and zbar-tools (zbarimg), which read the PDF
# export and decode its QR code, and promtool (Debian's prometheus package: the checks
# of deploy/'s alert rules and dashboard).
#
#   bash scripts/deps.sh
#
# Uses apt-get as root, or through sudo without a password; otherwise says what to
# install and fails. Without Recommends: prometheus would bring node-exporter, a daemon.
# test.sh runs it before the tests, so a fresh machine needs nothing else. Already
# installed: does nothing (no network).
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
	[ -n "${BPC_CHROMIUM:-}" ] || need+=(chromium)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
for tool in pdftotext pdfinfo pdfimages pdftoppm; do
	command -v "$tool" >/dev/null 2>&1 || { need+=(poppler-utils); break; }
done
command -v zbarimg >/dev/null 2>&1 || need+=(zbar-tools)

[ ${#need[@]} -eq 0 ] && exit 0

apt=(apt-get)
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		apt=(sudo -n apt-get)
	else
		echo "deps.sh: missing ${need[*]}; install with: apt-get install -y ${need[*]}" >&2
		exit 1
	fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: missing ${need[*]} and no apt-get here; install them (for Chromium, BPC_CHROMIUM may name a binary instead)" >&2
	exit 1
fi
echo "deps.sh: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${apt[@]}" install -y -q --no-install-recommends "${need[@]}" >/dev/null ||
	{ "${apt[@]}" update -q >/dev/null && "${apt[@]}" install -y -q --no-install-recommends "${need[@]}" >/dev/null; }
