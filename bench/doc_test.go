package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPartialRunRefusesTheDocs checks that a run narrowed by any flag that makes it partial is
// refused the repository's docs/benchmarks.md, in every command, before it measures anything, and
// leaves the file as it was.
func TestPartialRunRefusesTheDocs(t *testing.T) {
	before, err := os.ReadFile(defaultDoc())
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	tests := []struct {
		name string
		args []string
	}{
		{"one dataset", []string{"-docs", "-datasets", "bfcl-simple"}},
		{"one router", []string{"-docs", "-routers", "bm25"}},
		{"the first queries", []string{"-docs", "-limit", "5"}},
		{"a sample", []string{"-docs", "-metatool-sample", "100"}},
		{"output elsewhere", []string{"-docs", "-out", other}},
		{"the repository's document by path", []string{"-doc", defaultDoc(), "-routers", "bm25"}},
		{"retrieval, the first queries", []string{"retrieval", "-docs", "-limit", "12"}},
		{"retrieval, one size", []string{"retrieval", "-docs", "-sizes", "200"}},
		{"retrieval, output elsewhere", []string{"retrieval", "-docs", "-out", other}},
		{"load, output elsewhere", []string{"load", "-docs", "-out", other}},
		{"load path, output elsewhere", []string{"load", "-path", "-docs", "-out", other}},
		{"cost, one size", []string{"cost", "-docs", "-sizes", "10"}},
		{"cost, no rounds", []string{"cost", "-docs", "-reasoning", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard, io.Discard)
			if !errors.Is(err, errPartial) {
				t.Fatalf("got %v, want the run refused as partial", err)
			}
			after, err := os.ReadFile(defaultDoc())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("%s changed", defaultDoc())
			}
		})
	}
	err = run(context.Background(), []string{"memory", "-docs", "-doc", filepath.Join(other, "b.md")}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "different documents") {
		t.Errorf("-docs with another -doc: got %v, want an error naming the clash", err)
	}
}

// TestRunWritesNoDocsUnasked runs `go run ./bench retrieval` on a few queries without -docs or
// -doc: the repository's document and chart stay as they were, and the chart goes to -out.
func TestRunWritesNoDocsUnasked(t *testing.T) {
	chart := filepath.Join(benchDir(), "charts", "retrieval.svg")
	read := func() (doc, svg []byte) {
		doc, err := os.ReadFile(defaultDoc())
		if err != nil {
			t.Fatal(err)
		}
		svg, _ = os.ReadFile(chart)
		return doc, svg
	}
	doc, svg := read()
	out := t.TempDir()
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"retrieval", "-limit", "3", "-sizes", "", "-out", out, "-q"}, io.Discard, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	doc2, svg2 := read()
	if !bytes.Equal(doc, doc2) || !bytes.Equal(svg, svg2) {
		t.Errorf("a run without -docs rewrote %s or %s", defaultDoc(), chart)
	}
	checkSVG(t, filepath.Join(out, "retrieval.svg"))
}
