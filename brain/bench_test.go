package brain

import "testing"

func BenchmarkParseID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseID("wiki/payments/decisions/use-idempotency-keys.md"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRefWing(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if w, _ := RefWing("wiki/payments/decisions/use-idempotency-keys.md"); w != "payments" {
			b.Fatal(w)
		}
	}
}
