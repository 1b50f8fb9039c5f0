package stdio

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"runtime/debug"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/shard/tools"
)

// ErrNoEmail is returned by DefaultEmail when git has no usable user.email.
var ErrNoEmail = errors.New("stdio: no email: pass --email or run `git config --global user.email you@example.com`")

// AllCaps is what the stdio caller holds: the local user owns the brain
// directory anyway.
const AllCaps = brain.CapRead | brain.CapWrite | brain.CapCurate

// descriptor is the part of a tools descriptor mcp-go's Tool carries besides
// name, description and schema.
type descriptor struct {
	Name        string `json:"name"`
	Annotations struct {
		Title           string `json:"title"`
		ReadOnlyHint    bool   `json:"readOnlyHint"`
		DestructiveHint bool   `json:"destructiveHint"`
		IdempotentHint  bool   `json:"idempotentHint"`
		OpenWorldHint   bool   `json:"openWorldHint"`
	} `json:"annotations"`
	Meta map[string]any `json:"_meta"`
}

// NewServer returns an MCP server exposing every tool of set for caller.
func NewServer(set *tools.Set, caller tools.Caller, logger *slog.Logger) (*server.MCPServer, error) {
	logger = cmp.Or(logger, slog.New(slog.DiscardHandler))
	var ds []descriptor
	if err := json.Unmarshal(set.Descriptors(), &ds); err != nil {
		return nil, fmt.Errorf("stdio: decode descriptors: %w", err)
	}
	byName := make(map[string]descriptor, len(ds))
	for _, d := range ds {
		byName[d.Name] = d
	}
	s := server.NewMCPServer("brainstem-"+set.Wing(), version(), server.WithToolCapabilities(false),
		server.WithPromptCapabilities(false), server.WithRecovery())
	for _, t := range set.Specs() {
		tool := mcp.NewToolWithRawSchema(t.Name, t.Description, t.Schema())
		tool.RawOutputSchema = t.OutputSchema()
		structured := tool.RawOutputSchema != nil
		if d, ok := byName[t.Name]; ok {
			a := d.Annotations
			tool.Annotations = mcp.ToolAnnotation{Title: a.Title, ReadOnlyHint: &a.ReadOnlyHint,
				DestructiveHint: &a.DestructiveHint, IdempotentHint: &a.IdempotentHint, OpenWorldHint: &a.OpenWorldHint}
			if len(d.Meta) > 0 {
				tool.Meta = mcp.NewMetaFromMap(d.Meta)
			}
		}
		name := t.Name
		s.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, isErr := set.Call(ctx, caller, name, req.Params.RawArguments)
			if isErr {
				logger.Debug("stdio: tool error", "tool", name, "result", string(res))
			}
			r := mcp.NewToolResultText(string(res))
			r.IsError = isErr
			if structured && !isErr { // the same JSON as structuredContent
				r.RawStructuredContent = res
			}
			return r, nil
		})
	}
	addPrompts(s, set, caller)
	return s, nil
}

// addPrompts serves the set's prompts (tools.Set.GetPrompt: the same
// validation and messages as through the gateway).
func addPrompts(s *server.MCPServer, set *tools.Set, caller tools.Caller) {
	for _, p := range set.Prompts() {
		mp := mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Args {
			mp.Arguments = append(mp.Arguments, mcp.PromptArgument{Name: a.Name, Description: a.Desc, Required: a.Required})
		}
		name := p.Name
		s.AddPrompt(mp, func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			args, err := json.Marshal(req.Params.Arguments)
			if err != nil {
				return nil, fmt.Errorf("stdio: prompt arguments: %w", err)
			}
			res, isErr := set.GetPrompt(ctx, caller, name, args)
			if isErr {
				_, msg, _ := brain.DecodeError(res)
				return nil, errors.New(msg)
			}
			var pr toolspec.PromptResult
			if err := json.Unmarshal(res, &pr); err != nil {
				return nil, fmt.Errorf("stdio: prompt %s: %w", name, err)
			}
			out := &mcp.GetPromptResult{Description: pr.Description, Messages: make([]mcp.PromptMessage, len(pr.Messages))}
			for i, m := range pr.Messages {
				out.Messages[i] = mcp.PromptMessage{Role: mcp.Role(m.Role), Content: mcp.NewTextContent(m.Content.Text)}
			}
			return out, nil
		})
	}
}

// Serve answers MCP requests read from in with responses written to out
// until in ends or ctx is cancelled. Logs go to logger, never to out.
func Serve(ctx context.Context, set *tools.Set, caller tools.Caller, in io.Reader, out io.Writer, logger *slog.Logger) error {
	logger = cmp.Or(logger, slog.New(slog.DiscardHandler))
	s, err := NewServer(set, caller, logger)
	if err != nil {
		return err
	}
	ss := server.NewStdioServer(s)
	ss.SetErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelWarn))
	logger.Info("stdio: serving brain tools", "wing", set.Wing(), "email", caller.Email)
	err = ss.Listen(ctx, in, out)
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("stdio: %w", err)
}

// DefaultEmail returns the canonical `git config user.email`, the stdio
// caller's identity when no --email is given.
func DefaultEmail(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "config", "user.email").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", ErrNoEmail // git config exits 1 when the key is unset
		}
		return "", fmt.Errorf("stdio: run git config user.email: %w", err)
	}
	return checkEmail(string(out))
}

// checkEmail applies the email rule (auth.CanonicalEmail) to git's
// user.email.
func checkEmail(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", ErrNoEmail
	}
	e, err := auth.CanonicalEmail(s)
	if err != nil {
		return "", fmt.Errorf("stdio: git user.email %q is not an email address (%v): %w", s, err, ErrNoEmail)
	}
	return e, nil
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
}
