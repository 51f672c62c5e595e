package safety

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// corpusEntry is one line of testdata/poisoned.jsonl or testdata/benign.jsonl.
type corpusEntry struct {
	ID     string     `json:"id"`
	Source string     `json:"source"` // poisoned: the attack it is modelled on
	Why    string     `json:"why"`    // benign: what makes it tempting to flag
	Want   []Kind     `json:"want"`   // poisoned: exactly the kinds Scan must report
	Where  []string   `json:"where"`  // poisoned: texts that must carry a finding
	Def    Definition `json:"def"`
}

func readCorpus(t testing.TB, path string) []corpusEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e corpusEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// corpusServers is the deployment the corpus definitions are scanned in: the servers whose tools
// the poisoned definitions reach for.
var corpusServers = map[string][]string{
	"mail":       {"send_email", "list_emails", "read_email", "flush_outbox"},
	"github":     {"create_issue", "list_issues", "get_file_contents", "create_pull_request"},
	"filesystem": {"read_file", "write_file", "list_directory", "search_files"},
	"whatsapp":   {"send_message", "list_chats"},
	"bank":       {"transfer_funds", "get_balance"},
	"slack":      {"post_message", "list_channels"},
}

// corpusOthers is what Scan gets as others for def: every tool of every other server, def's own
// server holding def.
func corpusOthers(def Definition) []string {
	servers := map[string][]string{}
	for s, ts := range corpusServers {
		servers[s] = ts
	}
	servers[def.Server] = append(slices.Clone(servers[def.Server]), def.Name)
	return Others(servers, def.Server)
}

func kindSet(fs []Finding) []Kind {
	var ks []Kind
	for _, f := range fs {
		if !slices.Contains(ks, f.Kind) {
			ks = append(ks, f.Kind)
		}
	}
	slices.Sort(ks)
	return ks
}

func TestPoisonedCorpus(t *testing.T) {
	corpus := readCorpus(t, "testdata/poisoned.jsonl")
	if len(corpus) < 100 {
		t.Fatalf("got %d poisoned definitions, want at least 100", len(corpus))
	}
	perKind := map[Kind]int{}
	for _, e := range corpus {
		t.Run(e.ID, func(t *testing.T) {
			fs := Scan(e.Def, corpusOthers(e.Def))
			want := slices.Clone(e.Want)
			slices.Sort(want)
			if got := kindSet(fs); !slices.Equal(got, want) {
				t.Errorf("got kinds %v, want %v\n%s", got, want, dump(fs))
			}
			for _, w := range e.Where {
				if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Where == w }) {
					t.Errorf("got no finding at %q, want one\n%s", w, dump(fs))
				}
			}
			for _, f := range fs {
				perKind[f.Kind]++
				if hidden := hiddenRunes(f.Excerpt + f.Detail + f.Where); hidden != "" {
					t.Errorf("finding %s at %s shows raw %s: %q", f.Kind, f.Where, hidden, f.Excerpt)
				}
			}
			stripped := Strip(e.Def, fs)
			again := slices.DeleteFunc(Scan(stripped, corpusOthers(e.Def)), func(f Finding) bool { return f.Where == "name" })
			if len(again) > 0 {
				t.Errorf("after Strip, got findings, want none\n%s", dump(again))
			}
			if len(stripped.InputSchema) > 0 && !json.Valid(stripped.InputSchema) {
				t.Errorf("after Strip, got invalid schema %s", stripped.InputSchema)
			}
		})
	}
	t.Logf("%d poisoned definitions; findings by kind: %v", len(corpus), perKind)
}

func TestBenignCorpus(t *testing.T) {
	for _, e := range readCorpus(t, "testdata/benign.jsonl") {
		t.Run(e.ID, func(t *testing.T) {
			if fs := Scan(e.Def, corpusOthers(e.Def)); len(fs) > 0 {
				t.Errorf("%s: got findings, want none\n%s", e.Why, dump(fs))
			}
		})
	}
}

// hiddenRunes names the first invisible character or invalid byte in s, or returns "".
func hiddenRunes(s string) string {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return escape(s[i : i+1])
		}
		if invisibleRune(r) {
			return escape(string(r))
		}
		i += size
	}
	return ""
}

func dump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + string(f.Kind) + " @ " + f.Where + ": " + f.Detail + "\n      " + f.Excerpt + "\n")
	}
	return b.String()
}
