package retrieval

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"toolrouter/config"
	"toolrouter/internal/npmservers"
	"toolrouter/inventory"
	"toolrouter/retrieve/retrievetest"
)

var update = flag.Bool("update", false, "rewrite bench/data/reference_tools.json from the running npm reference servers")

// TestReferenceRecording runs the npm reference servers examples/npm pins (over stdio, with Node.js)
// and checks that bench/data/reference_tools.json holds exactly the tools they list, with the
// purposes examples/reference-servers.json gives them; -update rewrites the file from them.
func TestReferenceRecording(t *testing.T) {
	dir := npmservers.Dir(t)
	root := filepath.Join(retrievetest.DataDir(), "..", "..")
	var example struct {
		Servers map[string]struct{ Purpose string } `json:"servers"`
	}
	if err := readJSON(filepath.Join(root, "examples", "reference-servers.json"), &example); err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := readJSON(filepath.Join(dir, "package.json"), &pkg); err != nil {
		t.Fatal(err)
	}
	sandbox := t.TempDir()
	servers := map[string]config.Server{}
	packages := map[string]string{}
	for name, s := range example.Servers {
		args := []string{npmservers.Entry(dir, name)}
		switch name {
		case "everything":
			args = append(args, "stdio")
		case "filesystem":
			args = append(args, sandbox)
		}
		sc := inventory.DefaultServerConfig()
		sc.Transport, sc.Command, sc.Args, sc.Purpose = config.TransportStdio, "node", args, s.Purpose
		sc.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(sandbox, "memory.jsonl")}
		sc.ConnectTimeout = config.Duration(time.Minute)
		servers[name] = sc
		p := "@modelcontextprotocol/server-" + name
		packages[p] = pkg.Dependencies[p]
	}
	inv := inventory.New(servers, inventory.Options{Logger: quiet})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	snap := inv.Snapshot()
	for _, s := range snap.Servers {
		if s.Status != inventory.StateUp {
			t.Fatalf("server %s is %s: %s", s.Name, s.Status, s.Error)
		}
	}
	got := Record(snap, packages)
	path := filepath.Join(retrievetest.DataDir(), "reference_tools.json")
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := LoadReference(path)
	if err != nil {
		t.Fatal(err)
	}
	// Compare through JSON: schemas are compared as the values they hold.
	var g, w any
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	_ = json.Unmarshal(gb, &g)
	_ = json.Unmarshal(wb, &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("the reference servers list other tools than %s records; run go test ./bench/retrieval -run TestReferenceRecording -update", path)
	}
}
