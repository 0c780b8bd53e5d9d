package authentication

import (
	"testing"
	"time"
)

func TestVerifiedCacheIsBounded(t *testing.T) {
	c := newVerifiedCache[int](3)
	for i := range 10 {
		c.put([32]byte{byte(i)}, i, testNow.Add(time.Hour))
	}
	if n := len(c.entries); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
	if v, ok := c.get([32]byte{9}, testNow); !ok || v != 9 {
		t.Errorf("newest entry: %v %v", v, ok)
	}
	if _, ok := c.get([32]byte{9}, testNow.Add(time.Hour)); ok {
		t.Error("entry served at its expiry")
	}
	if _, ok := c.entries[[32]byte{9}]; ok {
		t.Error("expired entry kept")
	}
}
