package hits

import (
	"strings"
	"testing"
)

func TestCacheVersionsAndBound(t *testing.T) {
	c := New[int](4 << 10) // entries up to 512 bytes of body
	e := Entry{Title: "T", Hash: "h", Body: []byte("body")}
	c.Put("a", 1, e)
	if got, ok := c.Get("a", 1); !ok || string(got.Body) != "body" {
		t.Fatalf("Get = %+v %v", got, ok)
	}
	if _, ok := c.Get("a", 2); ok {
		t.Fatal("another version was served")
	}
	if _, ok := c.Get("a", 1); ok {
		t.Fatal("an entry looked up with another version was kept")
	}
	c.Put("big", 1, Entry{Body: []byte(strings.Repeat("x", 513))})
	if st := c.Stats(); st.Entries != 0 || st.Bytes != 0 || st.Hits != 1 || st.Misses != 2 {
		t.Fatalf("stats %+v", st)
	}
	for i := range 100 { // far over the bound: the oldest go first
		c.Put(string(rune('A'+i)), i, Entry{Body: []byte(strings.Repeat("y", 400))})
	}
	if st := c.Stats(); st.Bytes > 4<<10 || st.Entries == 0 {
		t.Fatalf("over the bound: %+v", st)
	}
	if _, ok := c.Get(string(rune('A'+99)), 99); !ok {
		t.Fatal("the newest entry was evicted")
	}
	c.Remove(string(rune('A' + 99)))
	c.Clear()
	if st := c.Stats(); st.Entries != 0 || st.Bytes != 0 {
		t.Fatalf("after Clear: %+v", st)
	}
}

func TestNilCacheIsOff(t *testing.T) {
	var c *Cache[int] = New[int](0)
	c.Put("a", 1, Entry{Body: []byte("x")})
	if _, ok := c.Get("a", 1); ok || c.Fits(1) || c.Stats() != (Stats{}) {
		t.Fatal("a cache turned off holds something")
	}
	c.Remove("a")
	c.Clear()
}
