package inventory

import (
	"encoding/json"
	"fmt"

	"toolrouter/schema"
)

// ClientTool is a function a caller brings with its own request (a chat completion's tools): a
// Tool of no server, named as the caller names it, with its parameters compiled and its format
// derived as a listed tool's are, so the router can choose it and write its arguments. Nothing
// ever runs it here: the caller does. Its schema is bounded by b (servers' max_schema_bytes and
// max_schema_depth defaults) before it is compiled; an empty schema is an object with any
// properties. An error names what is wrong with the schema.
func ClientTool(name, description string, parameters json.RawMessage, b schema.Bounds) (*Tool, error) {
	in := inputSchema(parameters)
	if err := schema.CheckBounds(in, b); err != nil {
		return nil, err
	}
	compiled, err := schema.Compile(in)
	if err != nil {
		return nil, err
	}
	format, err := schema.OllamaFormat(in)
	if err == nil {
		format, err = schema.BoundStrings(format)
	}
	if err != nil {
		return nil, fmt.Errorf("deriving the decoding schema: %w", err)
	}
	return &Tool{Name: name, Qualified: name, Description: description, InputSchema: in, Parameters: params(in),
		Available: true, Schema: compiled, Format: format}, nil
}
