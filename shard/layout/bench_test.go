package layout

import "testing"

// BenchmarkResolve includes one lstat per existing path component.
func BenchmarkResolve(b *testing.B) {
	root := tempBrain(b)
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
