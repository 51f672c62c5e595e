package prompts

import "toolrouter/inventory"

// ToolOf is an inventory tool as the prompts show it.
func ToolOf(t *inventory.Tool) Tool {
	pt := Tool{Qualified: t.Qualified, Description: t.Description, Schema: t.InputSchema}
	for _, p := range t.Parameters {
		pt.Parameters = append(pt.Parameters, Param{
			Name: p.Name, Type: p.Type, Description: p.Description, Required: p.Required, Enum: p.Enum,
		})
	}
	return pt
}
