package safety

import "encoding/json"

// Definition is one tool as a server lists it: the parts a model reads and a rug pull can change.
// Its JSON field names follow MCP's tools/list result, so a listed tool decodes into it directly
// (Server aside, which comes from config).
type Definition struct {
	// Server is the configured name of the server that lists the tool. It is not part of Pin: it
	// is where a pin is kept, not what is pinned.
	Server      string          `json:"server,omitempty"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema is scanned like the input schema but not pinned: Pin's form predates it, and
	// no prompt shows it.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
}

// Annotations are MCP's tool annotations. The hints are pointers because MCP gives unset hints
// defaults (destructive and open-world true, the others false), so "unset" and "false" differ.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// empty reports whether a carries nothing, so that absent and {} annotations pin the same.
func (a *Annotations) empty() bool {
	return a == nil || (a.Title == "" && a.ReadOnlyHint == nil && a.DestructiveHint == nil &&
		a.IdempotentHint == nil && a.OpenWorldHint == nil)
}
