package jsontext

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func marshalString(s string, html bool) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

func checkString(t *testing.T, s string) {
	t.Helper()
	for _, html := range []bool{false, true} {
		want := marshalString(s, html)
		if got := AppendString([]byte("x"), s, html); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("AppendString(%q, html=%v) = %s, want %s", s, html, got[1:], want)
		}
		if got := AppendString(nil, []byte(s), html); !bytes.Equal(got, want) {
			t.Fatalf("AppendString([]byte %q, html=%v) = %s, want %s", s, html, got, want)
		}
	}
}

func TestAppendStringAsEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr\bbs\fff",
		"\x00\x01\x1f\x7f", "<script>&amp;</script>", "é ünïcødé 日本語 🎉",
		"line\u2028sep\u2029para", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate",
	} {
		checkString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\u2028<\xff>", "日本\n"} {
		f.Add(s)
	}
	f.Fuzz(checkString)
}

func checkFloat(t *testing.T, v float64) {
	t.Helper()
	if math.IsNaN(v) || math.IsInf(v, 0) {
		if got := AppendFloat(nil, v); string(got) != "null" {
			t.Fatalf("AppendFloat(%v) = %s, want null", v, got)
		}
		return
	}
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendFloat(nil, v); !bytes.Equal(got, want) {
		t.Fatalf("AppendFloat(%v) = %s, want %s", v, got, want)
	}
}

func TestAppendFloatAsEncodingJSON(t *testing.T) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 12.345678901234567, 1e-6, 9.99e-7, 1e-7,
		1.5e-10, 1e20, 1e21, 1.234e25, -3e-300, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1)} {
		checkFloat(t, v)
	}
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 1.5, 1e-7, 1e21} {
		f.Add(v)
	}
	f.Fuzz(checkFloat)
}
