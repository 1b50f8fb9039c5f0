package proto

import (
	"sort"

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
	if err := checkLen("scope", len(s.Scope), MaxWingBytes); err != nil {
		return b, err
	}
	b, err := appendTerms(b, s.Terms)
	return codec.AppendString(b, s.Scope), err
}

func decodeStatsRequest(p []byte) (reqHeader, *StatsRequest, error) {
	d := codec.NewDecoder(p)
	h := readReqHeader(d)
	s := &StatsRequest{RequestID: h.RequestID}
	s.Terms = readTerms(d)
	s.Scope = d.String("scope", MaxWingBytes)
	return h, s, decoded(d.Err())
}

func (*StatsResponse) msgType() MsgType { return MsgStatsResponse }

func (v *StatsResponse) appendBody(b []byte) ([]byte, error) {
	b = codec.AppendUvarint(b, v.Generation)
	return appendStats(b, &v.Stats)
}

func decodeStatsResponse(p []byte) (*StatsResponse, error) {
	d := codec.NewDecoder(p)
	v := &StatsResponse{}
	v.Generation = d.Uvarint("generation")
	if st := readStats(d); st != nil {
		v.Stats = *st
	}
	return v, decoded(d.Err())
}

// Statistics: docs, total length (varints), then the terms in sorted order
// (deterministic bytes), each with its document frequency.
func appendStats(b []byte, s *search.Stats) ([]byte, error) {
	if err := checkCount("stats terms", len(s.DocFreq), MaxTerms); err != nil {
		return b, err
	}
	b = codec.AppendVarint(b, s.Docs)
	b = codec.AppendVarint(b, s.TotalLength)
	b = codec.AppendUvarint(b, uint64(len(s.DocFreq)))
	terms := make([]string, 0, len(s.DocFreq))
	for t := range s.DocFreq {
		if err := checkLen("stats term", len(t), MaxTermBytes); err != nil {
			return b, err
		}
		terms = append(terms, t)
	}
	sort.Strings(terms)
	for _, t := range terms {
		b = codec.AppendString(b, t)
		b = codec.AppendVarint(b, s.DocFreq[t])
	}
	return b, nil
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

// appendOptionalStats writes a presence byte, then the statistics.
func appendOptionalStats(b []byte, s *search.Stats) ([]byte, error) {
	b = codec.AppendBool(b, s != nil)
	if s == nil {
		return b, nil
	}
	return appendStats(b, s)
}

func readOptionalStats(d *codec.Decoder) *search.Stats {
	if !d.Bool("stats present") {
		return nil
	}
	return readStats(d)
}

func appendTerms(b []byte, terms []string) ([]byte, error) {
	if err := checkCount("terms", len(terms), search.MaxQueryTerms); err != nil {
		return b, err
	}
	b = codec.AppendUvarint(b, uint64(len(terms)))
	for _, t := range terms {
		if err := checkLen("term", len(t), MaxTermBytes); err != nil {
			return b, err
		}
		b = codec.AppendString(b, t)
	}
	return b, nil
}

func readTerms(d *codec.Decoder) []string {
	n := d.Count("terms", search.MaxQueryTerms)
	if n == 0 {
		return nil
	}
	terms := make([]string, 0, n)
	for range n {
		terms = append(terms, d.String("term", MaxTermBytes))
	}
	return terms
}
