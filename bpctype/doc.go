// Package bpctype holds the service's domain types — the rows the store
// reads and writes, the SSOT job statuses and their one mapping from River's
// job states — shared by the domain (passport), the HTTP API and the
// workers. It imports nothing of the module, so every layer can use it, as
// River's rivertype is to River: a query parameter or other store plumbing
// (a filter, a lease, a page cursor) stays in store.
package bpctype
