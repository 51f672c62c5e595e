package schema

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const typicalSchema = `{
	"type": "object",
	"properties": {
		"path":      {"type": "string", "minLength": 1},
		"limit":     {"type": "integer", "minimum": 1, "maximum": 1000},
		"recursive": {"type": "boolean"},
		"mode":      {"type": "string", "enum": ["read", "write"]}
	},
	"required": ["path"],
	"additionalProperties": false
}`

func TestCompile(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		wantErr string // substring; "" means compile must succeed
	}{
		{name: "typical", raw: typicalSchema},
		{name: "empty bytes", raw: ``},
		{name: "whitespace", raw: " \n\t"},
		{name: "empty object", raw: `{}`},
		{name: "boolean true", raw: `true`},
		{name: "draft-07", raw: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s"}}}`},
		{name: "draft 2020-12 explicit", raw: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`},
		{name: "internal ref to root", raw: `{"type":"object","properties":{"next":{"$ref":"#"}}}`},
		{name: "invalid JSON", raw: `{"type":`, wantErr: "invalid JSON"},
		{name: "trailing garbage", raw: `{"type":"object"} x`, wantErr: "invalid JSON"},
		{name: "unknown type", raw: `{"type":"objekt"}`, wantErr: "/type"},
		{name: "missing internal ref", raw: `{"properties":{"a":{"$ref":"#/$defs/nope"}}}`, wantErr: "not found"},
		{name: "relative ref", raw: `{"properties":{"a":{"$ref":"other.json"}}}`, wantErr: "refused to load"},
		{name: "unknown meta-schema", raw: `{"$schema":"https://example.invalid/meta","type":"object"}`, wantErr: "refused to load"},
		{name: "non-Go regex", raw: `{"properties":{"a":{"type":"string","pattern":"^(?!x)"}}}`, wantErr: "regex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile([]byte(tt.raw))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got error %v, want nil", err)
				}
				if s == nil {
					t.Fatal("got nil schema, want non-nil")
				}
				return
			}
			if err == nil {
				t.Fatalf("got nil error, want one containing %q", tt.wantErr)
			}
			if !errors.Is(err, ErrCompile) {
				t.Errorf("got error %v, want it to wrap ErrCompile", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestCompileRefusesRemoteRef(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type":"string"}`)
	}))
	defer srv.Close()

	tests := []struct{ name, raw string }{
		{"ref", `{"type":"object","properties":{"a":{"$ref":"` + srv.URL + `/s.json"}}}`},
		{"ref with fragment", `{"type":"object","properties":{"a":{"$ref":"` + srv.URL + `/s.json#/x"}}}`},
		{"$schema", `{"$schema":"` + srv.URL + `/meta.json","type":"object"}`},
		{"$id base plus relative ref", `{"$id":"` + srv.URL + `/root.json","type":"object","properties":{"a":{"$ref":"s.json"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]byte(tt.raw))
			if err == nil {
				t.Fatal("got nil error, want remote ref refused")
			}
			if !errors.Is(err, ErrCompile) || !errors.Is(err, errRefLoad) {
				t.Errorf("got error %v, want it to wrap ErrCompile and errRefLoad", err)
			}
			if !strings.Contains(err.Error(), "refused to load") || !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("got error %q, want it to say the URL was refused", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("got %d requests to the remote server, want 0", n)
	}
}

func TestCompileRefusesFileRef(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	if err := os.WriteFile(path, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + path, "file://" + path + "#/type"} {
		t.Run(ref, func(t *testing.T) {
			_, err := Compile([]byte(`{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`))
			if err == nil {
				t.Fatal("got nil error, want file ref refused")
			}
			if !errors.Is(err, ErrCompile) || !errors.Is(err, errRefLoad) {
				t.Errorf("got error %v, want it to wrap ErrCompile and errRefLoad", err)
			}
		})
	}
}

func TestCompileInternalRefsAndDrafts(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		args    string
		wantErr string // "" = valid
	}{
		{
			name: "$defs ref valid",
			raw:  `{"type":"object","$defs":{"pos":{"type":"integer","minimum":1}},"properties":{"n":{"$ref":"#/$defs/pos"}}}`,
			args: `{"n":3}`,
		},
		{
			name:    "$defs ref invalid",
			raw:     `{"type":"object","$defs":{"pos":{"type":"integer","minimum":1}},"properties":{"n":{"$ref":"#/$defs/pos"}}}`,
			args:    `{"n":0}`,
			wantErr: "at /n: must be >= 1 but found 0",
		},
		{
			name:    "draft-07 definitions ref",
			raw:     `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s"}}}`,
			args:    `{"a":1}`,
			wantErr: "at /a: expected string, but got number",
		},
		{
			// Array-form items + additionalItems only mean "tuple" under draft-07.
			name:    "draft-07 tuple semantics",
			raw:     `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"t":{"type":"array","items":[{"type":"string"}],"additionalItems":false}}}`,
			args:    `{"t":["a","b"]}`,
			wantErr: "at /t: only 1 items are allowed, but found 2 items",
		},
		{
			// prefixItems is 2020-12: it must be in force without $schema.
			name:    "default draft is 2020-12",
			raw:     `{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"}],"items":false}}}`,
			args:    `{"t":["a",1]}`,
			wantErr: "at /t/1: not allowed",
		},
		{
			name:    "recursive ref",
			raw:     `{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}}}`,
			args:    `{"v":1,"next":{"v":2,"next":{"v":"x"}}}`,
			wantErr: "at /next/next/v: expected integer, but got string",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile([]byte(tt.raw))
			if err != nil {
				t.Fatalf("compile: got error %v, want nil", err)
			}
			_, err = s.Validate([]byte(tt.args))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("got error %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestSchemaRaw(t *testing.T) {
	tests := []struct{ name, raw, want string }{
		{"as given", typicalSchema, typicalSchema},
		{"empty object", `{}`, `{}`},
		{"empty bytes", ``, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.raw)
			s, err := Compile(in)
			if err != nil {
				t.Fatal(err)
			}
			for i := range in { // the caller reusing its buffer must not affect the schema
				in[i] = 'x'
			}
			if got := string(s.Raw()); got != tt.want {
				t.Errorf("got Raw %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEmptySchemaIsAnyObject(t *testing.T) {
	for _, raw := range []string{``, `{}`, ` { } `} {
		s, err := Compile([]byte(raw))
		if err != nil {
			t.Fatalf("%q: got error %v, want nil", raw, err)
		}
		if _, err := s.Validate([]byte(`{"anything":[1,2,{"x":null}]}`)); err != nil {
			t.Errorf("%q: object: got error %v, want nil", raw, err)
		}
		if err := s.ValidateValue("str"); err == nil {
			t.Errorf("%q: string: got nil error, want expected object", raw)
		}
	}
}

func TestCache(t *testing.T) {
	c := NewCache()
	k1 := Key{Server: "fs", Tool: "read"}
	k2 := Key{Server: "fs", Tool: "write"}
	v1 := []byte(typicalSchema)
	v2 := []byte(`{"type":"object","properties":{"x":{"type":"string"}}}`)

	a, err := c.Compile(k1, v1)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("hit returns same pointer", func(t *testing.T) {
		b, err := c.Compile(k1, append([]byte(nil), v1...))
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Errorf("got %p, want cached %p", b, a)
		}
		if got := c.Len(); got != 1 {
			t.Errorf("got Len %d, want 1", got)
		}
	})
	t.Run("changed bytes recompile and replace", func(t *testing.T) {
		b, err := c.Compile(k1, v2)
		if err != nil {
			t.Fatal(err)
		}
		if a == b {
			t.Error("got the old schema for changed bytes, want a recompiled one")
		}
		if got := string(b.Raw()); got != string(v2) {
			t.Errorf("got Raw %s, want %s", got, v2)
		}
		if got := c.Len(); got != 1 {
			t.Errorf("got Len %d, want 1", got)
		}
		again, _ := c.Compile(k1, v2)
		if again != b {
			t.Errorf("got %p, want cached %p", again, b)
		}
	})
	t.Run("compile error not cached", func(t *testing.T) {
		_, err := c.Compile(k2, []byte(`{"type":"objekt"}`))
		if !errors.Is(err, ErrCompile) {
			t.Fatalf("got error %v, want ErrCompile", err)
		}
		if !strings.Contains(err.Error(), "fs/write") {
			t.Errorf("got error %q, want it to name the key", err)
		}
		if got := c.Len(); got != 1 {
			t.Errorf("got Len %d, want 1", got)
		}
	})
	t.Run("prune", func(t *testing.T) {
		if _, err := c.Compile(k2, v2); err != nil {
			t.Fatal(err)
		}
		if got := c.Len(); got != 2 {
			t.Fatalf("got Len %d, want 2", got)
		}
		c.Prune(map[Key]bool{k2: true})
		if got := c.Len(); got != 1 {
			t.Errorf("got Len %d after Prune, want 1", got)
		}
		b, _ := c.Compile(k2, v2)
		if c.Len() != 1 || b == nil {
			t.Errorf("got Len %d, want surviving k2 entry", c.Len())
		}
		c.Prune(nil)
		if got := c.Len(); got != 0 {
			t.Errorf("got Len %d after Prune(nil), want 0", got)
		}
	})
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache()
	const workers, keys = 32, 4
	results := make([][keys]*Schema, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keys {
				k := Key{Server: "s", Tool: fmt.Sprint("t", i)}
				s, err := c.Compile(k, []byte(typicalSchema))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Validate([]byte(`{"path":"/tmp","limit":5}`)); err != nil {
					t.Error(err)
				}
				results[w][i] = s
			}
			if w%2 == 0 {
				c.Prune(map[Key]bool{{Server: "s", Tool: "t0"}: true, {Server: "s", Tool: "t1"}: true, {Server: "s", Tool: "t2"}: true, {Server: "s", Tool: "t3"}: true})
			}
			_ = c.Len()
		}()
	}
	wg.Wait()
	if got := c.Len(); got != keys {
		t.Errorf("got Len %d, want %d", got, keys)
	}
	for i := range keys {
		for w := 1; w < workers; w++ {
			if results[w][i] != results[0][i] {
				t.Fatalf("key %d: worker %d got %p, worker 0 got %p, want one pointer per key", i, w, results[w][i], results[0][i])
			}
		}
	}
}

func BenchmarkCacheCompileHit(b *testing.B) {
	c := NewCache()
	k := Key{Server: "fs", Tool: "read"}
	raw := []byte(typicalSchema)
	if _, err := c.Compile(k, raw); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Compile(k, raw); err != nil {
			b.Fatal(err)
		}
	}
}
