package signin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ErrRefused: the gateway refuses the stored sign-in's access token
// (401 invalid_token: it was restarted with new keys, or the token is of
// another issuer); only signing in again helps.
var ErrRefused = errors.New("signin: the gateway refuses the stored sign-in")

// Accepted asks the gateway whether it takes token at mcpURL, with one
// MCP ping: a 401 is ErrRefused (with the gateway's error_description);
// anything else, even a gateway that cannot be reached, is no verdict
// (nil: the token is not known to be bad).
func (c *Client) Accepted(ctx context.Context, mcpURL, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":"brainstem-sign-in-check","method":"ping"}`))
	if err != nil {
		return nil
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	why := "401"
	if cs, err := ParseChallenges(resp.Header.Values("WWW-Authenticate")...); err == nil {
		for _, ch := range cs {
			if d := ch.Params["error_description"]; d != "" {
				why = d
			}
		}
	}
	return fmt.Errorf("%w (%.300s): sign in again: brainstem login %s", ErrRefused, why, SiteURL(mcpURL))
}

// SiteURL is the URL a person types for mcpURL (its /mcp path left out),
// as the commands' messages name it.
func SiteURL(mcpURL string) string {
	return strings.TrimSuffix(strings.TrimSuffix(mcpURL, "/"), "/mcp")
}
