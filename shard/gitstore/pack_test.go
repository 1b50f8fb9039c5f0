package gitstore

import "testing"

func TestGeometricSplit(t *testing.T) {
	for _, tc := range []struct {
		counts []int64
		want   int
	}{
		{nil, 0},
		{[]int64{10}, 0},
		{[]int64{10, 100}, 0},
		{[]int64{10, 15}, 2},
		{[]int64{5, 6, 20, 1000}, 3},
		{[]int64{5, 6, 30, 1000}, 2},
		{[]int64{1, 1, 1, 1, 1}, 5},
	} {
		if got := GeometricSplit(tc.counts); got != tc.want {
			t.Errorf("GeometricSplit(%v) = %d, want %d", tc.counts, got, tc.want)
		}
	}
}
