package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/brainstem/brainstem/brain"
)

// Frame layout (see docs/protocol.md):
//
//	offset size field
//	0      1    magic   0xB5
//	1      1    version 1
//	2      1    type    message type
//	3      1    flags   0 in version 1; receivers ignore unknown bits
//	4      4    length  payload length, big-endian u32
//	8      n    payload
const (
	frameMagic   byte = 0xB5
	Version      byte = 1 // the protocol version this package speaks
	HeaderSize        = 8 // bytes of the fixed frame header
	maxFrameSize      = math.MaxUint32
)

// DefaultMaxMessageBytes is the default limit on a frame's payload, both
// directions, both sides.
const DefaultMaxMessageBytes = 16 << 20

// Field limits. A request or response whose field exceeds its limit is
// refused when encoding (ErrFieldTooLong, nothing is sent) and when
// decoding (CodeBadRequest on the server).
const (
	MaxRequestIDBytes    = 128
	MaxTokenBytes        = 8 << 10
	MaxToolNameBytes     = 128
	MaxEmailBytes        = 320
	MaxGroups            = 1024
	MaxGroupBytes        = 512
	MaxCaps              = 16
	MaxCapBytes          = 64
	MaxQueryBytes        = 64 << 10
	MaxTerms             = 1 << 16
	MaxTermBytes         = 1 << 10
	MaxWingBytes         = 128
	MaxVersionBytes      = 128
	MaxErrorMessageBytes = 8 << 10
	// MaxIdempotencyKeyBytes bounds CallRequest.IdempotencyKey.
	MaxIdempotencyKeyBytes = brain.MaxIdempotencyKeyBytes
	// MaxFetchIDs and MaxFetchIDBytes bound CallRequest.Fetch.
	MaxFetchIDs     = 1024
	MaxFetchIDBytes = 1 << 10
)

// Frame flags.
const (
	// flagRefused, on an error frame, says the server refused the request
	// without processing it (it is draining): retrying elsewhere is safe.
	flagRefused byte = 0x01
)

// MsgType is a frame's message type.
type MsgType byte

// Message types. A response type is its request type | 0x80.
const (
	MsgListTools MsgType = 0x01
	MsgCall      MsgType = 0x02
	MsgMint      MsgType = 0x03
	MsgStats     MsgType = 0x04
	MsgHealth    MsgType = 0x05

	respBit MsgType = 0x80

	MsgListToolsResponse = MsgListTools | respBit
	MsgCallResponse      = MsgCall | respBit
	MsgMintResponse      = MsgMint | respBit
	MsgStatsResponse     = MsgStats | respBit
	MsgHealthResponse    = MsgHealth | respBit

	// MsgGoAway is sent by a draining server on a unidirectional stream:
	// open no new streams on this connection; close it when idle.
	MsgGoAway MsgType = 0x7E
	// MsgError answers any request with {Code, Message}.
	MsgError MsgType = 0xFF
)

var msgNames = map[MsgType]string{
	MsgListTools: "list_tools", MsgCall: "call", MsgMint: "mint", MsgStats: "stats", MsgHealth: "health",
	MsgListToolsResponse: "list_tools_response", MsgCallResponse: "call_response", MsgMintResponse: "mint_response",
	MsgStatsResponse: "stats_response", MsgHealthResponse: "health_response", MsgGoAway: "goaway", MsgError: "error",
}

func (t MsgType) String() string {
	if n, ok := msgNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type_0x%02x", byte(t))
}

// Decoding and encoding errors.
var (
	// ErrMalformed is returned for bytes that are not a valid frame or payload.
	ErrMalformed = errors.New("proto: malformed message")
	// ErrFieldTooLong is returned for a field over its limit (MaxTokenBytes, …).
	ErrFieldTooLong = errors.New("proto: field too long")
	// ErrVersion is returned for a frame of another protocol version.
	ErrVersion = errors.New("proto: unsupported protocol version")
)

// header is a decoded frame header.
type header struct {
	version byte
	typ     MsgType
	flags   byte
	length  uint32
}

// decodeHeader parses the fixed frame header. A wrong magic is ErrMalformed;
// a version other than Version is ErrVersion (the rest is still returned).
func decodeHeader(b []byte) (header, error) {
	if len(b) < HeaderSize {
		return header{}, fmt.Errorf("%w: header of %d bytes, want %d", ErrMalformed, len(b), HeaderSize)
	}
	if b[0] != frameMagic {
		return header{}, fmt.Errorf("%w: bad magic 0x%02x (not a brainstem/1 frame)", ErrMalformed, b[0])
	}
	h := header{version: b[1], typ: MsgType(b[2]), flags: b[3], length: binary.BigEndian.Uint32(b[4:8])}
	if h.version != Version {
		return h, fmt.Errorf("%w: got %d, this peer speaks %d", ErrVersion, h.version, Version)
	}
	return h, nil
}

// beginFrame appends a header with a zero length to dst; finishFrame patches it.
func beginFrame(dst []byte, t MsgType) []byte {
	return append(dst, frameMagic, Version, byte(t), 0, 0, 0, 0, 0)
}

// finishFrame sets the payload length of the frame that starts at dst[start:].
func finishFrame(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start+4:start+8], uint32(len(dst)-start-HeaderSize))
	return dst
}

// readFrame reads one frame header from r and, if its length is within max,
// the payload. An over-limit length returns the header and ErrTooLarge
// without reading the payload.
func readFrame(r io.Reader, max int) (header, []byte, error) {
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: truncated header", ErrMalformed)
		}
		return header{}, nil, err
	}
	h, err := decodeHeader(hb[:])
	if err != nil {
		return h, nil, err
	}
	if int64(h.length) > int64(max) {
		return h, nil, fmt.Errorf("%w: %s of %d bytes, limit %d", ErrTooLarge, h.typ, h.length, max)
	}
	p := make([]byte, h.length)
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: payload truncated (want %d bytes)", ErrMalformed, h.length)
		}
		return h, nil, err
	}
	return h, p, nil
}

// ---- primitive encoding ----
//
// uvarint / varint: encoding/binary varints. str / bytes: uvarint length then
// the bytes. bool: one byte 0 or 1. time: varint unix nanoseconds, 0 = zero
// time.

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
func appendVarint(b []byte, v int64) []byte   { return binary.AppendVarint(b, v) }

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return appendVarint(b, 0)
	}
	return appendVarint(b, t.UnixNano())
}

func checkLen(field string, n, limit int) error {
	if n > limit {
		return fmt.Errorf("%w: %s is %d bytes, limit %d", ErrFieldTooLong, field, n, limit)
	}
	return nil
}

func checkCount(field string, n, limit int) error {
	if n > limit {
		return fmt.Errorf("%w: %s has %d entries, limit %d", ErrFieldTooLong, field, n, limit)
	}
	return nil
}

// reader decodes primitives from a payload. The first error sticks; later
// reads return zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (r *reader) uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("%s: bad varint", field)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint(field string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("%s: bad varint", field)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes returns a sub-slice of the payload (no copy) of at most limit bytes.
func (r *reader) bytes(field string, limit int) []byte {
	n := r.uvarint(field)
	if r.err != nil {
		return nil
	}
	if n > uint64(limit) {
		r.err = fmt.Errorf("%w: %s is %d bytes, limit %d", ErrFieldTooLong, field, n, limit)
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail("%s: length %d exceeds the %d bytes left", field, n, len(r.b))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) str(field string, limit int) string {
	return string(r.bytes(field, limit))
}

func (r *reader) boolean(field string) bool {
	if r.err != nil {
		return false
	}
	if len(r.b) == 0 {
		r.fail("%s: missing", field)
		return false
	}
	v := r.b[0]
	r.b = r.b[1:]
	if v > 1 {
		r.fail("%s: bool byte %d", field, v)
	}
	return v == 1
}

func (r *reader) time(field string) time.Time {
	v := r.varint(field)
	if r.err != nil || v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}

// count reads a uvarint element count bounded by limit and by the bytes left
// (every element takes at least one byte), so a hostile count cannot make
// the decoder allocate.
func (r *reader) count(field string, limit int) int {
	n := r.uvarint(field)
	if r.err != nil {
		return 0
	}
	if n > uint64(limit) {
		r.err = fmt.Errorf("%w: %s has %d entries, limit %d", ErrFieldTooLong, field, n, limit)
		return 0
	}
	if n > uint64(len(r.b)) {
		r.fail("%s: %d entries cannot fit in %d bytes", field, n, len(r.b))
		return 0
	}
	return int(n)
}

// ---- request envelope ----

// reqHeader starts every request payload: the caller's remaining time budget
// and the request id.
type reqHeader struct {
	Timeout   time.Duration // 0: no deadline
	RequestID string
}

func appendReqHeader(b []byte, h reqHeader) ([]byte, error) {
	if err := checkLen("request id", len(h.RequestID), MaxRequestIDBytes); err != nil {
		return b, err
	}
	t := h.Timeout
	if t < 0 {
		t = 0
	}
	b = appendUvarint(b, uint64(t))
	return appendStr(b, h.RequestID), nil
}

func (r *reader) reqHeader() reqHeader {
	t := r.uvarint("timeout")
	if t > math.MaxInt64 {
		r.fail("timeout out of range")
	}
	return reqHeader{Timeout: time.Duration(t), RequestID: r.str("request id", MaxRequestIDBytes)}
}

// ---- messages ----

func appendCorpusStats(b []byte, s *CorpusStats) ([]byte, error) {
	if err := checkCount("stats terms", len(s.DocFreq), MaxTerms); err != nil {
		return b, err
	}
	b = appendVarint(b, s.Docs)
	b = appendVarint(b, s.TotalLength)
	b = appendUvarint(b, uint64(len(s.DocFreq)))
	terms := make([]string, 0, len(s.DocFreq))
	for t := range s.DocFreq {
		if err := checkLen("stats term", len(t), MaxTermBytes); err != nil {
			return b, err
		}
		terms = append(terms, t)
	}
	sort.Strings(terms) // deterministic bytes
	for _, t := range terms {
		b = appendStr(b, t)
		b = appendVarint(b, s.DocFreq[t])
	}
	return b, nil
}

func (r *reader) corpusStats() *CorpusStats {
	s := &CorpusStats{Docs: r.varint("docs"), TotalLength: r.varint("total length")}
	n := r.count("stats terms", MaxTerms)
	if r.err != nil {
		return s
	}
	s.DocFreq = make(map[string]int64, n)
	for range n {
		t := r.str("stats term", MaxTermBytes)
		f := r.varint("doc freq")
		if r.err != nil {
			return s
		}
		s.DocFreq[t] = f
	}
	return s
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

// requestPrefixRoom is the room to leave in front of a request body for
// prefixRequest: the frame header and the longest request header for a
// request id of idLen bytes.
func requestPrefixRoom(idLen int) int {
	return HeaderSize + 2*binary.MaxVarintLen64 + idLen
}

// prefixRequest writes the frame header and the request header h right in
// front of the request body that starts at b[body:] (appended by
// appendRequestBody after at least requestPrefixRoom(len(h.RequestID))
// bytes) and returns the whole frame, a suffix of b: the same bytes
// encodeRequest produces. A client writes it again, cheaply, each time it
// sends the request, with the time left then; the body is encoded once.
// The request id must be within MaxRequestIDBytes (checked by the caller).
func prefixRequest(b []byte, body int, t MsgType, h reqHeader) []byte {
	var hdr [2 * binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(max(h.Timeout, 0)))
	n += binary.PutUvarint(hdr[n:], uint64(len(h.RequestID)))
	start := body - len(h.RequestID) - n - HeaderSize
	copy(b[start+HeaderSize:], hdr[:n])
	copy(b[start+HeaderSize+n:], h.RequestID)
	b[start], b[start+1], b[start+2], b[start+3] = frameMagic, Version, byte(t), 0
	return finishFrame(b, start)[start:]
}

// appendRequestBody appends the fields of a request that follow its
// request header.
func appendRequestBody(b []byte, t MsgType, req any) ([]byte, error) {
	switch t {
	case MsgListTools, MsgHealth:
		return b, nil
	case MsgCall:
		return appendCallRequest(b, req.(*CallRequest))
	case MsgMint:
		return appendMintRequest(b, req.(*MintRequest))
	case MsgStats:
		s := req.(*StatsRequest)
		if err := checkLen("query", len(s.Query), MaxQueryBytes); err != nil {
			return b, err
		}
		return appendStr(b, s.Query), nil
	}
	return b, fmt.Errorf("proto: cannot encode request type %s", t)
}

func appendCallRequest(b []byte, c *CallRequest) ([]byte, error) {
	if err := checkLen("token", len(c.Token), MaxTokenBytes); err != nil {
		return b, err
	}
	if err := checkLen("tool name", len(c.Tool), MaxToolNameBytes); err != nil {
		return b, err
	}
	if err := checkLen("idempotency key", len(c.IdempotencyKey), MaxIdempotencyKeyBytes); err != nil {
		return b, err
	}
	b = appendStr(b, c.Token)
	b = appendStr(b, c.Tool)
	b = appendBytes(b, c.Args)
	b = appendBool(b, c.Stats != nil)
	if c.Stats != nil {
		var err error
		if b, err = appendCorpusStats(b, c.Stats); err != nil {
			return b, err
		}
	}
	// Optional fields appended after version 1's first release, in this
	// order: the idempotency key, then rank and fetch. Each is sent only
	// when it or a later one is set (the key as "" when only rank or
	// fetch is), so a plain call keeps its original bytes and an older
	// shard, which ignores trailing fields, still reads the rest.
	rankOrFetch := c.Rank || len(c.Fetch) > 0
	if c.IdempotencyKey != "" || rankOrFetch {
		b = appendStr(b, c.IdempotencyKey)
	}
	if !rankOrFetch {
		return b, nil
	}
	if err := checkCount("fetch ids", len(c.Fetch), MaxFetchIDs); err != nil {
		return b, err
	}
	b = appendBool(b, c.Rank)
	b = appendUvarint(b, uint64(len(c.Fetch)))
	for _, id := range c.Fetch {
		if err := checkLen("fetch id", len(id), MaxFetchIDBytes); err != nil {
			return b, err
		}
		b = appendStr(b, id)
	}
	return b, nil
}

func appendMintRequest(b []byte, m *MintRequest) ([]byte, error) {
	if err := checkLen("email", len(m.Email), MaxEmailBytes); err != nil {
		return b, err
	}
	if err := checkCount("groups", len(m.Groups), MaxGroups); err != nil {
		return b, err
	}
	b = appendStr(b, m.Email)
	b = appendUvarint(b, uint64(len(m.Groups)))
	for _, g := range m.Groups {
		if err := checkLen("group", len(g), MaxGroupBytes); err != nil {
			return b, err
		}
		b = appendStr(b, g)
	}
	return appendTime(b, m.NotAfter), nil
}

// decodeCallRequest decodes a Call payload. Args aliases p.
func decodeCallRequest(p []byte) (reqHeader, *CallRequest, error) {
	r := reader{b: p}
	h := r.reqHeader()
	c := &CallRequest{RequestID: h.RequestID}
	c.Token = r.str("token", MaxTokenBytes)
	c.Tool = r.str("tool name", MaxToolNameBytes)
	c.Args = r.bytes("args", len(p))
	if r.boolean("stats present") {
		c.Stats = r.corpusStats()
	}
	if r.err == nil && len(r.b) > 0 { // optional: absent in older peers' payloads
		c.IdempotencyKey = r.str("idempotency key", MaxIdempotencyKeyBytes)
	}
	if r.err == nil && len(r.b) > 0 { // rank and fetch, when sent
		c.Rank = r.boolean("rank")
		if n := r.count("fetch ids", MaxFetchIDs); n > 0 {
			c.Fetch = make([]string, 0, n)
			for range n {
				c.Fetch = append(c.Fetch, r.str("fetch id", MaxFetchIDBytes))
			}
		}
	}
	return h, c, r.err
}

func decodeMintRequest(p []byte) (reqHeader, *MintRequest, error) {
	r := reader{b: p}
	h := r.reqHeader()
	m := &MintRequest{RequestID: h.RequestID}
	m.Email = r.str("email", MaxEmailBytes)
	n := r.count("groups", MaxGroups)
	if n > 0 {
		m.Groups = make([]string, 0, n)
		for range n {
			m.Groups = append(m.Groups, r.str("group", MaxGroupBytes))
		}
	}
	m.NotAfter = r.time("not after")
	return h, m, r.err
}

func decodeStatsRequest(p []byte) (reqHeader, *StatsRequest, error) {
	r := reader{b: p}
	h := r.reqHeader()
	s := &StatsRequest{RequestID: h.RequestID, Query: r.str("query", MaxQueryBytes)}
	return h, s, r.err
}

// decodeEmptyRequest decodes the payload of ListTools and Health.
func decodeEmptyRequest(p []byte) (reqHeader, error) {
	r := reader{b: p}
	h := r.reqHeader()
	return h, r.err
}

// encodeResponse appends the response frame for resp (one of the response
// types) to dst.
func encodeResponse(dst []byte, resp any) ([]byte, error) {
	start := len(dst)
	var b []byte
	var err error
	switch v := resp.(type) {
	case *ListToolsResponse:
		b = beginFrame(dst, MsgListToolsResponse)
		b = appendBytes(b, v.Tools)
	case *CallResponse:
		b = beginFrame(dst, MsgCallResponse)
		b = appendBool(b, v.IsError)
		b = appendBytes(b, v.Result)
	case *MintResponse:
		if err := checkLen("token", len(v.Token), MaxTokenBytes); err != nil {
			return dst, err
		}
		if err := checkCount("caps", len(v.Caps), MaxCaps); err != nil {
			return dst, err
		}
		b = beginFrame(dst, MsgMintResponse)
		b = appendStr(b, v.Token)
		b = appendUvarint(b, uint64(len(v.Caps)))
		for _, c := range v.Caps {
			if err := checkLen("cap", len(c), MaxCapBytes); err != nil {
				return dst, err
			}
			b = appendStr(b, c)
		}
		b = appendTime(b, v.Expiry)
	case *CorpusStats:
		b = beginFrame(dst, MsgStatsResponse)
		if b, err = appendCorpusStats(b, v); err != nil {
			return dst, err
		}
	case *HealthResponse:
		if err := checkLen("wing", len(v.Wing), MaxWingBytes); err != nil {
			return dst, err
		}
		if err := checkLen("version", len(v.Version), MaxVersionBytes); err != nil {
			return dst, err
		}
		b = beginFrame(dst, MsgHealthResponse)
		b = appendStr(b, v.Wing)
		b = appendBool(b, v.Ready)
		b = appendVarint(b, v.Notes)
		b = appendStr(b, v.Version)
	case *Error:
		b = beginFrame(dst, MsgError)
		msg := v.Message
		if len(msg) > MaxErrorMessageBytes {
			msg = msg[:MaxErrorMessageBytes]
		}
		b = binary.BigEndian.AppendUint16(b, uint16(v.Code))
		b = appendStr(b, msg)
	default:
		return dst, fmt.Errorf("proto: cannot encode response %T", resp)
	}
	return finishFrame(b, start), nil
}

func decodeListToolsResponse(p []byte) (*ListToolsResponse, error) {
	r := reader{b: p}
	v := &ListToolsResponse{Tools: r.bytes("tools", len(p))}
	return v, r.err
}

func decodeCallResponse(p []byte) (*CallResponse, error) {
	r := reader{b: p}
	v := &CallResponse{IsError: r.boolean("is error")}
	v.Result = r.bytes("result", len(p))
	return v, r.err
}

func decodeMintResponse(p []byte) (*MintResponse, error) {
	r := reader{b: p}
	v := &MintResponse{Token: r.str("token", MaxTokenBytes)}
	n := r.count("caps", MaxCaps)
	if n > 0 {
		v.Caps = make([]string, 0, n)
		for range n {
			v.Caps = append(v.Caps, r.str("cap", MaxCapBytes))
		}
	}
	v.Expiry = r.time("expiry")
	return v, r.err
}

func decodeStatsResponse(p []byte) (*CorpusStats, error) {
	r := reader{b: p}
	v := r.corpusStats()
	return v, r.err
}

func decodeHealthResponse(p []byte) (*HealthResponse, error) {
	r := reader{b: p}
	v := &HealthResponse{Wing: r.str("wing", MaxWingBytes)}
	v.Ready = r.boolean("ready")
	v.Notes = r.varint("notes")
	v.Version = r.str("version", MaxVersionBytes)
	return v, r.err
}

func decodeError(p []byte) (*Error, error) {
	if len(p) < 2 {
		return nil, fmt.Errorf("%w: error frame of %d bytes", ErrMalformed, len(p))
	}
	r := reader{b: p[2:]}
	e := &Error{Code: Code(binary.BigEndian.Uint16(p)), Message: r.str("error message", MaxErrorMessageBytes)}
	return e, r.err
}
