package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
)

// Tool names the gateway treats specially.
const (
	queryToolName = "brain_query"
	wingsToolName = "brain_wings"
)

// defaultQueryLimit is brain_query's limit when the caller gives none.
const defaultQueryLimit = 10

// maxQueryLimit bounds the merged hit list.
const maxQueryLimit = 1000

// unavailableWing reports a wing left out of a cross-wing answer.
type unavailableWing struct {
	Wing  string `json:"wing"`
	Code  string `json:"code"`
	Error string `json:"error"`
}

// parseQueryArgs reads brain_query's query and limit from its arguments.
func parseQueryArgs(args []byte) (query string, limit int, err error) {
	a, err := parseArgs(args)
	if err != nil {
		return "", 0, err
	}
	return a.queryLimit()
}

// queryLimit reads brain_query's query and limit (defaultQueryLimit when
// absent).
func (a *callArgs) queryLimit() (query string, limit int, err error) {
	if a.query == nil || string(a.query) == "null" {
		return "", 0, newError(CodeInvalidArgument, ErrInvalidArgument, "brain_query needs a \"query\" string")
	}
	if query, _, err = a.str("query", a.query); err != nil {
		return "", 0, newError(CodeInvalidArgument, ErrInvalidArgument, "brain_query needs a \"query\" string")
	}
	limit = defaultQueryLimit
	if a.limit != nil && string(a.limit) != "null" {
		var f float64
		if err := json.Unmarshal(a.limit, &f); err != nil || f != float64(int(f)) || f < 1 || f > maxQueryLimit {
			return "", 0, newError(CodeInvalidArgument, ErrInvalidArgument, "\"limit\" must be an integer from 1 to %d", maxQueryLimit)
		}
		limit = int(f)
	}
	return query, limit, nil
}

// shardHits is a shard's brain_query result; each hit is kept as raw bytes.
type shardHits struct {
	Hits  []json.RawMessage `json:"hits"`
	Total int64             `json:"total"`
}

// rankedHits is a shard's answer to the rank step. A shard that does not
// know the step (an older version) answers the whole query instead, with
// "hits" and no "ranked".
type rankedHits struct {
	Ranked *[]hitKey         `json:"ranked"`
	Hits   []json.RawMessage `json:"hits"`
	Total  int64             `json:"total"`
}

// hitKey is what merging reads from each hit.
type hitKey struct {
	Score float64 `json:"score"`
	ID    string  `json:"id"`
}

type mergedHit struct {
	key  hitKey
	raw  json.RawMessage // the shard's bytes; nil until fetched
	wing int             // index into the readable wings
}

// fanoutQuery runs brain_query over every wing the caller may read, in
// three steps of one round trip each, every wing in parallel:
//
//  1. stats: the caller's capabilities in each wing (minting if needed)
//     and, where they may read, its corpus statistics for the query,
//     summed into global statistics;
//  2. rank: each wing's best ids and scores under the global statistics
//     (so that scores are comparable), and its number of matching notes,
//     from its index alone;
//  3. fetch: after merging by score (desc) and id (asc) and cutting to the
//     limit, each wing that holds some of the final hits renders those
//     hits, and only those (a wing that holds none is not asked).
//
// The hits are returned in merged order, each one's bytes as its shard
// produced them. total is the sum of the wings' numbers of matching notes.
// A failing wing is listed under "unavailable" (only to a caller holding a
// grant there) and never fails the query. The whole search is bounded by
// limits.fanout_timeout (step 1 by half of it): a wing that has not
// answered by then is listed under "unavailable" with the others' results,
// and the audit outcome is "partial".
func (g *Gateway) fanoutQuery(ctx context.Context, ci *callInfo, args []byte, a *callArgs, rec *auditRecord) *mcp.CallToolResult {
	query, limit, err := a.queryLimit()
	if err != nil {
		return g.fail(rec, classify(err, ""))
	}
	bound := min(g.cfg.Limits.FanoutTimeout, g.cfg.Shards.CallTimeout)
	fctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	p1ctx, cancel1 := context.WithTimeout(fctx, bound/2)
	defer cancel1()
	late := func(w *wing, err error) *Error {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return newError(CodeTimeout, ErrTimeout, "wing %q did not answer within limits.fanout_timeout (%s); the results leave it out", w.name, bound)
		}
		return classifyShard(err, w)
	}
	// Step 1, per wing and concurrently (a stuck wing does not spend the
	// others' time): the caller's capabilities there (minting if needed),
	// then, where they may read, the corpus statistics of the query.
	n := len(g.wings)
	canRead := make([]bool, n)
	allStats := make([]*proto.CorpusStats, n)
	allErrs := make([]error, n)
	var failed []unavailableWing
	eg := errgroup.Group{}
	eg.SetLimit(g.cfg.Limits.FanoutConcurrency)
	for i, w := range g.wings {
		eg.Go(func() error {
			gr, _, err := g.sessions.get(p1ctx, ci.id, w, ci.requestID)
			if err != nil {
				allErrs[i] = err
				return nil
			}
			if canRead[i] = gr.caps.Has(auth.CapRead); !canRead[i] {
				return nil
			}
			st, err := w.client.Stats(p1ctx, &proto.StatsRequest{RequestID: ci.requestID, Query: query})
			if err != nil {
				allErrs[i] = err
				return nil
			}
			w.markReached()
			allStats[i] = st
			return nil
		})
	}
	_ = eg.Wait()
	var (
		readable []*wing
		stats    []*proto.CorpusStats
		errs     []error
		hidden   int // wings that failed for a caller holding no grant there: not named
	)
	for i, w := range g.wings {
		switch {
		case canRead[i]:
			readable = append(readable, w)
			stats = append(stats, allStats[i])
			var e error
			if allErrs[i] != nil {
				e = late(w, allErrs[i])
			}
			errs = append(errs, e)
		case g.disclosable(ci, w, allErrs[i]):
			if e := late(w, allErrs[i]); e.Code != CodeForbidden {
				failed = append(failed, unavailableWing{Wing: w.name, Code: e.Code, Error: e.Message})
			}
		case allErrs[i] != nil && !errors.Is(allErrs[i], errNotAdmitted):
			hidden++
		}
	}
	if len(readable) == 0 {
		rec.Missing = wingNames(failed)
		switch {
		case len(failed) > 0:
			return g.fail(rec, newError(CodeUnavailable, ErrUnavailable, "no wing you can read is reachable right now: %s", joinFailures(failed)))
		case hidden > 0:
			// Some wing could not be asked whether the caller may read it;
			// it is not named (least disclosure).
			return g.fail(rec, newError(CodeUnavailable, ErrUnavailable, "no wing you can read answered; retry shortly"))
		}
		return g.fail(rec, newError(CodeForbidden, ErrForbidden, "you cannot read any wing; ask a wing's curators for access"))
	}
	global := &proto.CorpusStats{DocFreq: map[string]int64{}}
	for _, st := range stats {
		if st == nil {
			continue
		}
		global.Docs += st.Docs
		global.TotalLength += st.TotalLength
		for term, n := range st.DocFreq {
			global.DocFreq[term] += n
		}
	}

	// Step 2: rank, scored with the global statistics.
	results := make([]*proto.CallResponse, len(readable))
	g.eachWing(readable, errs, func(i int, w *wing) {
		var err error
		results[i], err = g.callWing(fctx, ci, w, &proto.CallRequest{RequestID: ci.requestID, Tool: queryToolName, Args: args, Stats: global, Rank: true})
		if err != nil {
			errs[i] = late(w, err)
		}
	})

	var (
		hits       []mergedHit
		totals     = make([]int64, len(readable))
		answered   = make([]bool, len(readable))
		firstError *proto.CallResponse
	)
	for i, w := range readable {
		if errors.Is(errs[i], errWingHidden) {
			continue // the caller lost its grant meanwhile: not named
		}
		if errs[i] != nil {
			e := classify(errs[i], w.name)
			failed = append(failed, unavailableWing{Wing: w.name, Code: e.Code, Error: e.Message})
			continue
		}
		resp := results[i]
		if resp.IsError {
			if firstError == nil {
				firstError = resp
			}
			code, msg := parseToolError(resp.Result)
			failed = append(failed, unavailableWing{Wing: w.name, Code: code, Error: msg})
			continue
		}
		part, total, err := parseRanked(resp.Result, i)
		if err != nil {
			failed = append(failed, unavailableWing{Wing: w.name, Code: CodeInternal, Error: err.Error()})
			continue
		}
		hits = append(hits, part...)
		totals[i], answered[i] = total, true
	}
	if firstError != nil && !slices.Contains(answered, true) {
		// Every wing refused the same arguments: pass the first refusal on
		// unchanged, as a wing-scoped call would.
		rec.Outcome = "tool_error"
		return shardResult(firstError)
	}
	if !slices.Contains(answered, true) {
		rec.Missing = wingNames(failed)
		if len(failed) == 0 { // every wing was lost meanwhile, none may be named
			return g.fail(rec, newError(CodeUnavailable, ErrUnavailable, "no wing you can read answered; retry shortly"))
		}
		return g.fail(rec, newError(CodeUnavailable, ErrUnavailable, "no wing answered: %s", joinFailures(failed)))
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].key.Score != hits[j].key.Score {
			return hits[i].key.Score > hits[j].key.Score
		}
		return hits[i].key.ID < hits[j].key.ID
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}

	// Step 3: fetch the final hits from the wings that hold them.
	fetch := make([][]string, len(readable))
	for _, h := range hits {
		if h.raw == nil {
			fetch[h.wing] = append(fetch[h.wing], h.key.ID)
		}
	}
	fetched := make([]map[string]json.RawMessage, len(readable))
	ferrs := make([]error, len(readable))
	for i := range readable {
		if len(fetch[i]) == 0 {
			ferrs[i] = errSkip
		}
	}
	g.eachWing(readable, ferrs, func(i int, w *wing) {
		resp, err := g.callWing(fctx, ci, w, &proto.CallRequest{RequestID: ci.requestID, Tool: queryToolName, Args: args, Stats: global, Fetch: fetch[i]})
		switch {
		case err != nil:
			ferrs[i] = late(w, err)
		case resp.IsError:
			code, msg := parseToolError(resp.Result)
			ferrs[i] = newError(code, ErrShardAnswer, "%s", msg)
		default:
			fetched[i], ferrs[i] = parseFetched(resp.Result)
		}
	})
	for i, w := range readable {
		if ferrs[i] == nil || ferrs[i] == errSkip {
			continue
		}
		if errors.Is(ferrs[i], errWingHidden) {
			answered[i], totals[i] = false, 0
			continue
		}
		e := classify(ferrs[i], w.name)
		failed = append(failed, unavailableWing{Wing: w.name, Code: e.Code, Error: e.Message})
		answered[i], totals[i] = false, 0
	}
	final := hits[:0]
	for _, h := range hits {
		switch {
		case !answered[h.wing]:
		case h.raw != nil:
			final = append(final, h)
		default:
			if raw, ok := fetched[h.wing][h.key.ID]; ok { // absent: the note changed or went in between
				h.raw = raw
				final = append(final, h)
			}
		}
	}
	var total int64
	var names []string
	for i, w := range readable {
		if answered[i] {
			total += totals[i]
			names = append(names, w.name)
		}
	}
	rec.Missing = wingNames(failed)
	rec.Outcome = "ok"
	if len(failed) > 0 {
		rec.Outcome = outcomePartial
	}
	return mcp.NewToolResultText(string(encodeMerged(final, total, names, failed)))
}

// outcomePartial is the audit outcome of a cross-wing search that left
// wings out (listed in the audit line's missing_wings).
const outcomePartial = "partial"

// joinFailures is every failure's message, for an error that names them all.
func joinFailures(ws []unavailableWing) string {
	msgs := make([]string, len(ws))
	for i, w := range ws {
		msgs[i] = w.Error
	}
	return strings.Join(msgs, "; ")
}

func wingNames(ws []unavailableWing) []string {
	if len(ws) == 0 {
		return nil
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Wing
	}
	return out
}

// errSkip marks a wing a step does not ask.
var errSkip = errors.New("gateway: wing not asked")

// eachWing runs fn for every wing whose errs entry is nil, at most
// limits.fanout_concurrency at a time.
func (g *Gateway) eachWing(wings []*wing, errs []error, fn func(i int, w *wing)) {
	eg := errgroup.Group{}
	eg.SetLimit(g.cfg.Limits.FanoutConcurrency)
	for i, w := range wings {
		if errs[i] != nil {
			continue
		}
		eg.Go(func() error {
			fn(i, w)
			return nil
		})
	}
	_ = eg.Wait()
}

// parseRanked reads a wing's answer to the rank step: ids and scores to
// fetch later, or, from a shard that answered the whole query, hits whose
// bytes are already final.
func parseRanked(result []byte, wing int) ([]mergedHit, int64, error) {
	var rh rankedHits
	if err := json.Unmarshal(result, &rh); err != nil {
		return nil, 0, errors.New("the wing answered a result that is not a brain_query result")
	}
	if rh.Ranked != nil {
		part := make([]mergedHit, 0, len(*rh.Ranked))
		for _, k := range *rh.Ranked {
			part = append(part, mergedHit{key: k, wing: wing})
		}
		return part, rh.Total, nil
	}
	part := make([]mergedHit, 0, len(rh.Hits))
	for _, h := range rh.Hits {
		var k hitKey
		if err := json.Unmarshal(h, &k); err != nil {
			return nil, 0, errors.New("the wing answered hits without a numeric score and string id")
		}
		part = append(part, mergedHit{key: k, raw: h, wing: wing})
	}
	return part, rh.Total, nil
}

// parseFetched reads a wing's answer to the fetch step: its hits by id.
func parseFetched(result []byte) (map[string]json.RawMessage, error) {
	var sh shardHits
	if err := json.Unmarshal(result, &sh); err != nil {
		return nil, newError(CodeInternal, ErrShardAnswer, "the wing answered a fetch that is not a list of hits")
	}
	out := make(map[string]json.RawMessage, len(sh.Hits))
	for _, h := range sh.Hits {
		var k hitKey
		if err := json.Unmarshal(h, &k); err != nil {
			return nil, newError(CodeInternal, ErrShardAnswer, "the wing answered hits without a numeric score and string id")
		}
		out[k.ID] = h
	}
	return out, nil
}

// encodeMerged writes the cross-wing envelope by hand so each hit's bytes
// stay exactly as the shard produced them.
func encodeMerged(hits []mergedHit, total int64, answered []string, failed []unavailableWing) []byte {
	var b bytes.Buffer
	b.WriteString(`{"hits":[`)
	for i, h := range hits {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(h.raw)
	}
	b.WriteString(`],"total":`)
	b.WriteString(strconv.FormatInt(total, 10))
	b.WriteString(`,"wings":`)
	if answered == nil {
		answered = []string{}
	}
	wj, _ := marshalNoEscape(answered)
	b.Write(wj)
	b.WriteString(`,"unavailable":`)
	if failed == nil {
		failed = []unavailableWing{}
	}
	fj, _ := marshalNoEscape(failed)
	b.Write(fj)
	b.WriteByte('}')
	return b.Bytes()
}

// parseToolError reads {"error":{"code","message"}} from a tool error.
func parseToolError(result []byte) (code, message string) {
	var te struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(result, &te) != nil || te.Error.Code == "" {
		return CodeInternal, "the wing answered an error without a code"
	}
	return te.Error.Code, te.Error.Message
}

// marshalNoEscape is json.Marshal without HTML escaping and trailing newline.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, errors.Join(ErrInvalidArgument, err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
