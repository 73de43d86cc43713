package draft

import (
	"slices"
	"testing"
)

func TestNGram(t *testing.T) {
	tests := []struct {
		history []int32
		k       int
		want    []int32
	}{
		// "1 2 3 4 5 … 1 2 3" → "4 5"
		{[]int32{1, 2, 3, 4, 5, 9, 1, 2, 3}, 2, []int32{4, 5}},
		// The latest match wins.
		{[]int32{1, 2, 7, 8, 1, 2, 5, 6, 1, 2}, 3, []int32{5, 6, 1}},
		// Longer n-grams first: "2 3" matches at the start, "9 2 3" later.
		{[]int32{2, 3, 4, 9, 2, 3, 6, 0, 9, 2, 3}, 1, []int32{6}},
		// A draft runs to the end of history at most.
		{[]int32{5, 6, 7, 5, 6}, 8, []int32{7, 5, 6}},
		{[]int32{1, 2, 3}, 4, nil},
		{[]int32{4, 4}, 4, nil}, // unigrams are not tried
		{[]int32{4, 4, 4}, 4, []int32{4}},
		{nil, 4, nil},
		{[]int32{1, 2, 1, 2}, 0, nil},
	}
	for _, tt := range tests {
		if got := DefaultNGram.Draft(tt.history, tt.k); !slices.Equal(got, tt.want) {
			t.Errorf("Draft(%v, %d) = %v, want %v", tt.history, tt.k, got, tt.want)
		}
	}
}
