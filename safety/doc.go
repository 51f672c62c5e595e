// Package safety detects poisoned and changed MCP tool definitions.
//
// It owns two checks on the tools a server lists:
//
//   - Pin hashes a tool's definition (name, title, description, input schema, annotations) in a
//     canonical form (see Canonical), so that a later listing that changes any of them — a "rug
//     pull" — shows up as a different hash, while re-serialising the same schema with other key
//     order or whitespace does not.
//   - Scan (or a Scanner, built once per server from the names of the other servers' tools) reads
//     every text in a definition that a model reads (title, description, and every description,
//     title, default, const, enum and examples string in the input schema) and reports text aimed
//     at the model rather than the user as Findings: imperatives such as "ignore previous
//     instructions" or "do not tell the user", hidden-instruction tags such as <IMPORTANT>,
//     invisible or bidirectional Unicode, names of other servers' tools, and encoded blobs.
//     Strip removes what Scan found.
//
// It does not decide policy: whether a changed pin or a finding means warn, strip or quarantine is
// safety.pin and safety.scan in config, applied by the inventory. It does not store pins: the caller
// keeps the first-seen hash or takes it from config and compares. Nothing here blocks or does I/O,
// and every function is safe for concurrent use.
package safety
