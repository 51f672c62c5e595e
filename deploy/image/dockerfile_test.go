package image_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"toolrouter/deploy/image"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case
	args string
}

func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if more, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// words splits KEY=VALUE pairs and options, honouring double quotes.
func words(s string) []string {
	var out []string
	var w strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if w.Len() > 0 {
				out = append(out, w.String())
				w.Reset()
			}
		default:
			w.WriteRune(r)
		}
	}
	if w.Len() > 0 {
		out = append(out, w.String())
	}
	return out
}

// dockerfileConfig is the image configuration the Dockerfile sets, and where it copies files.
func dockerfileConfig(t *testing.T) (v1.Config, []string) {
	t.Helper()
	c := v1.Config{ExposedPorts: map[string]struct{}{}, Volumes: map[string]struct{}{}, Labels: map[string]string{}}
	var copies []string
	jsonArray := func(s string) []string {
		var a []string
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			t.Fatalf("Dockerfile: %q is not a JSON array: %v", s, err)
		}
		return a
	}
	for _, in := range readDockerfile(t) {
		switch in.cmd {
		case "ENV":
			c.Env = append(c.Env, words(in.args)...)
		case "LABEL":
			for _, kv := range words(in.args) {
				k, v, _ := strings.Cut(kv, "=")
				c.Labels[k] = v
			}
		case "USER":
			c.User = in.args
		case "WORKDIR":
			c.WorkingDir = in.args
		case "EXPOSE":
			c.ExposedPorts[in.args] = struct{}{}
		case "VOLUME":
			c.Volumes[in.args] = struct{}{}
		case "STOPSIGNAL":
			c.StopSignal = in.args
		case "ENTRYPOINT":
			c.Entrypoint = jsonArray(in.args)
		case "CMD":
			c.Cmd = jsonArray(in.args)
		case "HEALTHCHECK":
			opts, cmd, _ := strings.Cut(in.args, " CMD ")
			hc := &v1.HealthConfig{Test: append([]string{"CMD"}, jsonArray(cmd)...)}
			for _, o := range words(opts) {
				k, v, _ := strings.Cut(strings.TrimPrefix(o, "--"), "=")
				d, _ := time.ParseDuration(v)
				switch k {
				case "interval":
					hc.Interval = d
				case "timeout":
					hc.Timeout = d
				case "start-period":
					hc.StartPeriod = d
				case "retries":
					fmt.Sscan(v, &hc.Retries)
				}
			}
			c.Healthcheck = hc
		case "COPY":
			w := words(in.args)
			copies = append(copies, w[len(w)-1])
		}
	}
	return c, copies
}

// TestDockerfile checks that the Dockerfile gives the image scripts/image builds: the same
// configuration, label for label, and the same binaries in the same places.
func TestDockerfile(t *testing.T) {
	got, copies := dockerfileConfig(t)
	want := image.Config("VERSION", "REVISION", time.Unix(0, 0))
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"ENTRYPOINT", got.Entrypoint, want.Entrypoint},
		{"CMD", got.Cmd, want.Cmd},
		{"USER", got.User, want.User},
		{"WORKDIR", got.WorkingDir, want.WorkingDir},
		{"ENV", sorted(got.Env), sorted(want.Env)},
		{"EXPOSE", slices.Sorted(maps.Keys(got.ExposedPorts)), slices.Sorted(maps.Keys(want.ExposedPorts))},
		{"VOLUME", slices.Sorted(maps.Keys(got.Volumes)), slices.Sorted(maps.Keys(want.Volumes))},
		{"STOPSIGNAL", got.StopSignal, want.StopSignal},
		{"LABEL keys", slices.Sorted(maps.Keys(got.Labels)), slices.Sorted(maps.Keys(want.Labels))},
		{"LABEL title", got.Labels["org.opencontainers.image.title"], want.Labels["org.opencontainers.image.title"]},
		{"LABEL description", got.Labels["org.opencontainers.image.description"], want.Labels["org.opencontainers.image.description"]},
		{"HEALTHCHECK", fmt.Sprintf("%+v", *got.Healthcheck), fmt.Sprintf("%+v", *want.Healthcheck)},
		{"COPY destinations", sorted(copies), sorted([]string{image.BinaryPath, image.HealthcheckPath})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
				t.Errorf("Dockerfile: got %v, want %v as scripts/image's image", tc.got, tc.want)
			}
		})
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
