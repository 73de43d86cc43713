package cpu

import (
	"sync/atomic"
	"testing"
	"time"
)

// countTask counts how often each item is visited.
type countTask struct{ hits []atomic.Int32 }

func (c *countTask) run(_, lo, hi int) {
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
}

// TestPool runs many back-to-back loops (the spinning path) and loops
// after a pause long enough to park (the channel path), on several thread
// counts, and checks every item runs exactly once per loop.
func TestPool(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		p := newPool(threads)
		for loop := 0; loop < 300; loop++ {
			n := 1 + loop*7%97
			c := &countTask{hits: make([]atomic.Int32, n)}
			p.parallel(n, 1+loop%5, c)
			for i := range c.hits {
				if got := c.hits[i].Load(); got != 1 {
					t.Fatalf("threads %d, loop %d: item %d ran %d times", threads, loop, i, got)
				}
			}
			if loop%50 == 0 {
				time.Sleep(4 * spinFor) // let the workers park
			}
		}
		p.close()
	}
}
