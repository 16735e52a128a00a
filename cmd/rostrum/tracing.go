package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kotel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/processor"
)

// tracingFlushTimeout bounds the flush of the spans still buffered when a
// command stops (docs/tracing.md).
const tracingFlushTimeout = 2 * time.Second

// tracing is the span export of `rostrum run`, `rostrum gateway` and the
// demo, configured by the standard OpenTelemetry environment variables
// (docs/tracing.md). Off, its zero value, it installs nothing: no SDK, no
// client hooks; the records' traceparent headers are propagated anyway.
type tracing struct {
	sdk *sdktrace.TracerProvider // nil: off
}

// startTracing turns span export on when the environment asks for it: an
// OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_SDK_DISABLED is not true and
// OTEL_TRACES_EXPORTER is unset or otlp. The exporter is OTLP over HTTP
// (http/protobuf), reading the rest of OTEL_EXPORTER_OTLP_* itself; the
// sampler reads OTEL_TRACES_SAMPLER(_ARG), the batch processor OTEL_BSP_*,
// the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, the service
// name defaulting to service. It returns an error naming the variable for
// a setting rostrum cannot honour (another exporter or protocol).
func startTracing(ctx context.Context, getenv func(string) string, service string, lg *zap.Logger) (tracing, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return tracing{}, nil
	}
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "", "otlp":
	case "none":
		return tracing{}, nil
	default:
		return tracing{}, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: rostrum exports spans with otlp (or none)", e)
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return tracing{}, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(k)); p != "" {
			if p != "http/protobuf" {
				return tracing{}, fmt.Errorf("%s=%q: rostrum exports OTLP over http/protobuf only", k, p)
			}
			break // the traces' own setting wins
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return tracing{}, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service), attribute.String("service.version", readBuild().Version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override
		resource.WithTelemetrySDK())
	if err != nil {
		return tracing{}, fmt.Errorf("tracing: resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	lg.Info("tracing: exporting spans over OTLP/HTTP", zap.String("service", service))
	return tracing{sdk: sdk}, nil
}

// provider returns the tracer provider the components record with; nil
// when off.
func (t tracing) provider() trace.TracerProvider {
	if t.sdk == nil {
		return nil
	}
	return t.sdk
}

// kafkaOpts returns the kotel hooks of a client whose records are traced
// (produce and fetch spans, propagated through the records' traceparent
// header); none when off.
func (t tracing) kafkaOpts() []kgo.Opt {
	if t.sdk == nil {
		return nil
	}
	kt := kotel.NewKotel(kotel.WithTracer(kotel.NewTracer(kotel.TracerProvider(t.sdk), kotel.TracerPropagator(propagation.TraceContext{}))))
	return []kgo.Opt{kgo.WithHooks(kt.Hooks()...)}
}

// processor wires tracing into the processor's configuration: its tracer
// and its main client's hooks.
func (t tracing) processor(pc *processor.Config) {
	pc.TracerProvider = t.provider()
	pc.ConsumerOpts = append(pc.ConsumerOpts, t.kafkaOpts()...)
}

// stop flushes the spans still buffered and stops the exporter, within
// tracingFlushTimeout: spans not sent by then are dropped, with a warning.
func (t tracing) stop(lg *zap.Logger) {
	if t.sdk == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	if err := t.sdk.Shutdown(ctx); err != nil {
		lg.Warn("tracing: spans not flushed at shutdown", zap.Error(err))
	}
}

// osTracing is startTracing over the process's environment.
func osTracing(ctx context.Context, service string, lg *zap.Logger) (tracing, error) {
	return startTracing(ctx, os.Getenv, service, lg)
}
