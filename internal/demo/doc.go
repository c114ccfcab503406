// Package demo is the walk-through `bpc demo` runs: a client of a running
// service that takes the NMC811 sample battery (examples/nmc811) through the
// whole passport pipeline over the admin API, one stage at a time — the three
// documents uploaded and parsed, a snapshot built and sealed, the rule
// package created, tested and published, the battery product and passport,
// compile, sign and QR, activation, the JSON and PDF exports and a replay — printing
// each stage with its duration and a short result.
//
// It then downloads the version's artifacts, cross-checks the version's key
// against the service's key list, writes everything to an artifact directory
// (see core/verify: payload, proof, receipt, QR payload and image, the key
// document and the detached copies openssl reads, plus export.json and passport.pdf), reads
// that directory back and verifies it with core/verify as a third party
// would, against what the API said about the version. The run fails at the
// first stage that fails, naming it; a job that ends other than SUCCEEDED is
// reported with its last_error.
//
// Everything the demo creates is new except the battery product, which is
// reused when the tenant has the sample's SKU already, so the demo can run
// again and again against the same service.
package demo
