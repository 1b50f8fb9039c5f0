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
func (e *encoder) query(q *search.Query) {
	e.String("query", q.Text, MaxQueryBytes)
	e.Strings("terms", "term", q.Terms, search.MaxQueryTerms, MaxTermBytes)
	e.b = codec.AppendUvarint(e.b, uint64(q.Tokens))
	e.String("hall", q.Hall, MaxWingBytes)
	e.String("scope", q.Scope, MaxWingBytes)
	e.b = codec.AppendUvarint(e.b, uint64(q.Limit))
}

func readQuery(d *codec.Decoder) search.Query {
	return search.Query{Text: d.String("query", MaxQueryBytes), Terms: readStrings(d, "terms", "term", search.MaxQueryTerms, MaxTermBytes),
		Tokens: int(min(d.Uvarint("tokens"), MaxQueryBytes)), Hall: d.String("hall", MaxWingBytes), Scope: d.String("scope", MaxWingBytes),
		Limit: int(min(d.Uvarint("limit"), MaxFetchIDs))}
}

func (r *RankRequest) appendBody(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.String("token", r.Token, MaxTokenBytes)
	e.query(&r.Query)
	e.b = codec.AppendUvarint(codec.AppendUvarint(e.b, r.Generation), uint64(max(r.Render, 0)))
	e.optionalStats(r.Stats)
	return e.done()
}

func decodeRankRequest(p []byte) (reqHeader, *RankRequest, error) {
	d := codec.NewDecoder(p)
	h := readReqHeader(d)
	r := &RankRequest{RequestID: h.RequestID, Token: d.String("token", MaxTokenBytes), RankRequest: search.RankRequest{Query: readQuery(d),
		Generation: d.Uvarint("generation"), Render: int(min(d.Uvarint("render"), MaxFetchIDs)), Stats: readOptionalStats(d)}}
	return h, r, decoded(d.Err())
}

func (*RankResponse) msgType() MsgType { return MsgRankResponse }

// Rank answer: generation, stale, refused (bytes), the optional fresh
// statistics, total, the ranked keys with their scores' bits, then the
// hits rendered ahead.
func (v *RankResponse) appendBody(b []byte) ([]byte, error) {
	e := encoder{b: codec.AppendBool(codec.AppendUvarint(b, v.Generation), v.Stale)}
	e.b = codec.AppendBytes(e.b, v.Refused)
	e.optionalStats(v.Stats)
	e.b = codec.AppendVarint(e.b, v.Total)
	e.Count("ranked", len(v.Ranked), MaxFetchIDs)
	for _, r := range v.Ranked {
		e.String("ranked key", r.Key, MaxFetchIDBytes)
		e.b = codec.AppendFloat64(e.b, r.Score)
	}
	e.hits(v.Hits)
	return e.done()
}

func decodeRankResponse(p []byte) (*RankResponse, error) {
	d := codec.NewDecoder(p)
	v := &RankResponse{search.RankResponse{Generation: d.Uvarint("generation"), Stale: d.Bool("stale"), Refused: d.Bytes("refused", MaxErrorMessageBytes*2)}}
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
