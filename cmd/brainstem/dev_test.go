package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestDevBusyPorts: `brainstem dev` with a port another process holds
// starts nothing and exits 2, naming every busy port and its flag in one
// message.
func TestDevBusyPorts(t *testing.T) {
	gw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	port := func(l net.Listener) string { return strconv.Itoa(l.Addr().(*net.TCPAddr).Port) }
	var out, errb strings.Builder
	code := run(context.Background(), []string{"dev", "--port", port(gw), "--admin-port", port(admin), "--idp-port", "0", "--shard-port", "0", "--data", t.TempDir()},
		strings.NewReader(""), &out, &errb)
	msg := errb.String()
	if code != 2 || strings.Count(msg, "brainstem:") != 1 || strings.Contains(out.String(), "is ready") {
		t.Fatalf("brainstem dev on busy ports: code %d, stdout %q, stderr %q; want 2 and one message", code, out.String(), msg)
	}
	for _, want := range []string{"2 ports are taken", gw.Addr().String(), "(--port)", admin.Addr().String(), "(--admin-port)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not name %q:\n%s", want, msg)
		}
	}
}
