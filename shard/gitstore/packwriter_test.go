package gitstore

import (
	"bytes"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// FuzzPrefixSuffixDelta: go-git's delta applier turns base into target
// with every delta the packer writes.
func FuzzPrefixSuffixDelta(f *testing.F) {
	f.Add([]byte("100644 a.md\x00aaaaaaaaaaaaaaaaaaaa100644 b.md\x00bbbbbbbbbbbbbbbbbbbb"), []byte("100644 a.md\x00aaaaaaaaaaaaaaaaaaaa100644 b.md\x00cccccccccccccccccccc"))
	f.Add(bytes.Repeat([]byte("x"), 200000), append(bytes.Repeat([]byte("x"), 200000), 'y'))
	f.Add([]byte(""), []byte("abc"))
	f.Fuzz(func(t *testing.T, base, target []byte) {
		d := prefixSuffixDelta(base, target)
		if d == nil {
			return
		}
		got, err := packfile.PatchDelta(base, d)
		if err != nil || !bytes.Equal(got, target) {
			t.Fatalf("patch gives %q (%v), want %q", got, err, target)
		}
	})
}

func TestOfsDistance(t *testing.T) {
	// Decode as git does: c = b[0]&0x7f; for each further byte,
	// ((c+1)<<7) | b&0x7f.
	for _, n := range []int64{1, 127, 128, 255, 16383, 16384, 1 << 30, 1<<40 + 3} {
		b := ofsDistance(n)
		c := int64(b[0] & 0x7f)
		for _, x := range b[1:] {
			c = (c+1)<<7 | int64(x&0x7f)
		}
		for i, x := range b {
			if (x&0x80 != 0) != (i < len(b)-1) {
				t.Fatalf("%d: continuation bits of %x", n, b)
			}
		}
		if c != n {
			t.Errorf("ofsDistance(%d) decodes to %d", n, c)
		}
	}
}
