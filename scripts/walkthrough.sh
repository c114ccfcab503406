#!/usr/bin/env bash
# scripts/walkthrough.sh — the README's daily routine, run as written: a webhook
# endpoint that is down, its delivery dead-lettered, the endpoint fixed, the
# job retried from River UI's API, the delivery delivered.
#
# Start the service first (README, "The daily routine"):
#   BPC_JOBS_BACKOFF_UNIT_MS=200 make run
# then, in a second terminal:
#   bash scripts/walkthrough.sh
#
# Environment: BPC_URL (http://127.0.0.1:8080), BPC_ADMIN_TOKEN (default: the
# dev token make run keeps in .bpc-dev/admin-token), BPC (bin/bpc: the binary
# that runs the receiver), HOOK (127.0.0.1:9999: where the receiver listens).
# The test TestReadmeWalkthrough runs this script against a real service and
# checks that the README shows the same commands; TestReadmeRunsAsWritten runs
# the README's copy.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# --- README: the daily routine ---
TOKEN=${BPC_ADMIN_TOKEN:-$(cat .bpc-dev/admin-token)}   # the token make run uses (above)
BASE=${BPC_URL:-http://127.0.0.1:8080}; BPC=${BPC:-bin/bpc}; HOOK=${HOOK:-127.0.0.1:9999}
fail() { echo "walkthrough: $*" >&2; return 1; }     # under set -e, this stops the script
API=$BASE/v1; AUTH="Authorization: Bearer $TOKEN"
DEV=00000000-0000-0000-0000-00000000de00            # the seeded `dev` tenant
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" | head -n 1; }   # a JSON field's value

# 1. A webhook endpoint (nothing listens on $HOOK yet) subscribed to an event type.
EP=$(curl -sf -H "$AUTH" "$API/webhook-endpoints" \
  -d "{\"tenant_id\":\"$DEV\",\"url\":\"http://$HOOK/hooks\",\"secret\":\"whsec-0123456789abcdef\"}" \
  | field webhook_endpoint_id)
curl -sf -H "$AUTH" "$API/webhook-subscriptions" \
  -d "{\"tenant_id\":\"$DEV\",\"webhook_endpoint_id\":\"$EP\",\"event_type\":\"passport.activated\"}"
echo

# 2. Emit an event: it is appended to the audit chain and fans out to one
#    delivery + one DELIVER_WEBHOOK job, in one transaction.
EVENT=$(curl -sf -H "$AUTH" "$API/events" -d "{\"tenant_id\":\"$DEV\",\"aggregate_type\":\"Passport\",
  \"aggregate_id\":\"6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f\",\"event_type\":\"passport.activated\",
  \"payload\":{\"passport_version_id\":\"6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f\",\"carbon_footprint\":\"61.3\"}}")
echo "$EVENT"    # {"event_id":…,"deliveries":[{"webhook_delivery_id":…,"job_id":…}]}
J=$(echo "$EVENT" | field job_id); D=$(echo "$EVENT" | field webhook_delivery_id)

# 3. Watch it: the SSOT row (QUEUED → RUNNING → …), or River UI at
#    $BASE/riverui/ (user: anything, password: the token).
curl -sf -H "$AUTH" "$API/jobs/$J"; echo

# 4. Connection refused is retryable: attempts after 2, 4, 8, 16 backoff units,
#    then DEAD_LETTER. wait_ms long-polls until the job is terminal (202 if not yet).
JOB=$(curl -s -H "$AUTH" "$API/jobs/$J?wait_ms=30000")
echo "$JOB"      # {"status":"DEAD_LETTER","attempts":5,"last_error":{"code":"WEBHOOK_NETWORK",…},"river_job_id":…}
R=$(echo "$JOB" | field river_job_id)                # the id River UI shows
[ "$(echo "$JOB" | field status)" = DEAD_LETTER ] || fail "expected DEAD_LETTER"

# 5. Fix the endpoint: start a receiver that verifies signatures (in the
#    background here; in a third terminal when you try it by hand).
"$BPC" webhook-echo --addr "$HOOK" --secret whsec-0123456789abcdef & ECHO=$!
trap 'kill $ECHO 2>/dev/null' EXIT
until curl -s -o /dev/null "http://$HOOK/"; do sleep 0.1; done

# 6. Retry from River UI: Jobs → Discarded → the job → Retry. Or its API, the
#    same call the page makes. It is sent at once, even with the endpoint's
#    circuit breaker still open: an operator's retry is the breaker's probe.
curl -sf -u "ops:$TOKEN" -H 'Content-Type: application/json' \
  "$BASE/riverui/api/jobs/retry" -d "{\"ids\":[\"$R\"]}"; echo
JOB=$(curl -s -H "$AUTH" "$API/jobs/$J?wait_ms=30000"); echo "$JOB"
[ "$(echo "$JOB" | field status)" = SUCCEEDED ] || fail "expected SUCCEEDED"
DELIVERY=$(curl -sf -H "$AUTH" "$API/webhook-deliveries/$D"); echo "$DELIVERY"
[ "$(echo "$DELIVERY" | field status)" = DELIVERED ] || fail "expected DELIVERED"
# --- end ---
echo "walkthrough: OK (job $J, River job $R, delivery $D)"
