package access

import "context"

// identityKey is the context key of the identity a request acts for.
type identityKey struct{}

// WithIdentity returns a child of ctx carrying id: the identity a request established elsewhere
// (the HTTP API's authentication, the MCP server's stdio operator) acts for. The MCP server reads
// it back with IdentityFrom.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity WithIdentity put in ctx; false when there is none.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}
