package proto_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
)

// healthOnly is a minimal Handler for the example.
type healthOnly struct{ proto.Handler }

func (healthOnly) Health(context.Context) (*proto.HealthResponse, error) {
	return &proto.HealthResponse{Wing: "payments", Ready: true}, nil
}

// Example wires a shard server and a gateway client with certificates from
// a fresh internal CA, over loopback QUIC.
func Example() {
	ca, err := pki.NewCA("example CA", time.Hour)
	if err != nil {
		log.Fatal(err)
	}
	shardCert, shardKey, err := ca.Issue(pki.RoleShard, []string{"localhost", "127.0.0.1"}, time.Hour)
	if err != nil {
		log.Fatal(err)
	}
	gwCert, gwKey, err := ca.Issue(pki.RoleGateway, []string{"gateway"}, time.Hour)
	if err != nil {
		log.Fatal(err)
	}
	serverTLS, err := pki.ServerTLS(ca.CertPEM(), shardCert, shardKey)
	if err != nil {
		log.Fatal(err)
	}
	clientTLS, err := pki.ClientTLS(ca.CertPEM(), gwCert, gwKey, "localhost")
	if err != nil {
		log.Fatal(err)
	}

	srv := proto.NewServer(healthOnly{}, proto.ServerConfig{TLS: serverTLS})
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe(context.Background(), "127.0.0.1:0") }()
	<-srv.Ready()

	c := proto.NewClient(srv.Addr().String(), proto.ClientConfig{TLS: clientTLS})
	defer c.Close()
	h, err := c.Health(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(h.Wing, h.Ready)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-served)
	// Output:
	// payments true
	// <nil>
}
