package prompts

import (
	"toolrouter/inventory"
	"toolrouter/safety"
)

// ToolOf is an inventory tool as the prompts show it: its schema without the keywords that say
// nothing to a model (safety.ForModel); parameters come from the whole schema, and arguments are
// validated against it.
func ToolOf(t *inventory.Tool) Tool {
	pt := Tool{Qualified: t.Qualified, Description: t.Description, Schema: safety.ForModel(t.InputSchema)}
	for _, p := range t.Parameters {
		pt.Parameters = append(pt.Parameters, Param{
			Name: p.Name, Type: p.Type, Description: p.Description, Required: p.Required, Enum: p.Enum,
		})
	}
	return pt
}
