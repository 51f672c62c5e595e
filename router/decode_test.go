package router

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// refCall and refSelection decode a phase-1 answer as the router first did: every answer through
// a json.Decoder, every call's string through json.Unmarshal.
type refCall selectCall

func (c *refCall) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*c = refCall{}
		return json.Unmarshal(b, &c.Tool)
	}
	type plain refCall
	return json.Unmarshal(b, (*plain)(c))
}

type refSelection struct {
	Reasoning string    `json:"reasoning"`
	UseTool   bool      `json:"use_tool"`
	Calls     []refCall `json:"calls"`
	Tool      string    `json:"tool"`
	NeedsMore bool      `json:"needs_more"`
	Direct    bool      `json:"direct"`
	Search    string    `json:"search,omitempty"`
}

func checkDecodeSelection(t *testing.T, text string) {
	t.Helper()
	var ref refSelection
	refErr := decodeObject(text, &ref)
	var got selection
	err := decodeSelection(text, &got)
	// The reference types' names differ from the router's: the errors name them.
	named := strings.NewReplacer("refSelection", "selection", "refCall", "selectCall")
	if (err == nil) != (refErr == nil) || err != nil && err.Error() != named.Replace(refErr.Error()) {
		t.Fatalf("answer %q: got error %v, want %v", text, err, refErr)
	}
	want := selection{Reasoning: ref.Reasoning, UseTool: ref.UseTool, Tool: ref.Tool, NeedsMore: ref.NeedsMore, Direct: ref.Direct, Search: ref.Search}
	if ref.Calls != nil {
		want.Calls = make([]selectCall, len(ref.Calls))
		for i, c := range ref.Calls {
			want.Calls[i] = selectCall(c)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("answer %q: got %+v, want %+v", text, got, want)
	}
}

func TestDecodeSelectionDecodesAsDecoder(t *testing.T) {
	answers := []string{
		`{"reasoning":"r","use_tool":true,"calls":[{"tool":"calculator.add","task":"add"}],"needs_more":false,"direct":true}`,
		`{"use_tool":true,"calls":["calculator.add","clock.now"],"needs_more":true,"direct":false}`,
		"```json\n{\"use_tool\":true,\"calls\":[\"a.b\"]}\n```",
		`  {"USE_TOOL":true,"Calls":[null,"x\u00e9\n","caf` + "\xff" + `",{"TOOL":"t","extra":1}]}  `,
		`{"use_tool":true} {"use_tool":false}`,
		`{"use_tool":true} }`,
		`{"use_tool":"yes","calls":["a.b"]}`,
		`{"calls":[5]}`,
		`{"use_tool":tru}`,
		`null`,
		``,
		`{"tool":"a.b","search":"words"}`,
		`{"calls":"a.b"}`,
	}
	for _, a := range answers {
		checkDecodeSelection(t, a)
	}
}

func FuzzDecodeSelection(f *testing.F) {
	f.Add(`{"reasoning":"r","use_tool":true,"calls":[{"tool":"a.b","task":"t"},"c.d"],"needs_more":false,"direct":true}`)
	f.Add("```json\n{\"calls\":[\"\\u0041\",\"\\\"\"]}\n```")
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Count(text, "[") > 50 {
			return
		}
		checkDecodeSelection(t, text)
	})
}

func TestUnescapedString(t *testing.T) {
	for _, b := range []string{`""`, `"a.b"`, `"é東"`, `"a\"b"`, `"a\nb"`, "\"a\x01\"", "\"\xff\"", `"`, `x`, `"ab`, `ab"`, `"a"b"`} {
		s, ok := unescapedString([]byte(b))
		var want string
		wantOK := json.Unmarshal([]byte(b), &want) == nil
		if ok && (!wantOK || s != want) {
			t.Errorf("%q: got %q, which json.Unmarshal does not decode it to (%q, ok %v)", b, s, want, wantOK)
		}
		if !ok && wantOK && !strings.ContainsFunc(b, func(r rune) bool { return r == '\\' || r < 0x20 || r == utf8.RuneError }) {
			t.Errorf("%q: got no fast path for a plain string", b)
		}
	}
}

func checkPlainArguments(t *testing.T, text string) {
	t.Helper()
	got, ok := plainArguments(text)
	if !ok {
		return
	}
	var want map[string]any
	if err := decodeObject(text, &want); err != nil || want == nil {
		t.Fatalf("answer %q: plain arguments %v, but decodeObject gives %v, %v", text, got, want, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("answer %q: got %#v, want %#v", text, got, want)
	}
}

func TestPlainArgumentsDecodeAsDecoder(t *testing.T) {
	for _, tc := range []struct {
		text  string
		plain bool
	}{
		{`{"a":2,"b":3}`, true},
		{" ```json\n{ \"a\" : -0.5e+3 , \"s\":\"x é\", \"t\":true, \"f\":false, \"n\":null, \"a\":1 }\n``` ", true},
		{`{}`, true},
		{`{"a":"$result_of_step_1#/x"}`, true},
		{`{"a":[1]}`, false},
		{`{"a":{"b":1}}`, false},
		{`{"a":"x\ny"}`, false},
		{`{"a":01}`, false},
		{`{"a":1.}`, false},
		{`{"a":-}`, false},
		{`{"a":1e}`, false},
		{`{"a":1,}`, false},
		{`{"a":1} x`, false},
		{`{"a":1}{"b":2}`, false},
		{`{"a" 1}`, false},
		{`null`, false},
		{`[]`, false},
		{"{\"a\":\"\xff\"}", false},
		{`{"a":nul}`, false},
		{`{"a":truex}`, false},
	} {
		_, ok := plainArguments(tc.text)
		if ok != tc.plain {
			t.Errorf("answer %q: got plain %v, want %v", tc.text, ok, tc.plain)
		}
		checkPlainArguments(t, tc.text)
	}
}

func FuzzPlainArguments(f *testing.F) {
	f.Add(`{"a":2,"b":-3.5E-2,"c":"x","d":true,"e":null}`)
	f.Add("```json\n{\"a\":0}\n```")
	f.Fuzz(func(t *testing.T, text string) { checkPlainArguments(t, text) })
}

func TestPlainSelectionIsPlain(t *testing.T) {
	for _, tc := range []struct {
		text  string
		plain bool
	}{
		{`{"reasoning":"r","use_tool":true,"calls":[{"tool":"calculator.add","task":"add"}],"needs_more":false,"direct":true}`, true},
		{`{"use_tool":true,"calls":["a.b","c.d"],"needs_more":false,"direct":false,"search":"w"}`, true},
		{`{"use_tool":false,"calls":[],"needs_more":false,"direct":false}`, true},
		{`{"tool":"a.b"}`, true},
		{`{"calls":["a.b"],"calls":["c.d"]}`, false},
		{`{"calls":[{"tool":"a.b","extra":1}]}`, false},
		{`{"Use_Tool":true}`, false},
		{`{"calls":null}`, false},
		{`{"reasoning":null}`, false},
		{`{"calls":[null]}`, false},
	} {
		var sel selection
		if got := plainSelection(tc.text, &sel); got != tc.plain {
			t.Errorf("answer %q: got plain %v, want %v", tc.text, got, tc.plain)
		}
		checkDecodeSelection(t, tc.text)
	}
}
