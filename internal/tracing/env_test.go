package tracing

import (
	"errors"
	"maps"
	"net/url"
	"strings"
	"testing"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		env  func(string) (string, bool)
		want Settings
		err  error
	}{
		{"nothing set: off", env(), Settings{Sampler: SamplerParentAlwaysOn, Ratio: 1}, nil},
		{"base endpoint", env(EnvEndpoint, "http://otel:4318/"),
			Settings{Enabled: true, Endpoint: "http://otel:4318/v1/traces", Sampler: SamplerParentAlwaysOn, Ratio: 1}, nil},
		{"traces endpoint as given", env(EnvEndpoint, "http://a:4318", EnvTracesEndpoint, "https://b/custom"),
			Settings{Enabled: true, Endpoint: "https://b/custom", Sampler: SamplerParentAlwaysOn, Ratio: 1}, nil},
		{"exporter none", env(EnvEndpoint, "http://a:4318", EnvExporter, "none"),
			Settings{Endpoint: "http://a:4318/v1/traces", Sampler: SamplerParentAlwaysOn, Ratio: 1}, nil},
		{"sdk disabled", env(EnvEndpoint, "http://a:4318", EnvSDKDisabled, "true"),
			Settings{Endpoint: "http://a:4318/v1/traces", Sampler: SamplerParentAlwaysOn, Ratio: 1}, nil},
		{"everything", env(EnvEndpoint, "http://a:4318", EnvProtocol, "http/protobuf", EnvHeaders, "api-key=s%3Dcret, x-team = brain",
			EnvServiceName, "gw-eu", EnvSampler, "parentbased_traceidratio", EnvSamplerArg, "0.25", EnvSensitive, "true"),
			Settings{Enabled: true, Endpoint: "http://a:4318/v1/traces", Headers: map[string]string{"api-key": "s=cret", "x-team": "brain"},
				ServiceName: "gw-eu", Sampler: SamplerParentRatio, Ratio: 0.25, Sensitive: true}, nil},
		{"grpc refused", env(EnvEndpoint, "http://a:4317", EnvProtocol, "grpc"), Settings{}, ErrProtocol},
		{"traces grpc refused", env(EnvTracesProtocol, "grpc"), Settings{}, ErrProtocol},
		{"zipkin refused", env(EnvExporter, "zipkin"), Settings{}, ErrExporter},
		{"endpoint not a URL", env(EnvEndpoint, "otel:4318"), Settings{}, ErrEndpoint},
		{"bad header", env(EnvHeaders, "novalue"), Settings{}, ErrHeaders},
		{"bad sampler", env(EnvSampler, "sometimes"), Settings{}, ErrSampler},
		{"bad ratio", env(EnvSampler, "traceidratio", EnvSamplerArg, "2"), Settings{}, ErrSampler},
		{"bad bool", env(EnvSensitive, "yes please"), Settings{}, ErrBool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.env)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if got.Enabled != tt.want.Enabled || got.Endpoint != tt.want.Endpoint || !maps.Equal(got.Headers, tt.want.Headers) ||
				got.ServiceName != tt.want.ServiceName || got.Sampler != tt.want.Sampler || got.Ratio != tt.want.Ratio || got.Sensitive != tt.want.Sensitive {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// Every problem is reported, and a header's value (a secret) never is.
func TestParseReportsAllWithoutSecrets(t *testing.T) {
	_, err := Parse(env(EnvProtocol, "grpc", EnvSampler, "x", EnvHeaders, "api-key=top%0Asecretvalue"))
	for _, want := range []error{ErrProtocol, ErrSampler, ErrHeaders} {
		if !errors.Is(err, want) {
			t.Errorf("error %v lacks %v", err, want)
		}
	}
	if strings.Contains(err.Error(), "secretvalue") {
		t.Fatalf("error quotes a header value: %v", err)
	}
}

func TestOffIsNil(t *testing.T) {
	tr, err := Setup(env(), "brainstem-test")
	if err != nil || tr.Enabled() || tr.Tracer != nil {
		t.Fatalf("tracing with no endpoint: %+v, %v", tr, err)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseHeaders(f *testing.F) {
	f.Add("api-key=secret,x-b=1%202")
	f.Add("a=b=c, d = e")
	f.Add("=x")
	f.Fuzz(func(t *testing.T, v string) {
		h, err := ParseHeaders(v)
		if err != nil {
			if !errors.Is(err, ErrHeaders) {
				t.Fatalf("error kind: %v", err)
			}
			return
		}
		out := FormatHeaders(h)
		if len(out) > MaxHeadersBytes {
			// Escaping can grow a value threefold past the limit the input
			// was within; the limit must then refuse the formatted form.
			if _, err := ParseHeaders(out); !errors.Is(err, ErrHeaders) {
				t.Fatalf("%d formatted bytes accepted: %v", len(out), err)
			}
			return
		}
		h2, err := ParseHeaders(out)
		if err != nil || !maps.Equal(h, h2) {
			t.Fatalf("round trip of %q: %v %v %v", v, h, h2, err)
		}
	})
}

func FuzzParseSampler(f *testing.F) {
	f.Add("traceidratio", "0.5")
	f.Add("parentbased_traceidratio", "NaN")
	f.Add("always_on", "")
	f.Fuzz(func(t *testing.T, name, arg string) {
		s, r, err := ParseSampler(name, arg)
		if err != nil {
			if !errors.Is(err, ErrSampler) {
				t.Fatalf("error kind: %v", err)
			}
			return
		}
		if !(r >= 0 && r <= 1) || sampler(s, r) == nil {
			t.Fatalf("accepted %q %q as %q %v", name, arg, s, r)
		}
		if s2, r2, err := ParseSampler(s, arg); err != nil || s2 != s || r2 != r {
			t.Fatalf("not stable: %q %v %v", s2, r2, err)
		}
	})
}

// FormatHeaders is ParseHeaders' inverse (keys in any order) for header
// sets whose escaped form stays within MaxHeadersBytes.
func FormatHeaders(h map[string]string) string {
	parts := make([]string, 0, len(h))
	for k, v := range h {
		parts = append(parts, k+"="+url.PathEscape(v))
	}
	return strings.Join(parts, ",")
}
