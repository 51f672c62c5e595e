package console

import (
	"runtime"
	"runtime/debug"
)

// Build is what the running binary was built from, as the overview shows it.
type Build struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// ReadBuild reads the binary's build information: the main module's version ("(devel)" for a
// build from a work tree) and the VCS revision, its time and whether the tree had changes.
func ReadBuild() Build {
	b := Build{Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}
