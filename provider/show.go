package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ollama/ollama/api"
)

// maxShow bounds the answer of /api/show: without verbose it holds the model's template,
// parameters, license and metadata, not its vocabulary.
const maxShow = 8 << 20

// ErrNoContextLength means /api/show answered without the model's trained context length.
var ErrNoContextLength = errors.New("the model's information has no context length")

// ContextLength is the context length model was trained with, as /api/show reports it in
// model_info ("<architecture>.context_length"). It satisfies router.ContextLengther, so that the
// router never asks Ollama for a larger num_ctx; the caller bounds it with ctx and keeps the
// answer (the router asks once, and again at most once a minute while it fails).
func (o *Ollama) ContextLength(ctx context.Context, model string) (int, error) {
	body, err := json.Marshal(api.ShowRequest{Model: model})
	if err != nil {
		return 0, fmt.Errorf("encoding show request: %w", err)
	}
	resp, err := o.do(ctx, http.MethodPost, "/api/show", bytes.NewReader(body), "application/json")
	if err != nil {
		return 0, fmt.Errorf("showing model %s: %w", model, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxShow+1))
	if err != nil {
		return 0, fmt.Errorf("showing model %s: reading the answer: %w", model, err)
	}
	if resp.StatusCode >= http.StatusBadRequest {
		return 0, fmt.Errorf("showing model %s: %w", model, StatusError(resp, raw))
	}
	if len(raw) > maxShow {
		return 0, fmt.Errorf("showing model %s: the answer is over %d bytes", model, maxShow)
	}
	var show struct {
		ModelInfo map[string]any `json:"model_info"`
	}
	if err := json.Unmarshal(raw, &show); err != nil {
		return 0, fmt.Errorf("showing model %s: decoding the answer: %w", model, err)
	}
	return contextLength(show.ModelInfo, model)
}

// contextLength reads "<general.architecture>.context_length" from model_info; without an
// architecture, the one key ending in ".context_length".
func contextLength(info map[string]any, model string) (int, error) {
	key := ""
	if arch, ok := info["general.architecture"].(string); ok && arch != "" {
		key = arch + ".context_length"
	} else {
		for k := range info {
			if strings.HasSuffix(k, ".context_length") {
				if key != "" {
					return 0, fmt.Errorf("model %s: %w (no architecture, and both %s and %s)", model, ErrNoContextLength, key, k)
				}
				key = k
			}
		}
	}
	if key == "" {
		return 0, fmt.Errorf("model %s: %w", model, ErrNoContextLength)
	}
	n, ok := info[key].(float64)
	if !ok || n < 1 || n != float64(int(n)) {
		return 0, fmt.Errorf("model %s: %w (%s is %v)", model, ErrNoContextLength, key, info[key])
	}
	return int(n), nil
}
