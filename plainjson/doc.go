// Package plainjson reads and writes JSON directly, for the request path's common cases, where
// encoding/json would go through reflection and allocate for every value.
//
// Reader reads plain JSON: strings without escapes, numbers, booleans, null, and objects and
// arrays whose shape the caller knows. It declines everything else, so that its caller can fall
// back to encoding/json and never decide anything encoding/json would decide otherwise. The
// Append functions write JSON as encoding/json does (AppendValue with a Format's changes, such as
// the minimal string escaping of safety's pins).
//
// It owns only the syntax: which keys a caller reads, what it fills and when it falls back stay
// with the caller (router's model answers, answer's request bodies, router's dedup keys, safety's
// pins, the outcome's JSON).
package plainjson
