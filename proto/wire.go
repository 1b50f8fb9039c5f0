package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/codec"
)

// Frame layout (see docs/protocol.md):
//
//	offset size field
//	0      1    magic   0xB5
//	1      1    version 1
//	2      1    type    message type
//	3      1    flags   0x01 refused (error frames), 0x02 trace trailer
//	                    (requests, trace.go); receivers ignore unknown bits
//	4      4    length  payload length, big-endian u32
//	8      n    payload
const (
	frameMagic byte = 0xB5
	Version    byte = 1 // the protocol version this package speaks
	HeaderSize      = 8 // bytes of the fixed frame header
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
	MsgRank      MsgType = 0x06
	MsgFetch     MsgType = 0x07

	respBit MsgType = 0x80

	MsgListToolsResponse = MsgListTools | respBit
	MsgCallResponse      = MsgCall | respBit
	MsgMintResponse      = MsgMint | respBit
	MsgStatsResponse     = MsgStats | respBit
	MsgHealthResponse    = MsgHealth | respBit
	MsgRankResponse      = MsgRank | respBit
	MsgFetchResponse     = MsgFetch | respBit

	// MsgGoAway is sent by a draining server on a unidirectional stream:
	// open no new streams on this connection; close it when idle.
	MsgGoAway MsgType = 0x7E
	// MsgError answers any request with {Code, Message}.
	MsgError MsgType = 0xFF
)

var msgNames = map[MsgType]string{
	MsgListTools: "list_tools", MsgCall: "call", MsgMint: "mint", MsgStats: "stats", MsgHealth: "health", MsgRank: "rank", MsgFetch: "fetch",
	MsgListToolsResponse: "list_tools_response", MsgCallResponse: "call_response", MsgMintResponse: "mint_response",
	MsgStatsResponse: "stats_response", MsgHealthResponse: "health_response", MsgRankResponse: "rank_response",
	MsgFetchResponse: "fetch_response", MsgGoAway: "goaway", MsgError: "error",
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
	return readFrameAlloc(r, max, func(n uint32) ([]byte, error) { return make([]byte, n), nil })
}

// readFrameAlloc is readFrame with the payload read into alloc's buffer
// (its error ends the read).
func readFrameAlloc(r io.Reader, max int, alloc func(n uint32) ([]byte, error)) (header, []byte, error) {
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
	p, err := alloc(h.length)
	if err != nil {
		return h, nil, err
	}
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: payload truncated (want %d bytes)", ErrMalformed, h.length)
		}
		return h, nil, err
	}
	return h, p, nil
}

// ---- primitive encoding (internal/codec) ----
//
// varint/uvarint: encoding/binary, always minimal. str/bytes: uvarint length
// then the bytes. bool: one byte 0 or 1. time: varint unix nanoseconds, 0 =
// zero time. float64: eight little-endian bytes of the IEEE 754 bits.

func checkLen(field string, n, limit int) error {
	if n > limit {
		return fmt.Errorf("%w: %s is %d bytes, limit %d", ErrFieldTooLong, field, n, limit)
	}
	return nil
}

// encoder appends a payload's fields, checking each against the limit its
// decoder applies (codec.Decoder's String and Count). The first field over
// its limit is the error; the payload is then discarded.
type encoder struct {
	b   []byte
	err error
}

func (e *encoder) done() ([]byte, error) { return e.b, e.err }

// String appends s, at most limit bytes.
func (e *encoder) String(field, s string, limit int) {
	if e.err == nil {
		e.err = checkLen(field, len(s), limit)
	}
	e.b = codec.AppendString(e.b, s)
}

// Count appends n, a number of entries, at most limit.
func (e *encoder) Count(field string, n, limit int) {
	if e.err == nil && n > limit {
		e.err = fmt.Errorf("%w: %s has %d entries, limit %d", ErrFieldTooLong, field, n, limit)
	}
	e.b = codec.AppendUvarint(e.b, uint64(n))
}

// Strings appends a list: its count, at most maxCount, then each string
// (item), at most maxBytes; readStrings reads it.
func (e *encoder) Strings(field, item string, ss []string, maxCount, maxBytes int) {
	e.Count(field, len(ss), maxCount)
	for _, s := range ss {
		e.String(item, s, maxBytes)
	}
}

// readStrings reads what encoder.Strings wrote (nil for none).
func readStrings(d *codec.Decoder, field, item string, maxCount, maxBytes int) []string {
	n := d.Count(field, maxCount)
	if n == 0 {
		return nil
	}
	ss := make([]string, 0, n)
	for range n {
		ss = append(ss, d.String(item, maxBytes))
	}
	return ss
}

// decoded maps a payload decoder's error to the package's: a field over
// its limit is ErrFieldTooLong, anything else ErrMalformed.
func decoded(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, codec.ErrTooLong):
		return fmt.Errorf("%w: %w", ErrFieldTooLong, err)
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}

// ---- request envelope ----

// reqHeader starts every request payload: the caller's remaining time budget
// and the request id.
type reqHeader struct {
	Timeout   time.Duration // 0: no deadline
	RequestID string
}

func readReqHeader(d *codec.Decoder) reqHeader {
	t := d.Uvarint("timeout")
	if t > math.MaxInt64 {
		d.Fail("timeout out of range")
	}
	return reqHeader{Timeout: time.Duration(t), RequestID: d.String("request id", MaxRequestIDBytes)}
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
// bytes) and returns the whole frame, a suffix of b: the same bytes as
// the tests' reference encoder, encodeRequest. A client writes it again,
// cheaply, each time it sends the request, with the time left then; the
// body is encoded once.
// The request id must be within MaxRequestIDBytes (checked by the caller).
func prefixRequest(b []byte, body int, t MsgType, flags byte, h reqHeader) []byte {
	var hdr [2 * binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(max(h.Timeout, 0)))
	n += binary.PutUvarint(hdr[n:], uint64(len(h.RequestID)))
	start := body - len(h.RequestID) - n - HeaderSize
	copy(b[start+HeaderSize:], hdr[:n])
	copy(b[start+HeaderSize+n:], h.RequestID)
	b[start], b[start+1], b[start+2], b[start+3] = frameMagic, Version, byte(t), flags
	return finishFrame(b, start)[start:]
}

// requestBody is a request message: it appends the fields that follow its
// request header. Each message's file has its encoding and decoding.
type requestBody interface {
	appendBody(b []byte) ([]byte, error)
}

// appendRequestBody appends the fields of a request that follow its
// request header (none for ListTools and Health, whose req is nil).
func appendRequestBody(b []byte, t MsgType, req any) ([]byte, error) {
	if req == nil && (t == MsgListTools || t == MsgHealth) {
		return b, nil
	}
	if rb, ok := req.(requestBody); ok {
		return rb.appendBody(b)
	}
	return b, fmt.Errorf("proto: cannot encode request type %s (%T)", t, req)
}

// decodeEmptyRequest decodes the payload of ListTools and Health.
func decodeEmptyRequest(p []byte) (reqHeader, error) {
	d := codec.NewDecoder(p)
	h := readReqHeader(d)
	return h, decoded(d.Err())
}

// responseBody is a response message: its frame type and fields.
type responseBody interface {
	msgType() MsgType
	appendBody(b []byte) ([]byte, error)
}

// encodeResponse appends the response frame for resp (one of the response
// types) to dst.
func encodeResponse(dst []byte, resp any) ([]byte, error) {
	rb, ok := resp.(responseBody)
	if !ok {
		return dst, fmt.Errorf("proto: cannot encode response %T", resp)
	}
	start := len(dst)
	b, err := rb.appendBody(beginFrame(dst, rb.msgType()))
	if err != nil {
		return dst, err
	}
	return finishFrame(b, start), nil
}
