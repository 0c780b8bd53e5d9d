package record

import "container/list"

// lru is a map of at most size entries that evicts the least recently used.
// It is not safe for concurrent use; the Recorder's Run goroutine owns it.
type lru[K comparable, V any] struct {
	size  int
	order *list.List // of *lruEntry[K, V], most recently used first
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key   K
	value V
}

func newLRU[K comparable, V any](size int) *lru[K, V] {
	return &lru[K, V]{size: size, order: list.New(), items: make(map[K]*list.Element)}
}

// get returns the value of key and marks it used.
func (l *lru[K, V]) get(key K) (V, bool) {
	e, ok := l.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry[K, V]).value, true
}

// put sets the value of key, evicting the least recently used entry when
// full.
func (l *lru[K, V]) put(key K, value V) {
	if e, ok := l.items[key]; ok {
		e.Value.(*lruEntry[K, V]).value = value
		l.order.MoveToFront(e)
		return
	}
	if l.order.Len() >= l.size {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.items, last.Value.(*lruEntry[K, V]).key)
	}
	l.items[key] = l.order.PushFront(&lruEntry[K, V]{key: key, value: value})
}

func (l *lru[K, V]) len() int { return l.order.Len() }
