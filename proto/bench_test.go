package proto

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brainstem/brainstem/proto/pki"
	"github.com/quic-go/quic-go"
)

// processCPU returns the CPU time (user+system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportLatencies reports p50-ns and p99-ns of per-call round-trip times
// from concurrent workers, calls/s, and cpu-ns/call: the CPU time client
// and server (same process) spent per call, a figure that does not depend
// on what else the machine runs; 2e9/cpu-ns/call estimates the calls/s two
// dedicated cores sustain.
func reportLatencies(b *testing.B, lat [][]time.Duration, elapsed, cpu time.Duration) {
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(all)), "cpu-ns/call")
}

// runConcurrent runs b.N calls of fn over g workers.
func runConcurrent(b *testing.B, g int, fn func() error) {
	lat := make([][]time.Duration, g)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := processCPU(b)
	start := time.Now()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := fn(); err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	reportLatencies(b, lat, elapsed, cpu)
}

// BenchmarkCall measures a 1 KiB Call round trip (request and response of
// 1 KiB) over one connection at 1 and 64 concurrent streams.
func BenchmarkCall(b *testing.B) {
	f := newFixture(b)
	srv := startServer(b, f, &handler{}, ServerConfig{}, "127.0.0.1:0")
	c := newClient(b, f, srv.Addr().String(), ClientConfig{})
	req := &CallRequest{RequestID: "bench", Token: string(bytes.Repeat([]byte("t"), 200)), Tool: "brain_get", Args: bytes.Repeat([]byte("a"), 1024)}
	if _, err := c.Call(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	for _, g := range []int{1, 64} {
		b.Run(map[int]string{1: "streams=1", 64: "streams=64"}[g], func(b *testing.B) {
			b.ReportAllocs()
			runConcurrent(b, g, func() error {
				_, err := c.Call(context.Background(), req)
				return err
			})
		})
	}
}

// BenchmarkRawQUICEcho is the baseline: the same 1 KiB round trip with bare
// quic-go (one stream per request, server echoes and FINs), same TLS, same
// machine, no framing or handler.
func BenchmarkRawQUICEcho(b *testing.B) {
	f := newFixture(b)
	stls := f.serverTLS(b)
	ln, err := quic.ListenAddr("127.0.0.1:0", stls, &quic.Config{MaxIncomingStreams: DefaultMaxStreams})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					st, err := conn.AcceptStream(context.Background())
					if err != nil {
						return
					}
					go func() {
						buf, _ := io.ReadAll(st)
						st.Write(buf)
						st.Close()
					}()
				}
			}()
		}
	}()
	ctls := f.clientTLS(b, pki.RoleGateway)
	conn, err := quic.DialAddr(context.Background(), ln.Addr().String(), ctls, &quic.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.CloseWithError(0, "") })
	msg := bytes.Repeat([]byte("a"), 1024+200)
	echo := func() error {
		st, err := conn.OpenStreamSync(context.Background())
		if err != nil {
			return err
		}
		if _, err := st.Write(msg); err != nil {
			return err
		}
		st.Close()
		_, err = io.ReadAll(st)
		return err
	}
	for _, g := range []int{1, 64} {
		b.Run(map[int]string{1: "streams=1", 64: "streams=64"}[g], func(b *testing.B) {
			b.ReportAllocs()
			runConcurrent(b, g, echo)
		})
	}
}

// BenchmarkCodecCall measures encoding and decoding a 1 KiB Call request
// and its 1 KiB response, without any network: the protocol's own share of
// a round trip.
func BenchmarkCodecCall(b *testing.B) {
	req := &CallRequest{RequestID: "bench", Token: string(bytes.Repeat([]byte("t"), 200)), Tool: "brain_get", Args: bytes.Repeat([]byte("a"), 1024)}
	resp := &CallResponse{Result: bytes.Repeat([]byte("r"), 1024)}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		f, err := encodeRequest(buf[:0], MsgCall, reqHeader{Timeout: time.Second, RequestID: req.RequestID}, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := decodeCallRequest(f[HeaderSize:]); err != nil {
			b.Fatal(err)
		}
		f, err = encodeResponse(buf[:0], resp)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := decodeCallResponse(f[HeaderSize:]); err != nil {
			b.Fatal(err)
		}
	}
}
