package gateway

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/surfaces"
)

// auditRecord is one tool call (or a surface's request), written as one
// JSON line: what the call recorded (its outcome is also ok, tool_error or
// partial; its Args are written only with audit.log_arguments), and what
// the gateway adds.
type auditRecord struct {
	surfaces.Record
	Time      time.Time
	RequestID string
	Email     string
	Missing   []string // cross-wing search: the wings left out of the answer
	Latency   time.Duration
}

// AuditLine is the JSON shape of one audit line (documented in
// docs/operating.md). Arguments is present only with audit.log_arguments.
type AuditLine struct {
	Time      time.Time `json:"time"`
	RequestID string    `json:"request_id"`
	Email     string    `json:"email"`
	Wing      string    `json:"wing"`
	Tool      string    `json:"tool"`
	Outcome   string    `json:"outcome"`
	// MissingWings lists, for a cross-wing search, the wings whose
	// results are missing from the answer (outcome "partial", or an error
	// when none answered).
	MissingWings []string `json:"missing_wings,omitempty"`
	// DurationSeconds is the call's latency through the gateway, in
	// seconds as the metrics are.
	DurationSeconds float64         `json:"duration_seconds"`
	BytesIn         int             `json:"bytes_in"`
	BytesOut        int             `json:"bytes_out"`
	Arguments       json.RawMessage `json:"arguments,omitempty"`
}

// auditLog writes one line per tool call; lines never interleave.
type auditLog struct {
	mu      sync.Mutex
	w       io.Writer
	logArgs bool
	onError func(error)
}

func (a *auditLog) write(r *auditRecord) {
	line := AuditLine{
		Time:            r.Time.UTC(),
		RequestID:       r.RequestID,
		Email:           r.Email,
		Wing:            r.Wing,
		Tool:            r.Tool,
		Outcome:         r.Outcome,
		MissingWings:    r.Missing,
		DurationSeconds: r.Latency.Seconds(),
		BytesIn:         r.BytesIn,
		BytesOut:        r.BytesOut,
	}
	if a.logArgs && json.Valid(r.Args) {
		line.Arguments = r.Args
	}
	b, err := brain.Marshal(line)
	if err != nil {
		a.onError(err)
		return
	}
	b = append(b, '\n')
	a.mu.Lock()
	_, err = a.w.Write(b)
	a.mu.Unlock()
	if err != nil {
		a.onError(err)
	}
}
