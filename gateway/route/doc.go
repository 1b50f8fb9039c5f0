// Package route holds what the gateway knows of its wings and how it
// reaches them: each configured wing and its shard client (Wing), the
// tools and prompts the shards declare and their union (Catalog), the
// grant cache of shard tokens keyed by email and group set (GrantCache,
// with one mint per caller and wing in flight), the sending of a request
// to a wing with the caller's token (Sender), a wing as a cross-wing
// search asks it (SearchWing), and the client spans of requests to a
// shard.
package route
