package mcpserver

import (
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// routeSchema is the route tool's input: /v1/route's body without caller.
const routeSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What the user asked, in their words."},
    "history": {
      "type": "array",
      "description": "Earlier turns of the conversation, oldest first.",
      "items": {
        "type": "object",
        "properties": {
          "role": {"type": "string", "enum": ["user", "assistant"]},
          "content": {"type": "string"}
        },
        "required": ["role", "content"],
        "additionalProperties": false
      }
    },
    "max_tool_calls": {"type": "integer", "minimum": 1, "description": "Lowers the configured ceiling of tool calls."},
    "deadline_ms": {"type": "integer", "minimum": 1, "description": "Lowers the configured deadline, in milliseconds."}%s
  },
  "required": ["query"],
  "additionalProperties": false
}`

const synthesizeProperty = `,
    "synthesize": {"type": "string", "enum": ["auto", "always", "never"], "description": "Who writes the answer: auto (the tool output when it answers directly, else the council), always (the council) or never (the tool output)."}`

func routeTool() mcp.Tool {
	t := mcp.NewToolWithRawSchema(ToolRoute,
		"Decide which of the available tools answer a query, run them with arguments checked against their schemas, and return the decision, every call and its result.",
		schemaWith(""))
	t.Annotations.Title = "Route a query to tools"
	return t
}

func answerTool() mcp.Tool {
	t := mcp.NewToolWithRawSchema(ToolAnswer,
		"Answer a query: route it to the tools, then answer with their output or, when configured, have a council of models write the answer from it.",
		schemaWith(synthesizeProperty))
	t.Annotations.Title = "Answer a query with tools"
	return t
}

// schemaWith is the route tool's schema with extra properties added.
func schemaWith(extra string) json.RawMessage {
	return json.RawMessage(strings.Replace(routeSchema, "%s", extra, 1))
}
