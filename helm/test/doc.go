// Package helmtest holds the tests of the brainstem Helm chart
// (helm/brainstem). It is a separate module so that helm, which the tests
// build from the version pinned in go.mod, never enters the product's module
// graph.
//
// The tests render the chart with the real helm CLI (built once by
// build-helm.sh, or named by $HELM_BIN), decode every manifest (strictly into
// the Kubernetes API types for built-in kinds) and check what an operator
// relies on: UDP ports on the shard Services, NetworkPolicy
// selectors that match the gateway pods exactly, security contexts, probes,
// resources, one StatefulSet per wing, the config checksum, the generated
// certificates (with a real mTLS handshake, also through proto/pki's own TLS
// configurations), that generated certificates survive upgrades (helm's
// `lookup` against a minimal in-test Secret API), the values schema's
// rejections, that
// `brainstem gateway --check-config` accepts the rendered gateway.yaml, and
// that the rendered shards and gateway, run from this repository's binary on
// loopback, become ready together. With oauth.enabled (the gateway's
// authorization server) they also check the rendered `oauth:` section, the
// mounted sign-in Secrets, the TTL bounds and allowlists the chart shares
// with the gateway, that the generated signing key survives upgrades, and
// that the gateway run on loopback publishes that very key.
//
// The module replaces github.com/brainstem/brainstem with ../.. and imports
// only proto/pki (standard library only) from it.
package helmtest
