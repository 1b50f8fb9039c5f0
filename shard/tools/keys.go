package tools

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/store"
)

// Idempotency keys (docs/tools.md, "Idempotency keys").
//
// A write tool called with a key runs at most once per (wing, caller, key).
// The call's arguments are fingerprinted (their decoded values, so spacing
// and key order do not matter) and the key is claimed in the wing's
// journal. Before the store makes its change durable, the change's mark and
// the answer it will have are recorded (fsynced); once the change is on
// disk the intent is committed. A retry with the same key and arguments
// gets the recorded answer, byte for byte; with other arguments, conflict.
// If the shard dies between the change and its commit, the intent is
// settled from the disk (did the file land?) when the shard starts, and a
// retry gets the answer the intent recorded, or runs again if it did not
// land. A write is therefore never applied twice, and an answer that was
// sent is always the one a retry gets.

// ErrInvalidIdempotencyKey reports a key that is empty, too long or uses a
// character outside A–Z a–z 0–9 . _ : - (answered invalid_argument).
var ErrInvalidIdempotencyKey = errors.New("tools: invalid idempotency key")

// ValidIdempotencyKey checks an idempotency key: 1 to 128 characters from
// A–Z a–z 0–9 . _ : -. Errors wrap ErrInvalidIdempotencyKey.
func ValidIdempotencyKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: it is empty", ErrInvalidIdempotencyKey)
	}
	if len(k) > brain.MaxIdempotencyKeyBytes {
		return fmt.Errorf("%w: it is %d characters, the limit is %d", ErrInvalidIdempotencyKey, len(k), brain.MaxIdempotencyKeyBytes)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fmt.Errorf("%w: character %q at %d is not one of A-Z a-z 0-9 . _ : -", ErrInvalidIdempotencyKey, c, i)
		}
	}
	return nil
}

func (s *Set) keyArg() toolspec.Arg {
	ttl := idempotency.DefaultTTL
	if s.journal != nil {
		ttl = s.journal.TTL()
	}
	return toolspec.Arg{Name: brain.IdempotencyKeyArg, Type: toolspec.String, Min: toolspec.Int(1), Max: toolspec.Int(brain.MaxIdempotencyKeyBytes), Pattern: "^[A-Za-z0-9._:-]+$",
		Desc: "Optional but recommended: a unique string you make up for this one write (a UUID is ideal; 1 to 128 letters, digits, " +
			"'.', '_', ':' and '-'). If the call fails with unavailable, timeout or outcome_unknown, or you are unsure it " +
			"went through, call again with the same arguments and the same key: the write happens at most once and you " +
			"get the first answer again. Reusing a key with different arguments is a conflict. Keys are remembered for " +
			fmt.Sprintf("%s per wing and caller.", humanDuration(ttl))}
}

func humanDuration(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0 && d >= 24*time.Hour:
		if d == 24*time.Hour {
			return "24 hours"
		}
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}

// pickKey returns the key of a call: the argument, or else the one the
// transport carried beside the arguments. Both given must be equal.
func pickKey(arg, transport string) (string, error) {
	for _, k := range []struct{ what, v string }{{"the idempotency_key argument", arg}, {"the request's idempotency key", transport}} {
		if k.v == "" {
			continue
		}
		if err := ValidIdempotencyKey(k.v); err != nil {
			return "", invalid("%s is not valid (%s): use 1 to %d characters from A-Z a-z 0-9 . _ : -, e.g. a UUID",
				k.what, strings.TrimPrefix(err.Error(), ErrInvalidIdempotencyKey.Error()+": "), brain.MaxIdempotencyKeyBytes)
		}
	}
	if arg != "" && transport != "" && arg != transport {
		return "", invalid("the idempotency_key argument %q differs from the key the request carries (%q); send one key", arg, transport)
	}
	return cmp.Or(arg, transport), nil
}

// fingerprint identifies a call's arguments by their decoded values.
func fingerprint(args any) ([32]byte, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return [32]byte{}, fmt.Errorf("tools: fingerprint the arguments: %w", err)
	}
	return sha256.Sum256(b), nil
}

// canonicalJSON re-encodes a JSON value with object keys sorted, so that
// two spellings of the same value fingerprint alike.
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Settle is the idempotency.Options.Settle of a journal whose intents a
// Set over st records: it decodes the mark and asks the store.
func Settle(st *store.Store) func(mark []byte) (bool, error) {
	return func(b []byte) (bool, error) {
		var m store.Mark
		if err := json.Unmarshal(b, &m); err != nil {
			return false, fmt.Errorf("tools: a journal mark is not readable: %w", err)
		}
		return st.Settle(m)
	}
}

// rawResult is an answer already encoded: a recorded one being answered
// again, or one just recorded.
type rawResult struct {
	b     []byte
	isErr bool
}

// incomplete is implemented by results that must not be recorded as a
// key's final answer (an ingest some pages of which failed: a retry with
// the key writes them).
type incomplete interface{ incomplete() bool }

// keyCall is the idempotency state of one call that carries a key. A nil
// *keyCall (no key) records nothing.
type keyCall struct {
	id     string // the key
	claim  *idempotency.Claim
	parts  map[int][]byte // parts committed by earlier calls with the key
	log    *slog.Logger
	test   func(stage string) // crash tests stop the process at a stage
	open   bool               // an intent is open: the store call it precedes has not been settled
	answer []byte             // the open intent's answer
	value  any                // the value the open intent's answer encodes
	whole  []byte             // a committed Whole intent's answer: the call's answer
}

// hook returns the store hook that records the intent of part before the
// change is made; build makes the answer the change has if it lands.
func (k *keyCall) hook(part int, build func(store.Intent) any) store.Hook {
	if k == nil {
		return nil
	}
	return func(in store.Intent) error {
		v := build(in)
		ans, err := brain.Marshal(v)
		if err != nil {
			return err
		}
		mark, err := json.Marshal(in.Mark)
		if err != nil {
			return err
		}
		// Open even if Intend fails: a record written but not synced must
		// be settled (it will be found not landed).
		k.open, k.answer, k.value = true, ans, v
		if err := k.claim.Intend(part, mark, ans); err != nil {
			return err
		}
		k.stage("intent recorded")
		return nil
	}
}

// settle finishes the store call an intent preceded, given its error: it
// commits the intent if the change landed (err nil, or Settle finds it on
// disk anyway) and returns the intent's value; otherwise it records the
// abort and returns err. With no open intent it passes err through.
func (k *keyCall) settle(part int, err error) (value any, landed bool, _ error) {
	if k == nil || !k.open {
		return nil, err == nil, err
	}
	k.open = false
	if err != nil {
		applied, serr := k.claim.Settle()
		if serr != nil {
			k.log.Error("tools: cannot tell whether a write landed", "err", serr, "write_err", err)
			return nil, false, brain.Errorf(brain.CodeInternal, "the write failed and the shard cannot read back whether it landed; "+
				"retry with the same idempotency_key once the shard is healthy: it will be applied at most once")
		}
		if !applied {
			return nil, false, err
		}
		k.log.Warn("tools: a write reported an error but landed; answering it as done", "err", err)
	} else {
		k.stage("change landed")
		if cerr := k.claim.Commit(); cerr != nil {
			// The intent is durable: the commit is settled from the disk later.
			k.log.Warn("tools: cannot record the commit of a write; it will be settled from the disk", "err", cerr)
		}
	}
	if part == idempotency.Whole {
		k.whole = k.answer
	}
	return k.value, true, nil
}

func (k *keyCall) stage(name string) {
	if k.test != nil {
		k.test(name)
	}
}

// key is the call's idempotency key ("" for none).
func (k *keyCall) key() string {
	if k == nil {
		return ""
	}
	return k.id
}

// prov is what history records of a tool's change: the tool, the reason,
// and the call's idempotency key (the argument's, else the transport's).
func (k *keyCall) prov(tool, reason string) store.Provenance {
	return store.Provenance{Tool: tool, Reason: reason, Key: k.key()}
}

// committed returns the answer of a part an earlier call with the key
// committed.
func (k *keyCall) committed(part int) ([]byte, bool) {
	if k == nil {
		return nil, false
	}
	b, ok := k.parts[part]
	return b, ok
}

// keyed runs a write tool's body (run) under the call's idempotency key,
// if it has one (ka's or the caller's transport key); args are
// fingerprinted once ka and wa, which are not part of what the call does,
// are cleared. See the comment at the top of this file.
func (s *Set) keyed(ctx context.Context, c Caller, tool string, ka *KeyArg, wa *WingArg, args any, run func(*keyCall) (any, error)) (any, error) {
	key, err := pickKey(ka.IdempotencyKey, c.IdempotencyKey)
	ka.IdempotencyKey, wa.Wing = "", ""
	if err != nil {
		return nil, err
	}
	if key == "" {
		return run(nil)
	}
	if s.journal == nil {
		return nil, brain.Errorf(brain.CodeInternal, "this shard was started without an idempotency journal, so it cannot honour idempotency_key; call without one or ask an operator")
	}
	fp, err := fingerprint(args)
	if err != nil {
		return nil, err
	}
	claim, ans, err := s.journal.Begin(ctx, c.Email, key, tool, fp)
	var ce *idempotency.ConflictError
	switch {
	case errors.As(err, &ce):
		what := "other arguments"
		if !ce.SameTool {
			what = ce.Tool
		}
		return nil, brain.Errorf(brain.CodeConflict, "idempotency_key %q was already used in wing %q, at %s, for %s: a key names one write. "+
			"Repeat that call's arguments exactly to get its answer, or use a new key for a new write",
			key, s.Wing(), ce.At.UTC().Format(time.RFC3339), what)
	case err != nil:
		return nil, err
	case ans != nil:
		return rawResult{ans.Bytes, ans.IsError}, nil
	}
	defer claim.Release()
	k := &keyCall{id: key, claim: claim, parts: claim.Parts(), log: s.log.With("tool", tool), test: s.testStage}
	v, err := run(k)
	_, _, err = k.settle(idempotency.Whole, err) // a one-change tool's intent
	if k.whole != nil {
		return rawResult{k.whole, false}, nil
	}
	if err != nil {
		code, _ := s.classify(tool, err)
		b := s.errorOf(tool, err)
		if code != brain.CodeInternal {
			// A refusal depends on the state the call met: record it, so a
			// retry gets the same answer even after the state changed.
			if ferr := claim.Finish(b, true); ferr != nil {
				k.log.Warn("tools: cannot record an answer", "err", ferr)
			}
		}
		return rawResult{b, true}, nil
	}
	if inc, ok := v.(incomplete); ok && inc.incomplete() {
		return v, nil
	}
	b, err := brain.Marshal(v)
	if err != nil {
		return nil, err
	}
	if ferr := claim.Finish(b, false); ferr != nil {
		k.log.Warn("tools: cannot record an answer", "err", ferr)
	}
	return rawResult{b, false}, nil
}
