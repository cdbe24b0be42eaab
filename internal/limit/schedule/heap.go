package schedule

// groupHeap is a min-heap of groups by their instant (queue.at); each group
// knows its index, so that it can be moved or removed in O(log n).
type groupHeap[T any] []*queue[T]

func (h groupHeap[T]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h groupHeap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down moves h[i] down and reports whether it moved.
func (h groupHeap[T]) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if r := c + 1; r < len(h) && h[r].at < h[c].at {
			c = r
		}
		if h[i].at <= h[c].at {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}

func (h *groupHeap[T]) push(g *queue[T]) {
	g.index = len(*h)
	*h = append(*h, g)
	h.up(g.index)
}

// fix restores the order after h[i].at changed.
func (h groupHeap[T]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

// remove removes h[i].
func (h *groupHeap[T]) remove(i int) {
	old := *h
	last := len(old) - 1
	g := old[i]
	if i != last {
		old[i] = old[last]
		old[i].index = i
	}
	old[last] = nil
	*h = old[:last]
	if i != last {
		(*h).fix(i)
	}
	g.index = -1
}
