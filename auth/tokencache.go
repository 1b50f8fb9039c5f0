package auth

import (
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"
)

// CachingVerifier remembers the shard tokens its TokenVerifier accepted, so
// a hot path pays the Ed25519 check once per token instead of once per call.
// A remembered token is still refused once its exp (plus ShardTokenLeeway)
// has passed. Nothing else can invalidate one: a verifier's keys are fixed
// when it is built, so a key rotation means a new verifier and a new cache.
type CachingVerifier struct {
	v     *TokenVerifier
	cache *lru.Cache[string, ShardClaims]
}

// NewCachingVerifier wraps v with a bounded cache of size verified tokens
// (at least 1).
func NewCachingVerifier(v *TokenVerifier, size int) (*CachingVerifier, error) {
	c, err := lru.New[string, ShardClaims](max(size, 1))
	if err != nil {
		return nil, fmt.Errorf("auth: token cache: %w", err)
	}
	return &CachingVerifier{v: v, cache: c}, nil
}

// Verify is TokenVerifier.Verify with memory: a token verified before and
// not yet expired returns its claims without a signature check.
func (c *CachingVerifier) Verify(token string) (ShardClaims, error) {
	if cl, ok := c.cache.Get(token); ok {
		if c.v.now().Before(cl.Expiry.Add(ShardTokenLeeway)) {
			return cl, nil
		}
		c.cache.Remove(token)
	}
	cl, err := c.v.Verify(token)
	if err == nil {
		c.cache.Add(token, cl)
	}
	return cl, err
}
