// Package logcheck captures the JSON log lines the product writes, for
// tests, and holds the checks the end-to-end suites apply to every one.
package logcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// DuplicateKey reports a key that appears twice in one JSON object of line
// (at any depth), or a line that is not JSON.
func DuplicateKey(line string) error {
	dec := json.NewDecoder(strings.NewReader(line))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				if seen[key] {
					return fmt.Errorf("key %q appears twice", key)
				}
				seen[key] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	return walk()
}

// Buffer is a goroutine-safe sink for a logger that a test reads while the
// logger may still write.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines decodes the JSON lines written so far whose "msg" starts with msg.
func (l *Buffer) Lines(msg string) []map[string]any {
	var out []map[string]any
	for line := range strings.Lines(l.String()) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if m, ok := rec["msg"].(string); ok && strings.HasPrefix(m, msg) {
			out = append(out, rec)
		}
	}
	return out
}
