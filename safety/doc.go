// Package safety detects poisoned and changed MCP tool definitions.
//
// It owns two checks on the tools a server lists:
//
//   - Pin hashes a tool's definition (name, title, description, input schema, annotations) in a
//     canonical form (see Canonical), so that a later listing that changes any of them — a "rug
//     pull" — shows up as a different hash, while re-serialising the same schema with other key
//     order or whitespace does not.
//   - Scan (or a Scanner, built once per server from the names of the other servers' tools) reads
//     every string and every key but the JSON Schema keywords of a definition (title, annotations'
//     title, description, and the whole of the input and output schemas: property names,
//     patterns, $comment, vendor keywords, object and array defaults), each folded as normalize
//     does (confusable and compatibility letters to ASCII, marks and invisible characters
//     dropped), and reports text aimed at the model rather than the user as Findings: imperatives
//     such as "ignore previous instructions" or "do not tell the user" in twelve languages (and
//     in leetspeak), hidden-instruction tags such as <IMPORTANT>, invisible or bidirectional
//     Unicode, names of other servers' tools, and encoded blobs. Strip removes what Scan found.
//   - ForModel is a schema as the prompts show it: without $comment, $schema, $id, $vocabulary
//     and vendor keywords, which say nothing to a model filling a value.
//
// It does not decide policy: whether a changed pin or a finding means warn, strip or quarantine is
// safety.pin and safety.scan in config, applied by the inventory. It does not store pins: the caller
// keeps the first-seen hash or takes it from config and compares. Nothing here blocks or does I/O,
// and every function is safe for concurrent use.
package safety
