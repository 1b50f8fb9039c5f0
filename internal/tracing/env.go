package tracing

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The environment variables Parse reads. The OTEL_* ones are the
// OpenTelemetry SDK's standard names; BRAINSTEM_TRACE_SENSITIVE is the one
// opt-in to identities and content in span attributes.
const (
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvExporter       = "OTEL_TRACES_EXPORTER"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvServiceName    = "OTEL_SERVICE_NAME"
	EnvSampler        = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
	EnvSensitive      = "BRAINSTEM_TRACE_SENSITIVE"
)

// ProtocolHTTPProtobuf is the one OTLP protocol supported (no gRPC).
const ProtocolHTTPProtobuf = "http/protobuf"

// MaxHeadersBytes bounds OTEL_EXPORTER_OTLP_HEADERS.
const MaxHeadersBytes = 8 << 10

// Errors of Parse, each naming its variable in the wrapped message.
var (
	// ErrProtocol: an OTLP protocol other than http/protobuf.
	ErrProtocol = errors.New("tracing: unsupported OTLP protocol")
	// ErrExporter: OTEL_TRACES_EXPORTER other than otlp or none.
	ErrExporter = errors.New("tracing: unsupported traces exporter")
	// ErrEndpoint: an endpoint that is not an http or https URL.
	ErrEndpoint = errors.New("tracing: bad OTLP endpoint")
	// ErrHeaders: OTEL_EXPORTER_OTLP_HEADERS not a list of key=value.
	ErrHeaders = errors.New("tracing: bad OTLP headers")
	// ErrSampler: an unknown sampler or a bad sampler argument.
	ErrSampler = errors.New("tracing: bad sampler")
	// ErrBool: a boolean variable that is not true or false.
	ErrBool = errors.New("tracing: bad boolean")
)

// Sampler names (OTEL_TRACES_SAMPLER).
const (
	SamplerAlwaysOn        = "always_on"
	SamplerAlwaysOff       = "always_off"
	SamplerRatio           = "traceidratio"
	SamplerParentAlwaysOn  = "parentbased_always_on"
	SamplerParentAlwaysOff = "parentbased_always_off"
	SamplerParentRatio     = "parentbased_traceidratio"
	defaultSampler         = SamplerParentAlwaysOn
)

// Settings is the tracing configuration of one process.
type Settings struct {
	// Enabled: an endpoint is set, the exporter is otlp and the SDK is not
	// disabled. Default false.
	Enabled bool
	// Endpoint is the full URL spans are POSTed to (…/v1/traces).
	Endpoint string
	// Headers are sent with every export (e.g. an API key). Never logged.
	Headers map[string]string
	// ServiceName is service.name; "" means the caller's default.
	ServiceName string
	// Sampler is one of the Sampler* names; default parentbased_always_on.
	Sampler string
	// Ratio is the ratio of the *traceidratio samplers, in [0, 1]; default 1.
	Ratio float64
	// Sensitive puts identities (email) and content (query text) into
	// span attributes. Default false: never.
	Sensitive bool
}

// Parse reads the settings through lookup (os.LookupEnv in production).
// It reports every problem at once.
func Parse(lookup func(string) (string, bool)) (Settings, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	s := Settings{ServiceName: get(EnvServiceName), Ratio: 1}
	var errs []error
	disabled, err := parseBool(EnvSDKDisabled, get(EnvSDKDisabled))
	errs = append(errs, err)
	s.Sensitive, err = parseBool(EnvSensitive, get(EnvSensitive))
	errs = append(errs, err)
	exporter := get(EnvExporter)
	if exporter != "" && exporter != "otlp" && exporter != "none" {
		errs = append(errs, fmt.Errorf("%w: %s=%q; use otlp or none", ErrExporter, EnvExporter, exporter))
	}
	if p := cmp.Or(get(EnvTracesProtocol), get(EnvProtocol)); p != "" && p != ProtocolHTTPProtobuf {
		errs = append(errs, fmt.Errorf("%w: %q; brainstem exports OTLP over HTTP only: set %s=%s", ErrProtocol, p, EnvProtocol, ProtocolHTTPProtobuf))
	}
	s.Endpoint, err = endpoint(get)
	errs = append(errs, err)
	s.Headers, err = ParseHeaders(cmp.Or(get(EnvTracesHeaders), get(EnvHeaders)))
	errs = append(errs, err)
	s.Sampler, s.Ratio, err = ParseSampler(get(EnvSampler), get(EnvSamplerArg))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	s.Enabled = !disabled && exporter != "none" && s.Endpoint != ""
	return s, nil
}

func parseBool(name, v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: %s=%q; use true or false", ErrBool, name, v)
	}
	return b, nil
}

// endpoint is the traces URL: the signal's endpoint as given, or the base
// endpoint with /v1/traces appended, as the OTLP specification says.
func endpoint(get func(string) string) (string, error) {
	name, u := EnvTracesEndpoint, get(EnvTracesEndpoint)
	if u == "" {
		name, u = EnvEndpoint, get(EnvEndpoint)
		if u == "" {
			return "", nil
		}
		u = strings.TrimSuffix(u, "/") + "/v1/traces"
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", fmt.Errorf("%w: %s is not an http:// or https:// URL", ErrEndpoint, name)
	}
	return u, nil
}

// ParseHeaders parses OTEL_EXPORTER_OTLP_HEADERS: comma-separated
// key=value pairs, values percent-decoded. Errors never quote a value
// (they may be secrets).
func ParseHeaders(v string) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	if len(v) > MaxHeadersBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, limit %d", ErrHeaders, EnvHeaders, len(v), MaxHeadersBytes)
	}
	h := map[string]string{}
	for i, pair := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || !validHeaderName(k) {
			return nil, fmt.Errorf("%w: entry %d of %s is not name=value with a valid header name", ErrHeaders, i+1, EnvHeaders)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil || strings.ContainsAny(dv, "\r\n\x00") {
			return nil, fmt.Errorf("%w: the value of entry %d (%s) of %s is not a valid header value", ErrHeaders, i+1, k, EnvHeaders)
		}
		h[k] = dv
	}
	return h, nil
}

// validHeaderName: an HTTP token.
func validHeaderName(k string) bool {
	return k != "" && !strings.ContainsFunc(k, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c))
	})
}

// ParseSampler parses OTEL_TRACES_SAMPLER and its argument: the sampler
// name (default parentbased_always_on) and the ratio (default 1, only read
// by the ratio samplers).
func ParseSampler(name, arg string) (string, float64, error) {
	name = cmp.Or(name, defaultSampler)
	switch name {
	case SamplerAlwaysOn, SamplerAlwaysOff, SamplerParentAlwaysOn, SamplerParentAlwaysOff:
		return name, 1, nil
	case SamplerRatio, SamplerParentRatio:
	default:
		return "", 0, fmt.Errorf("%w: %s=%q; use one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio", ErrSampler, EnvSampler, name)
	}
	if arg == "" {
		return name, 1, nil
	}
	r, err := strconv.ParseFloat(arg, 64)
	if err != nil || !(r >= 0 && r <= 1) {
		return "", 0, fmt.Errorf("%w: %s=%q is not a ratio between 0 and 1", ErrSampler, EnvSamplerArg, arg)
	}
	return name, r, nil
}
