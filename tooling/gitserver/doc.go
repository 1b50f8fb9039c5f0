// Package gitserver runs real git servers on loopback for tests: the git
// CLI's smart-HTTP server (git http-backend behind a net/http/cgi handler
// with basic auth) and git daemon (the git:// transport), each serving the
// bare repositories under one directory. It needs the git binary.
package gitserver
