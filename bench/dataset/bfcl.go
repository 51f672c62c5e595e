package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"toolrouter/bench/metrics"
)

// BFCLServer is the name of the in-process server that serves a BFCL record's functions.
const BFCLServer = "bfcl"

type bfclRecord struct {
	ID       string `json:"id"`
	Question [][]struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"question"`
	Function []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type bfclAnswer struct {
	ID          string                        `json:"id"`
	GroundTruth []map[string]map[string][]any `json:"ground_truth"`
}

// LoadBFCL reads a BFCL question file (JSON Lines) and its possible-answer file. With answers ""
// every record needs no tool (BFCL's irrelevance category: no offered function fits). Each record
// gets its own toolset, served by an in-process server named BFCLServer.
func LoadBFCL(name, questions, answers string) (*Dataset, error) {
	ds := &Dataset{Name: name, Family: "bfcl", Source: questions, Strings: metrics.BFCLStrings}
	gold := map[string]bfclAnswer{}
	if answers != "" {
		ds.Source += " + " + answers
		err := readLines(answers, func(line []byte) error {
			var a bfclAnswer
			if err := decodeNumbers(line, &a); err != nil {
				return err
			}
			gold[a.ID] = a
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	err := readLines(questions, func(line []byte) error {
		var r bfclRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		c, err := bfclCase(r, gold, answers != "")
		if err != nil {
			return fmt.Errorf("record %s: %w", r.ID, err)
		}
		ds.Cases = append(ds.Cases, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ds, nil
}

func bfclCase(r bfclRecord, gold map[string]bfclAnswer, answered bool) (Case, error) {
	query, ok := firstUser(r.Question)
	if !ok {
		return Case{}, fmt.Errorf("no user message")
	}
	ts := &Toolset{ID: "bfcl/" + r.ID, Server: BFCLServer, Purpose: "Functions offered with this question"}
	originals := make([]string, len(r.Function))
	for i, f := range r.Function {
		originals[i] = f.Name
	}
	names := toolNames(originals)
	byOriginal := map[string]string{}
	for i, f := range r.Function {
		schema, err := ConvertSchema(f.Parameters)
		if err != nil {
			return Case{}, fmt.Errorf("function %s: %w", f.Name, err)
		}
		fn := Function{Name: names[i], Original: f.Name, Description: f.Description, Schema: schema}
		fn.Spec, err = bfclSpec(ts.Qualified(fn), f.Parameters)
		if err != nil {
			return Case{}, fmt.Errorf("function %s: %w", f.Name, err)
		}
		byOriginal[f.Name] = fn.Spec.Name
		ts.Functions = append(ts.Functions, fn)
	}
	c := Case{ID: r.ID, Query: query, Toolset: ts}
	if !answered {
		return c, nil
	}
	a, ok := gold[r.ID]
	if !ok {
		return Case{}, fmt.Errorf("no possible answer")
	}
	var ans Answer
	for _, call := range a.GroundTruth {
		for fname, args := range call {
			q, ok := byOriginal[fname]
			if !ok {
				return Case{}, fmt.Errorf("possible answer names %q, which is not offered", fname)
			}
			if args == nil {
				args = map[string][]any{}
			}
			ans.Calls = append(ans.Calls, metrics.Expected{Name: q, Args: args})
		}
	}
	if len(ans.Calls) == 0 {
		return Case{}, fmt.Errorf("possible answer has no call")
	}
	c.NeedsTool, c.Answers = true, []Answer{ans}
	return c, nil
}

// bfclSpec reads the checker's declaration from BFCL's parameters, keeping BFCL's type names and
// required list as its checker does.
func bfclSpec(name string, params json.RawMessage) (metrics.FunctionSpec, error) {
	var p struct {
		Properties map[string]struct {
			Type  string `json:"type"`
			Items *struct {
				Type string `json:"type"`
			} `json:"items"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return metrics.FunctionSpec{}, fmt.Errorf("reading parameters: %w", err)
	}
	spec := metrics.FunctionSpec{Name: name, Params: map[string]metrics.ParamSpec{}, Required: p.Required}
	for n, prop := range p.Properties {
		ps := metrics.ParamSpec{Type: prop.Type}
		if prop.Items != nil {
			ps.Items = prop.Items.Type
		}
		spec.Params[n] = ps
	}
	return spec, nil
}

// ConvertSchema turns BFCL's parameters into JSON Schema, keeping key order (models fill
// parameters in the order they read them): dict → object, float → number, tuple → array, any → no
// type; a property marked "optional" loses the mark and leaves "required", and "required" names
// only properties that exist (no model could know to write the others).
func ConvertSchema(raw json.RawMessage) (json.RawMessage, error) {
	keys, vals, err := orderedObject(raw)
	if err != nil {
		return nil, err
	}
	var optional map[string]bool
	var props []string
	var propVals map[string]json.RawMessage
	if p, ok := vals["properties"]; ok {
		pk, pv, err := orderedObject(p)
		if err != nil {
			return nil, fmt.Errorf("properties: %w", err)
		}
		props, propVals, optional = pk, map[string]json.RawMessage{}, map[string]bool{}
		for _, name := range pk {
			if isOptional(pv[name]) {
				optional[name] = true
			}
			conv, err := ConvertSchema(pv[name])
			if err != nil {
				return nil, fmt.Errorf("property %s: %w", name, err)
			}
			propVals[name] = conv
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	field := func(k string, v []byte) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v)
	}
	for _, k := range keys {
		v := vals[k]
		switch k {
		case "optional":
		case "type":
			var t string
			if err := json.Unmarshal(v, &t); err != nil {
				return nil, fmt.Errorf("type: %w", err)
			}
			switch t {
			case "dict":
				field(k, []byte(`"object"`))
			case "float":
				field(k, []byte(`"number"`))
			case "tuple":
				field(k, []byte(`"array"`))
			case "any":
			case "string", "integer", "number", "boolean", "array", "object", "null":
				field(k, v)
			default:
				return nil, fmt.Errorf("unknown type %q", t)
			}
		case "properties":
			var pb bytes.Buffer
			pb.WriteByte('{')
			for i, name := range props {
				if i > 0 {
					pb.WriteByte(',')
				}
				nb, _ := json.Marshal(name)
				pb.Write(nb)
				pb.WriteByte(':')
				pb.Write(propVals[name])
			}
			pb.WriteByte('}')
			field(k, pb.Bytes())
		case "required":
			var req []string
			if err := json.Unmarshal(v, &req); err != nil {
				return nil, fmt.Errorf("required: %w", err)
			}
			kept := []string{}
			for _, r := range req {
				if _, ok := propVals[r]; ok && !optional[r] {
					kept = append(kept, r)
				}
			}
			rb, _ := json.Marshal(kept)
			field(k, rb)
		case "items", "additionalProperties":
			if len(v) > 0 && v[0] == '{' {
				conv, err := ConvertSchema(v)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				v = conv
			}
			field(k, v)
		default:
			field(k, v)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// isOptional reads BFCL's "optional" mark: true, "true" or "yes".
func isOptional(prop json.RawMessage) bool {
	var p struct {
		Optional any `json:"optional"`
	}
	if json.Unmarshal(prop, &p) != nil {
		return false
	}
	switch v := p.Optional.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true") || strings.EqualFold(v, "yes")
	}
	return false
}

// orderedObject splits a JSON object into its keys, in order, and raw values.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("want a JSON object, got %.40s", raw)
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := vals[k]; !dup {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	return keys, vals, nil
}

// readLines calls fn with each non-empty line of a JSON Lines file.
func readLines(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening dataset: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s:%d: %w", filepath.Base(path), n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// decodeNumbers decodes JSON keeping numbers as json.Number, as the checker compares them.
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}
