package proto

import (
	"maps"
	"slices"

	"github.com/brainstem/brainstem/internal/codec"
	"github.com/brainstem/brainstem/search"
)

// StatsRequest asks a shard for its statistics of a query's terms (the
// first step of a cross-wing search, search.StatsRequest). Only gateways
// ask; the answer names no note.
type StatsRequest struct {
	RequestID string
	search.StatsRequest
}

// StatsResponse is a shard's statistics and the index generation they are
// of (search.StatsResponse).
type StatsResponse struct {
	search.StatsResponse
}

func (s *StatsRequest) appendBody(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.Strings("terms", "term", s.Terms, search.MaxQueryTerms, MaxTermBytes)
	e.String("scope", s.Scope, MaxWingBytes)
	return e.done()
}

func decodeStatsRequest(p []byte) (reqHeader, *StatsRequest, error) {
	d := codec.NewDecoder(p)
	h := readReqHeader(d)
	s := &StatsRequest{RequestID: h.RequestID, StatsRequest: search.StatsRequest{
		Terms: readStrings(d, "terms", "term", search.MaxQueryTerms, MaxTermBytes), Scope: d.String("scope", MaxWingBytes)}}
	return h, s, decoded(d.Err())
}

func (*StatsResponse) msgType() MsgType { return MsgStatsResponse }

func (v *StatsResponse) appendBody(b []byte) ([]byte, error) {
	e := encoder{b: codec.AppendUvarint(b, v.Generation)}
	e.stats(&v.Stats)
	return e.done()
}

func decodeStatsResponse(p []byte) (*StatsResponse, error) {
	d := codec.NewDecoder(p)
	v := &StatsResponse{search.StatsResponse{Generation: d.Uvarint("generation")}}
	if st := readStats(d); st != nil {
		v.Stats = *st
	}
	return v, decoded(d.Err())
}

// Statistics: docs, total length (varints), then the terms in sorted order
// (deterministic bytes), each with its document frequency.
func (e *encoder) stats(s *search.Stats) {
	e.b = codec.AppendVarint(codec.AppendVarint(e.b, s.Docs), s.TotalLength)
	e.Count("stats terms", len(s.DocFreq), MaxTerms)
	terms := slices.AppendSeq(make([]string, 0, len(s.DocFreq)), maps.Keys(s.DocFreq))
	slices.Sort(terms)
	for _, t := range terms {
		e.String("stats term", t, MaxTermBytes)
		e.b = codec.AppendVarint(e.b, s.DocFreq[t])
	}
}

func readStats(d *codec.Decoder) *search.Stats {
	s := &search.Stats{Docs: d.Varint("docs"), TotalLength: d.Varint("total length")}
	n := d.Count("stats terms", MaxTerms)
	if d.Err() != nil {
		return nil
	}
	s.DocFreq = make(map[string]int64, n)
	for range n {
		t := d.String("stats term", MaxTermBytes)
		f := d.Varint("doc freq")
		if d.Err() != nil {
			return nil
		}
		s.DocFreq[t] = f
	}
	return s
}

// optionalStats writes a presence byte, then the statistics.
func (e *encoder) optionalStats(s *search.Stats) {
	if e.b = codec.AppendBool(e.b, s != nil); s != nil {
		e.stats(s)
	}
}

func readOptionalStats(d *codec.Decoder) *search.Stats {
	if !d.Bool("stats present") {
		return nil
	}
	return readStats(d)
}
