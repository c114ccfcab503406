// Package contract holds the contract stage's tests (scripts/test.sh): tools
// written by others judge the service's OpenAPI document and the traffic the
// service's own test suite recorded (internal/contract, with
// BPC_CONTRACT_TRAFFIC_DIR set for `go test ./...`):
//
//   - TestOapiCodegenClientCompiles: oapi-codegen, default configuration,
//     generates a client from every served document; it must compile.
//   - TestOgenClientCompiles: the same with ogen.
//   - TestTrafficMatchesDocument: libopenapi-validator checks every recorded
//     response, and the request of every exchange answered 2xx (the suite
//     sends invalid requests on purpose; those are answered 4xx).
//   - TestRedoclyLint: Redocly CLI's recommended ruleset, no error and no
//     warning.
//
// The tools are pinned in tools/go.mod (the tool directive) and
// tools/redocly/package-lock.json, never in the service's go.mod.
package contract
