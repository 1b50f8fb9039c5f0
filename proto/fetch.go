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
	if err := checkLen("token", len(r.Token), MaxTokenBytes); err != nil {
		return b, err
	}
	if err := checkCount("fetch keys", len(r.Keys), MaxFetchIDs); err != nil {
		return b, err
	}
	b = codec.AppendString(b, r.Token)
	b, err := appendQuery(b, &r.Query)
	if err != nil {
		return b, err
	}
	b = codec.AppendUvarint(b, uint64(len(r.Keys)))
	for _, k := range r.Keys {
		if err := checkLen("fetch key", len(k), MaxFetchIDBytes); err != nil {
			return b, err
		}
		b = codec.AppendString(b, k)
	}
	return appendOptionalStats(b, r.Stats)
}

func decodeFetchRequest(p []byte) (reqHeader, *FetchRequest, error) {
	d := codec.NewDecoder(p)
	h := readReqHeader(d)
	r := &FetchRequest{RequestID: h.RequestID, Token: d.String("token", MaxTokenBytes)}
	r.Query = readQuery(d)
	if n := d.Count("fetch keys", MaxFetchIDs); n > 0 {
		r.Keys = make([]string, 0, n)
		for range n {
			r.Keys = append(r.Keys, d.String("fetch key", MaxFetchIDBytes))
		}
	}
	r.Stats = readOptionalStats(d)
	return h, r, decoded(d.Err())
}

func (*FetchResponse) msgType() MsgType { return MsgFetchResponse }

func (v *FetchResponse) appendBody(b []byte) ([]byte, error) {
	if err := checkCount("hits", len(v.Hits), MaxFetchIDs); err != nil {
		return b, err
	}
	return appendHits(b, v.Hits), nil
}

func appendHits(b []byte, hits [][]byte) []byte {
	b = codec.AppendUvarint(b, uint64(len(hits)))
	for _, h := range hits {
		b = codec.AppendBytes(b, h)
	}
	return b
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
	v := &FetchResponse{}
	v.Hits = readHits(d, len(p))
	return v, decoded(d.Err())
}
