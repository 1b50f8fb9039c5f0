package offboard

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ParseNotBefore reads now, now+DURATION or an RFC 3339 time; times from
// now are rounded up to the second (tokens carry iat in seconds, so a
// token issued in the second of the end is refused too).
func ParseNotBefore(s string, now time.Time) (time.Time, error) {
	switch {
	case s == "now":
		return CeilSecond(now), nil
	case strings.HasPrefix(s, "now+"):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "now+"))
		if err != nil || d < 0 {
			return time.Time{}, errors.New("want now+DURATION, e.g. now+2m")
		}
		return CeilSecond(now.Add(d)), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want now, now+DURATION or RFC 3339 (e.g. %s)", now.UTC().Format(time.RFC3339))
	}
	return t, nil
}

// CeilSecond rounds t up to the next whole second.
func CeilSecond(t time.Time) time.Time {
	if c := t.Truncate(time.Second); !c.Equal(t) {
		return c.Add(time.Second)
	}
	return t
}
