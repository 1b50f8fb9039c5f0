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
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/proto"
)

// wingsToolName is the gateway's own tool; brain.QueryTool is the other
// tool it treats specially.
const wingsToolName = "brain_wings"

// unavailableWing reports a wing left out of a cross-wing answer.
type unavailableWing struct {
	Wing  string     `json:"wing"`
	Code  brain.Code `json:"code"`
	Error string     `json:"error"`
}

// parseQueryArgs reads brain_query's query and limit from its arguments.
func parseQueryArgs(args []byte) (query string, limit int, err error) {
	a, err := parseArgs(args)
	if err != nil {
		return "", 0, err
	}
	return a.queryLimit()
}

// queryLimit reads brain_query's query and limit (brain.QueryDefaultLimit when
// absent).
func (a *callArgs) queryLimit() (query string, limit int, err error) {
	rawQuery, rawLimit := a.get("query"), a.get("limit")
	if rawQuery == nil || string(rawQuery) == "null" {
		return "", 0, newError(brain.CodeInvalidArgument, ErrInvalidArgument, "brain_query needs a \"query\" string")
	}
	if query, _, err = a.str("query", rawQuery); err != nil {
		return "", 0, newError(brain.CodeInvalidArgument, ErrInvalidArgument, "brain_query needs a \"query\" string")
	}
	limit = brain.QueryDefaultLimit
	if rawLimit != nil && string(rawLimit) != "null" {
		var f float64
		if err := json.Unmarshal(rawLimit, &f); err != nil || f != float64(int(f)) || f < 1 || f > brain.QueryMaxLimit {
			return "", 0, newError(brain.CodeInvalidArgument, ErrInvalidArgument, "\"limit\" must be an integer from 1 to %d", brain.QueryMaxLimit)
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

// rankedHits is a shard's answer to the rank step (brain.RankResult). A
// shard that does not know the step (an older version) answers the whole
// query instead, with "hits" and no "ranked".
type rankedHits struct {
	brain.RankResult
	Hits []json.RawMessage `json:"hits"`
}

type mergedHit struct {
	key  brain.HitKey    // what merging reads of each hit
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
	f := &fanout{g: g, ci: ci, args: args, ctx: ctx, fctx: fctx, bound: bound}
	if e := f.stats(query); e != nil {
		rec.Missing = wingNames(f.failed)
		return g.fail(rec, e)
	}
	if res := f.rank(limit, rec); res != nil {
		return res
	}
	f.fetch()
	return f.answer(rec)
}

// fanout is one cross-wing search, step by step (fanoutQuery).
type fanout struct {
	g     *Gateway
	ci    *callInfo
	args  []byte
	ctx   context.Context // the caller's
	fctx  context.Context // ctx bounded by limits.fanout_timeout
	bound time.Duration

	failed []unavailableWing // wings left out, named to the caller
	// Of the wings the caller may read (step 1 on):
	readable []*wing
	errs     []error // each one's failure in the current step
	global   *proto.CorpusStats
	hits     []mergedHit // merged and cut to the limit (step 2), fetched (step 3)
	totals   []int64     // each one's number of matching notes
	answered []bool
	fetched  []map[string]json.RawMessage
}

// late is a wing's failure within the search: past the search's deadline,
// timeout (and the results leave it out).
func (f *fanout) late(w *wing, err error) *Error {
	if errors.Is(err, context.DeadlineExceeded) && f.ctx.Err() == nil {
		return newError(brain.CodeTimeout, ErrTimeout, "wing %q did not answer within limits.fanout_timeout (%s); the results leave it out", w.name, f.bound)
	}
	return classifyShard(err, w)
}

// leaveOut lists a wing under "unavailable".
func (f *fanout) leaveOut(w *wing, err error) {
	e := classify(err, w.name)
	f.failed = append(f.failed, unavailableWing{Wing: w.name, Code: e.Code, Error: e.Message})
}

// stats is step 1, per wing and concurrently, within half the bound (a
// stuck wing does not spend the others' time): the caller's capabilities
// there (minting if needed), then, where they may read, the corpus
// statistics of the query, summed into global. It fails when the caller
// can read no wing that answered.
func (f *fanout) stats(query string) *Error {
	g := f.g
	p1ctx, cancel := context.WithTimeout(f.fctx, f.bound/2)
	defer cancel()
	n := len(g.wings)
	canRead, all, errs := make([]bool, n), make([]*proto.CorpusStats, n), make([]error, n)
	g.eachWing(g.wings, errs, func(i int, w *wing) {
		gr, _, err := g.sessions.get(p1ctx, f.ci.id, w, f.ci.requestID)
		if err != nil {
			errs[i] = err
			return
		}
		if canRead[i] = gr.caps.Has(brain.CapRead); !canRead[i] {
			return
		}
		st, err := w.client.Stats(p1ctx, &proto.StatsRequest{RequestID: f.ci.requestID, Query: query})
		if err != nil {
			errs[i] = err
			return
		}
		w.markReached()
		all[i] = st
	})
	f.global = &proto.CorpusStats{DocFreq: map[string]int64{}}
	hidden := 0 // wings that failed for a caller holding no grant there: not named
	for i, w := range g.wings {
		switch {
		case canRead[i]:
			f.readable = append(f.readable, w)
			var e error
			if errs[i] != nil {
				e = f.late(w, errs[i])
			}
			f.errs = append(f.errs, e)
			addStats(f.global, all[i])
		case g.disclosable(f.ci, w, errs[i]):
			if e := f.late(w, errs[i]); e.Code != brain.CodeForbidden {
				f.failed = append(f.failed, unavailableWing{Wing: w.name, Code: e.Code, Error: e.Message})
			}
		case errs[i] != nil && !errors.Is(errs[i], errNotAdmitted):
			hidden++
		}
	}
	if len(f.readable) > 0 {
		return nil
	}
	switch {
	case len(f.failed) > 0:
		return newError(brain.CodeUnavailable, ErrUnavailable, "no wing you can read is reachable right now: %s", joinFailures(f.failed))
	case hidden > 0:
		// Some wing could not be asked whether the caller may read it; it
		// is not named (least disclosure).
		return newError(brain.CodeUnavailable, ErrUnavailable, "no wing you can read answered; retry shortly")
	}
	return newError(brain.CodeForbidden, ErrForbidden, "you cannot read any wing; ask a wing's curators for access")
}

// addStats adds a wing's corpus statistics (nil when it failed) to sum.
func addStats(sum, st *proto.CorpusStats) {
	if st == nil {
		return
	}
	sum.Docs += st.Docs
	sum.TotalLength += st.TotalLength
	for term, n := range st.DocFreq {
		sum.DocFreq[term] += n
	}
}

// rank is step 2: each readable wing ranks its notes with the global
// statistics; the hits are merged by score (desc) and id (asc) and cut to
// limit. When no wing answered it returns the search's answer: the first
// refusal unchanged if every wing refused the arguments (as a wing-scoped
// call would answer), else unavailable.
func (f *fanout) rank(limit int, rec *auditRecord) *mcp.CallToolResult {
	results := make([]*proto.CallResponse, len(f.readable))
	f.g.eachWing(f.readable, f.errs, func(i int, w *wing) {
		var err error
		results[i], err = f.g.callWing(f.fctx, f.ci, w, &proto.CallRequest{RequestID: f.ci.requestID, Tool: brain.QueryTool, Args: f.args, Stats: f.global, Rank: true})
		if err != nil {
			f.errs[i] = f.late(w, err)
		}
	})
	f.totals, f.answered = make([]int64, len(f.readable)), make([]bool, len(f.readable))
	var firstError *proto.CallResponse
	for i, w := range f.readable {
		switch resp := results[i]; {
		case errors.Is(f.errs[i], errWingHidden): // the caller lost its grant meanwhile: not named
		case f.errs[i] != nil:
			f.leaveOut(w, f.errs[i])
		case resp.IsError:
			if firstError == nil {
				firstError = resp
			}
			code, msg := parseToolError(resp.Result)
			f.failed = append(f.failed, unavailableWing{Wing: w.name, Code: code, Error: msg})
		default:
			part, total, err := parseRanked(resp.Result, i)
			if err != nil {
				f.failed = append(f.failed, unavailableWing{Wing: w.name, Code: brain.CodeInternal, Error: err.Error()})
				continue
			}
			f.hits = append(f.hits, part...)
			f.totals[i], f.answered[i] = total, true
		}
	}
	if !slices.Contains(f.answered, true) {
		if firstError != nil {
			rec.Outcome = "tool_error"
			return shardResult(firstError)
		}
		rec.Missing = wingNames(f.failed)
		if len(f.failed) == 0 { // every wing was lost meanwhile, none may be named
			return f.g.fail(rec, newError(brain.CodeUnavailable, ErrUnavailable, "no wing you can read answered; retry shortly"))
		}
		return f.g.fail(rec, newError(brain.CodeUnavailable, ErrUnavailable, "no wing answered: %s", joinFailures(f.failed)))
	}
	sort.SliceStable(f.hits, func(i, j int) bool { return f.hits[i].key.Less(f.hits[j].key) })
	if len(f.hits) > limit {
		f.hits = f.hits[:limit]
	}
	return nil
}

// fetch is step 3: the wings holding final hits render those hits, and
// only those. A wing that fails here is left out altogether: its hits and
// its notes' count.
func (f *fanout) fetch() {
	ids := make([][]string, len(f.readable))
	for _, h := range f.hits {
		if h.raw == nil {
			ids[h.wing] = append(ids[h.wing], h.key.ID)
		}
	}
	f.fetched = make([]map[string]json.RawMessage, len(f.readable))
	errs := make([]error, len(f.readable))
	for i := range f.readable {
		if len(ids[i]) == 0 {
			errs[i] = errSkip
		}
	}
	f.g.eachWing(f.readable, errs, func(i int, w *wing) {
		resp, err := f.g.callWing(f.fctx, f.ci, w, &proto.CallRequest{RequestID: f.ci.requestID, Tool: brain.QueryTool, Args: f.args, Stats: f.global, Fetch: ids[i]})
		switch {
		case err != nil:
			errs[i] = f.late(w, err)
		case resp.IsError:
			code, msg := parseToolError(resp.Result)
			errs[i] = newError(code, ErrShardAnswer, "%s", msg)
		default:
			f.fetched[i], errs[i] = parseFetched(resp.Result)
		}
	})
	for i, w := range f.readable {
		if errs[i] == nil || errs[i] == errSkip {
			continue
		}
		if !errors.Is(errs[i], errWingHidden) {
			f.leaveOut(w, errs[i])
		}
		f.answered[i], f.totals[i] = false, 0
	}
}

// answer is the search's answer: the final hits in merged order, each one's
// bytes as its shard rendered them (a hit whose note changed or went
// between the steps is left out), the total, the wings that answered and
// those left out.
func (f *fanout) answer(rec *auditRecord) *mcp.CallToolResult {
	final := f.hits[:0]
	for _, h := range f.hits {
		switch {
		case !f.answered[h.wing]:
		case h.raw != nil:
			final = append(final, h)
		default:
			if raw, ok := f.fetched[h.wing][h.key.ID]; ok {
				h.raw = raw
				final = append(final, h)
			}
		}
	}
	var total int64
	var names []string
	for i, w := range f.readable {
		if f.answered[i] {
			total += f.totals[i]
			names = append(names, w.name)
		}
	}
	rec.Missing = wingNames(f.failed)
	rec.Outcome = "ok"
	if len(f.failed) > 0 {
		rec.Outcome = outcomePartial
	}
	return mcp.NewToolResultText(string(encodeMerged(final, total, names, f.failed)))
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
		part := make([]mergedHit, 0, len(rh.Ranked))
		for _, k := range rh.Ranked {
			part = append(part, mergedHit{key: k, wing: wing})
		}
		return part, rh.Total, nil
	}
	part := make([]mergedHit, 0, len(rh.Hits))
	for _, h := range rh.Hits {
		var k brain.HitKey
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
		return nil, newError(brain.CodeInternal, ErrShardAnswer, "the wing answered a fetch that is not a list of hits")
	}
	out := make(map[string]json.RawMessage, len(sh.Hits))
	for _, h := range sh.Hits {
		var k brain.HitKey
		if err := json.Unmarshal(h, &k); err != nil {
			return nil, newError(brain.CodeInternal, ErrShardAnswer, "the wing answered hits without a numeric score and string id")
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
	wj, _ := brain.Marshal(answered)
	b.Write(wj)
	b.WriteString(`,"unavailable":`)
	if failed == nil {
		failed = []unavailableWing{}
	}
	fj, _ := brain.Marshal(failed)
	b.Write(fj)
	b.WriteByte('}')
	return b.Bytes()
}

// parseToolError reads a shard's tool error document (brain.DecodeError).
func parseToolError(result []byte) (brain.Code, string) {
	if code, msg, ok := brain.DecodeError(result); ok {
		return code, msg
	}
	return brain.CodeInternal, "the wing answered an error without a code"
}
