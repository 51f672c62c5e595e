package answer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
	"unicode/utf8"
)

// refDecodeJSON is DecodeJSON as first written: decoding into a pointer, which stays nil for a
// JSON null.
func refDecodeJSON[T any](body []byte, v *T, allowed string) error {
	if !utf8.Valid(body) {
		return BadRequest("bad_encoding", "body must be UTF-8")
	}
	var p *T
	dec := json.NewDecoder(bytes.NewReader(body))
	if allowed != "" {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&p); err != nil {
		return jsonError(err, allowed)
	}
	if p == nil {
		return BadRequest("wrong_type", "body must be a JSON object, got null")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return BadRequest("malformed_json", "body must hold exactly one JSON object")
	}
	*v = *p
	return nil
}

func checkDecodeJSON(t *testing.T, body []byte) {
	t.Helper()
	var got, want AnswerBody
	err := DecodeJSON(body, &got, answerFields)
	wantErr := refDecodeJSON(body, &want, answerFields)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%q: got error %v, want %v", body, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("%q: got %+v, want %+v", body, got, want)
	}
}

func TestDecodeJSONAsFirstWritten(t *testing.T) {
	for _, body := range []string{
		`{"query":"q"}`, ` null `, "null x", "\tnull\n", `nullx`, `{}`, `[]`, `"s"`, `1`, ``, `  `, `{"query":null}`,
		`{"query":"q","history":[{"role":"user","content":"c"}],"max_tool_calls":2,"deadline_ms":5,"synthesize":"never"}`,
		`{"query":"q","nope":1}`, `{"query":1}`, `{"query":"q"} {}`, `{"query":"q"`, `{"Query":"q","QUERY":"r"}`,
	} {
		checkDecodeJSON(t, []byte(body))
	}
}

func FuzzDecodeJSONAsFirstWritten(f *testing.F) {
	f.Add([]byte(`{"query":"q","history":[{"role":"user","content":"c"}],"deadline_ms":5}`))
	f.Add([]byte(" null "))
	f.Add([]byte(`{"query":"q","caller":"a/b"} x`))
	f.Fuzz(func(t *testing.T, body []byte) { checkDecodeJSON(t, body) })
}

// checkPlainBody: a body plainBody reads decodes to the same with DecodeJSON.
func checkPlainBody(t *testing.T, body []byte) {
	t.Helper()
	for _, synthesize := range []bool{false, true} {
		got, ok := plainBody(body, synthesize)
		if !ok {
			continue
		}
		var want AnswerBody
		allowed := routeFields
		if synthesize {
			allowed = answerFields
		}
		if err := DecodeJSON(body, &want, allowed); err != nil {
			t.Fatalf("%q (synthesize %v): plain body %+v, but DecodeJSON says %v", body, synthesize, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q (synthesize %v): got %+v, want %+v", body, synthesize, got, want)
		}
	}
}

func TestPlainBodyDecodesAsDecodeJSON(t *testing.T) {
	for _, tc := range []struct {
		body  string
		plain bool
	}{
		{`{"query":"what is 2 plus 3?"}`, true},
		{" {\n\t\"query\" : \"q é\", \"caller\":\"a/b\", \"max_tool_calls\":-0, \"deadline_ms\": 1500 }\r\n", true},
		{`{"query":"q","history":[{"role":"user","content":"hi"},{"content":"there","role":"assistant"}]}`, true},
		{`{"query":"q","history":[]}`, true},
		{`{}`, true},
		{`{"query":"q","synthesize":"never"}`, true}, // an answer body's; a route body's is not plain
		{`{"query":"a\nb"}`, false},
		{`{"query":null}`, false},
		{`{"query":"q","query":"r"}`, false},
		{`{"Query":"q"}`, false},
		{`{"query":"q","extra":1}`, false},
		{`{"query":"q","max_tool_calls":1.0}`, false},
		{`{"query":"q","max_tool_calls":1e2}`, false},
		{`{"query":"q","max_tool_calls":01}`, false},
		{`{"query":"q","deadline_ms":99999999999999999999}`, false},
		{`{"query":"q","history":[{"role":"user","role":"assistant"}]}`, false},
		{`{"query":"q","history":[{"role":"user","x":"y"}]}`, false},
		{`{"query":"q"} x`, false},
		{`{"query":"q",}`, false},
		{"{\"query\":\"\xff\"}", false},
		{`null`, false},
		{``, false},
	} {
		_, ok := plainBody([]byte(tc.body), true)
		if ok != tc.plain {
			t.Errorf("%q: got plain %v, want %v", tc.body, ok, tc.plain)
		}
		checkPlainBody(t, []byte(tc.body))
	}
	if _, ok := plainBody([]byte(`{"query":"q","synthesize":"never"}`), false); ok {
		t.Errorf("a route body with synthesize: got plain, want it left to DecodeJSON")
	}
}

func FuzzPlainBody(f *testing.F) {
	f.Add([]byte(`{"query":"q","history":[{"role":"user","content":"c"}],"caller":"a","max_tool_calls":3,"deadline_ms":5,"synthesize":"auto"}`))
	f.Add([]byte(` {"query" : "x"} `))
	f.Fuzz(func(t *testing.T, body []byte) { checkPlainBody(t, body) })
}

// BenchmarkPlainBody reads an answer body of the usual shape, as DecodeAnswer's fast path does.
//
//	go test -run '^$' -bench PlainBody -benchmem ./answer/
func BenchmarkPlainBody(b *testing.B) {
	body := []byte(`{"query":"what is 2 plus 3?","history":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}],` +
		`"caller":"team/app","max_tool_calls":3,"deadline_ms":1500,"synthesize":"auto"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := plainBody(body, true); !ok {
			b.Fatal("got not plain, want plain")
		}
	}
}
