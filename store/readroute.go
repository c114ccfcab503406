package store

import "context"

// primaryKey marks a context whose reads must see the primary's latest
// commit (read-your-writes), even where Queries would otherwise read from a
// replica.
type primaryKey struct{}

// WithPrimary returns ctx marked so that reads made with it go to the
// primary: a caller that has just written, or has just learnt that the rows
// it reads changed (a cache invalidated by a revocation), and must not be
// answered from a replica that has not replayed that change yet.
func WithPrimary(ctx context.Context) context.Context {
	return context.WithValue(ctx, primaryKey{}, true)
}

// PrimaryWanted reports whether ctx was marked by WithPrimary.
func PrimaryWanted(ctx context.Context) bool {
	v, _ := ctx.Value(primaryKey{}).(bool)
	return v
}
