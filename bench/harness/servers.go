package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"toolrouter/config"
)

// sandboxFiles are the files the scenario set's filesystem queries read.
var sandboxFiles = map[string]string{
	"notes.txt":      "Meeting moved to Thursday at 10:00.\n",
	"todo.md":        "# To do\n- buy milk\n- call Alice\n- renew passport\n- book flights\n",
	"draft.txt":      "First draft of the quarterly letter.\n",
	"reports/q3.csv": "month,revenue\nJuly,120\nAugust,135\nSeptember,128\n",
}

// memoryGraph is the knowledge graph the scenario set's memory queries ask about.
var memoryGraph = []map[string]any{
	{"type": "entity", "name": "Alice", "entityType": "person", "observations": []string{"works at Acme", "likes coffee"}},
	{"type": "entity", "name": "Bob", "entityType": "person", "observations": []string{"likes coffee", "plays chess"}},
	{"type": "entity", "name": "Carol", "entityType": "person", "observations": []string{"moved to Lisbon"}},
	{"type": "entity", "name": "Acme", "entityType": "company", "observations": []string{"makes anvils"}},
	{"type": "relation", "from": "Alice", "to": "Acme", "relationType": "works at"},
}

// npmPurposes are the npm servers' purposes, as examples/reference-servers.json gives them.
var npmPurposes = map[string]string{
	"everything": "MCP reference test server: echo, adding numbers, sample images and resources",
	"filesystem": "Read, write, list and search files inside the sandbox folder",
	"memory":     "A knowledge graph memory: store and recall entities, relations and observations",
}

// ScenarioServers configures the servers a scenario file names (uses: name → "builtin" or "npm")
// in dir, a fresh folder the caller removes: built-ins in-process, and npm reference servers run
// by node over stdio from npmDir (examples/npm) when node and their entry points are there. The
// filesystem server is confined to a sandbox folder holding the files the scenarios read; the
// memory server gets a memory file with the entities they ask about. missing lists the servers
// that cannot run here, with the reason.
func ScenarioServers(dir, npmDir string, uses map[string]string) (servers map[string]config.Server, sandbox string, missing []string, err error) {
	sandbox = filepath.Join(dir, "sandbox")
	for name, body := range sandboxFiles {
		p := filepath.Join(sandbox, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, "", nil, fmt.Errorf("creating sandbox: %w", err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return nil, "", nil, fmt.Errorf("creating sandbox: %w", err)
		}
	}
	memory := filepath.Join(dir, "memory.jsonl")
	var lines []byte
	for _, item := range memoryGraph {
		b, _ := json.Marshal(item)
		lines = append(append(lines, b...), '\n')
	}
	if err := os.WriteFile(memory, lines, 0o644); err != nil {
		return nil, "", nil, fmt.Errorf("creating memory file: %w", err)
	}
	_, nodeErr := exec.LookPath("node")
	servers = map[string]config.Server{}
	names := make([]string, 0, len(uses))
	for n := range uses {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		sc := config.Server{ConnectTimeout: config.Duration(60 * time.Second), CallTimeout: config.Duration(20 * time.Second)}
		switch uses[name] {
		case "builtin":
			sc.Transport, sc.Builtin = config.TransportBuiltin, name
		case "npm":
			entry := filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "server-"+name, "dist", "index.js")
			if nodeErr != nil {
				missing = append(missing, name+" (node is not installed)")
				continue
			}
			if _, err := os.Stat(entry); err != nil {
				missing = append(missing, name+" (not installed: run `npm ci --prefix examples/npm`)")
				continue
			}
			sc.Transport, sc.Command, sc.Purpose = config.TransportStdio, "node", npmPurposes[name]
			switch name {
			case "everything":
				sc.Args = []string{entry, "stdio"}
			case "filesystem":
				sc.Args = []string{entry, sandbox}
				sc.Cwd = sandbox
			case "memory":
				sc.Args = []string{entry}
				sc.Env = map[string]string{"MEMORY_FILE_PATH": memory}
			default:
				sc.Args = []string{entry}
			}
		default:
			return nil, "", nil, fmt.Errorf("server %s: unknown kind %q (want builtin or npm)", name, uses[name])
		}
		servers[name] = sc
	}
	return servers, sandbox, missing, nil
}
