// Package retrieve narrows a large tool inventory to the few tools worth showing the model for one
// query. It owns the lexical index (BM25F over a tool's name, its server's purpose and name,
// description, parameters and example queries, those people wrote apart from those learned, with
// the operators and file names a query's form holds, the date it asks for, the values it holds
// (a URL, a date, a unit, an amount of money, …) meeting the parameters that take them, and
// weaker matches of a name's words: looser stems and abbreviations), its incremental maintenance as servers come
// and go, the store of example queries (configured and learned; a built-in server's own come with
// it), which tools are pinned, optional dense retrieval through an embedding model with an
// on-disk vector cache, and the budgeted shortlist. It does not call tools, talk to MCP
// servers, render prompts or decide access: callers pass a permit function and a cost function.
//
// Typical use: when the inventory's version or Examples.Version changes, call Retriever.Sync (or
// Index.Sync) with DocsFrom(snapshot, examples.Written(), examples.Learned()); only servers
// whose tools changed are reindexed. Per query, Search with the caller's access list as permit, then Shortlist
// the hits under the prompt's token budget. After a tool answered a query well, Examples.Learn.
package retrieve

import (
	"fmt"
	"slices"

	"toolrouter/inventory"
	"toolrouter/inventory/builtin"
)

// Doc is one tool as the index sees it, independent of where the tool came from.
type Doc struct {
	// Qualified is the tool's unique name ("server.tool"); empty means Server + "." + Name.
	Qualified string
	Server    string
	Name      string
	// Purpose is the server's purpose, shared by every tool of the server.
	Purpose     string
	Description string
	Params      []Param
	// Examples are queries the tool answers that people wrote (configured, or a built-in
	// server's own); Learned are queries it answered, kept by Examples.Learn.
	Examples []string
	Learned  []string
}

// Param is one parameter of a tool.
type Param struct {
	Name        string
	Description string
	// Enum holds the allowed values, as text.
	Enum []string
	// Type and Format are the schema's type ("string", "integer", "string|null", …) and format
	// ("uri", "email", "date-time", …) of the value, "" when it gives none: with the name and
	// the allowed values they tell the kinds of values the parameter takes (Matching.Values).
	Type, Format string
}

func (d Doc) qualified() string {
	if d.Qualified != "" {
		return d.Qualified
	}
	return inventory.Qualify(d.Server, d.Name)
}

func (d Doc) equal(o Doc) bool {
	return d.Qualified == o.Qualified && d.Server == o.Server && d.Name == o.Name &&
		d.Purpose == o.Purpose && d.Description == o.Description &&
		slices.Equal(d.Examples, o.Examples) && slices.Equal(d.Learned, o.Learned) &&
		slices.EqualFunc(d.Params, o.Params, func(a, b Param) bool {
			return a.Name == b.Name && a.Description == b.Description && slices.Equal(a.Enum, b.Enum) &&
				a.Type == b.Type && a.Format == b.Format
		})
}

// DocsFrom returns the documents of the tools snap may offer a model (snap.Available), in the
// snapshot's order, with each tool's examples: a built-in server's own (builtin.Examples), then
// those of configured that do not repeat them (ignoring case and spacing), and the learned ones
// (both keyed by qualified name; nil is none). A tool's title, when it has one, leads its
// description.
func DocsFrom(snap *inventory.Snapshot, configured, learned map[string][]string) []Doc {
	purposes := make(map[string]string, len(snap.Servers))
	shipped := map[string]map[string][]string{}
	for _, s := range snap.Servers {
		purposes[s.Name] = s.Purpose
		if s.Builtin != "" {
			shipped[s.Name] = builtin.Examples(s.Builtin)
		}
	}
	tools := snap.Available()
	docs := make([]Doc, 0, len(tools))
	for _, t := range tools {
		d := Doc{
			Qualified:   t.Qualified,
			Server:      t.Server,
			Name:        t.Name,
			Purpose:     purposes[t.Server],
			Description: t.Description,
			Examples:    configured[t.Qualified],
			Learned:     learned[t.Qualified],
		}
		if own := shipped[t.Server][t.Name]; len(own) > 0 {
			d.Examples = mergeExamples(own, d.Examples)
		}
		if t.Title != "" && t.Title != t.Description {
			d.Description = t.Title + ". " + t.Description
		}
		for _, p := range t.Parameters {
			param := Param{Name: p.Name, Description: p.Description, Type: p.Type, Format: p.Format}
			for _, v := range p.Enum {
				param.Enum = append(param.Enum, fmt.Sprint(v))
			}
			d.Params = append(d.Params, param)
		}
		docs = append(docs, d)
	}
	return docs
}

// mergeExamples returns first, then the queries of more that repeat none of it (ignoring case and
// spacing).
func mergeExamples(first, more []string) []string {
	out := slices.Clone(first)
	for _, q := range more {
		key := normaliseExample(q)
		if !slices.ContainsFunc(out, func(o string) bool { return normaliseExample(o) == key }) {
			out = append(out, q)
		}
	}
	return out
}
