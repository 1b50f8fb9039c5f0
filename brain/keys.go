package brain

// IdempotencyKeyArg is the argument through which an agent names a write
// (every write tool accepts it): the shard applies a write at most once per
// wing, caller and key, and the gateway sends the agent's key along.
const IdempotencyKeyArg = "idempotency_key"

// MaxIdempotencyKeyBytes bounds an idempotency key, the agent's or the
// gateway's, in the argument and on the wire.
const MaxIdempotencyKeyBytes = 128
