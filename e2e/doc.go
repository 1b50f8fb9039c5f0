// Package e2e holds the end-to-end tests and benchmarks of Brainstem: a real
// development identity provider, gateway and shards on loopback (devenv),
// driven by real MCP clients. TestDexInterop puts a third-party OpenID
// Connect provider, Dex, in front instead (it runs when BRAINSTEM_DEX_BIN
// names a Dex binary; .ci/build-dex.sh builds one). The package has no code
// of its own besides this doc.
package e2e
