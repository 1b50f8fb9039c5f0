package shard

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/tooling/emailcases"
)

// TestMintAppliesEmailRule: the shard applies the email rule to the email a
// gateway vouches for (tooling/emailcases): a refused address gets a
// bad_request and no token, even where the policy admits "*", and never the
// rights of the address it would fold onto (the Kelvin sign K is not k).
func TestMintAppliesEmailRule(t *testing.T) {
	svc, err := Open(context.Background(), Config{
		Brain: newBrain(t), Wing: "payments", Key: key(t),
		Policy: auth.Policy{Readers: []string{"*"}, Curators: []string{"email:kate@example.com"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	for _, c := range emailcases.Load(t) {
		in, want := c.In, c.Want
		resp, err := svc.Mint(context.Background(), proto.Peer{Role: "gateway"}, &proto.MintRequest{Email: in, NotAfter: time.Now().Add(time.Hour)})
		if c.Refused {
			if proto.CodeOf(err) != proto.CodeBadRequest {
				var caps []string
				if resp != nil {
					caps = resp.Caps
				}
				t.Errorf("Mint(%q) granted %v, err %v; want bad_request", in, caps, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Mint(%q): %v", in, err)
			continue
		}
		res, err := svc.Call(context.Background(), &proto.CallRequest{Token: resp.Token, Tool: "brain_write",
			Args: []byte(`{"title":"By ` + strconv.Itoa(len(in)) + `","body":"b","inbox":true}`)})
		if want == "kate@example.com" {
			if err != nil || res.IsError {
				t.Errorf("kate's write: %v %s", err, res.Result)
			}
		}
	}
}
