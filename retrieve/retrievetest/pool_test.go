package retrievetest_test

import (
	"testing"

	"toolrouter/retrieve/retrievetest"
)

func TestPool(t *testing.T) {
	tools, err := retrievetest.Tools(retrievetest.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 982+199 {
		t.Errorf("got %d real tools, want 1181 (982 BFCL functions, 199 MetaTool plugins)", len(tools))
	}
	for _, n := range []int{200, 2000, 20000} {
		pool := retrievetest.Pool(tools, n)
		seen := map[string]bool{}
		for _, d := range pool {
			if seen[d.Qualified] || d.Qualified != d.Server+"."+d.Name {
				t.Fatalf("n=%d: got duplicate or malformed name %q", n, d.Qualified)
			}
			seen[d.Qualified] = true
		}
		if len(seen) != n {
			t.Errorf("got %d distinct tools, want %d", len(seen), n)
		}
	}
	qs, err := retrievetest.Queries(retrievetest.DataDir(), tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 2000 {
		t.Errorf("got %d labeled queries, want at least 2000", len(qs))
	}
}
