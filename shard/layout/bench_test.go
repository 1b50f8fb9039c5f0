package layout

import "testing"

func BenchmarkParseID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseID("wiki/payments/decisions/use-idempotency-keys.md"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolve includes one lstat per existing path component.
func BenchmarkResolve(b *testing.B) {
	root := brain(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(root, "wiki/payments/facts/a.md"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSlugify(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Slugify("Crème brûlée: why we use idempotency keys for every payment API call")
	}
}
