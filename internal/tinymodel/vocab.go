package tinymodel

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Token types of a GGUF vocabulary (llama.cpp's and Ollama's tokenizer.TOKEN_TYPE_*).
const (
	tokenNormal      int32 = 1
	tokenControl     int32 = 3
	tokenUserDefined int32 = 4
)

// Vocab is a byte-level BPE vocabulary as a GGUF stores it: token i is Tokens[i].
type Vocab struct {
	Tokens []string
	Types  []int32
	// Merges are "a b" pairs, highest priority first.
	Merges []string
	ids    map[string]int
}

// ID returns the id of token s.
func (v *Vocab) ID(s string) (int, bool) {
	id, ok := v.ids[s]
	return id, ok
}

// hfTokenizer is the part of a Hugging Face tokenizer.json a byte-level BPE needs.
type hfTokenizer struct {
	Model struct {
		Type   string          `json:"type"`
		Vocab  map[string]int  `json:"vocab"`
		Merges json.RawMessage `json:"merges"`
	} `json:"model"`
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
}

// LoadVocab reads a Hugging Face tokenizer.json of a byte-level BPE model (Qwen3's). Added
// tokens marked special become control tokens, the others user-defined ones, as Ollama's own
// converter types them; the ids must run from 0 without a gap.
func LoadVocab(path string) (*Vocab, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tokenizer: %w", err)
	}
	var hf hfTokenizer
	if err := json.Unmarshal(b, &hf); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	if hf.Model.Type != "BPE" {
		return nil, fmt.Errorf("%s: model type %q, want BPE", path, hf.Model.Type)
	}
	n := 0
	for _, id := range hf.Model.Vocab {
		n = max(n, id+1)
	}
	for _, t := range hf.AddedTokens {
		n = max(n, t.ID+1)
	}
	v := &Vocab{Tokens: make([]string, n), Types: make([]int32, n), ids: make(map[string]int, n)}
	set := func(id int, s string, typ int32) {
		v.Tokens[id], v.Types[id] = s, typ
		v.ids[s] = id
	}
	for s, id := range hf.Model.Vocab {
		set(id, s, tokenNormal)
	}
	for _, t := range hf.AddedTokens {
		typ := tokenUserDefined
		if t.Special {
			typ = tokenControl
		}
		set(t.ID, t.Content, typ)
	}
	for id, typ := range v.Types {
		if typ == 0 {
			return nil, fmt.Errorf("%s: no token has id %d", path, id)
		}
	}
	if v.Merges, err = merges(hf.Model.Merges); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// merges accepts both forms tokenizer.json uses: ["a b", …] and [["a", "b"], …].
func merges(raw json.RawMessage) ([]string, error) {
	var flat []string
	if err := json.Unmarshal(raw, &flat); err == nil {
		return flat, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("decoding merges: %w", err)
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("merge %d has %d parts, want 2", i, len(p))
		}
		out[i] = strings.Join(p, " ")
	}
	return out, nil
}
