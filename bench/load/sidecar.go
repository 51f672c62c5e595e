package load

import (
	"context"
	"time"
)

// Sidecar is a toolrouter process started by Start, for the benchmarks that drive one sidecar
// outside a load test.
type Sidecar struct{ s *sidecar }

// Start starts o.Binary on 127.0.0.1 with the built-in defaults, the model server at modelURL and
// overlay merged over that configuration (its top-level keys replace the defaults'), and waits
// (o.StartTimeout) until it serves. The caller must Stop it.
func Start(ctx context.Context, o Options, modelURL string, overlay map[string]any) (*Sidecar, error) {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	s, err := startSidecar(ctx, o, modelURL, overlay)
	if err != nil {
		return nil, err
	}
	return &Sidecar{s: s}, nil
}

// URL is the sidecar's base URL, http://127.0.0.1:PORT.
func (s *Sidecar) URL() string { return s.s.url }

// Stop shuts the sidecar down (SIGTERM, killed after 15 s).
func (s *Sidecar) Stop() error { return s.s.stop() }
