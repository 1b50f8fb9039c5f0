package proto

import (
	"encoding/json"
	"time"
)

// ALPN is the TLS application protocol of brainstem/1.
const ALPN = "brainstem/1"

// CallRequest asks a shard to run one tool for the holder of Token.
type CallRequest struct {
	RequestID string
	Token     string // a shard token minted by this shard; never an SSO token
	Tool      string
	Args      []byte       // the tool arguments exactly as the client sent them (JSON object)
	Stats     *CorpusStats // optional global corpus statistics for cross-wing search scoring
	// IdempotencyKey, when set, makes a write tool run at most once per
	// (wing, caller, key): a shard that already answered a call with this
	// key and the same arguments answers the first result again, and with
	// other arguments a conflict (docs/tools.md). The gateway sets it on
	// every write and curate call, so its own retries never apply a write
	// twice. At most MaxIdempotencyKeyBytes; the shard checks the charset.
	IdempotencyKey string
	// Rank and Fetch split a cross-wing search into two steps, so that no
	// wing renders hits the merge throws away (see docs/protocol.md). Rank
	// asks for the ranked ids and scores only; Fetch asks for the rendered
	// hits of these ids only. A shard that does not know them ignores them
	// and answers the whole call.
	Rank  bool
	Fetch []string
}

// CallResponse is a tool's result, exactly as the shard produced it.
type CallResponse struct {
	Result  []byte // the text content the agent receives, unchanged
	IsError bool   // the result is a tool error ({"error":{"code","message"}})
}

// MintRequest asks a shard for a token for a verified identity. Only gateways
// (proven by their mTLS client certificate) may send it.
type MintRequest struct {
	RequestID string
	Email     string
	Groups    []string
	NotAfter  time.Time // the SSO token's expiry; the shard token never outlives it
}

// MintResponse is a minted shard token. A caller the wing policy does not
// admit at all gets an *Error with CodeForbidden instead.
type MintResponse struct {
	Token  string
	Caps   []string // "read", "write", "curate"
	Expiry time.Time
}

// StatsRequest asks for the corpus statistics of the terms of Query, as the
// shard tokenizes it.
type StatsRequest struct {
	RequestID string
	Query     string
}

// CorpusStats are BM25 corpus statistics. Summed over wings they give the
// global statistics with which every wing scores a cross-wing query, so that
// merged scores equal those of one index over the union of the wings.
type CorpusStats struct {
	Docs        int64            // number of documents
	TotalLength int64            // sum of document lengths (in weighted tokens)
	DocFreq     map[string]int64 // documents containing each term
}

// HealthResponse reports a shard's state.
type HealthResponse struct {
	Wing    string
	Ready   bool
	Notes   int64
	Version string
}

// ListToolsResponse carries the shard's tool descriptors: a JSON array of MCP
// tool objects ({"name","description","inputSchema"}), passed on unparsed.
type ListToolsResponse struct {
	Tools json.RawMessage
}
