package surfaces

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/proto"
)

// CrossLinks adds to a successful answer of a tool that declares
// toolspec.CrossLinks (brain_move) the notes of the caller's other readable
// wings that link to the note the answer names: the wing that moved it
// cannot see them or rewrite them. Each such wing is asked, concurrently and
// bounded like a cross-wing search, with cl.Ask {"wing","id"}; a wing that
// cannot say is named under Into+"_unchecked". Wings the caller cannot read
// are not asked and not named. An answer without the From field is returned
// as it is.
func (s *Surfaces) CrossLinks(ctx context.Context, cl *toolspec.CrossLinks, from *route.Wing, result []byte) []byte {
	var fields map[string]json.RawMessage
	var id string
	if json.Unmarshal(result, &fields) != nil || json.Unmarshal(fields[cl.From], &id) != nil || id == "" {
		return result
	}
	c, _ := s.Gateway.Caller(ctx)
	caps, errs := s.Caps(ctx, c)
	linked := make([][]string, len(s.Wings))
	unchecked := make([]bool, len(s.Wings))
	for i, w := range s.Wings {
		switch {
		case w == from || (errs[i] == nil && !caps[i].Has(brain.CapRead)):
			errs[i] = route.ErrNotAsked
		case errs[i] != nil:
			// Not reachable now: named only where the caller is known to
			// hold a grant, as a cross-wing search names its missing wings.
			unchecked[i] = s.Grants.Disclosable(c.Key, w, errs[i])
		}
	}
	ctx, cancel := context.WithTimeout(ctx, min(s.FanoutTimeout, s.CallTimeout))
	defer cancel()
	route.EachWing(s.Workers, s.FanoutConcurrency, s.Wings, errs, func(i int, w *route.Wing) {
		a, _ := json.Marshal(map[string]string{"wing": w.Name, "id": id})
		resp, err := s.Shards.Call(ctx, c, w, &proto.CallRequest{RequestID: c.RequestID, Tool: cl.Ask, Args: a}, s.writes(cl.Ask))
		var ans struct {
			Backlinks []string `json:"backlinks"`
		}
		if err != nil || resp.IsError || json.Unmarshal(resp.Result, &ans) != nil {
			c.Logger().Warn("a wing could not list its links to a moved note", "wing", w.Name, "tool", cl.Ask, "err", err)
			unchecked[i] = true
			return
		}
		linked[i] = ans.Backlinks
	})
	all := []string{}
	var names []string
	for i, w := range s.Wings {
		if unchecked[i] {
			names = append(names, w.Name)
		}
		all = append(all, linked[i]...)
	}
	slices.Sort(all)
	extra, _ := json.Marshal(all)
	out := bytes.TrimRight(result, " \n")
	out = append(out[:len(out)-1:len(out)-1], `,"`+cl.Into+`":`...)
	out = append(out, extra...)
	if names != nil {
		u, _ := json.Marshal(names)
		out = append(append(append(out, `,"`+cl.Into+`_unchecked":`...), u...), '}')
		return out
	}
	return append(out, '}')
}
