// Package pki is Brainstem's internal certificate authority for the
// gateway↔shard mutual TLS of brainstem/1.
//
// A CA issues leaf certificates that carry a role, encoded as the URI SAN
// "brainstem://role/<role>": gateways get client certificates (RoleGateway),
// shards get server+client certificates (RoleShard). The proto package reads
// the role of a verified peer with RoleOf and only lets gateways mint shard
// tokens. ServerTLS and ClientTLS build TLS 1.3-only configurations that
// verify the peer against the CA and speak the ALPN protocol "brainstem/1".
//
// InitDir and IssueFiles do the file work of `brainstem ca init` and
// `brainstem ca issue`; files are written atomically and keys are 0600.
//
// This package does not import proto (proto imports it); its ALPN constant
// mirrors proto.ALPN and a proto test keeps them equal.
package pki
