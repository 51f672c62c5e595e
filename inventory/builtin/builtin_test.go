package builtin

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestNames(t *testing.T) {
	got := Names()
	want := []string{"calculator", "clock"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestPurpose(t *testing.T) {
	for _, name := range Names() {
		if Purpose(name) == "" {
			t.Errorf("Purpose(%q): got empty, want a purpose", name)
		}
	}
	if got := Purpose("nope"); got != "" {
		t.Errorf("Purpose(nope): got %q, want empty", got)
	}
}

func TestNewUnknown(t *testing.T) {
	for _, name := range []string{"", "nope", "Calculator"} {
		t.Run(name, func(t *testing.T) {
			srv, err := New(name, nil)
			if !errors.Is(err, ErrUnknown) {
				t.Errorf("got error %v, want one wrapping ErrUnknown", err)
			}
			if srv != nil {
				t.Errorf("got server %v, want nil", srv)
			}
		})
	}
}

// schema is the part of a JSON Schema the tests inspect.
type schema struct {
	Type                 string                     `json:"type"`
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties *bool                      `json:"additionalProperties"`
}

type propSchema struct {
	Type        string `json:"type"`
	Description string `json:"description"`
}

func TestToolDefinitions(t *testing.T) {
	tests := []struct {
		server   string
		required map[string][]string // tool -> required parameters
	}{
		{
			server: "calculator",
			required: map[string][]string{
				"add": {"a", "b"}, "subtract": {"a", "b"}, "multiply": {"a", "b"}, "divide": {"a", "b"},
				"power": {"base", "exponent"}, "sqrt": {"x"}, "nth_root": {"x", "n"}, "evaluate": {"expression"},
			},
		},
		{
			server: "clock",
			required: map[string][]string{
				"current_time":    {},
				"convert_time":    {"time", "to_timezone"},
				"date_difference": {"start", "end"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.server, func(t *testing.T) {
			c := connect(t, tc.server, nil)
			caps := c.GetServerCapabilities()
			if caps.Tools == nil || !caps.Tools.ListChanged {
				t.Errorf("got tools capability %+v, want listChanged true", caps.Tools)
			}
			res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			var got []string
			for _, tool := range res.Tools {
				got = append(got, tool.Name)
				checkTool(t, tool, tc.required[tool.Name])
			}
			slices.Sort(got)
			var want []string
			for name := range tc.required {
				want = append(want, name)
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got tools %v, want %v", got, want)
			}
		})
	}
}

func checkTool(t *testing.T, tool mcp.Tool, required []string) {
	t.Helper()
	if tool.Description == "" {
		t.Errorf("%s: got empty description, want one", tool.Name)
	}
	if a := tool.Annotations; a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint {
		t.Errorf("%s: got annotations %+v, want read-only and not destructive", tool.Name, a)
	}
	raw, err := json.Marshal(tool.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var in schema
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	if in.Type != "object" {
		t.Errorf("%s: got input type %q, want object", tool.Name, in.Type)
	}
	if in.AdditionalProperties == nil || *in.AdditionalProperties {
		t.Errorf("%s: got additionalProperties %v, want false", tool.Name, in.AdditionalProperties)
	}
	if !slices.Equal(in.Required, required) {
		t.Errorf("%s: got required %v, want %v", tool.Name, in.Required, required)
	}
	for name, rawProp := range in.Properties {
		var p propSchema
		if err := json.Unmarshal(rawProp, &p); err != nil {
			t.Fatal(err)
		}
		if p.Description == "" || p.Type == "" {
			t.Errorf("%s.%s: got type %q and description %q, want both set", tool.Name, name, p.Type, p.Description)
		}
	}
	if tool.OutputSchema.Type != "object" || len(tool.OutputSchema.Properties) == 0 {
		t.Errorf("%s: got output schema %+v, want an object schema", tool.Name, tool.OutputSchema)
	}
}
