package proto

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/codec"
	"github.com/brainstem/brainstem/search"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func mustEncodeRequest(t testing.TB, typ MsgType, h reqHeader, req any) []byte {
	t.Helper()
	b, err := encodeRequest(nil, typ, h, req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustEncodeResponse(t testing.TB, resp any) []byte {
	t.Helper()
	b, err := encodeResponse(nil, resp)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// splitFrame checks the header of a whole frame and returns its payload.
func splitFrame(t testing.TB, b []byte, want MsgType) []byte {
	t.Helper()
	h, err := decodeHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.typ != want || int(h.length) != len(b)-HeaderSize {
		t.Fatalf("header %+v for %d bytes, want type %s", h, len(b), want)
	}
	return b[HeaderSize:]
}

var (
	sampleStats = &search.Stats{Docs: 42, TotalLength: 4200, DocFreq: map[string]int64{"idempotency": 3, "keys": 9, "ünïcode": 1}}
	sampleQuery = search.Query{Text: "Idempotency keys, keys", Terms: []string{"idempotency", "keys"}, Tokens: 3, Hall: "facts", Limit: 10}
	sampleTime  = time.Date(2026, 11, 30, 6, 0, 0, 123, time.UTC)
)

func TestRequestRoundTrip(t *testing.T) {
	h := reqHeader{Timeout: 1500 * time.Millisecond, RequestID: "req-1"}
	tests := []struct {
		name string
		typ  MsgType
		req  any
	}{
		{"call", MsgCall, &CallRequest{RequestID: "req-1", Token: "tok", Tool: "brain_get", Args: []byte(`{"id":"payments/facts/x"}`)}},
		{"call empty args", MsgCall, &CallRequest{RequestID: "req-1", Tool: "t", Args: []byte{}}},
		{"call with idempotency key", MsgCall, &CallRequest{RequestID: "req-1", Token: "tok", Tool: "brain_write", Args: []byte(`{"title":"t"}`), IdempotencyKey: "gw-0123456789abcdef"}},
		{"rank", MsgRank, &RankRequest{RequestID: "req-1", Token: "tok", RankRequest: search.RankRequest{Query: sampleQuery, Stats: sampleStats, Generation: 99, Render: 4}}},
		{"rank own stats", MsgRank, &RankRequest{RequestID: "req-1", RankRequest: search.RankRequest{Query: search.Query{Text: "x", Terms: []string{"x"}, Tokens: 1, Limit: 1}}}},
		{"fetch", MsgFetch, &FetchRequest{RequestID: "req-1", Token: "tok", FetchRequest: search.FetchRequest{Query: sampleQuery, Keys: []string{"payments/facts/a", "inbox/payments/b.md"}, Stats: sampleStats}}},
		{"mint", MsgMint, &MintRequest{RequestID: "req-1", Email: "ada@acme.com", Groups: []string{"eng", "payments"}, NotAfter: sampleTime}},
		{"mint no groups zero time", MsgMint, &MintRequest{RequestID: "req-1", Email: "ada@acme.com"}},
		{"stats", MsgStats, &StatsRequest{RequestID: "req-1", StatsRequest: search.StatsRequest{Terms: []string{"idempotency", "keys"}}}},
		{"list tools", MsgListTools, nil},
		{"health", MsgHealth, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := splitFrame(t, mustEncodeRequest(t, tt.typ, h, tt.req), tt.typ)
			var gotH reqHeader
			var got any
			var err error
			switch tt.typ {
			case MsgCall:
				gotH, got, err = decodeCallRequest(p)
			case MsgMint:
				gotH, got, err = decodeMintRequest(p)
			case MsgStats:
				gotH, got, err = decodeStatsRequest(p)
			case MsgRank:
				gotH, got, err = decodeRankRequest(p)
			case MsgFetch:
				gotH, got, err = decodeFetchRequest(p)
			default:
				gotH, err = decodeEmptyRequest(p)
				got = tt.req
			}
			if err != nil {
				t.Fatal(err)
			}
			if gotH != h {
				t.Errorf("header = %+v, want %+v", gotH, h)
			}
			if !reflect.DeepEqual(got, tt.req) {
				t.Errorf("decoded %#v\nwant    %#v", got, tt.req)
			}
		})
	}
}

// TestPrefixRequest: a request body encoded once and given new headers
// (another deadline) for each send is, every time, the frame
// encodeRequest makes, whatever the length of the timeout's varint.
func TestPrefixRequest(t *testing.T) {
	reqs := []struct {
		typ MsgType
		req any
	}{
		{MsgCall, &CallRequest{Token: "tok", Tool: "brain_write", Args: []byte(`{"title":"x"}`), IdempotencyKey: "k"}},
		{MsgMint, &MintRequest{Email: "ada@acme.com", Groups: []string{"eng"}, NotAfter: sampleTime}},
		{MsgStats, &StatsRequest{StatsRequest: search.StatsRequest{Terms: []string{"idempotency", "keys"}}}},
		{MsgRank, &RankRequest{Token: "tok", RankRequest: search.RankRequest{Query: sampleQuery, Stats: sampleStats, Generation: 3}}},
		{MsgHealth, nil},
	}
	timeouts := []time.Duration{time.Hour, 0, 127, 128, 1500 * time.Millisecond, -1, math.MaxInt64, 1}
	for _, id := range []string{"", "req-1", strings.Repeat("r", MaxRequestIDBytes)} {
		for _, r := range reqs {
			room := requestPrefixRoom(len(id))
			b, err := appendRequestBody(make([]byte, room, room+8), r.typ, r.req)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range timeouts {
				h := reqHeader{Timeout: d, RequestID: id}
				if got, want := prefixRequest(b, room, r.typ, 0, h), mustEncodeRequest(t, r.typ, h, r.req); !bytes.Equal(got, want) {
					t.Fatalf("%s, id %q, timeout %v:\n got %x\nwant %x", r.typ, id, d, got, want)
				}
			}
		}
	}
}

func TestResponseRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		typ    MsgType
		resp   any
		decode func([]byte) (any, error)
	}{
		{"list tools", MsgListToolsResponse, &ListToolsResponse{Tools: []byte(`[{"name":"brain_get"}]`)}, func(p []byte) (any, error) { return decodeListToolsResponse(p) }},
		{"list tools and prompts", MsgListToolsResponse, &ListToolsResponse{Tools: []byte(`[{"name":"brain_get"}]`), Prompts: []byte(`[{"name":"review_inbox"}]`)}, func(p []byte) (any, error) { return decodeListToolsResponse(p) }},
		{"call", MsgCallResponse, &CallResponse{Result: []byte(`{"id":"x"}`)}, func(p []byte) (any, error) { return decodeCallResponse(p) }},
		{"call tool error", MsgCallResponse, &CallResponse{Result: []byte(`{"error":{}}`), IsError: true}, func(p []byte) (any, error) { return decodeCallResponse(p) }},
		{"mint", MsgMintResponse, &MintResponse{Token: "tok", Caps: []string{"read", "write"}, Expiry: sampleTime}, func(p []byte) (any, error) { return decodeMintResponse(p) }},
		{"stats", MsgStatsResponse, &StatsResponse{search.StatsResponse{Stats: *sampleStats, Generation: 12}}, func(p []byte) (any, error) { return decodeStatsResponse(p) }},
		{"rank", MsgRankResponse, &RankResponse{search.RankResponse{Generation: 3, Total: 9, Ranked: []search.Ranked{{Key: "w/facts/a", Score: 2.25}, {Key: "inbox/w/b.md", Score: math.Copysign(0, -1)}}, Hits: [][]byte{[]byte(`{"id":"w/facts/a"}`)}}}, func(p []byte) (any, error) { return decodeRankResponse(p) }},
		{"rank stale", MsgRankResponse, &RankResponse{search.RankResponse{Generation: 4, Stale: true, Stats: sampleStats}}, func(p []byte) (any, error) { return decodeRankResponse(p) }},
		{"rank refused", MsgRankResponse, &RankResponse{search.RankResponse{Refused: []byte(`{"error":{"code":"too_large","message":"m"}}`)}}, func(p []byte) (any, error) { return decodeRankResponse(p) }},
		{"fetch", MsgFetchResponse, &FetchResponse{search.FetchResponse{Hits: [][]byte{[]byte(`{"id":"a"}`), []byte(`{"id":"b"}`)}}}, func(p []byte) (any, error) { return decodeFetchResponse(p) }},
		{"health", MsgHealthResponse, &HealthResponse{Wing: "payments", Ready: true, Notes: -1, Version: "v1.2.3"}, func(p []byte) (any, error) { return decodeHealthResponse(p) }},
		{"error", MsgError, &Error{Code: CodeForbidden, Message: "no"}, func(p []byte) (any, error) { return decodeError(p) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := splitFrame(t, mustEncodeResponse(t, tt.resp), tt.typ)
			got, err := tt.decode(p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.resp) {
				t.Errorf("decoded %#v\nwant    %#v", got, tt.resp)
			}
			// Compatibility rule: a newer peer may append fields; an
			// older decoder ignores them.
			got2, err := tt.decode(append(bytes.Clone(p), 0x01, 0x02, 0x03))
			if err != nil {
				t.Fatalf("with trailing fields: %v", err)
			}
			if !reflect.DeepEqual(got2, tt.resp) {
				t.Errorf("with trailing fields decoded %#v", got2)
			}
			// Every strict prefix of a payload whose last field is
			// required is malformed, never a panic.
			for i := range len(p) {
				if lt, ok := tt.resp.(*ListToolsResponse); ok && i == len(codec.AppendBytes(nil, lt.Tools)) {
					continue // a shard that predates prompts sends the tools only
				}
				if _, err := tt.decode(p[:i]); err == nil {
					t.Fatalf("prefix of %d/%d bytes decoded without error", i, len(p))
				}
			}
		})
	}
}

// TestGoldenFrames pins the wire format: a change that alters these bytes
// breaks compatibility with deployed peers (see docs/protocol.md).
func TestGoldenFrames(t *testing.T) {
	frames := map[string][]byte{
		"call_request": mustEncodeRequest(t, MsgCall, reqHeader{Timeout: 2 * time.Second, RequestID: "r1"},
			&CallRequest{Token: "tok", Tool: "brain_get", Args: []byte(`{"id":"a"}`)}),
		"call_request_idempotency_key": mustEncodeRequest(t, MsgCall, reqHeader{Timeout: 2 * time.Second, RequestID: "r1"},
			&CallRequest{Token: "tok", Tool: "brain_write", Args: []byte(`{"title":"a"}`), IdempotencyKey: "k-1"}),
		"rank_request": mustEncodeRequest(t, MsgRank, reqHeader{Timeout: 2 * time.Second, RequestID: "r1"},
			&RankRequest{Token: "tok", RankRequest: search.RankRequest{Query: search.Query{Text: "a", Terms: []string{"a"}, Tokens: 1, Limit: 10},
				Stats: &search.Stats{Docs: 2, TotalLength: 10, DocFreq: map[string]int64{"a": 1}}, Generation: 5, Render: 3}}),
		"rank_response": mustEncodeResponse(t, &RankResponse{search.RankResponse{Generation: 5, Total: 1, Ranked: []search.Ranked{{Key: "w/facts/a", Score: 1.5}},
			Hits: [][]byte{[]byte(`{"id":"w/facts/a"}`)}}}),
		"fetch_request": mustEncodeRequest(t, MsgFetch, reqHeader{Timeout: 2 * time.Second, RequestID: "r1"},
			&FetchRequest{Token: "tok", FetchRequest: search.FetchRequest{Query: search.Query{Text: "a", Terms: []string{"a"}, Tokens: 1, Limit: 10},
				Keys: []string{"w/facts/a"}, Stats: &search.Stats{Docs: 2, TotalLength: 10, DocFreq: map[string]int64{"a": 1}}}}),
		"mint_request":        mustEncodeRequest(t, MsgMint, reqHeader{RequestID: "r2"}, &MintRequest{Email: "ada@acme.com", Groups: []string{"eng"}, NotAfter: time.Unix(1800000000, 0)}),
		"call_request_traced": tracedFrame(t, &CallRequest{Token: "tok", Tool: "brain_get", Args: []byte(`{"id":"a"}`)}),
		"call_response":       mustEncodeResponse(t, &CallResponse{Result: []byte(`"ok"`)}),
		"error":               mustEncodeResponse(t, &Error{Code: CodeUnauthenticated, Message: "re-mint"}),
	}
	for name, b := range frames {
		path := filepath.Join("testdata", name+".hex")
		got := hex.Dump(b)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if got != string(want) {
			t.Errorf("%s frame changed:\n%s\nwant:\n%s", name, got, want)
		}
	}
}

func TestDecodeHeader(t *testing.T) {
	good := beginFrame(nil, MsgCall)
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"ok", good, nil},
		{"short", good[:7], ErrMalformed},
		{"bad magic", append([]byte{0x00}, good[1:]...), ErrMalformed},
		{"version 2", []byte{frameMagic, 2, byte(MsgCall), 0, 0, 0, 0, 0}, ErrVersion},
		{"version 0", []byte{frameMagic, 0, byte(MsgCall), 0, 0, 0, 0, 0}, ErrVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeHeader(tt.b)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestReadFrameLimit(t *testing.T) {
	frame := mustEncodeResponse(t, &CallResponse{Result: bytes.Repeat([]byte("x"), 100)})
	if _, _, err := readFrame(bytes.NewReader(frame), 50); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over limit: err = %v, want ErrTooLarge", err)
	}
	if _, p, err := readFrame(bytes.NewReader(frame), 200); err != nil || len(p) != len(frame)-HeaderSize {
		t.Fatalf("within limit: %d bytes, err %v", len(p), err)
	}
	if _, _, err := readFrame(bytes.NewReader(frame[:len(frame)-1]), 200); !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated payload: err = %v, want ErrMalformed", err)
	}
	if _, _, err := readFrame(bytes.NewReader(frame[:3]), 200); !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated header: err = %v, want ErrMalformed", err)
	}
}

func TestEncodeFieldLimits(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	h := reqHeader{RequestID: "r"}
	tests := []struct {
		name string
		typ  MsgType
		h    reqHeader
		req  any
	}{
		{"request id", MsgHealth, reqHeader{RequestID: long(MaxRequestIDBytes + 1)}, nil},
		{"token", MsgCall, h, &CallRequest{Token: long(MaxTokenBytes + 1), Tool: "t"}},
		{"tool", MsgCall, h, &CallRequest{Tool: long(MaxToolNameBytes + 1)}},
		{"idempotency key", MsgCall, h, &CallRequest{Tool: "t", IdempotencyKey: long(MaxIdempotencyKeyBytes + 1)}},
		{"stats term", MsgRank, h, &RankRequest{RankRequest: search.RankRequest{Stats: &search.Stats{DocFreq: map[string]int64{long(MaxTermBytes + 1): 1}}}}},
		{"query term", MsgStats, h, &StatsRequest{StatsRequest: search.StatsRequest{Terms: []string{long(MaxTermBytes + 1)}}}},
		{"query terms", MsgStats, h, &StatsRequest{StatsRequest: search.StatsRequest{Terms: make([]string, search.MaxQueryTerms+1)}}},
		{"fetch keys", MsgFetch, h, &FetchRequest{FetchRequest: search.FetchRequest{Keys: make([]string, MaxFetchIDs+1)}}},
		{"email", MsgMint, h, &MintRequest{Email: long(brain.MaxEmailBytes + 1)}},
		{"groups", MsgMint, h, &MintRequest{Email: "a", Groups: make([]string, MaxGroups+1)}},
		{"group", MsgMint, h, &MintRequest{Email: "a", Groups: []string{long(MaxGroupBytes + 1)}}},
		{"query", MsgRank, h, &RankRequest{RankRequest: search.RankRequest{Query: search.Query{Text: long(MaxQueryBytes + 1)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			out, err := encodeRequest(dst, tt.typ, tt.h, tt.req)
			if !errors.Is(err, ErrFieldTooLong) {
				t.Fatalf("err = %v, want ErrFieldTooLong", err)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed to %q", out)
			}
		})
	}
	// At the limit is fine.
	if _, err := encodeRequest(nil, MsgCall, reqHeader{RequestID: long(MaxRequestIDBytes)}, &CallRequest{Token: long(MaxTokenBytes), Tool: long(MaxToolNameBytes), IdempotencyKey: long(MaxIdempotencyKeyBytes)}); err != nil {
		t.Fatalf("at the limits: %v", err)
	}
	for _, resp := range []any{
		&MintResponse{Token: long(MaxTokenBytes + 1)},
		&MintResponse{Caps: make([]string, MaxCaps+1)},
		&HealthResponse{Wing: long(MaxWingBytes + 1)},
		&HealthResponse{Version: long(MaxVersionBytes + 1)},
	} {
		if _, err := encodeResponse(nil, resp); !errors.Is(err, ErrFieldTooLong) {
			t.Errorf("%#v: err = %v, want ErrFieldTooLong", resp, err)
		}
	}
	// Long error messages are truncated, not refused.
	b := mustEncodeResponse(t, &Error{Code: CodeInternal, Message: long(MaxErrorMessageBytes * 2)})
	e, err := decodeError(b[HeaderSize:])
	if err != nil || len(e.Message) != MaxErrorMessageBytes {
		t.Fatalf("truncated error: %d bytes, %v", len(e.Message), err)
	}
}

func TestDecodeHostileCounts(t *testing.T) {
	// A count far beyond the bytes present must fail before allocating.
	p := appendReqHeader2(t, reqHeader{RequestID: "r"})
	p = codec.AppendString(p, "ada@acme.com")
	p = codec.AppendUvarint(p, MaxGroups) // claims 1024 groups, carries none
	if _, _, err := decodeMintRequest(p); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
	p = appendReqHeader2(t, reqHeader{RequestID: "r"})
	p = codec.AppendString(p, "ada@acme.com")
	p = codec.AppendUvarint(p, MaxGroups+1)
	if _, _, err := decodeMintRequest(p); !errors.Is(err, ErrFieldTooLong) {
		t.Fatalf("err = %v, want ErrFieldTooLong", err)
	}
	var s []byte
	s = codec.AppendVarint(s, 1)
	s = codec.AppendVarint(s, 1)
	s = codec.AppendUvarint(s, 1<<40)
	if _, err := decodeStatsResponse(s); err == nil {
		t.Fatal("huge term count accepted")
	}
	// A string length beyond its limit is refused even if bytes follow.
	p = appendReqHeader2(t, reqHeader{RequestID: "r"})
	p = codec.AppendString(p, strings.Repeat("t", MaxTokenBytes+1))
	if _, _, err := decodeCallRequest(p); !errors.Is(err, ErrFieldTooLong) {
		t.Fatalf("long token: err = %v, want ErrFieldTooLong", err)
	}
	// A bool byte other than 0 or 1 is malformed.
	if _, err := decodeCallResponse([]byte{2, 0}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bool 2: err = %v", err)
	}
	// A timeout beyond int64 is malformed.
	p = codec.AppendUvarint(nil, 1<<63)
	p = codec.AppendString(p, "r")
	if _, err := decodeEmptyRequest(p); !errors.Is(err, ErrMalformed) {
		t.Fatalf("huge timeout: err = %v", err)
	}
}

// TestCallRequestKeyCompatibility: the idempotency key is a field appended
// within version 1. A call without one encodes exactly as before the field
// existed (the golden call_request frame), an old payload decodes with no
// key, an over-long key on the wire is refused by name, and bytes that are
// not a string where the key would be are malformed.
func TestCallRequestKeyCompatibility(t *testing.T) {
	old := mustEncodeRequest(t, MsgCall, reqHeader{RequestID: "r"}, &CallRequest{Tool: "brain_write", Args: []byte(`{}`)})
	withKey := mustEncodeRequest(t, MsgCall, reqHeader{RequestID: "r"}, &CallRequest{Tool: "brain_write", Args: []byte(`{}`), IdempotencyKey: "k"})
	if !bytes.HasPrefix(withKey[HeaderSize:], old[HeaderSize:]) || len(withKey) != len(old)+2 {
		t.Fatalf("the key is not a plain appended field:\n%x\n%x", old, withKey)
	}
	if _, c, err := decodeCallRequest(old[HeaderSize:]); err != nil || c.IdempotencyKey != "" {
		t.Fatalf("old payload: key %q, err %v", c.IdempotencyKey, err)
	}
	p := bytes.Clone(old[HeaderSize:])
	p = codec.AppendString(p, strings.Repeat("k", MaxIdempotencyKeyBytes+1))
	if _, _, err := decodeCallRequest(p); !errors.Is(err, ErrFieldTooLong) {
		t.Fatalf("long key: err = %v, want ErrFieldTooLong", err)
	}
	p = append(bytes.Clone(old[HeaderSize:]), 0x05, 'a')
	if _, _, err := decodeCallRequest(p); !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated key: err = %v, want ErrMalformed", err)
	}
}

func appendReqHeader2(t *testing.T, h reqHeader) []byte {
	t.Helper()
	b, err := appendReqHeader(nil, h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMsgTypeString(t *testing.T) {
	if MsgCall.String() != "call" || MsgType(0x42).String() != "type_0x42" {
		t.Fatalf("got %q, %q", MsgCall.String(), MsgType(0x42).String())
	}
}

// tracedFrame is req's frame as a client sends it from within the span of
// testSpanContext: flag 0x02, the empty idempotency key, the trace trailer.
func tracedFrame(t *testing.T, req *CallRequest) []byte {
	t.Helper()
	c := &Client{max: DefaultMaxMessageBytes}
	f, err := c.encode(MsgCall, "r1", req, 2*time.Second, testSpanContext())
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(f.frame(2 * time.Second))
}

func appendReqHeader(b []byte, h reqHeader) ([]byte, error) {
	e := encoder{b: codec.AppendUvarint(b, uint64(max(h.Timeout, 0)))}
	e.String("request id", h.RequestID, MaxRequestIDBytes)
	return e.done()
}

// encodeRequest appends the frame of one request to dst.
func encodeRequest(dst []byte, t MsgType, h reqHeader, req any) ([]byte, error) {
	start := len(dst)
	b := beginFrame(dst, t)
	b, err := appendReqHeader(b, h)
	if err != nil {
		return dst, err
	}
	if b, err = appendRequestBody(b, t, req); err != nil {
		return dst, err
	}
	return finishFrame(b, start), nil
}
