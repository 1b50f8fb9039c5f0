package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/brainstem/brainstem/internal/smallfile"
)

// SettingsFile is the name of the hooks' settings in the person's
// configuration directory (<user config dir>/brainstem/hooks.json, beside
// the sign-ins of `brainstem login`).
const SettingsFile = "hooks.json"

// maxSettingsBytes bounds the settings file.
const maxSettingsBytes = 64 << 10

// Bounds of a time box.
const (
	MinTimeout = 100 * time.Millisecond
	MaxTimeout = 20 * time.Second
)

// ErrSettings: the settings file is unusable.
var ErrSettings = errors.New("hooks: unusable settings")

// Settings are the person's settings of the hooks: which gateway, and per
// event whether it runs, its time box and its relevance bar. Every field
// left out of the file keeps its default (DefaultSettings).
type Settings struct {
	// URL is the MCP URL of the gateway the hooks call, when no --url
	// (BRAINSTEM_URL) is given; "" means the one stored sign-in.
	URL          string        `json:"url,omitempty"`
	SessionStart EventSettings `json:"session_start"`
	Prompt       EventSettings `json:"prompt"`
	Stop         EventSettings `json:"stop"`
	PreCompact   EventSettings `json:"pre_compact"`
}

// EventSettings are one hook's settings. MinScore and MinCoverage are the
// relevance bar of the hooks that search (session-start, prompt);
// MinWords and MinToolUses apply to prompt and stop.
type EventSettings struct {
	// Enabled: false turns the hook into a no-op ({}).
	Enabled bool `json:"enabled"`
	// Timeout is the time box: at its end the hook answers {} whatever it
	// was doing. Between MinTimeout and MaxTimeout.
	Timeout Duration `json:"timeout"`
	// MinScore: a hit whose BM25 score is lower is not injected.
	MinScore float64 `json:"min_score"`
	// MinCoverage (prompt): the share of the prompt's searchable words a
	// hit's title and snippet must hold (and at least two of them), 0 to 1.
	MinCoverage float64 `json:"min_coverage,omitempty"`
	// MinWords (prompt): a prompt with fewer searchable words is not
	// searched ("thanks", "yes", "go on").
	MinWords int `json:"min_words,omitempty"`
	// MaxNotes: at most this many notes are injected.
	MaxNotes int `json:"max_notes,omitempty"`
	// MinToolUses (stop): a session with this many tool uses counts as
	// real work even if it changed no file.
	MinToolUses int `json:"min_tool_uses,omitempty"`
}

// DefaultSettings are the settings of a person without a settings file
// (docs/agents.md lists them).
func DefaultSettings() Settings {
	return Settings{
		SessionStart: EventSettings{Enabled: true, Timeout: Duration(5 * time.Second), MinScore: 1, MaxNotes: 8},
		Prompt:       EventSettings{Enabled: true, Timeout: Duration(time.Second), MinScore: 2, MinCoverage: 0.5, MinWords: 3, MaxNotes: 3},
		Stop:         EventSettings{Enabled: true, Timeout: Duration(5 * time.Second), MinToolUses: 25},
		PreCompact:   EventSettings{Enabled: true, Timeout: Duration(5 * time.Second)},
	}
}

// For returns the settings of the hook named name.
func (s *Settings) For(name string) EventSettings {
	switch name {
	case NameSessionStart:
		return s.SessionStart
	case NamePrompt:
		return s.Prompt
	case NameStop:
		return s.Stop
	default:
		return s.PreCompact
	}
}

// LoadSettings reads the settings file at path over the defaults; a
// missing file is the defaults. An unreadable file, unknown keys and
// values out of range are an ErrSettings naming the file, and the
// defaults are returned with it.
func LoadSettings(path string) (Settings, error) {
	s := DefaultSettings()
	b, err := smallfile.Read(path, maxSettingsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("%w: %w", ErrSettings, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return DefaultSettings(), fmt.Errorf("%w: %s: %w", ErrSettings, path, err)
	}
	if err := s.validate(); err != nil {
		return DefaultSettings(), fmt.Errorf("%w: %s: %w", ErrSettings, path, err)
	}
	return s, nil
}

func (s *Settings) validate() error {
	var errs []error
	for _, e := range Events() {
		es := s.For(e.Name)
		if t := time.Duration(es.Timeout); t < MinTimeout || t > MaxTimeout {
			errs = append(errs, fmt.Errorf("%s.timeout %s is outside %s to %s", e.Name, t, MinTimeout, MaxTimeout))
		}
		if es.MinCoverage < 0 || es.MinCoverage > 1 || es.MinScore < 0 || es.MinWords < 0 || es.MaxNotes < 0 || es.MaxNotes > 20 || es.MinToolUses < 0 {
			errs = append(errs, fmt.Errorf("%s: min_coverage is 0 to 1, max_notes 0 to 20, and no number is negative", e.Name))
		}
	}
	return errors.Join(errs...)
}

// Duration is a time.Duration written as a string in JSON ("1.5s").
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"1.5s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// settingsPath is the settings file in the configuration directory dir
// (<user config dir>/brainstem).
func settingsPath(dir string) string { return filepath.Join(dir, SettingsFile) }
