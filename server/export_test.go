package server

// Door is a row of the route table as the tests of package server_test read it.
type Door struct {
	Methods                []string
	Path                   string
	Work, Dialect, Framing string
}

// Doors is the route table the API built from d and o mounts.
func Doors(d Deps, o Options) []Door {
	_, h := build(d, o, "")
	works := map[work]string{workNone: "none", workDoor: "door", workPerCall: "per-call"}
	dialects := map[dialect]string{dialectToolrouter: "toolrouter", dialectOpenAI: "openai", dialectOllama: "ollama"}
	framings := map[framing]string{frameNone: "none", frameSSE: "sse", frameNDJSON: "ndjson"}
	var out []Door
	for _, r := range h.table {
		out = append(out, Door{Methods: r.methods, Path: r.path, Work: works[r.work], Dialect: dialects[r.dialect], Framing: framings[r.framing]})
	}
	return out
}
