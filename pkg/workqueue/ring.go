package workqueue

// ring is a growable FIFO ring buffer. Unlike a re-sliced slice it reuses its
// storage, so a queue in steady state does not allocate; after a spike it
// shrinks again once it is mostly empty. Not safe for concurrent use; the
// engine's lock guards it.
type ring[E any] struct {
	buf  []E // len(buf) is zero or a power of two
	head int // index of the oldest element
	n    int // number of elements
}

func (r *ring[E]) len() int { return r.n }

func (r *ring[E]) push(e E) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = e
	r.n++
}

// pop removes and returns the oldest element. The ring must not be empty.
func (r *ring[E]) pop() E {
	var zero E
	e := r.buf[r.head]
	r.buf[r.head] = zero // let the garbage collector have what it pointed to
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	if len(r.buf) > minShrink && r.n < len(r.buf)/4 {
		r.resize(len(r.buf) / 2)
	}
	return e
}

// minShrink is the capacity below which a ring never shrinks.
const minShrink = 1024

func (r *ring[E]) grow() {
	size := 2 * len(r.buf)
	if size == 0 {
		size = 16
	}
	r.resize(size)
}

// resize moves the elements to a new buffer of size, a power of two of at
// least r.n.
func (r *ring[E]) resize(size int) {
	buf := make([]E, size)
	for i := 0; i < r.n; i++ {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}
