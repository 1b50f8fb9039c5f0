package proto

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/brainstem/brainstem/search"
)

// Every decoder is fuzzed: it must never panic, never allocate beyond its
// input's claims, and whatever it accepts must re-encode to a payload that
// decodes to the same value (the round-trip property).

func seedRequests(f *testing.F, typ MsgType, reqs ...any) {
	h := reqHeader{Timeout: time.Second, RequestID: "seed"}
	for _, r := range reqs {
		b, err := encodeRequest(nil, typ, h, r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[HeaderSize:])
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
}

func seedResponses(f *testing.F, resps ...any) {
	for _, r := range resps {
		b, err := encodeResponse(nil, r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[HeaderSize:])
	}
	f.Add([]byte{})
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80})
}

// reencodeRequest encodes a decoded request again and returns its payload.
func reencodeRequest(t *testing.T, typ MsgType, h reqHeader, req any) []byte {
	t.Helper()
	b, err := encodeRequest(nil, typ, h, req)
	if err != nil {
		t.Fatalf("decoded value does not re-encode: %v (%#v)", err, req)
	}
	return b[HeaderSize:]
}

func FuzzDecodeHeader(f *testing.F) {
	f.Add(beginFrame(nil, MsgCall))
	f.Add([]byte{frameMagic, 2, 1, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeader(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrVersion) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		again := beginFrame(nil, h.typ)
		again[3] = h.flags
		if !bytes.Equal(again[:4], b[:4]) {
			t.Fatalf("header %+v does not re-encode to %x", h, b[:4])
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	b, _ := encodeResponse(nil, &CallResponse{Result: []byte("hello")})
	f.Add(b, 64)
	f.Add(b, 2)
	f.Add([]byte{frameMagic, 1, 2, 0, 0xff, 0xff, 0xff, 0xff}, 1<<20)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		if max < 0 {
			max = -max
		}
		max %= 1 << 20
		h, p, err := readFrame(bytes.NewReader(b), max)
		if err != nil {
			return
		}
		if len(p) != int(h.length) || len(p) > max {
			t.Fatalf("payload %d bytes, header says %d, max %d", len(p), h.length, max)
		}
	})
}

func FuzzDecodeCallRequest(f *testing.F) {
	seedRequests(f, MsgCall,
		&CallRequest{Token: "tok", Tool: "brain_get", Args: []byte(`{"id":"a"}`)},
		&CallRequest{Token: "tok", Tool: "brain_write", Args: []byte(`{"title":"a"}`), IdempotencyKey: "gw-5f1c0e9a"},
		&CallRequest{Tool: "brain_ingest_raw", Args: []byte(`{}`), IdempotencyKey: "import-2026-11-30"})
	f.Fuzz(func(t *testing.T, p []byte) {
		h, req, err := decodeCallRequest(p)
		if err != nil {
			return
		}
		h2, req2, err := decodeCallRequest(reencodeRequest(t, MsgCall, h, req))
		if err != nil || h2 != h || !reflect.DeepEqual(req2, req) {
			t.Fatalf("round trip: %v\n%#v\n%#v", err, req, req2)
		}
	})
}

func FuzzDecodeMintRequest(f *testing.F) {
	seedRequests(f, MsgMint,
		&MintRequest{Email: "ada@acme.com", Groups: []string{"eng"}, NotAfter: sampleTime},
		&MintRequest{Email: "x"})
	f.Fuzz(func(t *testing.T, p []byte) {
		h, req, err := decodeMintRequest(p)
		if err != nil {
			return
		}
		h2, req2, err := decodeMintRequest(reencodeRequest(t, MsgMint, h, req))
		if err != nil || h2 != h || !reflect.DeepEqual(req2, req) {
			t.Fatalf("round trip: %v\n%#v\n%#v", err, req, req2)
		}
	})
}

func FuzzDecodeRankRequest(f *testing.F) {
	seedRequests(f, MsgRank,
		&RankRequest{Token: "tok", RankRequest: search.RankRequest{Query: sampleQuery, Stats: sampleStats, Generation: 9}},
		&RankRequest{RankRequest: search.RankRequest{Query: search.Query{Text: "x"}}})
	f.Fuzz(func(t *testing.T, p []byte) {
		h, req, err := decodeRankRequest(p)
		if err != nil {
			return
		}
		h2, req2, err := decodeRankRequest(reencodeRequest(t, MsgRank, h, req))
		if err != nil || h2 != h || !reflect.DeepEqual(req2, req) {
			t.Fatalf("round trip: %v\n%#v\n%#v", err, req, req2)
		}
	})
}

func FuzzDecodeFetchRequest(f *testing.F) {
	seedRequests(f, MsgFetch,
		&FetchRequest{Token: "tok", FetchRequest: search.FetchRequest{Query: sampleQuery, Keys: []string{"w/facts/a"}, Stats: sampleStats}})
	f.Fuzz(func(t *testing.T, p []byte) {
		h, req, err := decodeFetchRequest(p)
		if err != nil {
			return
		}
		h2, req2, err := decodeFetchRequest(reencodeRequest(t, MsgFetch, h, req))
		if err != nil || h2 != h || !reflect.DeepEqual(req2, req) {
			t.Fatalf("round trip: %v\n%#v\n%#v", err, req, req2)
		}
	})
}

func FuzzDecodeStatsRequest(f *testing.F) {
	seedRequests(f, MsgStats, &StatsRequest{StatsRequest: search.StatsRequest{Terms: []string{"idempotency", "keys"}}})
	f.Fuzz(func(t *testing.T, p []byte) {
		h, req, err := decodeStatsRequest(p)
		if err != nil {
			return
		}
		h2, req2, err := decodeStatsRequest(reencodeRequest(t, MsgStats, h, req))
		if err != nil || h2 != h || !reflect.DeepEqual(req2, req) {
			t.Fatalf("round trip: %v\n%#v\n%#v", err, req, req2)
		}
	})
}

func FuzzDecodeEmptyRequest(f *testing.F) {
	seedRequests(f, MsgHealth, nil)
	f.Fuzz(func(t *testing.T, p []byte) {
		h, err := decodeEmptyRequest(p)
		if err != nil {
			return
		}
		h2, err := decodeEmptyRequest(reencodeRequest(t, MsgHealth, h, nil))
		if err != nil || h2 != h {
			t.Fatalf("round trip: %v %+v %+v", err, h, h2)
		}
	})
}

// fuzzResponse checks the round-trip property of one response decoder.
func fuzzResponse[T any](f *testing.F, decode func([]byte) (*T, error), seeds ...any) {
	seedResponses(f, seeds...)
	f.Fuzz(func(t *testing.T, p []byte) {
		v, err := decode(p)
		if err != nil {
			return
		}
		b, err := encodeResponse(nil, v)
		if err != nil {
			t.Fatalf("decoded value does not re-encode: %v (%#v)", err, v)
		}
		v2, err := decode(b[HeaderSize:])
		if err != nil {
			t.Fatalf("round trip: %v (%#v)", err, v)
		}
		if reflect.DeepEqual(v, v2) {
			return
		}
		// A NaN (a score) is never DeepEqual to itself: then the two
		// values must encode to the same bytes, bit for bit.
		if b2, err := encodeResponse(nil, v2); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("round trip: %v\n%#v\n%#v", err, v, v2)
		}
	})
}

func FuzzDecodeListToolsResponse(f *testing.F) {
	fuzzResponse(f, decodeListToolsResponse, &ListToolsResponse{Tools: []byte(`[{"name":"brain_get"}]`), Prompts: []byte(`[{"name":"review_inbox"}]`)})
}

func FuzzDecodeCallResponse(f *testing.F) {
	fuzzResponse(f, decodeCallResponse, &CallResponse{Result: []byte(`{"ok":true}`), IsError: true})
}

func FuzzDecodeMintResponse(f *testing.F) {
	fuzzResponse(f, decodeMintResponse, &MintResponse{Token: "tok", Caps: []string{"read"}, Expiry: sampleTime})
}

func FuzzDecodeStatsResponse(f *testing.F) {
	fuzzResponse(f, decodeStatsResponse, &StatsResponse{search.StatsResponse{Stats: *sampleStats, Generation: 3}})
}

func FuzzDecodeRankResponse(f *testing.F) {
	fuzzResponse(f, decodeRankResponse, &RankResponse{search.RankResponse{Generation: 3, Total: 2, Stats: sampleStats, Ranked: []search.Ranked{{Key: "w/facts/a", Score: 1}}}})
}

func FuzzDecodeFetchResponse(f *testing.F) {
	fuzzResponse(f, decodeFetchResponse, &FetchResponse{search.FetchResponse{Hits: [][]byte{[]byte(`{"id":"a"}`)}}})
}

func FuzzDecodeHealthResponse(f *testing.F) {
	fuzzResponse(f, decodeHealthResponse, &HealthResponse{Wing: "payments", Ready: true, Notes: 12, Version: "v1"})
}

func FuzzDecodeError(f *testing.F) {
	fuzzResponse(f, decodeError, &Error{Code: CodeForbidden, Message: "nope"})
}
