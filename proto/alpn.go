package proto

// ALPN is the TLS application protocol of brainstem/1.
const ALPN = "brainstem/1"
