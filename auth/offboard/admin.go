package offboard

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// SignIn is one sign-in (a refresh token family, or a grant without one)
// as one gateway replica saw it: replicas share no storage and a sign-in
// lives sealed in the client's refresh token, so a replica knows only the
// sign-ins it issued or refreshed since it started. List merges them.
type SignIn struct {
	// ID is a digest of the family (the access tokens' sid), the same on
	// every replica, never the family itself.
	ID string `json:"id"`
	// Email is the person.
	Email string `json:"email"`
	// Client is the client's label (a metadata document URL, or
	// registered:<digest>).
	Client string `json:"client"`
	// Grant is the grant of the last issuance seen.
	Grant string `json:"grant"`
	// FirstSeen and LastSeen bound the issuances seen.
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// AccessExpires is when the last access token seen expires.
	AccessExpires time.Time `json:"access_expires"`
	// Expires is the end of the sign-in (its refresh tokens stop working);
	// zero for a grant without refresh tokens.
	Expires time.Time `json:"expires,omitzero"`
	// Ended: an operator ended the person's sign-ins after the last
	// issuance seen, so every token of it is refused.
	Ended bool `json:"ended"`
	// Replicas that saw it (filled by List).
	Replicas []string `json:"replicas,omitempty"`
}

// Report is a replica's answer to the admin /signins endpoints.
type Report struct {
	// Replica names the replica (its host name).
	Replica string `json:"replica"`
	// Ended is the person's entry (or every entry) as the replica enforces
	// it: the file's and the posted, the later winning.
	Ended []Entry `json:"ended"`
	// SignIns are the sign-ins the replica saw.
	SignIns []SignIn `json:"signins"`
	// Changed (POST /signins/end): the entry moved not_before later.
	Changed bool `json:"changed,omitempty"`
}

// maxReportBytes bounds a replica's answer.
const maxReportBytes = 8 << 20

// Admin calls the admin endpoints of gateway replicas with the operator's
// token.
type Admin struct {
	// Token is the operator's bearer token (signins.admin_token_file).
	Token string
	// HTTP is the client; nil means one with a 10 s timeout.
	HTTP *http.Client
}

// ExpandReplicas turns admin base URLs into one URL per replica: a URL
// whose host is a name resolving to several addresses (a Kubernetes
// headless Service) becomes one URL per address when expand is set.
func ExpandReplicas(ctx context.Context, bases []string, expand bool) ([]string, error) {
	var out []string
	for _, b := range bases {
		u, err := url.Parse(strings.TrimRight(b, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("offboard: %q is not an http(s) admin URL, e.g. http://10.0.0.7:9090", b)
		}
		if !expand || net.ParseIP(u.Hostname()) != nil {
			out = append(out, u.String())
			continue
		}
		addrs, err := net.DefaultResolver.LookupHost(ctx, u.Hostname())
		if err != nil {
			return nil, fmt.Errorf("offboard: resolve %s: %w", u.Hostname(), err)
		}
		slices.Sort(addrs)
		for _, a := range addrs {
			v := *u
			v.Host = net.JoinHostPort(a, u.Port())
			out = append(out, v.String())
		}
	}
	if len(out) == 0 {
		return nil, errors.New("offboard: no replica: name every gateway replica's admin URL")
	}
	return slices.Compact(out), nil
}

func (a Admin) do(ctx context.Context, method, u string, body url.Values) (Report, error) {
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(body.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return Report{}, fmt.Errorf("offboard: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := cmp.Or(a.HTTP, &http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return Report{}, fmt.Errorf("offboard: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReportBytes))
	if err != nil {
		return Report{}, fmt.Errorf("offboard: %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Report{}, fmt.Errorf("offboard: %s: %s: %s", u, resp.Status, strings.TrimSpace(string(data)))
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return Report{}, fmt.Errorf("offboard: %s: %w", u, err)
	}
	return r, nil
}

// List asks every replica for email's sign-ins (empty email: everyone's)
// and merges them by ID. A replica that does not answer is an error
// naming it; the others' answers are still returned.
func (a Admin) List(ctx context.Context, replicas []string, email string) ([]Report, []SignIn, error) {
	reports, err := a.all(ctx, replicas, http.MethodGet, "/signins?"+url.Values{"email": {email}}.Encode(), nil)
	by := map[string]*SignIn{}
	for _, rep := range reports {
		for _, s := range rep.SignIns {
			m, ok := by[s.ID]
			if !ok {
				m = &s
				by[s.ID] = m
			} else {
				if s.FirstSeen.Before(m.FirstSeen) {
					m.FirstSeen = s.FirstSeen
				}
				if s.LastSeen.After(m.LastSeen) {
					m.LastSeen, m.Grant, m.AccessExpires, m.Ended = s.LastSeen, s.Grant, s.AccessExpires, s.Ended
				}
			}
			m.Replicas = append(m.Replicas, rep.Replica)
		}
	}
	var all []SignIn
	for _, s := range by {
		all = append(all, *s)
	}
	slices.SortFunc(all, func(x, y SignIn) int { return y.LastSeen.Compare(x.LastSeen) })
	return reports, all, err
}

// End posts e to every replica: each enforces it at once. It returns the
// replicas' answers, and an error naming every replica that did not take
// it (the entry must then reach it through the file).
func (a Admin) End(ctx context.Context, replicas []string, e Entry) ([]Report, error) {
	ce, err := Check(e)
	if err != nil {
		return nil, err
	}
	form := url.Values{"email": {ce.Email}, "not_before": {ce.NotBefore.Format(time.RFC3339)}}
	if ce.Reason != "" {
		form.Set("reason", ce.Reason)
	}
	return a.all(ctx, replicas, http.MethodPost, "/signins/end", form)
}

// all sends the request to every replica, and returns the answers and an
// error naming every replica that did not answer.
func (a Admin) all(ctx context.Context, replicas []string, method, path string, body url.Values) ([]Report, error) {
	var (
		reports []Report
		errs    []error
	)
	for _, r := range replicas {
		rep, err := a.do(ctx, method, r+path, body)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reports = append(reports, rep)
	}
	return reports, errors.Join(errs...)
}

// AddToFile adds e to the ended sign-ins file at path (created if
// missing), replacing it atomically (a rename), so a replica never reads
// half a file.
func AddToFile(path string, e Entry) error {
	ce, err := Check(e)
	if err != nil {
		return err
	}
	var entries []Entry
	if data, err := readFile(path); err == nil {
		if entries, err = Parse(data); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out, err := Marshal(append(entries, ce))
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, out, 0o600); err != nil {
		return fmt.Errorf("offboard: %w", err)
	}
	return nil
}
