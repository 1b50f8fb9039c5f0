// Package logcheck holds the checks the end-to-end suites apply to every
// JSON log and audit line the product writes.
package logcheck

import (
	"encoding/json"
	"fmt"
	"strings"
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
