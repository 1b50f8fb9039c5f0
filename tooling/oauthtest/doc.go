// Package oauthtest is the test harness of the authorization server
// (gateway/oauth) and its grants: a real development IdP (auth/devidp) as
// the upstream, the real SSO verifier (auth/sso) for its ID tokens, and
// replicas of the authorization server on loopback listeners, each with
// the grants a hook registers, driven by a scripted browser
// (tooling/testbrowser) and plain HTTP token requests. One settable clock
// is shared by all of them so tests can step over expiries. Only tests
// import it.
package oauthtest
