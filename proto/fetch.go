package proto

import (
	"github.com/brainstem/brainstem/internal/codec"
	"github.com/brainstem/brainstem/search"
)

// FetchRequest asks a shard, for the holder of Token, to render the hits
// of some keys for a query: the last step of a cross-wing search
// (search.FetchRequest).
type FetchRequest struct {
	RequestID string
	Token     string
	search.FetchRequest
}

// FetchResponse holds the rendered hits, each one's bytes as the shard
// produced them (search.FetchResponse).
type FetchResponse struct {
	search.FetchResponse
}

func (r *FetchRequest) appendBody(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.String("token", r.Token, MaxTokenBytes)
	e.query(&r.Query)
	e.Strings("fetch keys", "fetch key", r.Keys, MaxFetchIDs, MaxFetchIDBytes)
	e.optionalStats(r.Stats)
	return e.done()
}

func decodeFetchRequest(p []byte) (reqHeader, *FetchRequest, error) {
	d := codec.NewDecoder(p)
	h := readReqHeader(d)
	r := &FetchRequest{RequestID: h.RequestID, Token: d.String("token", MaxTokenBytes), FetchRequest: search.FetchRequest{Query: readQuery(d),
		Keys: readStrings(d, "fetch keys", "fetch key", MaxFetchIDs, MaxFetchIDBytes), Stats: readOptionalStats(d)}}
	return h, r, decoded(d.Err())
}

func (*FetchResponse) msgType() MsgType { return MsgFetchResponse }

func (v *FetchResponse) appendBody(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.hits(v.Hits)
	return e.done()
}

func (e *encoder) hits(hits [][]byte) {
	e.Count("hits", len(hits), MaxFetchIDs)
	for _, h := range hits {
		e.b = codec.AppendBytes(e.b, h)
	}
}

// readHits reads rendered hits; they alias the payload (of size max).
func readHits(d *codec.Decoder, max int) [][]byte {
	n := d.Count("hits", MaxFetchIDs)
	if n == 0 {
		return nil
	}
	hits := make([][]byte, 0, n)
	for range n {
		hits = append(hits, d.Bytes("hit", max))
	}
	return hits
}

// decodeFetchResponse decodes a Fetch answer; the hits alias p.
func decodeFetchResponse(p []byte) (*FetchResponse, error) {
	d := codec.NewDecoder(p)
	v := &FetchResponse{search.FetchResponse{Hits: readHits(d, len(p))}}
	return v, decoded(d.Err())
}
