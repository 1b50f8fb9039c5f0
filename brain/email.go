package brain

// MaxEmailBytes bounds an email address, Brainstem's one identity, in
// every layer that carries or keeps one: the email rule (auth's
// CanonicalEmail refuses a longer address), the mint request on the wire,
// the idempotency journal and the sign-in files. RFC 5321 §4.5.3.1.3
// limits a forward path to 256 bytes including its angle brackets, which
// leaves 254 for the address itself.
const MaxEmailBytes = 254
