// Package telemetry exports OpenTelemetry traces of served requests. It is an observe.Observer: it
// builds each request's spans after the fact from its report, with the report's own timestamps,
// continuing the trace context the request came with (W3C traceparent), so that a caller's trace
// shows the routing, the tool calls and the council inside it. It is off unless the standard
// OTEL_* environment variables turn it on (FromEnv); it does not instrument anything live and
// records no query, argument or answer.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) does
// not set one.
const DefaultServiceName = "toolrouter"

// instrumentation names the tracer.
const instrumentation = "toolrouter/telemetry"

// Options configure the traces. The zero value works.
type Options struct {
	// Systems maps a configured model name to its gen_ai.system ("ollama", "openai"); a model not
	// in it is "ollama".
	Systems map[string]string
}

// Tracer turns each request's report into spans and exports them.
type Tracer struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	systems map[string]string
}

// New returns a Tracer that records into tp; Shutdown shuts tp down.
func New(tp *sdktrace.TracerProvider, o Options) *Tracer {
	return &Tracer{tp: tp, tracer: tp.Tracer(instrumentation), prop: propagation.TraceContext{}, systems: o.Systems}
}

// FromEnv returns the Tracer the standard environment variables ask for, or nil when they ask
// for none. Traces are on when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// is set, or OTEL_TRACES_EXPORTER is "otlp" (then to http://localhost:4318); off when
// OTEL_TRACES_EXPORTER is "none" or OTEL_SDK_DISABLED is "true". The exporter is OTLP over
// HTTP with protobuf bodies: another OTEL_EXPORTER_OTLP_PROTOCOL (grpc) or another exporter is
// an error. The exporter reads its other OTEL_EXPORTER_OTLP_* variables (headers, timeout,
// compression, certificates) itself; the resource takes OTEL_SERVICE_NAME (default
// "toolrouter") and OTEL_RESOURCE_ATTRIBUTES. Spans go through a batch processor whose queue is
// bounded (2048 spans unless OTEL_BSP_MAX_QUEUE_SIZE says otherwise): when the collector is slow
// or away, spans are dropped, never waited for.
func FromEnv(ctx context.Context, o Options) (*Tracer, error) {
	on, err := enabled(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("traces: otlp exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName)),
		resource.WithFromEnv(), // later wins: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("traces: resource: %w", err), exp.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return New(tp, o), nil
}

// enabled reads whether the environment turns traces on, and refuses what it asks for that
// this package does not do.
func enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	explicit := false
	for e := range strings.SplitSeq(getenv("OTEL_TRACES_EXPORTER"), ",") {
		switch e = strings.TrimSpace(e); e {
		case "":
		case "none":
			return false, nil
		case "otlp":
			explicit = true
		default:
			return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q is not supported: use otlp (or none)", e)
		}
	}
	if !explicit && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(name)); p != "" {
			if p != "http/protobuf" {
				return false, fmt.Errorf("%s=%q is not supported: use http/protobuf", name, p)
			}
			break // the traces variable wins over the general one
		}
	}
	return true, nil
}

// Shutdown exports the spans still queued and stops the exporter, within ctx's deadline.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("traces: shutdown: %w", err)
	}
	return nil
}

// headerCarrier reads a report's trace context headers for the propagator.
type headerCarrier func(string) string

func (h headerCarrier) Get(key string) string { return h(strings.ToLower(key)) }
func (h headerCarrier) Set(string, string)    {}
func (h headerCarrier) Keys() []string        { return []string{"traceparent", "tracestate"} }
