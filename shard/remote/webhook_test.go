package remote

import (
	"encoding/hex"
	"errors"
	"testing"
)

func TestWebhookVerify(t *testing.T) {
	secret, body := []byte("s3cret"), []byte(`{"ref":"refs/heads/main"}`)
	sig := hex.EncodeToString(Sign(secret, body))
	other := hex.EncodeToString(Sign([]byte("other"), body))
	tests := []struct {
		name string
		a    WebhookAuth
		want error
	}{
		{"github", WebhookAuth{HubSignature256: "sha256=" + sig}, nil},
		{"gitea", WebhookAuth{GiteaSignature: sig}, nil},
		{"gitlab", WebhookAuth{GitLabToken: "s3cret"}, nil},
		{"none", WebhookAuth{}, ErrWebhookUnsigned},
		{"github wrong secret", WebhookAuth{HubSignature256: "sha256=" + other}, ErrWebhookSignature},
		{"github no prefix", WebhookAuth{HubSignature256: sig}, ErrWebhookSignature},
		{"github sha1", WebhookAuth{HubSignature256: "sha1=" + sig}, ErrWebhookSignature},
		{"not hex", WebhookAuth{GiteaSignature: "zz"}, ErrWebhookSignature},
		{"truncated", WebhookAuth{GiteaSignature: sig[:10]}, ErrWebhookSignature},
		{"gitlab wrong", WebhookAuth{GitLabToken: "s3cre"}, ErrWebhookSignature},
	}
	for _, tt := range tests {
		if err := tt.a.Verify(secret, body); !errors.Is(err, tt.want) {
			t.Errorf("%s: Verify = %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := (WebhookAuth{HubSignature256: "sha256=" + sig}).Verify(secret, append(body, ' ')); err == nil {
		t.Error("a changed body verified")
	}
	if err := (WebhookAuth{GitLabToken: "x"}).Verify(nil, body); err == nil {
		t.Error("an empty secret verified")
	}
}

// FuzzWebhookVerify: what Sign makes verifies; any other signature of the
// body does not.
func FuzzWebhookVerify(f *testing.F) {
	f.Add([]byte("s3cret"), []byte("{}"), "sha256=00")
	f.Fuzz(func(t *testing.T, secret, body []byte, header string) {
		if len(secret) == 0 {
			return
		}
		good := "sha256=" + hex.EncodeToString(Sign(secret, body))
		if err := (WebhookAuth{HubSignature256: good}).Verify(secret, body); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
		err := WebhookAuth{HubSignature256: header}.Verify(secret, body)
		if dec, ok := decodeHub(header); (err == nil) != (ok && hex.EncodeToString(dec) == good[len("sha256="):]) {
			t.Fatalf("Verify(%q) = %v", header, err)
		}
	})
}

func decodeHub(h string) ([]byte, bool) {
	if len(h) < 7 || h[:7] != "sha256=" {
		return nil, false
	}
	b, err := hex.DecodeString(h[7:])
	return b, err == nil
}
