package retrieve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/provider"
)

// Embedder turns texts into vectors with an embedding model; *OllamaEmbedder is one.
type Embedder interface {
	// Embed returns one vector per input, in order.
	Embed(ctx context.Context, model string, inputs []string) ([][]float32, error)
}

// ErrResponseTooLarge means an embedding response exceeded EmbedderOptions.MaxResponseBytes.
var ErrResponseTooLarge = errors.New("embedding response too large")

// EmbedderOptions bound an OllamaEmbedder's requests; the zero value works.
type EmbedderOptions struct {
	// BatchSize is the most inputs sent in one request (0: 32).
	BatchSize int
	// MaxResponseBytes bounds one response body (0: 64 MiB).
	MaxResponseBytes int64
	// Timeout bounds one request, within the caller's deadline (0: 2 minutes).
	Timeout time.Duration
}

// OllamaEmbedder calls Ollama's POST /api/embed, splitting the inputs into bounded batches. It is
// safe for concurrent use.
type OllamaEmbedder struct {
	base *url.URL
	http *http.Client
	opts EmbedderOptions
}

// NewOllamaEmbedder returns an embedder for the Ollama server at base using hc (nil:
// http.DefaultClient).
func NewOllamaEmbedder(base *url.URL, hc *http.Client, opts EmbedderOptions) *OllamaEmbedder {
	if hc == nil {
		hc = http.DefaultClient
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 32
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = 64 << 20
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	return &OllamaEmbedder{base: base, http: hc, opts: opts}
}

// Embed returns the model's vector for each input. An HTTP error status comes back as an
// api.StatusError carrying the server's message (404 when the model is not pulled).
func (o *OllamaEmbedder) Embed(ctx context.Context, model string, inputs []string) ([][]float32, error) {
	out := make([][]float32, 0, len(inputs))
	for start := 0; start < len(inputs); start += o.opts.BatchSize {
		end := min(start+o.opts.BatchSize, len(inputs))
		vecs, err := o.batch(ctx, model, inputs[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (o *OllamaEmbedder) batch(ctx context.Context, model string, inputs []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, o.opts.Timeout)
	defer cancel()
	body, err := json.Marshal(api.EmbedRequest{Model: model, Input: inputs})
	if err != nil {
		return nil, fmt.Errorf("encoding embed request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.base.JoinPath("/api/embed").String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building embed request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "toolrouter")
	resp, err := o.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, o.opts.MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading embed response: %w", err)
	}
	if int64(len(data)) > o.opts.MaxResponseBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, o.opts.MaxResponseBytes)
	}
	if resp.StatusCode >= http.StatusBadRequest {
		return nil, provider.StatusError(resp, data)
	}
	var r api.EmbedResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding embed response: %w", err)
	}
	if len(r.Embeddings) != len(inputs) {
		return nil, fmt.Errorf("embed response has %d vectors for %d inputs", len(r.Embeddings), len(inputs))
	}
	for i, v := range r.Embeddings {
		if len(v) == 0 || len(v) != len(r.Embeddings[0]) {
			return nil, fmt.Errorf("embed response vector %d has %d dimensions, vector 0 has %d", i, len(v), len(r.Embeddings[0]))
		}
	}
	return r.Embeddings, nil
}
