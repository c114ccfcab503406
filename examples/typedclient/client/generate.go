// Package client is the BPC admin API's client as oapi-codegen generates it
// with its default configuration (only the package name and the output file
// given) from ../openapi.json, the document the service serves.
//
// Regenerate both from a service built from this repository with
//
//	cd tools && go test ./typedclient -run TestTypedClientExample -update
//
// (needs TEST_DATABASE_URL), or this client alone from ../openapi.json with
// `go generate ./...` here; tools/typedclient's test fails when either file
// differs from what the served document generates.
package client

//go:generate sh -c "cd ../../../tools && go tool oapi-codegen -package client -o ../examples/typedclient/client/client.gen.go ../examples/typedclient/openapi.json"
