// Package faults holds the fault suite and the soak harness: the built
// brainstem binary run as separate processes on loopback — the development
// identity provider (brainstem dev idp), one shard per wing, and a gateway —
// driven by real MCP clients while processes are killed, stopped and
// restarted. Its bounds ("every caller answered within 3 s") are acceptance
// checks of real-process behaviour; the figures it measures go to the test
// log and, with BRAINSTEM_FAULTS_REPORT=file, to a report (see
// docs/reliability.md).
//
// The tests skip unless BRAINSTEM_FAULTS=1, so `go test ./...` stays fast:
//
//	BRAINSTEM_FAULTS=1 go test -count=1 -v ./e2e/faults
//	BRAINSTEM_FAULTS=1 BRAINSTEM_SOAK=10m go test -count=1 -timeout 30m -run TestSoak -v ./e2e/faults
//
// It has no code of its own besides this doc.
package faults
