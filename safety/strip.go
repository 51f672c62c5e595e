package safety

import (
	"bytes"
	"sort"
	"strings"
)

// Strip returns def with the text that findings point at removed, for safety.scan: strip. It
// edits only the texts findings name and leaves everything else, schema bytes included, as it
// was. What goes depends on the kind:
//
//   - invisible_unicode: each reported character;
//   - tag: the whole block, from the opening tag to its closing tag, or to the end of the text
//     when it is not closed;
//   - imperative and cross_server_reference: the sentence the match is in (ending at '.', '!' or
//     '?' before white space, or at a line break), so a one-sentence description goes entirely;
//   - encoded_blob: the run.
//
// White space at each cut is closed up and the text is trimmed; a text can end up empty. A
// finding in the tool's name is not cut: a tool is called by its name.
// findings must come from Scan of this same def: a finding whose text is no longer at its
// Where, or that went through JSON, is skipped. Rescanning the result should find nothing; the
// corpus test checks that for every poisoned definition in testdata.
func Strip(def Definition, findings []Finding) Definition {
	byWhere := map[string][]Finding{}
	for _, f := range findings {
		if len(f.spans) > 0 {
			byWhere[f.Where] = append(byWhere[f.Where], f)
		}
	}
	if len(byWhere) == 0 {
		return def
	}
	fix := func(where, text string) (string, bool) {
		var spans []span
		for _, f := range byWhere[where] {
			if f.src == text {
				spans = append(spans, removal(text, f)...)
			}
		}
		if len(spans) == 0 {
			return text, false
		}
		return cut(text, spans), true
	}
	if t, ok := fix("title", def.Title); ok {
		def.Title = t
	}
	if def.Annotations != nil {
		if t, ok := fix("annotations.title", def.Annotations.Title); ok {
			a := *def.Annotations
			a.Title = t
			def.Annotations = &a
		}
	}
	if t, ok := fix("description", def.Description); ok {
		def.Description = t
	}
	def.InputSchema = stripSchema(def.InputSchema, "inputSchema", fix)
	def.OutputSchema = stripSchema(def.OutputSchema, "outputSchema", fix)
	return def
}

// stripSchema edits the strings of raw (root names it, as in walkSchema) that fix changes, and
// leaves every other byte as it was. A key is edited like a value: a property whose name carried
// an instruction is renamed to what is left of it, in "required" too, since the same text loses
// the same parts.
func stripSchema(raw []byte, root string, fix func(where, text string) (string, bool)) []byte {
	if len(raw) == 0 {
		return raw
	}
	type edit struct {
		lit  [2]int
		text string
	}
	var edits []edit
	_ = walkSchema(raw, root, func(st schemaText) {
		if t, ok := fix(st.where, st.text); ok {
			edits = append(edits, edit{st.lit, t})
		}
	})
	if len(edits) == 0 {
		return raw
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	last := 0
	for _, e := range edits { // in document order, so ascending and disjoint
		b.Write(raw[last:e.lit[0]])
		b.Write(appendString(nil, e.text))
		last = e.lit[1]
	}
	b.Write(raw[last:])
	return b.Bytes()
}

// removal is what Strip removes from text for f.
func removal(text string, f Finding) []span {
	out := make([]span, 0, len(f.spans))
	for _, sp := range f.spans {
		if sp.s < 0 || sp.e > len(text) || sp.s > sp.e {
			continue
		}
		if f.Kind == KindImperative || f.Kind == KindCrossServerReference {
			sp = sentence(text, sp)
		}
		out = append(out, sp)
	}
	return out
}

// sentence widens sp to the sentence around it.
func sentence(text string, sp span) span {
	s := sp.s
	for s > 0 {
		c := text[s-1]
		if c == '\n' || (c == '.' || c == '!' || c == '?') && s < len(text) && sentenceGap(text[s]) {
			break
		}
		s--
	}
	e := sp.e
	for e < len(text) {
		c := text[e]
		if c == '\n' {
			break
		}
		e++
		if (c == '.' || c == '!' || c == '?') && (e == len(text) || sentenceGap(text[e])) {
			break
		}
	}
	return span{s, e}
}

// sentenceGap reports whether c, after '.', '!' or '?', ends a sentence: white space, or a
// control or non-ASCII byte (invisible characters hide the gap).
func sentenceGap(c byte) bool { return c <= ' ' || c >= 0x80 }

// cut removes spans (which may overlap) from text. At each seam the spaces and tabs on both sides
// become one space if there were any (none next to a line break), and a line left empty goes;
// the rest of the text keeps its white space.
func cut(text string, spans []span) string {
	sort.Slice(spans, func(i, j int) bool { return spans[i].s < spans[j].s })
	var kept []string
	last := 0
	for _, sp := range spans {
		if sp.e <= last {
			continue
		}
		if sp.s > last {
			kept = append(kept, text[last:sp.s])
		}
		last = sp.e
	}
	kept = append(kept, text[last:])
	out := kept[0]
	for _, k := range kept[1:] {
		left := strings.TrimRight(out, " \t")
		right := strings.TrimLeft(k, " \t")
		spaced := len(left) < len(out) || len(right) < len(k)
		switch {
		case strings.HasSuffix(left, "\n") && strings.HasPrefix(right, "\n"):
			right = right[1:]
		case spaced && left != "" && right != "" && !strings.HasSuffix(left, "\n") && !strings.HasPrefix(right, "\n"):
			right = " " + right
		}
		out = left + right
	}
	return strings.TrimSpace(out)
}
