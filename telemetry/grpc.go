package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// UnaryInterceptor counts, times and traces each unary CRI call. It must
// run outside the server's own interceptor, which turns domain errors into
// gRPC statuses: it sees the code the client gets.
func (t *Telemetry) UnaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, end := t.begin(ctx, info.FullMethod)
	resp, err := handler(ctx, req)
	end(err)
	return resp, err
}

// StreamInterceptor does the same for streaming calls (GetContainerEvents:
// its duration is the subscription's).
func (t *Telemetry) StreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, end := t.begin(ss.Context(), info.FullMethod)
	err := handler(srv, &contextStream{ServerStream: ss, ctx: ctx})
	end(err)
	return err
}

type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *contextStream) Context() context.Context { return s.ctx }

// begin starts observing one call; end takes its error.
func (t *Telemetry) begin(ctx context.Context, fullMethod string) (context.Context, func(error)) {
	service, method := splitMethod(fullMethod)
	ctx = WithOperation(ctx, method)
	var span trace.Span
	if t.tracer != nil {
		md, _ := metadata.FromIncomingContext(ctx)
		ctx = t.prop.Extract(ctx, metadataCarrier(md))
		ctx, span = t.tracer.Start(ctx, service+"/"+method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("rpc.system", "grpc"),
				attribute.String("rpc.service", service), attribute.String("rpc.method", method)))
	}
	m := t.metrics
	if m != nil {
		m.rpcInFlight.WithLabelValues(service, method).Inc()
	}
	start := time.Now()
	return ctx, func(err error) {
		code := status.Code(err)
		if m != nil {
			m.rpcInFlight.WithLabelValues(service, method).Dec()
			m.rpcHandled.WithLabelValues(service, method, code.String()).Inc()
			m.rpcSeconds.WithLabelValues(service, method, code.String()).Observe(time.Since(start).Seconds())
		}
		if span != nil {
			span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)))
			if code != codes.OK {
				span.SetStatus(otelcodes.Error, status.Convert(err).Message())
			}
			span.End()
		}
	}
}

// metadataCarrier reads W3C trace context from incoming gRPC metadata.
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
