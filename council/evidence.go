package council

import (
	"encoding/json"

	"toolrouter/prompts"
)

// PromptEvidence turns the tool calls into what the prompts show: arguments as compact JSON (keys
// sorted), tool errors and failed calls marked as such, each result shortened to maxBytes
// (negative: whole), all inside one new boundary (prompts.Data).
func PromptEvidence(ev []Evidence, maxBytes int) []prompts.CouncilEvidence {
	out := make([]prompts.CouncilEvidence, len(ev))
	mark := prompts.NewMark()
	for i, e := range ev {
		text := e.Text
		if maxBytes > 0 {
			text = prompts.Shorten(text, maxBytes)
		}
		pe := prompts.CouncilEvidence{Step: i + 1, Server: e.Server, Tool: e.Tool, Result: text, IsError: e.IsError, Failed: e.Error, Mark: mark}
		if len(e.Arguments) > 0 {
			if b, err := json.Marshal(e.Arguments); err == nil {
				pe.Arguments = string(b)
			}
		}
		out[i] = pe
	}
	return out
}
