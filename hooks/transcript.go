package hooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/brain"
)

// Limits of a transcript scan: the last maxTranscriptBytes of the file are
// read (a session longer than that is judged on its end), and a line
// longer than maxTranscriptLine (a huge tool result) is skipped.
const (
	maxTranscriptBytes = 64 << 20
	maxTranscriptLine  = 8 << 20
)

// transcript is what a session's transcript (Claude Code's JSONL of the
// conversation) says about its work.
type transcript struct {
	ToolUses int      // tool calls of any tool
	Edits    int      // Edit, MultiEdit, Write and NotebookEdit calls
	Writes   int      // brain_write calls, answered or not
	Captured []string // the paths brain_write answered, in order
}

// editTool reports whether a tool changes files in the working directory.
func editTool(name string) bool {
	return slices.Contains([]string{"Edit", "MultiEdit", "Write", "NotebookEdit"}, name)
}

// isTool reports whether a tool-use name is the brain tool tool, as
// Claude Code names an MCP server's tools (mcp__<server>__<tool>).
func isTool(name, tool string) bool { return name == tool || strings.HasSuffix(name, "__"+tool) }

// transcriptLine is the part of a transcript line the scan reads.
type transcriptLine struct {
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// contentItem is a block of a message's content.
type contentItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// scanTranscript reads the transcript at path. It fails when the file
// cannot be read: the hooks then know nothing of the session's work.
func scanTranscript(ctx context.Context, path string) (*transcript, error) {
	if path == "" {
		return nil, errors.New("hooks: no transcript")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("hooks: %s is not a regular file", path)
	}
	partial := false
	if st.Size() > maxTranscriptBytes {
		if _, err := f.Seek(st.Size()-maxTranscriptBytes, io.SeekStart); err != nil {
			return nil, fmt.Errorf("hooks: %w", err)
		}
		partial = true
	}
	t := &transcript{}
	writes := map[string]bool{} // brain_write tool_use ids waiting for their result
	br := bufio.NewReaderSize(io.LimitReader(f, maxTranscriptBytes), 64<<10)
	for n := 0; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		line, err := readLine(br)
		if partial { // the first line read may be the end of a cut one
			partial = false
		} else if len(line) > 0 {
			t.scanLine(line, writes)
		}
		if err != nil {
			break
		}
	}
	return t, nil
}

// readLine reads one line, returning nil for a line over
// maxTranscriptLine; its error is the reader's (io.EOF at the end).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxTranscriptLine {
			line = append(line, chunk...)
		} else {
			if err == nil || errors.Is(err, bufio.ErrBufferFull) {
				err = skipLine(br)
			}
			return nil, err
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

func skipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// scanLine counts one transcript line's tool uses and captures.
func (t *transcript) scanLine(line []byte, writes map[string]bool) {
	if !bytes.Contains(line, []byte(`"tool_`)) {
		return // neither a tool_use nor a tool_result
	}
	var tl transcriptLine
	if json.Unmarshal(line, &tl) != nil || len(tl.Message.Content) == 0 || tl.Message.Content[0] != '[' {
		return
	}
	var items []contentItem
	if json.Unmarshal(tl.Message.Content, &items) != nil {
		return
	}
	for _, it := range items {
		switch it.Type {
		case "tool_use":
			t.ToolUses++
			if editTool(it.Name) {
				t.Edits++
			}
			if isTool(it.Name, toolWrite) {
				t.Writes++
				writes[it.ID] = true
			}
		case "tool_result":
			if writes[it.ToolUseID] && !it.IsError {
				delete(writes, it.ToolUseID)
				if p := writtenPath(it.Content); p != "" && len(t.Captured) < maxCaptured {
					t.Captured = append(t.Captured, p)
				}
			}
		}
	}
}

// writtenPath is the path a brain_write result names ("" when it names
// none): the result's content is the tool's text, as a string or as text
// blocks.
func writtenPath(content json.RawMessage) string {
	var text string
	if json.Unmarshal(content, &text) != nil {
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(content, &blocks) != nil {
			return ""
		}
		for _, b := range blocks {
			if b.Type == "text" {
				text = b.Text
				break
			}
		}
	}
	var res struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(text), &res) != nil {
		return ""
	}
	if _, _, err := brain.ValidPath(res.Path); err != nil {
		return ""
	}
	return res.Path
}
