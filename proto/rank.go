package proto

import (
	"github.com/brainstem/brainstem/internal/codec"
	"github.com/brainstem/brainstem/search"
)

// RankRequest asks a shard, for the holder of Token (who must read the
// wing), to rank its notes for a query with the global statistics: the
// second step of a cross-wing search (search.RankRequest).
type RankRequest struct {
	RequestID string
	Token     string
	search.RankRequest
}

// RankResponse is a shard's ranking, or Stale with its fresh statistics,
// or Refused with a tool error (search.RankResponse).
type RankResponse struct {
	search.RankResponse
}

// Query: text, terms, the searchable words counted, hall, scope, limit.
func appendQuery(b []byte, q *search.Query) ([]byte, error) {
	if err := checkLen("query", len(q.Text), MaxQueryBytes); err != nil {
		return b, err
	}
	if err := checkLen("hall", len(q.Hall), MaxWingBytes); err != nil {
		return b, err
	}
	if err := checkLen("scope", len(q.Scope), MaxWingBytes); err != nil {
		return b, err
	}
	b = codec.AppendString(b, q.Text)
	b, err := appendTerms(b, q.Terms)
	if err != nil {
		return b, err
	}
	b = codec.AppendUvarint(b, uint64(q.Tokens))
	b = codec.AppendString(b, q.Hall)
	b = codec.AppendString(b, q.Scope)
	return codec.AppendUvarint(b, uint64(q.Limit)), nil
}

func readQuery(d *codec.Decoder) search.Query {
	q := search.Query{Text: d.String("query", MaxQueryBytes)}
	q.Terms = readTerms(d)
	q.Tokens = int(min(d.Uvarint("tokens"), MaxQueryBytes))
	q.Hall = d.String("hall", MaxWingBytes)
	q.Scope = d.String("scope", MaxWingBytes)
	q.Limit = int(min(d.Uvarint("limit"), MaxFetchIDs))
	return q
}

func (r *RankRequest) appendBody(b []byte) ([]byte, error) {
	if err := checkLen("token", len(r.Token), MaxTokenBytes); err != nil {
		return b, err
	}
	b = codec.AppendString(b, r.Token)
	b, err := appendQuery(b, &r.Query)
	if err != nil {
		return b, err
	}
	b = codec.AppendUvarint(b, r.Generation)
	b = codec.AppendUvarint(b, uint64(max(r.Render, 0)))
	return appendOptionalStats(b, r.Stats)
}

func decodeRankRequest(p []byte) (reqHeader, *RankRequest, error) {
	d := codec.NewDecoder(p)
	h := readReqHeader(d)
	r := &RankRequest{RequestID: h.RequestID, Token: d.String("token", MaxTokenBytes)}
	r.Query = readQuery(d)
	r.Generation = d.Uvarint("generation")
	r.Render = int(min(d.Uvarint("render"), MaxFetchIDs))
	r.Stats = readOptionalStats(d)
	return h, r, decoded(d.Err())
}

func (*RankResponse) msgType() MsgType { return MsgRankResponse }

// Rank answer: generation, stale, refused (bytes), the optional fresh
// statistics, total, the ranked keys with their scores' bits, then the
// hits rendered ahead.
func (v *RankResponse) appendBody(b []byte) ([]byte, error) {
	if err := checkCount("ranked", len(v.Ranked), MaxFetchIDs); err != nil {
		return b, err
	}
	if err := checkCount("hits", len(v.Hits), MaxFetchIDs); err != nil {
		return b, err
	}
	b = codec.AppendUvarint(b, v.Generation)
	b = codec.AppendBool(b, v.Stale)
	b = codec.AppendBytes(b, v.Refused)
	b, err := appendOptionalStats(b, v.Stats)
	if err != nil {
		return b, err
	}
	b = codec.AppendVarint(b, v.Total)
	b = codec.AppendUvarint(b, uint64(len(v.Ranked)))
	for _, r := range v.Ranked {
		if err := checkLen("ranked key", len(r.Key), MaxFetchIDBytes); err != nil {
			return b, err
		}
		b = codec.AppendString(b, r.Key)
		b = codec.AppendFloat64(b, r.Score)
	}
	return appendHits(b, v.Hits), nil
}

func decodeRankResponse(p []byte) (*RankResponse, error) {
	d := codec.NewDecoder(p)
	v := &RankResponse{}
	v.Generation = d.Uvarint("generation")
	v.Stale = d.Bool("stale")
	v.Refused = d.Bytes("refused", MaxErrorMessageBytes*2)
	if len(v.Refused) == 0 {
		v.Refused = nil
	}
	v.Stats = readOptionalStats(d)
	v.Total = d.Varint("total")
	if n := d.Count("ranked", MaxFetchIDs); n > 0 {
		v.Ranked = make([]search.Ranked, 0, n)
		for range n {
			v.Ranked = append(v.Ranked, search.Ranked{Key: d.String("ranked key", MaxFetchIDBytes), Score: d.Float64("score")})
		}
	}
	v.Hits = readHits(d, len(p))
	return v, decoded(d.Err())
}
