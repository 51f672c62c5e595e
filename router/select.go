package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ollama/ollama/api"

	"toolrouter/inventory"
	"toolrouter/prompts"
)

// noneTool is the selection enum's "no tool" value.
const noneTool = "none"

// selection is the parsed phase-1 answer.
type selection struct {
	Reasoning string `json:"reasoning"`
	UseTool   bool   `json:"use_tool"`
	Tool      string `json:"tool"`
	Direct    bool   `json:"direct"`
	// Note records why a model's choice was overridden (an unknown tool name).
	Note string `json:"-"`
}

// selectTool runs phase 1. A model error or an unparseable answer is an error; an answer naming a
// tool that is not in the inventory is "no tool" with a note.
func (r *Router) selectTool(ctx context.Context, p *promptSet, req Request, usage *Usage) (selection, error) {
	if r.set.SelectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.set.SelectTimeout)
		defer cancel()
	}
	msgs := make([]api.Message, 0, len(req.History)+2)
	msgs = append(msgs, api.Message{Role: "system", Content: p.text})
	for _, h := range req.History {
		msgs = append(msgs, api.Message{Role: h.Role, Content: h.Content})
	}
	msgs = append(msgs, api.Message{Role: "user", Content: req.Query})

	text, err := r.complete(ctx, msgs, p.format, usage)
	if err != nil {
		return selection{}, err
	}
	var sel selection
	if err := decodeObject(text, &sel); err != nil {
		return selection{}, fmt.Errorf("model answer is not the selection JSON: %w", err)
	}
	sel.Tool = strings.TrimSpace(sel.Tool)
	switch {
	case !sel.UseTool:
	case sel.Tool == "" || sel.Tool == noneTool:
		sel.UseTool = false
	case !p.names[sel.Tool]:
		sel.Note = fmt.Sprintf("model selected %q, which is not an available tool", sel.Tool)
		sel.UseTool = false
	}
	return sel, nil
}

// promptSet returns the prompts of the snapshot's inventory version, rendering the phase-1
// prompt and format schema once per version.
func (r *Router) promptSet(snap *inventory.Snapshot, tools []*inventory.Tool) (*promptSet, error) {
	r.promptMu.Lock()
	defer r.promptMu.Unlock()
	if r.prompts != nil && r.prompts.version == snap.Version {
		return r.prompts, nil
	}
	text, err := prompts.Select(promptServers(snap, tools))
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(tools))
	enum := make([]string, 0, len(tools)+1)
	for _, t := range tools {
		names[t.Qualified] = true
		enum = append(enum, t.Qualified)
	}
	enum = append(enum, noneTool)
	r.prompts = &promptSet{version: snap.Version, text: text, format: selectionFormat(enum), names: names, args: map[string]string{}}
	return r.prompts, nil
}

// selectionFormat is the phase-1 `format` schema. Its keys are written in generation order
// (reasoning first, so the decision follows it): Ollama's grammar keeps the order of the schema text,
// which encoding/json would sort.
func selectionFormat(enum []string) []byte {
	names, _ := json.Marshal(enum)
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	b.WriteString(`"reasoning":{"type":"string"},`)
	b.WriteString(`"use_tool":{"type":"boolean"},`)
	b.WriteString(`"tool":{"type":"string","enum":`)
	b.Write(names)
	b.WriteString(`},"direct":{"type":"boolean"}},`)
	b.WriteString(`"required":["reasoning","use_tool","tool","direct"]}`)
	return b.Bytes()
}

// promptServers groups the available tools by server for the prompt.
func promptServers(snap *inventory.Snapshot, tools []*inventory.Tool) []prompts.Server {
	var out []prompts.Server
	for _, s := range snap.Servers {
		ps := prompts.Server{Name: s.Name, Purpose: s.Purpose}
		for _, t := range tools {
			if t.Server == s.Name {
				ps.Tools = append(ps.Tools, promptTool(t))
			}
		}
		if len(ps.Tools) > 0 {
			out = append(out, ps)
		}
	}
	return out
}

func promptTool(t *inventory.Tool) prompts.Tool {
	pt := prompts.Tool{Qualified: t.Qualified, Description: t.Description, Schema: t.InputSchema}
	for _, p := range t.Parameters {
		pt.Parameters = append(pt.Parameters, prompts.Param{
			Name: p.Name, Type: p.Type, Description: p.Description, Required: p.Required, Enum: p.Enum,
		})
	}
	return pt
}

// decodeObject decodes the one JSON object in a model answer, tolerating surrounding whitespace or a
// markdown code fence (models sometimes add one even under a format constraint).
func decodeObject(text string, v any) error {
	s := strings.TrimSpace(text)
	s = strings.TrimPrefix(s, "```json")
	s = strings.TrimPrefix(s, "```")
	s = strings.TrimSuffix(s, "```")
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(s)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON object")
	}
	return nil
}
