package proto

import (
	"context"
	"fmt"
	"net"
)

// The tests' ways to run a Server: the product serves on a socket it
// opened itself (shardserver), through Serve.

// ListenAndServe listens on the UDP address addr and serves until ctx is
// cancelled or Shutdown completes. The socket is closed when it returns.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return fmt.Errorf("proto: listen %s: %w", addr, err)
	}
	pc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return fmt.Errorf("proto: listen %s: %w", addr, err)
	}
	defer pc.Close()
	return s.Serve(ctx, pc)
}

// Addr returns the listening address, or nil before Ready.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}
