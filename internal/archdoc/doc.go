// Package archdoc holds no code: its tests keep docs/ARCHITECTURE.md true to
// the module. They render the import graph of the module's packages from `go
// list`, compare it with the generated block of that page (`go test
// ./internal/archdoc -update` rewrites the block), enforce the layering rules
// the page states, and check that every relative link of the repository's
// Markdown files leads to a file inside the clone.
package archdoc
