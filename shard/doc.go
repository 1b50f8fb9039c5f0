// Package shard serves one wing of a brain: it opens the wing's store and
// search index, exposes the brain tools, and answers the gateway over the
// brainstem/1 protocol (verifying shard tokens and minting them according to
// the wing policy). It knows nothing about SSO or HTTP.
package shard
